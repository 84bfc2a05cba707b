"""The web console: jobs, runs, bookmarks, outputs, workflows, data quality and the
catalog, read from the same state store the CLI uses, through the engine and the services."""

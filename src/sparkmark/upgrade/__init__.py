"""The upgrade check (``sparkmark upgrade-check``): a job run under two Glue versions, and
what changed between them, each difference tied to the change that explains it."""

"""Crawlers: walk data folders, classify files, infer schemas and partitions, and keep
catalog tables up to date, with Glue's definitions and policies."""

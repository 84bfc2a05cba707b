"""Readers that turn a bookmarked source into a plain Spark DataFrame."""

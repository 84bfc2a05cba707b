"""The engine: state store, run lifecycle, bookmark versions and file increments.

Nothing in this package knows Glue's API names; the façade translates them.
"""

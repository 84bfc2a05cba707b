"""The Glue-compatible façade: AWS Glue's Python names, translated onto sparkmark.

Modules mirror ``awsglue``: ``context``, ``job``, ``utils``, ``dynamicframe`` and
``transforms``. Under ``sparkmark run`` (or after ``sparkmark glue install-shim``)
``import awsglue.x`` loads ``sparkmark.glue.x``.
"""

from typing import Any

__all__ = ["DynamicFrame"]  # as Glue's awsglue/__init__.py


def __getattr__(name: str) -> Any:
    """``from awsglue import DynamicFrame``, loaded when asked for: the package itself is
    imported at interpreter start-up by the awsglue import hook and must not load PySpark."""
    if name == "DynamicFrame":
        from .dynamicframe import DynamicFrame

        return DynamicFrame
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

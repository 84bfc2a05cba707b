"""Testing Glue jobs with pytest: the plugin (``sparkmark.testing.plugin``, loaded by
pytest through the ``pytest11`` entry point) and what a test gets back from
``run_glue_job`` (``GlueJobRun``), imported when first asked for so that loading the
plugin stays light."""

from typing import Any

__all__ = ["GlueJobRun", "SourceRead", "glue_arguments"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import glue_job

        return getattr(glue_job, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

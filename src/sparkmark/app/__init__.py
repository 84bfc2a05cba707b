"""The application every front door holds: one :class:`App` per process over one
project (its settings, state store, definitions and stores). The Glue API, the console
and its Studio use it; the operations they share (job definitions from Glue's fields,
visual jobs' saves) are its methods, with sparkmark's errors. Only ``api/`` turns
those into Glue's."""

from .application import App

__all__ = ["App"]

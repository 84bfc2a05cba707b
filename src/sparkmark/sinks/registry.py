"""The kinds of write target made from Glue's connection options, found in one place:
each with the connection types it serves, the factory of its sink and the module that
finishes its writes after their run (``apply``, ``missing``, ``finish``, ``discard``).
The Glue façade writes any registered connection type through here, and
``outputs.py`` finishes a registered kind's writes through here, so a new kind is its
module and its entry below. Files, JDBC and table formats keep their own paths, for
their formats, staging tables and snapshots.

A factory is ``"module:function"`` (a module of this package), imported only when a
sink of its kind is made; it takes the connection options and ``ctx`` by keyword, and
returns a sink for ``runtime.write_sink`` (what it needs of the run, it takes in
``join``)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..errors import SinkError


@dataclass(frozen=True)
class SinkKind:
    name: str
    connection_types: tuple[str, ...]
    factory: str  # "module:function"

    def make(self, options: Mapping[str, Any], **context: Any) -> Any:
        module, _, function = self.factory.partition(":")
        return getattr(_module(module), function)(dict(options), **context)

    @property
    def module(self) -> ModuleType:
        return _module(self.factory.partition(":")[0])


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{__package__}.{name}")


DYNAMODB = SinkKind("dynamodb", ("dynamodb",), "dynamodb:from_glue_options")
KINDS = {k.name: k for k in (DYNAMODB,)}


def by_connection_type(connection_type: str | None) -> SinkKind | None:
    wanted = (connection_type or "").lower()
    return next((k for k in KINDS.values() if wanted in k.connection_types), None)


def of_plan(plan: Mapping[str, Any]) -> SinkKind:
    """The kind that staged a write, named in its plan (``sink``)."""
    found = KINDS.get(str(plan.get("sink")))
    if found is None:
        raise SinkError(f"a staged write names sink {plan.get('sink')!r}, which this release does not know")
    return found

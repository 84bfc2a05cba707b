"""The kinds of source, found in one place: each with the Glue connection types it
serves, whether it is read as a stream, how its metrics read in one phrase, and where
its factory from Glue's connection options lives. A door that shows a source's state or
metrics (the CLI, the console, the run's log) asks here for the kind instead of guessing
it from the record's shape; the Glue façade and the native API make a source of a
registered connection type here, so a new kind is its module, its entry below, its
state and a fixture, and no front end changes.

A factory is named ``"module:function"`` (a module of this package), imported only
when a source of its kind is made, as Iceberg's catalog registry names its
implementations. It takes the connection options as Glue gives them, and ``ctx``,
``connections`` (the job's named connections) and ``settings`` by keyword; it returns
a ``sources.base.Source`` (a batch kind) or a ``sources.streams.StreamSource``. A
catalog table whose ``classification`` is the kind's connection type is read the same
way, its parameters and ``location`` given as the options (the read's own over them)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..engine.jdbc import CONNECTION_TYPES
from ..errors import SourceError


@dataclass(frozen=True)
class SourceKind:
    name: str
    connection_types: tuple[str, ...]
    streaming: bool
    read: Callable[[Mapping[str, Any]], str]  # what a run read, in the kind's unit
    # "module:function" of this package: a source of the kind from Glue's options; None
    # for the kinds each front end reads its own way (files with their formats, JDBC
    # with its key ranges, tables through their catalogs).
    factory: str | None = None
    # "module:function": whether the kind takes a connection option of that name (a
    # catalog table's parameters hold others too).
    accepts: str | None = None

    def make(self, options: Mapping[str, Any], **context: Any) -> Any:
        """A source of this kind for Glue's connection ``options`` (``context``: ctx,
        connections, settings)."""
        if self.factory is None:
            raise SourceError(f"a {self.name} source is not made from connection options")
        return _function(self.factory)(dict(options), **context)

    def takes(self, option: str) -> bool:
        return self.accepts is None or bool(_function(self.accepts)(option))


def _function(where: str) -> Callable[..., Any]:
    """``module:function``: a module of this package, or a dotted module path."""
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module if "." in module else f"{__package__}.{module}"), name)


def _files_read(m: Mapping[str, Any]) -> str:
    return f"{m.get('files_read', 0)} files, {m.get('bytes_read', 0)} bytes"


def _rows_read(m: Mapping[str, Any]) -> str:
    return f"{m.get('rows_read', 0)} rows"


def _records_read(m: Mapping[str, Any]) -> str:
    return f"{m.get('numRecords', m.get('records', 0))} records"


def _snapshots_read(m: Mapping[str, Any]) -> str:
    return f"{m.get('snapshots_read', 0)} snapshots, up to {m.get('snapshot_id')}"


def _versions_read(m: Mapping[str, Any]) -> str:
    return f"{m.get('versions_read', 0)} versions, up to {m.get('version')}"


FILES = SourceKind("files", ("s3", "file", "local"), False, _files_read)
JDBC = SourceKind("jdbc", tuple(CONNECTION_TYPES), False, _rows_read)
KAFKA = SourceKind("kafka", ("kafka",), True, _records_read, "kafka:from_glue_options", "kafka:accepts")
KINESIS = SourceKind(
    "kinesis", ("kinesis",), True, _records_read, "kinesis:from_glue_options", "kinesis:accepts"
)


def _items_read(m: Mapping[str, Any]) -> str:
    if m.get("export"):
        return f"the table's export ({m.get('export')}), {m.get('files', 0)} files"
    if m.get("whole", True):
        return f"{m.get('items', 0)} items, the whole table in {m.get('segments', 1)} segments"
    return f"{m.get('items', 0)} items changed, {m.get('deleted', 0)} deleted, from the table's stream"


DYNAMODB = SourceKind(
    "dynamodb", ("dynamodb",), False, _items_read, "dynamodb:from_glue_options", "dynamodb:accepts"
)
ICEBERG = SourceKind("iceberg", (), False, _snapshots_read)
DELTA = SourceKind("delta", (), False, _versions_read)
KINDS = {k.name: k for k in (FILES, JDBC, KAFKA, KINESIS, DYNAMODB, ICEBERG, DELTA)}


def register(kind: SourceKind) -> None:
    """Add a kind (a batch kind made from connection options) to the registry."""
    taken = {t for k in KINDS.values() if k.name != kind.name for t in k.connection_types}
    clash = sorted(taken & set(kind.connection_types))
    if clash:
        raise SourceError(f"connection_type {clash[0]!r} is already served by another source kind")
    KINDS[kind.name] = kind


STREAM_CONNECTION_TYPES = tuple(t for k in KINDS.values() if k.streaming for t in k.connection_types)


def kind_of_state(state: Mapping[str, Any]) -> SourceKind:
    """The kind of a committed source state (its ``type``; files before it was recorded)."""
    return KINDS.get(str(state.get("type") or "files"), FILES)


def kind_of_metrics(metrics: Mapping[str, Any]) -> SourceKind:
    """The kind of a run's metrics for one source: streams and JDBC say their type; a
    JDBC read of an older release says it by its row count."""
    named = metrics.get("type")
    if named in KINDS:
        return KINDS[str(named)]
    return JDBC if "rows_read" in metrics else FILES


def by_connection_type(connection_type: str | None) -> SourceKind | None:
    """The kind that serves Glue's ``connection_type``, or None."""
    wanted = (connection_type or "").lower()
    return next((k for k in KINDS.values() if wanted in k.connection_types), None)


def made_from_options(connection_type: str | None) -> SourceKind | None:
    """The kind whose sources are made from connection options for ``connection_type``
    (a registered kind with a factory), or None."""
    kind = by_connection_type(connection_type)
    return kind if kind is not None and kind.factory is not None else None


def stream_source(
    kind: str, options: dict[str, Any], *, ctx: str | None, connections: Any = None, settings: Any = None
) -> Any:
    """The streaming source (a ``sources.streams.StreamSource``) of ``kind`` for
    Glue-style connection options; a ``connectionName`` is resolved through the job's
    connections."""
    found = by_connection_type(kind)
    if found is None or not found.streaming:
        raise SourceError(
            f"streaming connection_type {(kind or '').lower()!r} is not supported; "
            f"use {' or '.join(STREAM_CONNECTION_TYPES)}"
        )
    return found.make(options, ctx=ctx, connections=connections, settings=settings)


def stream_accepts(kind: str, name: str) -> bool:
    """Whether the streaming source of ``kind`` takes connection option ``name``."""
    found = by_connection_type(kind)
    return found is not None and found.takes(name)

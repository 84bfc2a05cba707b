"""The kinds of source, found in one place: each with the Glue connection types it
serves, whether it is read as a stream, and how its metrics read in one phrase. A door
that shows a source's state or metrics (the CLI, the console, the run's log) asks here
for the kind instead of guessing it from the record's shape."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import SourceError

if TYPE_CHECKING:
    from .streams import StreamSource


@dataclass(frozen=True)
class SourceKind:
    name: str
    connection_types: tuple[str, ...]
    streaming: bool
    read: Callable[[Mapping[str, Any]], str]  # what a run read, in the kind's unit


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
JDBC = SourceKind("jdbc", (), False, _rows_read)
KAFKA = SourceKind("kafka", ("kafka",), True, _records_read)
KINESIS = SourceKind("kinesis", ("kinesis",), True, _records_read)
ICEBERG = SourceKind("iceberg", (), False, _snapshots_read)
DELTA = SourceKind("delta", (), False, _versions_read)
KINDS = {k.name: k for k in (FILES, JDBC, KAFKA, KINESIS, ICEBERG, DELTA)}
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


def stream_source(
    kind: str, options: dict[str, Any], *, ctx: str | None, connections: Any = None, settings: Any = None
) -> StreamSource:
    """The streaming source of ``kind`` for Glue-style connection options; a
    ``connectionName`` is resolved through the job's connections. Each kind's module is
    loaded only when a source of that kind is made."""
    kind = (kind or "").lower()
    if kind == KAFKA.name:
        from .kafka import KafkaSource, bootstrap_from_url

        bootstrap = ""
        name = options.get("connectionName")
        if name and not (options.get("bootstrap.servers") or options.get("bootstrapServers")):
            if connections is None:
                raise SourceError(f"connection {name!r} cannot be resolved outside a job")
            bootstrap = bootstrap_from_url(connections.resolve(str(name)).url)
        return KafkaSource(options=options, ctx=ctx, bootstrap=bootstrap)
    if kind == KINESIS.name:
        from .kinesis import KinesisSource

        return KinesisSource(options=options, ctx=ctx, settings=settings)
    raise SourceError(
        f"streaming connection_type {kind!r} is not supported; use {' or '.join(STREAM_CONNECTION_TYPES)}"
    )


def stream_accepts(kind: str, name: str) -> bool:
    """Whether the streaming source of ``kind`` takes connection option ``name`` (a
    catalog table's parameters hold others too)."""
    if kind == KAFKA.name:
        from .kafka import accepts as kafka_accepts

        return kafka_accepts(name)
    from .kinesis import accepts as kinesis_accepts

    return kinesis_accepts(name)

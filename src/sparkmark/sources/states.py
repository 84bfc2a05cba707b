"""What each kind of source commits to the bookmark, as typed models, and how every
door says it.

A committed state is stored as JSON; ``parse_state`` reads it into the model of its
kind, chosen by its ``type`` (a file source's state recorded before the type was has
none, and is read as files). Each model says, in the same words for the CLI and the
console: the source (``source``), how far the bookmark has come (``progress``), what
the last commit read (``latest``), and what a bookmark version changed against the
one before it (``change``). Fields a model does not name are kept as they are, so a
state written by a later release still reads.

Nothing here imports PySpark: the CLI and the console read states without a JVM.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError


def when_ms(ms: int | None) -> str:
    """A moment in milliseconds since the epoch, as people read it (UTC, to the ms)."""
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def offsets_text(offsets: Any) -> str:
    """A stream's committed offsets, per topic and partition (or shard)."""
    if not isinstance(offsets, dict):
        return str(offsets)
    if isinstance(offsets.get("shards"), dict):  # Kinesis: the last sequence number read per shard
        return " ".join(
            f"{sid}:{(entry or {}).get('after') or '-'}{' (closed, read)' if (entry or {}).get('done') else ''}"
            for sid, entry in sorted(offsets["shards"].items())
        )
    parts = []
    for topic, by_partition in sorted(offsets.items()):
        if isinstance(by_partition, dict):
            shown = " ".join(
                f"{p}:{o}" for p, o in sorted(by_partition.items(), key=lambda kv: str(kv[0]).zfill(9))
            )
            parts.append(f"{topic} [{shown}]")
        else:
            parts.append(f"{topic} {by_partition}")
    return "; ".join(parts)


class _State(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    last_run: dict[str, Any] = Field(default_factory=dict)

    def _lag(self) -> str:
        lag = getattr(self, "lag", None)
        return f", lag {lag}" if lag is not None else ""

    def _given(self, name: str) -> str:
        """A field as stored: "-" when the state does not have it at all."""
        return str(getattr(self, name)) if name in self.model_fields_set else "-"


class FileState(_State):
    """A file source: its folders, the files recorded so far and the newest mtime."""

    type: Literal["files"] = "files"
    paths: list[str] | None = None
    files_committed: int | None = 0
    high_water_mtime_ms: int | None = None

    def source(self) -> str:
        return ", ".join(self.paths or [])

    def progress(self) -> str:
        return f"{self.files_committed} files, high-water mtime {when_ms(self.high_water_mtime_ms)}"

    def latest(self) -> str:
        last = self.last_run
        deferred = f", {last['deferred']} deferred" if last.get("deferred") else ""
        return f"{last.get('files', 0)} files, {last.get('bytes', 0)} bytes{deferred}"

    def change(self, previous: SourceState | None, files_added: int) -> str:
        return f"+{files_added} files recorded, {self.files_committed} in all"


class JdbcState(_State):
    """A JDBC source: its table (or query), its bookmark keys and the last key read."""

    type: Literal["jdbc"] = "jdbc"
    database: str | None = None
    table: str | None = None
    query_sha256: str | None = None
    keys: list[str] | None = None
    keys_sort_order: str | None = None
    last_value: list[Any] | None = None
    lag: Any = None

    def source(self) -> str:
        return f"{self.database} {self.table or f'query {self.query_sha256}'}"

    def progress(self) -> str:
        return (
            f"keys {', '.join(self.keys or [])} {self.keys_sort_order}, last {self.last_value}{self._lag()}"
        )

    def latest(self) -> str:
        return f"{self.last_run.get('rows', 0)} rows"

    def change(self, previous: SourceState | None, files_added: int) -> str:
        before = previous._given("last_value") if isinstance(previous, JdbcState) else "-"
        return f"key {', '.join(self.keys or [])}: {before} → {self._given('last_value')}"


class StreamState(_State):
    """A Kafka or Kinesis source: where the query's checkpoint stood after the run's
    last batch."""

    type: Literal["kafka", "kinesis"]
    source_name: str | None = Field(default=None, alias="source")
    last_batch: int | None = None
    offsets: Any = None
    lag: Any = None

    def source(self) -> str:
        return self.source_name or "-"

    def progress(self) -> str:
        return f"batch {self.last_batch}: {offsets_text(self.offsets)}{self._lag()}"

    def latest(self) -> str:
        return f"{self.last_run.get('records', 0)} records in {self.last_run.get('batches', 0)} batches"

    def change(self, previous: SourceState | None, files_added: int) -> str:
        return f"batch {self._given('last_batch')}"


class TableState(_State):
    """An Iceberg table: the snapshot the bookmark has read up to."""

    type: Literal["iceberg"] = "iceberg"
    table: str | None = None
    snapshot_id: int | None = None

    def source(self) -> str:
        return self.table or "-"

    def progress(self) -> str:
        return f"snapshot {self.snapshot_id}"

    def latest(self) -> str:
        return f"{self.last_run.get('snapshots', 0)} snapshots"

    def change(self, previous: SourceState | None, files_added: int) -> str:
        before = previous._given("snapshot_id") if isinstance(previous, TableState) else "-"
        return f"snapshot {before} → {self._given('snapshot_id')}"


class VersionState(_State):
    """A Delta Lake table: the version the bookmark has read up to."""

    type: Literal["delta"] = "delta"
    table: str | None = None
    version: int | None = None

    def source(self) -> str:
        return self.table or "-"

    def progress(self) -> str:
        return f"version {self.version}"

    def latest(self) -> str:
        return f"{self.last_run.get('versions', 0)} versions"

    def change(self, previous: SourceState | None, files_added: int) -> str:
        before = previous._given("version") if isinstance(previous, VersionState) else "-"
        return f"version {before} → {self._given('version')}"


class ItemState(_State):
    """A DynamoDB table: the last sequence number read per shard of its stream (none: a
    table without a stream, read whole every run)."""

    type: Literal["dynamodb"] = "dynamodb"
    table: str | None = None
    stream: str | None = None
    shards: dict[str, str] | None = None

    def source(self) -> str:
        return f"table {self.table}"

    def _where(self) -> str:
        if self.stream is None:
            return "no stream: read whole"
        return " ".join(f"{sid}:{seq}" for sid, seq in sorted((self.shards or {}).items())) or "stream start"

    def progress(self) -> str:
        return self._where()

    def latest(self) -> str:
        last = self.last_run
        how = "whole table" if last.get("whole", True) else "changes"
        return f"{last.get('items', 0)} items ({how}), {last.get('deleted', 0)} deleted"

    def change(self, previous: SourceState | None, files_added: int) -> str:
        before = previous._where() if isinstance(previous, ItemState) else "-"
        return f"stream {before} → {self._where()}"


AnyState = FileState | JdbcState | StreamState | TableState | VersionState | ItemState
SourceState = Annotated[AnyState, Field(discriminator="type")]
_ADAPTER: TypeAdapter[AnyState] = TypeAdapter(SourceState)


KNOWN_TYPES = ("files", "jdbc", "kafka", "kinesis", "iceberg", "delta", "dynamodb")


def parse_state(state: dict[str, Any]) -> AnyState:
    """The typed model of a committed state: files when it names no type, or a type
    this release does not know (as ``registry.kind_of_state`` reads it)."""
    named = state.get("type")
    document = {**state, "type": named if named in KNOWN_TYPES else "files"}
    try:
        return _ADAPTER.validate_python(document)
    except ValidationError:  # a field of an unexpected shape: shown as stored, never refused
        if document["type"] == "files":
            return FileState.model_construct(**document)
        if document["type"] == "jdbc":
            return JdbcState.model_construct(**document)
        if document["type"] == "iceberg":
            return TableState.model_construct(**document)
        if document["type"] == "delta":
            return VersionState.model_construct(**document)
        if document["type"] == "dynamodb":
            return ItemState.model_construct(**document)
        return StreamState.model_construct(**document)

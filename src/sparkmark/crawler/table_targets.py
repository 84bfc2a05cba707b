"""Crawling table-format targets: ``DeltaTargets`` and ``IcebergTargets``.

As Glue's crawler does for native Delta tables and for Iceberg tables, the schema comes
from the table's own metadata, not from sampling its files: a Delta table's latest
``metaData`` action in ``_delta_log`` (its commit files, else its last checkpoint), an
Iceberg table's newest ``metadata/*.metadata.json``. No Spark is started. The tables are
kept in the state store's catalog with ``table_type`` ``delta`` or ``ICEBERG`` (and an
Iceberg table's ``metadata_location``), which is how jobs find their format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from fsspec.core import url_to_fs

from ..catalog.models import Column, Table
from ..catalog.store import CatalogStore
from ..engine.fileplan import root_url
from ..sinks.tables import delta_commits

_PRIMITIVES = {"long": "bigint", "integer": "int", "int": "int", "short": "smallint", "byte": "tinyint"}
_ICEBERG_METADATA = re.compile(r"^(?:v(\d+)|(\d+)-[0-9a-f-]+)(?:\.gz)?\.metadata\.json$")


def delta_type(given: Any) -> str:
    """A Delta (Spark JSON) schema type as the catalog writes it (``bigint``, ``struct<a:int>``)."""
    if isinstance(given, str):
        return _PRIMITIVES.get(given, given.replace(" ", ""))
    kind = given.get("type")
    if kind == "struct":
        return "struct<" + ",".join(f"{f['name']}:{delta_type(f['type'])}" for f in given["fields"]) + ">"
    if kind == "array":
        return f"array<{delta_type(given['elementType'])}>"
    if kind == "map":
        return f"map<{delta_type(given['keyType'])},{delta_type(given['valueType'])}>"
    raise ValueError(f"unknown Delta type {given!r}")


def iceberg_type(given: Any) -> str:
    """An Iceberg schema type as the catalog writes it."""
    if isinstance(given, str):
        if given.startswith("decimal"):
            return given.replace(" ", "")
        if given.startswith("fixed") or given == "binary":
            return "binary"
        if given in ("timestamptz", "timestamp", "timestamp_ns", "timestamptz_ns"):
            return "timestamp"
        if given in ("uuid", "string"):
            return "string"
        return _PRIMITIVES.get(given, given)
    kind = given.get("type")
    if kind == "struct":
        return "struct<" + ",".join(f"{f['name']}:{iceberg_type(f['type'])}" for f in given["fields"]) + ">"
    if kind == "list":
        return f"array<{iceberg_type(given['element'])}>"
    if kind == "map":
        return f"map<{iceberg_type(given['key'])},{iceberg_type(given['value'])}>"
    raise ValueError(f"unknown Iceberg type {given!r}")


def delta_metadata(url: str) -> dict[str, Any]:
    """The latest ``metaData`` action of the Delta table at ``url``."""
    fs, root = url_to_fs(url)
    log_dir = f"{root.rstrip('/')}/_delta_log"
    if not fs.exists(log_dir):
        raise ValueError(f"{url} has no _delta_log: it is not a Delta table")
    names = sorted(fs.ls(log_dir, detail=False))
    for _version, name in reversed(delta_commits(url, -1)):
        with fs.open(name, "rt") as handle:
            for line in handle:
                if '"metaData"' in line:
                    found = json.loads(line).get("metaData")
                    if found:
                        return found
    checkpoints = [n for n in names if re.search(r"/\d{20}\.checkpoint(\.\d+\.\d+)?\.parquet$", n)]
    if checkpoints:
        import pyarrow.parquet as pq

        with fs.open(checkpoints[-1], "rb") as handle:
            rows = pq.read_table(handle, columns=["metaData"]).column("metaData").to_pylist()
        for row in rows:
            if row and row.get("schemaString"):
                return row
    raise ValueError(f"{url}: the Delta log holds no table metadata")


def iceberg_metadata(url: str) -> tuple[str, dict[str, Any]]:
    """(location, document) of the newest metadata file of the Iceberg table at ``url``."""
    fs, root = url_to_fs(url)
    folder = f"{root.rstrip('/')}/metadata"
    if not fs.exists(folder):
        raise ValueError(f"{url} has no metadata folder: it is not an Iceberg table")
    versions = []
    for name in fs.ls(folder, detail=False):
        match = _ICEBERG_METADATA.match(name.rsplit("/", 1)[-1])
        if match:
            versions.append((int(match.group(1) or match.group(2)), name))
    if not versions:
        raise ValueError(f"{url}: no *.metadata.json in its metadata folder")
    newest = max(versions)[1]
    with fs.open(newest, "rb", compression="infer") as handle:
        return fs.unstrip_protocol(newest), json.loads(handle.read())


def delta_table(database: str, name: str, url: str, crawl_id: str, crawler: str) -> Table:
    meta = delta_metadata(url)
    schema = json.loads(meta["schemaString"])
    partitions = list(meta.get("partitionColumns") or [])
    fields = {f["name"]: delta_type(f["type"]) for f in schema["fields"]}
    return Table(
        database,
        name,
        url,
        "delta",
        tuple(Column(n, t) for n, t in fields.items() if n not in partitions),
        tuple(Column(n, fields.get(n, "string")) for n in partitions),
        {
            "table_type": "delta",
            "spark.sql.sources.provider": "delta",
            "crawler": crawler,
            "crawl_id": crawl_id,
        },
    )


def iceberg_table(database: str, name: str, url: str, crawl_id: str, crawler: str) -> Table:
    metadata_location, doc = iceberg_metadata(url)
    current = doc.get("current-schema-id", 0)
    schema = next((s for s in doc.get("schemas", []) if s.get("schema-id") == current), doc.get("schema"))
    if not schema:
        raise ValueError(f"{metadata_location} holds no schema")
    return Table(
        database,
        name,
        doc.get("location") or url,
        "iceberg",
        tuple(Column(f["name"], iceberg_type(f["type"])) for f in schema["fields"]),
        (),  # Iceberg's partitioning is hidden: the catalog lists no partition keys
        {
            "table_type": "ICEBERG",
            "metadata_location": metadata_location,
            "crawler": crawler,
            "crawl_id": crawl_id,
        },
    )


def _iceberg_roots(url: str, depth: int) -> list[str]:
    """The Iceberg tables at or under ``url`` (folders holding ``metadata/*.metadata.json``),
    looked for down to ``depth`` folders."""
    fs, root = url_to_fs(url)
    root = root.rstrip("/")
    found = []
    frontier = [(root, 0)]
    while frontier:
        folder, level = frontier.pop()
        if fs.exists(f"{folder}/metadata"):
            found.append(fs.unstrip_protocol(folder))
            continue
        if level >= depth:
            continue
        for child in fs.ls(folder, detail=True):
            if child["type"] == "directory" and not child["name"].rsplit("/", 1)[-1].startswith(("_", ".")):
                frontier.append((child["name"].rstrip("/"), level + 1))
    return sorted(found)


def crawl_table_targets(
    store: CatalogStore,
    database: str,
    prefix: str,
    delta_paths: Iterable[str],
    iceberg_paths: Iterable[str],
    depth: int,
    crawl_id: str,
    crawler: str,
    error: Callable[[str, str], None],
    name_of: Callable[[str, str], str],
) -> tuple[list[str], list[str], set[str]]:
    """Register the Delta tables at ``delta_paths`` and the Iceberg tables under
    ``iceberg_paths``. Returns (tables created, tables updated, names seen); a path that
    is not such a table is reported through ``error(path, message)``; ``name_of(prefix,
    folder)`` names a table as the crawler names a folder's."""
    existing = {t.name for t in store.tables(database)}
    created, updated, seen = [], [], set()
    made: list[Table] = []
    for path in delta_paths:
        url = root_url(path)
        try:
            made.append(delta_table(database, name_of(prefix, url), url, crawl_id, crawler))
        except (ValueError, OSError, KeyError) as exc:
            error(path, str(exc))
    for path in iceberg_paths:
        try:
            roots = _iceberg_roots(root_url(path), depth)
        except OSError as exc:
            error(path, str(exc))
            continue
        if not roots:
            error(path, "no Iceberg table (a folder with metadata/*.metadata.json) was found")
        for url in roots:
            try:
                made.append(iceberg_table(database, name_of(prefix, url), url, crawl_id, crawler))
            except (ValueError, OSError, KeyError) as exc:
                error(url, str(exc))
    for table in made:
        seen.add(table.name)
        changed = store.put_table(table, crawl_id)
        if table.name not in existing:
            created.append(table.qualified)
        elif changed:
            updated.append(table.qualified)
    return created, updated, seen

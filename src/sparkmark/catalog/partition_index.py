"""Glue's partition indexes, used: a GetPartitions expression that reads only an
index's keys is evaluated over the distinct values those keys take (the index's
entries), and only the partitions with matching values are read, through the state
store's database index. Any other expression reads every partition, as without an
index."""

from __future__ import annotations

from ..errors import SparkmarkError
from .expression import keys_read, select_partitions
from .models import Column, Partition, Table
from .store import CatalogStore

MAX_INDEXES = 3  # Glue's limit a table
INDEXABLE = ("string", "int", "bigint", "long", "tinyint", "smallint", "date")  # key types Glue indexes


def check_index(table: Table, keys: list[str], existing: dict[str, list[str]]) -> None:
    """One line naming what is wrong with an index of ``keys`` on ``table``."""
    types = {c.name: c.type.lower() for c in table.partition_keys}
    if not keys:
        raise SparkmarkError("a partition index needs one or more keys")
    for key in keys:
        if key not in types:
            raise SparkmarkError(
                f"{key!r} is not a partition key of {table.qualified} ({', '.join(types) or 'none'})"
            )
        if types[key].split("(")[0] not in INDEXABLE:
            raise SparkmarkError(
                f"partition key {key!r} is a {types[key]}; an index takes {', '.join(INDEXABLE)}"
            )
    if len(existing) >= MAX_INDEXES:
        raise SparkmarkError(
            f"{table.qualified} has {len(existing)} partition indexes, Glue's most for a table"
        )


def matching_partitions(store: CatalogStore, table: Table, expression: str) -> list[Partition]:
    """The table's partitions that satisfy ``expression``, through an index when one
    holds every key the expression reads."""
    if expression and expression.strip():
        read = {k.lower() for k in keys_read(table.partition_keys, expression)}
        for index, keys in sorted(store.partition_indexes(table.database, table.name).items()):
            if read and read <= {k.lower() for k in keys}:
                by_name = {c.name: c for c in table.partition_keys}
                columns = [by_name.get(k, Column(k, "string")) for k in keys]
                values = store.indexed_key_values(table.database, table.name, index)
                hits = select_partitions(columns, [Partition(v, "") for v in values], expression)
                return store.partitions_by_index(table.database, table.name, index, [h.values for h in hits])
    return select_partitions(table.partition_keys, store.partitions(table.database, table.name), expression)

"""Typed records of catalog objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

# The table parameter holding the Glue fields sparkmark keeps but does not act on
# (TableType, Description, Owner, view text …), as JSON.
GLUE_KEY = "sparkmark.glue"


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # Spark SQL type, e.g. "bigint", "string", "struct<a:int>"


@dataclass(frozen=True)
class Table:
    database: str
    name: str
    location: str
    classification: str  # csv, json, parquet, orc, avro, xml
    columns: tuple[Column, ...]
    partition_keys: tuple[Column, ...] = ()
    parameters: dict[str, str] = field(default_factory=dict)

    @property
    def qualified(self) -> str:
        return f"{self.database}.{self.name}"


@dataclass(frozen=True)
class Partition:
    values: tuple[str, ...]
    location: str


@dataclass(frozen=True)
class SchemaVersion:
    database: str
    table: str
    version: int
    columns: tuple[Column, ...]
    partition_keys: tuple[Column, ...]
    created_at: datetime
    crawl_id: str | None


@dataclass(frozen=True)
class Database:
    name: str
    description: str = ""
    location_uri: str = ""
    parameters: dict[str, str] = field(default_factory=dict)
    created_at: datetime | None = None

"""A crawler's definition, with Glue's field names and values."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import ConfigError
from ..tomlfile import read_toml


class UpdateBehaviorKind(StrEnum):
    LOG = "LOG"
    UPDATE_IN_DATABASE = "UPDATE_IN_DATABASE"


class DeleteBehaviorKind(StrEnum):
    LOG = "LOG"
    DELETE_FROM_DATABASE = "DELETE_FROM_DATABASE"
    DEPRECATE_IN_DATABASE = "DEPRECATE_IN_DATABASE"


class RecrawlBehaviorKind(StrEnum):
    CRAWL_EVERYTHING = "CRAWL_EVERYTHING"
    CRAWL_NEW_FOLDERS_ONLY = "CRAWL_NEW_FOLDERS_ONLY"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class S3Target(_Model):
    Path: str
    Exclusions: list[str] = Field(default_factory=list)


class JdbcTarget(_Model):
    ConnectionName: str
    Path: str  # database/schema/table, with % as a wildcard
    Exclusions: list[str] = Field(default_factory=list)


class DeltaTarget(_Model):
    DeltaTables: list[str] = Field(default_factory=list)  # each the folder of one Delta table
    ConnectionName: str | None = None
    WriteManifest: bool = False
    CreateNativeDeltaTable: bool = True


class IcebergTarget(_Model):
    Paths: list[str] = Field(default_factory=list)  # folders holding Iceberg tables
    ConnectionName: str | None = None
    Exclusions: list[str] = Field(default_factory=list)
    MaximumTraversalDepth: int = Field(default=10, ge=1, le=20)


class DynamoDBTarget(_Model):
    Path: str  # the table's name (or ARN)
    scanAll: bool = True  # read every item; false: a first page only
    scanRate: float | None = Field(default=None, ge=0.1, le=1.5)  # share of the read capacity


class TargetsSpec(_Model):
    S3Targets: list[S3Target] = Field(default_factory=list)
    JdbcTargets: list[JdbcTarget] = Field(default_factory=list)
    DeltaTargets: list[DeltaTarget] = Field(default_factory=list)
    IcebergTargets: list[IcebergTarget] = Field(default_factory=list)
    DynamoDBTargets: list[DynamoDBTarget] = Field(default_factory=list)


class SchemaChangePolicySpec(_Model):
    UpdateBehavior: UpdateBehaviorKind = UpdateBehaviorKind.UPDATE_IN_DATABASE
    DeleteBehavior: DeleteBehaviorKind = DeleteBehaviorKind.DEPRECATE_IN_DATABASE


class RecrawlPolicySpec(_Model):
    RecrawlBehavior: RecrawlBehaviorKind = RecrawlBehaviorKind.CRAWL_EVERYTHING


class CrawlerDefinition(_Model):
    Name: str
    DatabaseName: str
    Targets: TargetsSpec
    TablePrefix: str = ""
    Classifiers: list[str] = Field(default_factory=list)  # custom classifiers, tried first
    SchemaChangePolicy: SchemaChangePolicySpec = Field(default_factory=SchemaChangePolicySpec)
    RecrawlPolicy: RecrawlPolicySpec = Field(default_factory=RecrawlPolicySpec)
    Configuration: dict[str, Any] | str | None = None

    @field_validator("Name", "DatabaseName")
    @classmethod
    def _plain(cls, value: str) -> str:
        if not value or not value.replace("_", "").replace("-", "").isalnum():
            raise ValueError("must be letters, digits, '_' or '-'")
        return value

    @field_validator("DatabaseName")
    @classmethod
    def _lower(cls, value: str) -> str:
        return value.lower()  # Glue keeps catalog names in lower case

    @property
    def configuration(self) -> dict[str, Any]:
        if isinstance(self.Configuration, str):
            return json.loads(self.Configuration)
        return dict(self.Configuration or {})

    @property
    def table_level(self) -> int:
        """TableLevelConfiguration: 1 makes the target folder the table; 2 makes each of
        its sub-folders a table; and so on."""
        grouping = self.configuration.get("Grouping", {})
        return int(grouping.get("TableLevelConfiguration", 1))

    @property
    def combine_compatible_schemas(self) -> bool:
        return self.configuration.get("Grouping", {}).get("TableGroupingPolicy") == "CombineCompatibleSchemas"

    @property
    def effective_policy(self) -> SchemaChangePolicySpec:
        """CRAWL_NEW_FOLDERS_ONLY forces LOG behaviours, as on Glue."""
        if self.RecrawlPolicy.RecrawlBehavior is RecrawlBehaviorKind.CRAWL_NEW_FOLDERS_ONLY:
            return SchemaChangePolicySpec(
                UpdateBehavior=UpdateBehaviorKind.LOG, DeleteBehavior=DeleteBehaviorKind.LOG
            )
        return self.SchemaChangePolicy


def load_definition(data: dict[str, Any]) -> CrawlerDefinition:
    try:
        return CrawlerDefinition.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"invalid crawler definition at {where}: {first['msg']}") from None


def load_file(path: Path) -> list[CrawlerDefinition]:
    """A crawler file: a ``[crawler]`` table, or ``[crawlers.NAME]`` tables (as in sparkmark.toml)."""
    try:
        doc = read_toml(path)
    except FileNotFoundError:
        raise ConfigError(f"cannot read {path}: no such file") from None
    if "crawler" in doc:
        return [load_definition(doc["crawler"])]
    crawlers = doc.get("crawlers") or {}
    if not crawlers:
        raise ConfigError(f"{path} has no [crawler] or [crawlers.NAME] table")
    return [load_definition({"Name": name, **body}) for name, body in crawlers.items()]

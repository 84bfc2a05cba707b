"""The Glue Schema Registry, kept in the state store: registries, their schemas, each
schema's versions (numbered from 1, each with a UUID, the id producers put in a record's
header) and the versions' metadata. A version is taken only when its definition is valid
and keeps the schema's compatibility mode (catalog.schema_compatibility); registering a
definition a schema already has answers that version. Streaming sources decode
registry-encoded records with these versions (sources.registry_records)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import BigInteger, Column, MetaData, String, Table, Text, delete, func, insert, select, update

from ..engine.schema import UTCDateTime, utcnow
from ..engine.store import StateStore
from ..errors import AlreadyExists, NotFound, SparkmarkError
from ..state import components
from .schema_compatibility import MODES, check_compatible, check_definition

DEFAULT_REGISTRY = "default-registry"  # where CreateSchema puts a schema given no registry

metadata = MetaData()
registries = Table(
    "sm_schema_registries",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("description", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)
schemas = Table(
    "sm_schemas",
    metadata,
    Column("registry", String(255), primary_key=True),
    Column("name", String(255), primary_key=True),
    Column("data_format", String(16), nullable=False),
    Column("compatibility", String(16), nullable=False),
    Column("description", Text, nullable=False),
    Column("checkpoint", BigInteger, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)
versions = Table(
    "sm_schema_versions",
    metadata,
    Column("version_id", String(36), primary_key=True),
    Column("registry", String(255), nullable=False, index=True),
    Column("schema", String(255), nullable=False),
    Column("number", BigInteger, nullable=False),
    Column("definition", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)
version_metadata = Table(
    "sm_schema_version_metadata",
    metadata,
    Column("version_id", String(36), primary_key=True),
    Column("key", String(128), primary_key=True),
    Column("value", String(256), primary_key=True),
    Column("created_at", UTCDateTime, nullable=False),
)
COMPONENT = components.declare(
    "schema_registry",
    "schema_registry_schema_version",
    metadata,
    [registries, schemas, versions, version_metadata],
)


@dataclass(frozen=True)
class Registry:
    name: str
    description: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class Schema:
    registry: str
    name: str
    data_format: str
    compatibility: str
    description: str
    checkpoint: int
    latest: int  # 0: no version yet
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class SchemaVersion:
    version_id: str
    registry: str
    schema: str
    number: int
    definition: str
    created_at: datetime


class SchemaRegistryStore:
    def __init__(self, state: StateStore):
        self.state = state
        state.open_component(COMPONENT)

    # -------------------------------------------------------------- registries

    def create_registry(self, name: str, description: str = "") -> Registry:
        now = utcnow()
        with self.state.begin() as conn:
            if conn.execute(select(registries.c.name).where(registries.c.name == name)).first():
                raise AlreadyExists(f"registry {name!r} already exists")
            conn.execute(
                insert(registries).values(name=name, description=description, created_at=now, updated_at=now)
            )
        return Registry(name, description, now, now)

    def registry(self, name: str) -> Registry:
        with self.state.connect() as conn:
            row = conn.execute(select(registries).where(registries.c.name == name)).first()
        if row is None:
            raise NotFound(f"registry {name!r} does not exist")
        return Registry(row.name, row.description, row.created_at, row.updated_at)

    def registries(self) -> list[Registry]:
        with self.state.connect() as conn:
            rows = conn.execute(select(registries).order_by(registries.c.name)).all()
        return [Registry(r.name, r.description, r.created_at, r.updated_at) for r in rows]

    def update_registry(self, name: str, description: str) -> None:
        self.registry(name)
        with self.state.begin() as conn:
            conn.execute(
                update(registries)
                .where(registries.c.name == name)
                .values(description=description, updated_at=utcnow())
            )

    def delete_registry(self, name: str) -> None:
        """A registry goes with its schemas and their versions."""
        self.registry(name)
        for found in self.schemas(name):
            self.delete_schema(name, found.name)
        with self.state.begin() as conn:
            conn.execute(delete(registries).where(registries.c.name == name))

    # ------------------------------------------------------------------ schemas

    def _ensure_default(self, registry: str) -> None:
        if registry == DEFAULT_REGISTRY:
            try:
                self.registry(registry)
            except NotFound:
                self.create_registry(registry, "the registry of schemas created without one")

    def create_schema(
        self,
        registry: str,
        name: str,
        data_format: str,
        compatibility: str,
        description: str,
        definition: str | None,
    ) -> tuple[Schema, SchemaVersion | None]:
        self._ensure_default(registry)
        self.registry(registry)
        if compatibility not in MODES:
            raise SparkmarkError(f"compatibility {compatibility!r} is not one of {', '.join(MODES)}")
        if definition is not None:
            check_definition(data_format, definition)
        elif data_format not in ("AVRO", "JSON"):
            check_definition(data_format, "{}")
        now = utcnow()
        with self.state.begin() as conn:
            key = (schemas.c.registry == registry) & (schemas.c.name == name)
            if conn.execute(select(schemas.c.name).where(key)).first():
                raise AlreadyExists(f"schema {name!r} already exists in registry {registry!r}")
            conn.execute(
                insert(schemas).values(
                    registry=registry,
                    name=name,
                    data_format=data_format,
                    compatibility=compatibility,
                    description=description,
                    checkpoint=1,
                    created_at=now,
                    updated_at=now,
                )
            )
        first = self.register_version(registry, name, definition) if definition is not None else None
        return self.schema(registry, name), first

    def schema(self, registry: str, name: str) -> Schema:
        with self.state.connect() as conn:
            row = conn.execute(
                select(schemas).where(schemas.c.registry == registry, schemas.c.name == name)
            ).first()
            latest = conn.execute(
                select(func.max(versions.c.number)).where(
                    versions.c.registry == registry, versions.c.schema == name
                )
            ).scalar()
        if row is None:
            raise NotFound(f"schema {name!r} does not exist in registry {registry!r}")
        return Schema(
            row.registry,
            row.name,
            row.data_format,
            row.compatibility,
            row.description,
            row.checkpoint,
            int(latest or 0),
            row.created_at,
            row.updated_at,
        )

    def schemas(self, registry: str | None = None) -> list[Schema]:
        with self.state.connect() as conn:
            query = select(schemas.c.registry, schemas.c.name).order_by(schemas.c.registry, schemas.c.name)
            if registry is not None:
                query = query.where(schemas.c.registry == registry)
            rows = conn.execute(query).all()
        return [self.schema(r.registry, r.name) for r in rows]

    def update_schema(
        self,
        registry: str,
        name: str,
        *,
        compatibility: str | None = None,
        description: str | None = None,
        checkpoint: int | None = None,
    ) -> None:
        found = self.schema(registry, name)
        values: dict[str, object] = {"updated_at": utcnow()}
        if compatibility is not None:
            if compatibility not in MODES:
                raise SparkmarkError(f"compatibility {compatibility!r} is not one of {', '.join(MODES)}")
            values["compatibility"] = compatibility
        if description is not None:
            values["description"] = description
        if checkpoint is not None:
            if not 1 <= checkpoint <= max(found.latest, 1):
                raise SparkmarkError(f"schema {name!r} has no version {checkpoint} to make its checkpoint")
            values["checkpoint"] = checkpoint
        with self.state.begin() as conn:
            conn.execute(
                update(schemas).where(schemas.c.registry == registry, schemas.c.name == name).values(**values)
            )

    def delete_schema(self, registry: str, name: str) -> None:
        self.schema(registry, name)
        ids = [v.version_id for v in self.versions(registry, name)]
        with self.state.begin() as conn:
            conn.execute(delete(version_metadata).where(version_metadata.c.version_id.in_(ids)))
            conn.execute(delete(versions).where(versions.c.registry == registry, versions.c.schema == name))
            conn.execute(delete(schemas).where(schemas.c.registry == registry, schemas.c.name == name))

    # ----------------------------------------------------------------- versions

    def register_version(self, registry: str, name: str, definition: str) -> SchemaVersion:
        """A new version, checked against the schema's mode; a definition the schema
        already has (equal once parsed) gives that version."""
        found = self.schema(registry, name)
        parsed = check_definition(found.data_format, definition)
        existing = self.versions(registry, name)
        for version in existing:
            if json.loads(version.definition) == json.loads(definition):
                return version
        earlier = [
            (v.number, check_definition(found.data_format, v.definition))
            for v in existing
            if v.number >= found.checkpoint
        ]
        check_compatible(found.compatibility, found.data_format, parsed, earlier)
        made = SchemaVersion(str(uuid.uuid4()), registry, name, found.latest + 1, definition, utcnow())
        with self.state.begin() as conn:
            conn.execute(
                insert(versions).values(
                    version_id=made.version_id,
                    registry=registry,
                    schema=name,
                    number=made.number,
                    definition=definition,
                    created_at=made.created_at,
                )
            )
        return made

    def versions(self, registry: str, name: str) -> list[SchemaVersion]:
        with self.state.connect() as conn:
            rows = conn.execute(
                select(versions)
                .where(versions.c.registry == registry, versions.c.schema == name)
                .order_by(versions.c.number)
            ).all()
        return [
            SchemaVersion(r.version_id, r.registry, r.schema, r.number, r.definition, r.created_at)
            for r in rows
        ]

    def version(self, registry: str, name: str, number: int | None = None) -> SchemaVersion:
        """Version ``number``, or the latest."""
        found = self.versions(registry, name)
        chosen = [v for v in found if number is None or v.number == number]
        if not chosen:
            what = f"version {number}" if number is not None else "any version"
            raise NotFound(f"schema {name!r} of registry {registry!r} has no {what}")
        return chosen[-1]

    def version_by_id(self, version_id: str) -> SchemaVersion:
        with self.state.connect() as conn:
            r = conn.execute(select(versions).where(versions.c.version_id == version_id)).first()
        if r is None:
            raise NotFound(f"schema version {version_id} does not exist")
        return SchemaVersion(r.version_id, r.registry, r.schema, r.number, r.definition, r.created_at)

    def delete_versions(self, registry: str, name: str, numbers: list[int]) -> list[tuple[int, str]]:
        """Delete versions; returns (number, why) for each that could not be: a missing
        one, or the schema's checkpoint (Glue keeps it)."""
        found = self.schema(registry, name)
        have = {v.number: v for v in self.versions(registry, name)}
        errors = []
        for number in numbers:
            if number not in have:
                errors.append((number, "no such version"))
            elif number == found.checkpoint:
                errors.append((number, "the schema's checkpoint version cannot be deleted"))
            else:
                with self.state.begin() as conn:
                    conn.execute(delete(versions).where(versions.c.version_id == have[number].version_id))
                    conn.execute(
                        delete(version_metadata).where(
                            version_metadata.c.version_id == have[number].version_id
                        )
                    )
        return errors

    # ----------------------------------------------------------------- metadata

    def put_metadata(self, version_id: str, key: str, value: str) -> None:
        with self.state.begin() as conn:
            row = (version_metadata.c.version_id == version_id) & (version_metadata.c.key == key)
            if conn.execute(
                select(version_metadata.c.key).where(row & (version_metadata.c.value == value))
            ).first():
                raise AlreadyExists(f"metadata {key}={value} is already on version {version_id}")
            conn.execute(
                insert(version_metadata).values(
                    version_id=version_id, key=key, value=value, created_at=utcnow()
                )
            )

    def remove_metadata(self, version_id: str, key: str, value: str) -> None:
        with self.state.begin() as conn:
            gone = conn.execute(
                delete(version_metadata).where(
                    version_metadata.c.version_id == version_id,
                    version_metadata.c.key == key,
                    version_metadata.c.value == value,
                )
            ).rowcount
        if not gone:
            raise NotFound(f"metadata {key}={value} is not on version {version_id}")

    def metadata_of(self, version_id: str) -> dict[str, list[tuple[str, datetime]]]:
        with self.state.connect() as conn:
            rows = conn.execute(
                select(version_metadata)
                .where(version_metadata.c.version_id == version_id)
                .order_by(version_metadata.c.created_at)
            ).all()
        found: dict[str, list[tuple[str, datetime]]] = {}
        for r in rows:
            found.setdefault(r.key, []).append((r.value, r.created_at))
        return found

    # ---------------------------------------------------------------- reading

    def reference(self, given: dict) -> tuple[Schema, SchemaVersion, list[SchemaVersion]]:
        """A table's ``SchemaReference`` (``SchemaId`` by ARN or names, and
        ``SchemaVersionId`` or ``SchemaVersionNumber``, else the latest): the schema, the
        version records are read as, and every version (the ones records were written with)."""
        if given.get("SchemaVersionId"):
            chosen = self.version_by_id(given["SchemaVersionId"])
            registry, name = chosen.registry, chosen.schema
        else:
            schema_id = given.get("SchemaId") or {}
            arn = schema_id.get("SchemaArn") or ""
            if arn:
                registry, _, name = arn.rpartition(":schema/")[2].partition("/")
            else:
                registry, name = (
                    schema_id.get("RegistryName") or DEFAULT_REGISTRY,
                    schema_id.get("SchemaName") or "",
                )
            number = given.get("SchemaVersionNumber")
            chosen = self.version(registry, name, int(number) if number else None)
        return self.schema(registry, name), chosen, self.versions(registry, name)

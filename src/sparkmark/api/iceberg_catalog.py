"""The Glue catalog seen as an Iceberg catalog: what the Iceberg REST endpoint serves.

Its namespaces are the Glue catalog's databases and its tables are the Glue tables of
``table_type=ICEBERG``, kept as Iceberg's own GlueCatalog keeps them (the table's
``metadata_location`` and ``previous_metadata_location`` among its parameters, its
columns with their Iceberg field ids). So a table made over REST is a Glue table that
jobs, crawlers and GetTable see, and a table made by Iceberg's GlueCatalog in a Glue
job is loadable over REST.

PyIceberg does the Iceberg work: new table metadata, applying a commit's requirements
and updates, writing the metadata file. What is sparkmark's own is the catalog pointer:
a commit swaps the table's ``metadata_location`` in one compare-and-swap of the state
store (:meth:`CatalogStore.put_table` with ``replacing``), so of two writers that both
started from one version exactly one commits and the other gets ``CommitFailedException``.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

from pyiceberg.catalog import MetastoreCatalog
from pyiceberg.catalog.glue import _construct_table_input
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchIcebergTableError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.io import load_file_io
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.serializers import FromInputFile
from pyiceberg.table import CommitTableResponse, Table
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder

from ..catalog.models import Database
from ..catalog.models import Table as GlueTable
from ..catalog.store import TableChanged
from ..errors import AlreadyExists, NotFound
from .catalog import VERSION_KEY, table_from_input, version_id

if TYPE_CHECKING:
    from pyiceberg.schema import Schema
    from pyiceberg.table.update import TableRequirement, TableUpdate
    from pyiceberg.typedef import Identifier, Properties

    from .service import Service

log = logging.getLogger("sparkmark.api.iceberg")
logging.getLogger("pyiceberg").setLevel(logging.WARNING)  # not a line per request ("Loaded FileIO")

METADATA_LOCATION = "metadata_location"
PREVIOUS_METADATA_LOCATION = "previous_metadata_location"


def is_iceberg(table: GlueTable) -> bool:
    return str(table.parameters.get("table_type", "")).lower() == "iceberg" and bool(
        table.parameters.get(METADATA_LOCATION)
    )


def file_io_properties(service: Service) -> dict[str, str]:
    """How the endpoint reads and writes metadata files: PyArrow's file systems (local
    and S3, with the process's AWS credentials), at the S3 endpoint sparkmark is
    configured with. (PyIceberg's fsspec FileIO passes s3fs its keys twice with the
    s3fs sparkmark pins.)"""
    props = {"py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"}
    if service.settings.aws_endpoint_url_s3:
        props["s3.endpoint"] = service.settings.aws_endpoint_url_s3
    if service.settings.aws_region:
        props["s3.region"] = service.settings.aws_region
    return props


class GlueIcebergCatalog(MetastoreCatalog):
    """An Iceberg catalog over the state store's Glue catalog (one per endpoint)."""

    def __init__(self, service: Service):
        super().__init__("sparkmark", **file_io_properties(service))
        self.service = service
        self.store = service.catalog

    # ------------------------------------------------------------ namespaces

    def _database(self, namespace: str | Identifier) -> str:
        return self.namespace_to_string(namespace, NoSuchNamespaceError).lower()

    def create_namespace(self, namespace: str | Identifier, properties: Properties = ...) -> None:  # type: ignore[assignment]
        props = dict(properties) if isinstance(properties, dict) else {}
        name = self._database(namespace)
        location = props.pop("location", "")
        comment = props.pop("comment", "")
        try:
            self.store.put_database(Database(name, comment, location, props), create=True)
        except AlreadyExists:
            raise NamespaceAlreadyExistsError(f"Namespace already exists: {name}") from None

    def load_namespace_properties(self, namespace: str | Identifier) -> Properties:
        name = self._database(namespace)
        try:
            db = self.store.database(name)
        except NotFound:
            raise NoSuchNamespaceError(f"Namespace does not exist: {name}") from None
        props = dict(db.parameters)
        if db.location_uri:
            props["location"] = db.location_uri
        if db.description:
            props["comment"] = db.description
        return props

    def update_namespace_properties(
        self,
        namespace: str | Identifier,
        removals: set[str] | None = None,
        updates: Properties = ...,  # type: ignore[assignment]
    ):
        name = self._database(namespace)
        current = self.load_namespace_properties(name)
        summary, props = self._get_updated_props_and_update_summary(
            current, removals, dict(updates) if isinstance(updates, dict) else {}
        )
        location = props.pop("location", "")
        comment = props.pop("comment", "")
        self.store.put_database(Database(name, comment, location, props), create=False)
        return summary

    def drop_namespace(self, namespace: str | Identifier) -> None:
        name = self._database(namespace)
        self.load_namespace_properties(name)
        if self.store.tables(name):
            raise NamespaceNotEmptyError(f"Namespace {name} is not empty: drop its tables first")
        self.store.drop_database(name)

    def list_namespaces(self, namespace: str | Identifier = ()) -> list[Identifier]:
        if namespace and self.identifier_to_tuple(namespace):
            self.load_namespace_properties(namespace)
            return []  # Glue's namespaces have one level
        return [(name,) for name in self.store.databases()]

    # ------------------------------------------------------------ tables

    def _names(
        self, identifier: str | Identifier, err: type[ValueError] | type[NoSuchTableError] = ValueError
    ) -> tuple[str, str]:
        """(database, table) as Glue names them: in lower case."""
        database, name = self.identifier_to_database_and_table(identifier, err)
        return database.lower(), name.lower()

    def _glue_table(self, identifier: str | Identifier) -> GlueTable:
        database, name = self._names(identifier, NoSuchTableError)
        try:
            self.store.database(database)
        except NotFound:  # a table's answer, as Iceberg's own catalogs give it: clients
            # fall back on it (Spark reads ``db.t.history`` as a metadata table after it)
            raise NoSuchTableError(
                f"Table does not exist: {database}.{name} (no namespace {database})"
            ) from None
        try:
            return self.store.table(database, name)
        except NotFound:
            raise NoSuchTableError(f"Table does not exist: {database}.{name}") from None

    def _iceberg(self, glue: GlueTable) -> Table:
        if not is_iceberg(glue):
            raise NoSuchIcebergTableError(
                f"{glue.qualified} is a Glue table of classification {glue.classification}, not an Iceberg "
                "table: read it through the Glue API or a Glue job"
            )
        location = glue.parameters[METADATA_LOCATION]
        io = load_file_io(properties=self.properties, location=location)
        try:
            metadata = FromInputFile.table_metadata(io.new_input(location))
        except FileNotFoundError:  # Iceberg's own catalogs' words, which clients match
            raise FileNotFoundError(f"Failed to open input stream for file: {location}") from None
        return Table(
            identifier=(glue.database, glue.name),
            metadata=metadata,
            metadata_location=location,
            io=io,
            catalog=self,
        )

    def load_table(self, identifier: str | Identifier) -> Table:
        return self._iceberg(self._glue_table(identifier))

    def list_tables(self, namespace: str | Identifier) -> list[Identifier]:
        name = self._database(namespace)
        self.load_namespace_properties(name)
        return [(t.database, t.name) for t in self.store.tables(name) if is_iceberg(t)]

    def _record(
        self, database: str, name: str, metadata_location: str, table: Table | Any, old: GlueTable | None
    ) -> None:
        """The Glue table for ``table``'s new metadata: made new, or swapped for ``old``."""
        previous = old.parameters.get(METADATA_LOCATION) if old is not None else None
        given = _construct_table_input(
            table_name=name,
            metadata_location=metadata_location,
            properties=table.metadata.properties,
            metadata=table.metadata,
            glue_table={
                "Parameters": {k: v for k, v in old.parameters.items() if not k.startswith("sparkmark.")}
            }
            if old is not None
            else None,
            prev_metadata_location=previous,
        )
        glue = table_from_input(database, dict(given))
        # Glue's VersionId moves with every change, so Iceberg's GlueCatalog writing the same
        # table (its optimistic lock is that VersionId) sees a REST commit as a change.
        if old is None:
            glue.parameters[VERSION_KEY] = "1"
            self.store.put_table(glue, new=True)
        else:
            kept = self.store.versions(old.database, old.name)
            glue.parameters[VERSION_KEY] = str(
                int(version_id(old, kept[-1].version if kept else None) or 0) + 1
            )
            self.store.put_table(glue, replacing=old)

    def create_table(
        self,
        identifier: str | Identifier,
        schema: Schema | Any,
        location: str | None = None,
        partition_spec: PartitionSpec = UNPARTITIONED_PARTITION_SPEC,
        sort_order: SortOrder = UNSORTED_SORT_ORDER,
        properties: Properties = ...,  # type: ignore[assignment]
    ) -> Table:
        props = dict(properties) if isinstance(properties, dict) else {}
        database, name = self._names(identifier)
        self.load_namespace_properties(database)
        try:
            self.store.table(database, name)
            raise TableAlreadyExistsError(f"Table already exists: {database}.{name}")
        except NotFound:
            pass
        staged = self._create_staged_table(
            (database, name), schema, location, partition_spec, sort_order, props
        )
        self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
        try:
            self._record(database, name, staged.metadata_location, staged, None)
        except AlreadyExists:
            self._forget(staged)
            raise TableAlreadyExistsError(f"Table already exists: {database}.{name}") from None
        return Table((database, name), staged.metadata, staged.metadata_location, staged.io, self)

    def _get_default_warehouse_location(self, database_name: str, table_name: str) -> str:
        props = self.load_namespace_properties(database_name)
        if props.get("location"):
            return f"{props['location'].rstrip('/')}/{table_name}"
        warehouse = self.service.settings.iceberg_warehouse
        if warehouse:
            return f"{warehouse.rstrip('/')}/{database_name}/{table_name}"
        raise ValueError(
            f"no location for {database_name}.{table_name}: give the table a location, or its database a "
            "LocationUri (the namespace's `location` property), or set SPARKMARK_ICEBERG_WAREHOUSE"
        )

    def register_table(
        self, identifier: str | Identifier, metadata_location: str, overwrite: bool = False
    ) -> Table:
        database, name = self._names(identifier)
        self.load_namespace_properties(database)
        io = load_file_io(properties=self.properties, location=metadata_location)
        metadata = FromInputFile.table_metadata(io.new_input(metadata_location))
        table = Table((database, name), metadata, metadata_location, io, self)
        old = None
        with contextlib.suppress(NotFound):
            old = self.store.table(database, name)
        if old is not None and not overwrite:
            raise TableAlreadyExistsError(f"Table already exists: {database}.{name}")
        self._record(database, name, metadata_location, table, old)
        return table

    def commit_table(
        self, table: Table, requirements: tuple[TableRequirement, ...], updates: tuple[TableUpdate, ...]
    ) -> CommitTableResponse:
        return self.commit(table.name(), requirements, updates)

    def commit(
        self,
        identifier: str | Identifier,
        requirements: tuple[TableRequirement, ...],
        updates: tuple[TableUpdate, ...],
        *,
        must_exist: bool = False,
    ) -> CommitTableResponse:
        """Apply a commit to the table as the catalog has it now, and swap its pointer;
        with ``must_exist`` (the REST commit), a table that is not there is NoSuchTable
        rather than one to create."""
        database, name = self._names(identifier, NoSuchTableError)
        old: GlueTable | None
        current: Table | None
        try:
            old = self._glue_table((database, name))
            current = self._iceberg(old)
        except NoSuchTableError:
            if must_exist:
                raise
            old, current = None, None
        try:  # the wording of Iceberg's own catalogs, which clients match
            staged = self._update_and_stage_table(current, (database, name), requirements, updates)
        except CommitFailedException as exc:
            raise CommitFailedException(f"Cannot commit {database}.{name}: {exc}") from None
        if current is not None and staged.metadata == current.metadata:
            return CommitTableResponse(metadata=current.metadata, metadata_location=current.metadata_location)
        self._write_metadata(staged.metadata, staged.io, staged.metadata_location)
        try:
            self._record(database, name, staged.metadata_location, staged, old)
        except (TableChanged, AlreadyExists) as exc:
            self._forget(staged)
            raise CommitFailedException(
                f"Cannot commit {database}.{name}: {exc}: load the table again and retry the commit"
            ) from None
        return CommitTableResponse(metadata=staged.metadata, metadata_location=staged.metadata_location)

    @staticmethod
    def _forget(staged: Table) -> None:
        """A metadata file no catalog pointer will name: removed, so nothing reads it."""
        try:
            staged.io.delete(staged.metadata_location)
        except Exception:  # noqa: BLE001 - its loss is only a stray file; the refusal is what matters
            log.warning("could not remove the unused metadata file %s", staged.metadata_location)

    def drop_table(self, identifier: str | Identifier) -> None:
        glue = self._glue_table(identifier)
        if not is_iceberg(glue):
            raise NoSuchIcebergTableError(f"{glue.qualified} is not an Iceberg table")
        self.store.drop_table(glue.database, glue.name)

    def rename_table(self, from_identifier: str | Identifier, to_identifier: str | Identifier) -> Table:
        glue = self._glue_table(from_identifier)
        if not is_iceberg(glue):
            raise NoSuchIcebergTableError(f"{glue.qualified} is not an Iceberg table")
        database, name = self._names(to_identifier)
        self.load_namespace_properties(database)
        try:
            self.store.rename_table(glue.database, glue.name, database, name)
        except AlreadyExists:
            raise TableAlreadyExistsError(f"Table already exists: {database}.{name}") from None
        return self.load_table((database, name))

    # ------------------------------------------------------------ views (none here)

    def list_views(self, namespace: str | Identifier) -> list[Identifier]:
        return []

    def drop_view(self, identifier: str | Identifier) -> None:
        raise NotImplementedError("views are not served by sparkmark's Iceberg REST endpoint")

    def view_exists(self, identifier: str | Identifier) -> bool:
        return False

    def load_view(self, identifier: str | Identifier):
        raise NotImplementedError("views are not served by sparkmark's Iceberg REST endpoint")

    def register_view(self, identifier: str | Identifier, metadata_location: str):
        raise NotImplementedError("views are not served by sparkmark's Iceberg REST endpoint")

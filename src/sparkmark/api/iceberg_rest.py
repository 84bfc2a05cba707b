"""Glue's Iceberg REST endpoint: the Iceberg REST catalog protocol under ``/iceberg`` on
``sparkmark api``, over the Glue catalog (:mod:`sparkmark.api.iceberg_catalog`).

Requests are signed as the Glue API's are (SigV4 with the endpoint's token as the
secret key; Glue's clients use the signing name ``glue``), and pass the same Host,
Origin and size guard. Paths are Glue's: ``/iceberg/v1/config``, then
``/iceberg/v1/catalogs/{catalog}/namespaces/...`` where the catalog is the warehouse a
client names (Glue's account id); the plain ``/iceberg/v1/namespaces/...`` is served
too. Where Glue's endpoint departs from the REST specification this follows Glue
(docs/iceberg-rest.md lists each departure): namespaces have one level, staged
creation is refused, there are no views and no multi-table transactions.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from .protocol import GlueApiError
from .service import CATALOG_ID

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from .iceberg_catalog import GlueIcebergCatalog
    from .service import Service

log = logging.getLogger("sparkmark.api.iceberg")

PREFIX = "/iceberg/v1"
# What this endpoint serves, in the form GET /v1/config lists it (clients skip the rest).
ENDPOINTS = [
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/tables/rename",
]


class RestError(Exception):
    """An answer in the REST catalog's error model: ``{"error": {message, type, code}}``."""

    def __init__(self, status: int, kind: str, message: str):
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def _rest_error(exc: BaseException) -> RestError:
    """PyIceberg's exceptions (and sparkmark's) as the specification names them."""
    from pydantic import ValidationError
    from pyiceberg import exceptions as ice

    from ..errors import SparkmarkError

    table: list[tuple[type[BaseException] | tuple[type[BaseException], ...], int, str]] = [
        (ice.NoSuchNamespaceError, 404, "NoSuchNamespaceException"),
        ((ice.NoSuchTableError, ice.NoSuchIcebergTableError), 404, "NoSuchTableException"),
        ((ice.NamespaceAlreadyExistsError, ice.TableAlreadyExistsError), 409, "AlreadyExistsException"),
        (ice.NamespaceNotEmptyError, 409, "NamespaceNotEmptyException"),
        (ice.CommitFailedException, 409, "CommitFailedException"),
        (NotImplementedError, 406, "UnsupportedOperationException"),
        (FileNotFoundError, 404, "NotFoundException"),  # a table whose metadata file is gone
        ((ValueError, ValidationError, SparkmarkError, KeyError, TypeError), 400, "BadRequestException"),
    ]
    for kinds, status, name in table:
        if isinstance(exc, kinds):
            message = str(exc).splitlines()[0] if str(exc) else name
            if isinstance(exc, ValidationError):
                first = exc.errors()[0]
                where = ".".join(str(x) for x in first.get("loc", ()))
                message = (
                    f"the request does not fit the REST catalog's schema: {where}: {first.get('msg', '')}"
                )
            return RestError(status, name, message)
    raise exc


def render(err: RestError) -> bytes:
    return json.dumps({"error": {"message": err.message, "type": err.kind, "code": err.status}}).encode()


def _namespace(part: str, creating: bool = False, table: str | None = None) -> tuple[str, ...]:
    """A namespace in a path: its levels joined by the unit separator (0x1F). Glue's
    have one level: making a deeper one is refused, and looking one up finds nothing
    (a table in one is no table: Spark's client then reads ``db.t.history`` as the
    metadata table of ``db.t``)."""
    levels = tuple(part.split("\x1f"))
    if len(levels) != 1 or not levels[0]:
        name = ".".join(levels)
        if creating:
            raise RestError(
                400,
                "BadRequestException",
                f"namespace {name!r}: Glue's namespaces are databases, of one level",
            )
        if table is not None:
            raise RestError(404, "NoSuchTableException", f"Table does not exist: {name}.{table}")
        raise RestError(
            404, "NoSuchNamespaceException", f"Namespace does not exist: {name} (Glue's have one level)"
        )
    return levels


class IcebergRest:
    """The REST catalog's operations over one :class:`GlueIcebergCatalog`."""

    def __init__(self, service: Service):
        self.service = service
        self._catalog: GlueIcebergCatalog | None = None

    @property
    def catalog(self) -> GlueIcebergCatalog:
        if self._catalog is None:
            from .iceberg_catalog import GlueIcebergCatalog

            self._catalog = GlueIcebergCatalog(self.service)
        return self._catalog

    def call(self, method: str, path: str, query: dict[str, str], body: bytes) -> tuple[int, Any]:
        """Answer one request: (status, JSON document or None for no body)."""
        parts = [p for p in path.split("/") if p]
        if parts == ["config"]:
            return self._config(query)
        if len(parts) >= 2 and parts[0] == "catalogs":
            self._check_catalog(parts[1])
            parts = parts[2:]
        try:
            return self._route(method, parts, query, body)
        except RestError:
            raise
        except Exception as exc:  # noqa: BLE001 - PyIceberg's and sparkmark's errors, in the spec's names
            raise _rest_error(exc) from None

    @staticmethod
    def _check_catalog(catalog: str) -> None:
        account = catalog.split(":", 1)[0]
        if account not in (CATALOG_ID, "") and not (account.isdigit() and len(account) == 12):
            raise RestError(
                404, "NoSuchCatalogException", f"catalog {catalog!r}: the warehouse is an account id"
            )
        if ":" in catalog:
            raise RestError(
                404,
                "NoSuchCatalogException",
                f"catalog {catalog!r}: sparkmark has one catalog, the account's default one (no S3 Tables catalogs)",
            )

    @staticmethod
    def _config(query: dict[str, str]) -> tuple[int, Any]:
        warehouse = query.get("warehouse") or CATALOG_ID
        IcebergRest._check_catalog(warehouse)
        return 200, {"defaults": {}, "overrides": {"prefix": f"catalogs/{warehouse}"}, "endpoints": ENDPOINTS}

    def _route(self, method: str, parts: list[str], query: dict[str, str], body: bytes) -> tuple[int, Any]:
        cat = self.catalog
        match method, parts:
            case "GET", ["namespaces"]:
                parent = query.get("parent")
                found = cat.list_namespaces(_namespace(parent) if parent else ())
                return 200, self._paged("namespaces", [list(n) for n in found], query)
            case "POST", ["namespaces"]:
                doc = _json(body)
                namespace = tuple(
                    str(level).lower() for level in doc.get("namespace") or ()
                )  # as Glue names it
                _namespace("\x1f".join(namespace), creating=True)
                cat.create_namespace(namespace, doc.get("properties") or {})
                return 200, {
                    "namespace": list(namespace),
                    "properties": cat.load_namespace_properties(namespace),
                }
            case "GET", ["namespaces", ns]:
                return 200, {
                    "namespace": list(_namespace(ns)),
                    "properties": cat.load_namespace_properties(_namespace(ns)),
                }
            case "HEAD", ["namespaces", ns]:
                cat.load_namespace_properties(_namespace(ns))
                return 204, None
            case "DELETE", ["namespaces", ns]:
                cat.drop_namespace(_namespace(ns))
                return 204, None
            case "POST", ["namespaces", ns, "properties"]:
                doc = _json(body)
                summary = cat.update_namespace_properties(
                    _namespace(ns), set(doc.get("removals") or []), doc.get("updates") or {}
                )
                return 200, {
                    "updated": summary.updated,
                    "removed": summary.removed,
                    "missing": summary.missing,
                }
            case "GET", ["namespaces", ns, "tables"]:
                names = [{"namespace": list(t[:-1]), "name": t[-1]} for t in cat.list_tables(_namespace(ns))]
                return 200, self._paged("identifiers", names, query)
            case "GET", ["namespaces", ns, "views"]:
                cat.load_namespace_properties(_namespace(ns))
                return 200, {"identifiers": []}
            case "POST", ["namespaces", ns, "tables"]:
                return 200, self._create(_namespace(ns), body)
            case "POST", ["namespaces", ns, "register"]:
                doc = _json(body)
                table = cat.register_table((*_namespace(ns), doc["name"]), doc["metadata-location"])
                return 200, _loaded(table)
            case "GET", ["namespaces", ns, "tables", name]:
                return 200, _loaded(cat.load_table((*_namespace(ns, table=name), name)))
            case "HEAD", ["namespaces", ns, "tables", name]:
                cat.load_table((*_namespace(ns, table=name), name))
                return 204, None
            case "POST", ["namespaces", ns, "tables", name]:
                return 200, self._commit((*_namespace(ns, table=name), name), body)
            case "DELETE", ["namespaces", ns, "tables", name]:
                identifier = (*_namespace(ns, table=name), name)
                if query.get("purgeRequested", "false").lower() == "true":
                    cat.purge_table(identifier)
                else:
                    cat.drop_table(identifier)
                return 204, None
            case "POST", ["namespaces", ns, "tables", name, "metrics"]:
                cat.load_table((*_namespace(ns), name))  # reports are taken, not kept
                return 204, None
            case "POST", ["tables", "rename"]:
                doc = _json(body)
                source, dest = doc["source"], doc["destination"]
                cat.rename_table(
                    (*_namespace("\x1f".join(source["namespace"])), source["name"]),
                    (*_namespace("\x1f".join(dest["namespace"])), dest["name"]),
                )
                return 204, None
            case "POST", ["transactions", "commit"]:
                raise NotImplementedError("multi-table transactions are not served (nor by Glue's endpoint)")
        raise RestError(
            404,
            "NotFoundException",
            f"{method} /iceberg/v1/{'/'.join(parts)} is not an operation served here",
        )

    @staticmethod
    def _paged(key: str, items: list[Any], query: dict[str, str]) -> dict[str, Any]:
        if "pageSize" not in query and "pageToken" not in query:
            return {key: items}
        try:
            start = int(query.get("pageToken") or 0)
            size = int(query.get("pageSize") or 100)
        except ValueError:
            raise RestError(400, "BadRequestException", "pageToken is not one this endpoint gave") from None
        chunk = items[start : start + size]
        answer: dict[str, Any] = {key: chunk}
        if start + size < len(items):
            answer["next-page-token"] = str(start + size)
        return answer

    def _create(self, namespace: tuple[str, ...], body: bytes) -> dict[str, Any]:
        from pyiceberg.catalog.rest import CreateTableRequest
        from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
        from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

        doc = {"location": None, "partition-spec": None, "write-order": None, **_json(body)}
        request = CreateTableRequest.model_validate(doc)
        if request.stage_create:
            raise NotImplementedError(
                "staged table creation (stage-create) is not served, as Glue's endpoint does not serve it: "
                "create the table, then commit to it"
            )
        table = self.catalog.create_table(
            (*namespace, request.name),
            request.table_schema,
            request.location,
            request.partition_spec or UNPARTITIONED_PARTITION_SPEC,
            request.write_order or UNSORTED_SORT_ORDER,
            request.properties,
        )
        return _loaded(table)

    def _commit(self, identifier: tuple[str, ...], body: bytes) -> dict[str, Any]:
        from pyiceberg.table import CommitTableRequest

        doc = _json(body)  # the identifier is optional in the spec: the path names the table
        doc.setdefault("identifier", {"namespace": list(identifier[:-1]), "name": identifier[-1]})
        request = CommitTableRequest.model_validate(doc)
        # A commit names a table that exists, else the spec's 404.
        response = self.catalog.commit(
            identifier, tuple(request.requirements), tuple(request.updates), must_exist=True
        )
        return {
            "metadata-location": response.metadata_location,
            "metadata": json.loads(response.metadata.model_dump_json()),
        }


def _json(body: bytes) -> dict[str, Any]:
    try:
        doc = json.loads(body or b"{}")
    except ValueError:
        raise RestError(400, "BadRequestException", "the request body is not JSON") from None
    if not isinstance(doc, dict):
        raise RestError(400, "BadRequestException", "the request body is not a JSON object")
    return doc


def _loaded(table: Any) -> dict[str, Any]:
    """The spec's LoadTableResult. No credentials are vended: clients read the table's
    files with their own S3 settings, as with Glue's endpoint outside Lake Formation."""
    return {
        "metadata-location": table.metadata_location,
        "metadata": json.loads(table.metadata.model_dump_json()),
        "config": {},
    }


Verify = Callable[["Request", bytes], Awaitable[None]]


def route(service: Service, verify: Verify):
    """The Starlette route serving ``/iceberg/v1/...``; ``verify`` checks a request's
    signature (raising GlueApiError) as the Glue API's requests are checked."""
    from starlette.responses import Response
    from starlette.routing import Route

    rest = IcebergRest(service)

    async def answer(request: Request) -> Response:
        body = await request.body()
        path = request.path_params["path"]
        try:
            try:
                await verify(request, body)
            except GlueApiError as exc:
                kind = "NotAuthorizedException" if exc.status == 403 else exc.code
                raise RestError(exc.status, kind, exc.message) from None
            query = {k: v[-1] for k, v in parse_qs(request.url.query).items()}
            status, doc = await asyncio.to_thread(rest.call, request.method, path, query, body)
        except RestError as err:
            log.info("iceberg %s %s: %s %s", request.method, path, err.kind, err.message)
            content = b"" if request.method == "HEAD" else render(err)
            return Response(content, status_code=err.status, media_type="application/json")
        except Exception:  # every request is answered, in the spec's error model
            log.exception("iceberg %s %s failed", request.method, path)
            failure = RestError(
                500, "InternalServerError", f"{request.method} {path} failed inside sparkmark"
            )
            return Response(render(failure), status_code=500, media_type="application/json")
        if doc is None:
            return Response(status_code=status)
        return Response(json.dumps(doc), status_code=status, media_type="application/json")

    return Route(PREFIX + "/{path:path}", answer, methods=["GET", "POST", "DELETE", "HEAD"])

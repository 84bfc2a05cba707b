"""The Iceberg REST endpoint's catalog, in this process with no JVM: a SQLite state store
and tables on local disk. The operations answer as the Iceberg REST catalog
specification (open-api/rest-catalog-open-api.yaml) says, with Glue's departures from
it; a commit is a compare-and-swap of the table's metadata location. The clients
nobody here wrote are driven over HTTP in tests/test_iceberg_rest.py."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from sparkmark.api.iceberg_rest import ENDPOINTS, IcebergRest, RestError
from sparkmark.api.service import CATALOG_ID, Service
from sparkmark.catalog.models import Column, Table
from sparkmark.catalog.store import CatalogStore, TableChanged
from sparkmark.engine.store import StateStore
from sparkmark.errors import AlreadyExists
from sparkmark.settings import Settings

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "city", "required": False, "type": "string"},
    ],
}


@pytest.fixture
def rest(tmp_path):
    config = tmp_path / "sparkmark.toml"
    config.write_text("")
    settings = Settings.from_env({"SPARKMARK_HOME": str(tmp_path / "home"), "SPARKMARK_CONFIG": str(config)})
    service = Service(settings)
    yield IcebergRest(service)
    service.state.close()


def call(rest: IcebergRest, method: str, path: str, body: dict | None = None, **query: str):
    return rest.call(method, path, dict(query), json.dumps(body).encode() if body is not None else b"")


def refused(rest: IcebergRest, method: str, path: str, body: dict | None = None, **query: str) -> RestError:
    with pytest.raises(RestError) as caught:
        call(rest, method, path, body, **query)
    return caught.value


def make_table(rest: IcebergRest, tmp_path: Path, name: str = "orders", **extra) -> dict:
    if not rest.service.catalog.databases():
        where = {"location": str(tmp_path / "sales")}
        call(rest, "POST", "namespaces", {"namespace": ["sales"], "properties": where})
    status, loaded = call(rest, "POST", "namespaces/sales/tables", {"name": name, "schema": SCHEMA, **extra})
    assert status == 200
    return loaded


def test_config_gives_glues_prefix_for_the_warehouse_and_lists_what_is_served(rest):
    status, config = call(rest, "GET", "config", warehouse="123456789012")
    assert status == 200
    assert config["overrides"] == {"prefix": "catalogs/123456789012"}
    assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}" in config["endpoints"]
    assert not any("views" in e for e in ENDPOINTS)  # none served, so none listed
    assert call(rest, "GET", "config")[1]["overrides"] == {"prefix": f"catalogs/{CATALOG_ID}"}
    # A catalog that is no account id, or an S3 Tables catalog, is not this one.
    assert refused(rest, "GET", "config", warehouse="s3://bucket/path").kind == "NoSuchCatalogException"
    err = refused(rest, "GET", f"catalogs/{CATALOG_ID}:s3tablescatalog/b/namespaces")
    assert err.status == 404 and "S3 Tables" in err.message


def test_namespaces_are_glue_databases_of_one_level(rest, tmp_path):
    assert call(rest, "GET", "namespaces") == (200, {"namespaces": []})
    status, made = call(rest, "POST", "namespaces", {"namespace": ["Sales"], "properties": {"owner": "ana"}})
    assert status == 200 and made == {
        "namespace": ["sales"],
        "properties": {"owner": "ana"},
    }  # Glue lower-cases
    assert refused(rest, "POST", "namespaces", {"namespace": ["sales"]}).kind == "AlreadyExistsException"
    err = refused(rest, "POST", "namespaces", {"namespace": ["a", "b"]})
    assert err.status == 400 and "one level" in err.message
    assert call(rest, "HEAD", "namespaces/sales") == (204, None)
    assert refused(rest, "HEAD", "namespaces/nothing").status == 404
    assert refused(rest, "GET", "namespaces/nothing").kind == "NoSuchNamespaceException"
    # Properties: location and comment are the database's LocationUri and Description.
    status, summary = call(
        rest,
        "POST",
        "namespaces/sales/properties",
        {"updates": {"location": str(tmp_path), "comment": "orders"}, "removals": ["owner", "absent"]},
    )
    assert sorted(summary["updated"]) == ["comment", "location"]
    assert summary["removed"] == ["owner"] and summary["missing"] == ["absent"]
    db = rest.service.catalog.database("sales")
    assert (db.location_uri, db.description, db.parameters) == (str(tmp_path), "orders", {})
    assert call(rest, "GET", "namespaces", parent="sales") == (200, {"namespaces": []})  # no nested levels
    assert call(rest, "DELETE", "namespaces/sales") == (204, None)
    assert refused(rest, "DELETE", "namespaces/sales").status == 404


def test_paging_of_namespaces_follows_the_next_page_token(rest):
    for i in range(5):
        call(rest, "POST", "namespaces", {"namespace": [f"db{i}"]})
    seen, token = [], ""
    while True:
        _, page = call(rest, "GET", "namespaces", pageSize="2", **({"pageToken": token} if token else {}))
        seen += page["namespaces"]
        token = page.get("next-page-token", "")
        if not token:
            break
    assert seen == [[f"db{i}"] for i in range(5)]
    assert refused(rest, "GET", "namespaces", pageToken="x").kind == "BadRequestException"


def test_a_table_made_over_rest_is_a_glue_iceberg_table(rest, tmp_path):
    loaded = make_table(rest, tmp_path)
    location = loaded["metadata-location"]
    assert Path(location).is_file() and location.startswith(str(tmp_path / "sales" / "orders" / "metadata"))
    assert loaded["metadata"]["location"] == str(tmp_path / "sales" / "orders")  # the database's location
    assert loaded["metadata"]["format-version"] == 2  # the spec's default, as Glue's
    glue = rest.service.catalog.table("sales", "orders")
    assert glue.classification == "iceberg"
    assert glue.parameters["table_type"] == "ICEBERG" and glue.parameters["metadata_location"] == location
    assert [(c.name, c.type) for c in glue.columns] == [("id", "bigint"), ("city", "string")]
    # Its non-Iceberg neighbours are not Iceberg tables to this endpoint.
    rest.service.catalog.put_table(
        Table("sales", "raw", str(tmp_path / "raw"), "csv", (Column("a", "string"),))
    )
    assert call(rest, "GET", "namespaces/sales/tables") == (
        200,
        {"identifiers": [{"namespace": ["sales"], "name": "orders"}]},
    )
    err = refused(rest, "GET", "namespaces/sales/tables/raw")
    assert err.status == 404 and "classification csv, not an Iceberg table" in err.message
    assert (
        refused(rest, "POST", "namespaces/sales/tables", {"name": "orders", "schema": SCHEMA}).status == 409
    )
    assert refused(rest, "POST", "namespaces/nothing/tables", {"name": "t", "schema": SCHEMA}).status == 404


def test_a_table_needs_a_location_and_is_never_staged(rest, tmp_path):
    call(rest, "POST", "namespaces", {"namespace": ["bare"]})  # no LocationUri
    err = refused(rest, "POST", "namespaces/bare/tables", {"name": "t", "schema": SCHEMA})
    assert err.status == 400 and "give the table a location" in err.message
    where = str(tmp_path / "elsewhere")
    _, loaded = call(
        rest, "POST", "namespaces/bare/tables", {"name": "t", "schema": SCHEMA, "location": where}
    )
    assert loaded["metadata"]["location"] == where
    err = refused(
        rest, "POST", "namespaces/bare/tables", {"name": "s", "schema": SCHEMA, "stage-create": True}
    )
    assert err.status == 406 and "stage-create" in err.message
    assert refused(rest, "POST", "namespaces/bare/tables", {"name": "u"}).kind == "BadRequestException"
    assert "not found" not in refused(rest, "POST", "namespaces/bare/tables", {"name": "u"}).message


def _set_property(loaded: dict, key: str, value: str) -> dict:
    return {
        "requirements": [{"type": "assert-table-uuid", "uuid": loaded["metadata"]["table-uuid"]}],
        "updates": [{"action": "set-properties", "updates": {key: value}}],
    }


def test_a_commit_swaps_the_metadata_and_refuses_an_unmet_requirement(rest, tmp_path):
    loaded = make_table(rest, tmp_path)
    status, committed = call(
        rest, "POST", "namespaces/sales/tables/orders", _set_property(loaded, "owner", "ana")
    )
    assert status == 200 and committed["metadata"]["properties"]["owner"] == "ana"
    assert committed["metadata-location"] != loaded["metadata-location"]
    glue = rest.service.catalog.table("sales", "orders")
    assert glue.parameters["metadata_location"] == committed["metadata-location"]
    assert glue.parameters["previous_metadata_location"] == loaded["metadata-location"]
    assert call(rest, "GET", "namespaces/sales/tables/orders")[1]["metadata"]["properties"]["owner"] == "ana"
    stale = {
        "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 7}],
        "updates": [{"action": "set-properties", "updates": {"owner": "bo"}}],
    }
    err = refused(rest, "POST", "namespaces/sales/tables/orders", stale)
    assert err.status == 409 and err.kind == "CommitFailedException"
    assert rest.service.catalog.table("sales", "orders").parameters == glue.parameters  # nothing moved
    assert (
        refused(rest, "POST", "namespaces/sales/tables/none", _set_property(loaded, "a", "b")).status == 404
    )


def test_of_two_commits_from_one_version_one_lands_and_the_other_is_told(rest, tmp_path):
    """The swap is checked against the version a commit started from: a writer that
    read the table before another's commit gets CommitFailedException, its metadata
    file is removed, and the first commit stays."""
    loaded = make_table(rest, tmp_path)
    store = rest.service.catalog
    before = store.table("sales", "orders")
    call(rest, "POST", "namespaces/sales/tables/orders", _set_property(loaded, "first", "1"))
    # The second writer's swap, from the same starting point, as the catalog makes it.
    with pytest.raises(TableChanged):
        store.put_table(before, replacing=before)
    files = sorted(p.name for p in (tmp_path / "sales" / "orders" / "metadata").glob("*.metadata.json"))
    assert len(files) == 2
    assert store.table("sales", "orders").parameters["metadata_location"].endswith(files[-1])


def test_concurrent_commits_through_the_catalog_lose_none(rest, tmp_path):
    """Threads of this endpoint committing to one table, each retrying on
    CommitFailedException as Iceberg's clients do: every commit is in the history."""
    make_table(rest, tmp_path)
    done: dict[str, int] = {}
    other_errors: list[str] = []

    def writer(name: str) -> None:
        conflicts = 0
        for i in range(15):
            while True:
                _, current = call(rest, "GET", "namespaces/sales/tables/orders")
                try:
                    call(
                        rest,
                        "POST",
                        "namespaces/sales/tables/orders",
                        _set_property(current, f"{name}{i}", "x"),
                    )
                    break
                except RestError as err:
                    if err.kind != "CommitFailedException":
                        other_errors.append(f"{err.kind}: {err.message}")
                        return
                    conflicts += 1
        done[name] = conflicts

    threads = [threading.Thread(target=writer, args=(n,)) for n in ("a", "b", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert other_errors == []
    props = call(rest, "GET", "namespaces/sales/tables/orders")[1]["metadata"]["properties"]
    assert {f"{n}{i}" for n in "abc" for i in range(15)} <= set(props)
    assert set(done) == {"a", "b", "c"}


def test_rename_moves_the_table_and_drop_forgets_it(rest, tmp_path):
    loaded = make_table(rest, tmp_path)
    call(rest, "POST", "namespaces", {"namespace": ["archive"]})
    body = {
        "source": {"namespace": ["sales"], "name": "orders"},
        "destination": {"namespace": ["archive"], "name": "old"},
    }
    assert call(rest, "POST", "tables/rename", body) == (204, None)
    assert refused(rest, "HEAD", "namespaces/sales/tables/orders").status == 404
    assert (
        call(rest, "GET", "namespaces/archive/tables/old")[1]["metadata-location"]
        == loaded["metadata-location"]
    )
    assert refused(rest, "POST", "tables/rename", body).status == 404  # the source is gone
    make_table(rest, tmp_path, "orders")
    clash = {
        "source": {"namespace": ["sales"], "name": "orders"},
        "destination": {"namespace": ["archive"], "name": "old"},
    }
    assert refused(rest, "POST", "tables/rename", clash).status == 409
    assert refused(rest, "DELETE", "namespaces/archive").kind == "NamespaceNotEmptyException"
    assert call(rest, "DELETE", "namespaces/archive/tables/old") == (204, None)
    assert refused(rest, "GET", "namespaces/archive/tables/old").status == 404
    assert Path(loaded["metadata-location"]).exists()  # a drop without purge keeps the files
    assert call(rest, "DELETE", "namespaces/archive") == (204, None)


def test_register_an_existing_metadata_file_and_refuse_what_is_not_served(rest, tmp_path):
    loaded = make_table(rest, tmp_path)
    status, registered = call(
        rest,
        "POST",
        "namespaces/sales/register",
        {"name": "copy", "metadata-location": loaded["metadata-location"]},
    )
    assert status == 200 and registered["metadata"]["table-uuid"] == loaded["metadata"]["table-uuid"]
    assert refused(rest, "POST", "transactions/commit", {"table-changes": []}).status == 406
    assert call(rest, "GET", "namespaces/sales/views") == (200, {"identifiers": []})
    assert refused(rest, "GET", "namespaces/sales/nonsense").status == 404
    assert call(rest, "POST", "namespaces/sales/tables/orders/metrics", {"report-type": "scan-report"}) == (
        204,
        None,
    )


def test_the_store_swaps_a_table_only_from_the_version_given(tmp_path):
    catalog = CatalogStore(StateStore(f"sqlite:///{tmp_path / 'state.db'}"))
    first = Table("db", "t", "/x", "iceberg", (Column("a", "int"),), (), {"metadata_location": "m1"})
    catalog.put_table(first, new=True)
    with pytest.raises(AlreadyExists):
        catalog.put_table(first, new=True)
    second = Table("db", "t", "/x", "iceberg", (Column("a", "int"),), (), {"metadata_location": "m2"})
    catalog.put_table(second, replacing=first)
    with pytest.raises(TableChanged):
        catalog.put_table(
            Table("db", "t", "/x", "iceberg", (), (), {"metadata_location": "m3"}), replacing=first
        )
    assert catalog.table("db", "t").parameters == {"metadata_location": "m2"}
    catalog.drop_table("db", "t")
    with pytest.raises(TableChanged):
        catalog.put_table(second, replacing=second)


def test_a_table_whose_metadata_file_is_gone_is_not_found(rest, tmp_path):
    loaded = make_table(rest, tmp_path)
    Path(loaded["metadata-location"]).unlink()
    err = refused(rest, "GET", "namespaces/sales/tables/orders")
    assert (err.status, err.kind) == (404, "NotFoundException")


def test_spark_rest_catalogs_on_glues_endpoint_are_pointed_at_sparkmark():
    """AWS's REST catalog settings name Glue's own URL: under `sparkmark run` that
    catalog talks to sparkmark's endpoint instead; a REST catalog elsewhere is left
    alone, and what the settings already say is kept."""
    from sparkmark.table_formats import glue_catalogs, glue_rest_catalogs, point_glue_catalogs

    confs = {
        "spark.sql.catalog.aws_rest.type": "rest",
        "spark.sql.catalog.aws_rest.uri": "https://glue.eu-west-1.amazonaws.com/iceberg",
        "spark.sql.catalog.signed.type": "rest",
        "spark.sql.catalog.signed.rest.signing-name": "glue",
        "spark.sql.catalog.signed.rest.signing-region": "eu-west-1",
        "spark.sql.catalog.polaris.type": "rest",
        "spark.sql.catalog.polaris.uri": "https://polaris.example/api/catalog",
        "spark.sql.catalog.glue.catalog-impl": "org.apache.iceberg.aws.glue.GlueCatalog",
    }
    assert glue_rest_catalogs(confs.items()) == ["aws_rest", "signed"]
    assert glue_catalogs(confs.items()) == ["aws_rest", "glue", "signed"]
    assert point_glue_catalogs(confs, "http://127.0.0.1:4599", "us-east-1", "http://127.0.0.1:9000") == [
        "aws_rest",
        "glue",
        "signed",
    ]
    assert confs["spark.sql.catalog.aws_rest.uri"] == "http://127.0.0.1:4599/iceberg"
    assert confs["spark.sql.catalog.signed.uri"] == "http://127.0.0.1:4599/iceberg"
    assert confs["spark.sql.catalog.signed.rest.signing-region"] == "eu-west-1"  # kept as given
    assert confs["spark.sql.catalog.aws_rest.s3.endpoint"] == "http://127.0.0.1:9000"
    assert confs["spark.sql.catalog.glue.glue.endpoint"] == "http://127.0.0.1:4599"
    assert confs["spark.sql.catalog.polaris.uri"] == "https://polaris.example/api/catalog"
    assert not any(k.startswith("spark.sql.catalog.polaris.s3") for k in confs)

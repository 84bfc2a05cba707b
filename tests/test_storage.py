"""How s3:// URLs and AWS's standard variables become fsspec's and Spark's settings
(pure logic: no server)."""

from __future__ import annotations

import fsspec
import pytest

from sparkmark.engine import storage
from sparkmark.settings import Settings


@pytest.fixture
def restore_storage():
    yield
    storage.configure(Settings.from_env({}))


def test_aws_variables_are_read_as_aws_tools_read_them():
    s = Settings.from_env(
        {
            "AWS_ACCESS_KEY_ID": "AKIA1",
            "AWS_SECRET_ACCESS_KEY": "s3cr3t",
            "AWS_DEFAULT_REGION": "eu-west-1",
            "AWS_ENDPOINT_URL": "http://general:1",
            "AWS_ENDPOINT_URL_S3": "http://s3only:2",
        }
    )
    assert s.aws_region == "eu-west-1"  # AWS_DEFAULT_REGION when AWS_REGION is unset
    assert s.aws_endpoint_url_s3 == "http://s3only:2"  # the service-specific one wins
    assert Settings.from_env({"AWS_REGION": "us-east-2", "AWS_DEFAULT_REGION": "x"}).aws_region == "us-east-2"
    assert (
        Settings.from_env({"AWS_ENDPOINT_URL": "http://general:1"}).aws_endpoint_url_s3 == "http://general:1"
    )
    assert "s3cr3t" not in repr(s) and "AKIA1" not in repr(s)
    assert "s3cr3t" not in s.model_dump_json()


def test_s3fs_and_s3a_settings_from_keys_and_endpoint():
    s = Settings.from_env(
        {
            "AWS_ACCESS_KEY_ID": "AKIA1",
            "AWS_SECRET_ACCESS_KEY": "s3cr3t",
            "AWS_SESSION_TOKEN": "tok",
            "AWS_REGION": "eu-west-1",
            "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000",
        }
    )
    opts = storage.s3_options(s)
    assert (opts["key"], opts["secret"], opts["token"]) == ("AKIA1", "s3cr3t", "tok")
    assert opts["client_kwargs"] == {"endpoint_url": "http://127.0.0.1:9000", "region_name": "eu-west-1"}
    assert opts["use_listings_cache"] is False  # each run must see what arrived since the last
    conf = storage.s3a_settings(s)
    assert conf["fs.s3.impl"] == conf["fs.s3n.impl"] == storage.S3A
    assert conf["fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["fs.s3a.path.style.access"] == "true"
    assert conf["fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["fs.s3a.endpoint.region"] == "eu-west-1"
    assert (conf["fs.s3a.access.key"], conf["fs.s3a.secret.key"], conf["fs.s3a.session.token"]) == (
        "AKIA1",
        "s3cr3t",
        "tok",
    )
    assert conf["fs.s3a.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")


def test_a_profile_goes_to_both_clients_and_nothing_when_unset():
    s = Settings.from_env({"AWS_PROFILE": "analytics"})
    assert storage.s3_options(s)["profile"] == "analytics"
    assert storage.s3a_settings(s)["fs.s3a.aws.credentials.provider"].endswith("DefaultCredentialsProvider")
    bare = Settings.from_env({})
    assert storage.s3_options(bare) == {"use_listings_cache": False}  # botocore's own chain decides
    assert set(storage.s3a_settings(bare)) == {"fs.s3.impl", "fs.s3n.impl"}


@pytest.mark.parametrize(
    "url,canonical,spark",
    [
        ("s3://b/k.json", "s3://b/k.json", "s3a://b/k.json"),
        ("s3a://b/k.json", "s3://b/k.json", "s3a://b/k.json"),
        ("s3n://b/dt=1/a[1].json", "s3://b/dt=1/a[1].json", r"s3a://b/dt=1/a\[1\].json"),
        ("file:///d/a[1].json", "file:///d/a[1].json", r"file:///d/a\[1\].json"),
    ],
)
def test_one_identity_per_object_and_s3a_for_spark(url, canonical, spark, restore_storage):
    storage.configure(Settings.from_env({}))
    assert storage.canonical(url) == canonical
    assert storage.spark_path(url) == spark


def test_s3_mapped_onto_a_local_folder(tmp_path, restore_storage):
    storage.configure(Settings.from_env({"SPARKMARK_S3_LOCAL_ROOT": str(tmp_path)}))
    with fsspec.open("s3://my-bucket/raw/a.json", "w") as out:
        out.write("{}\n")
    assert (tmp_path / "my-bucket" / "raw" / "a.json").read_text() == "{}\n"
    fs, path = fsspec.core.url_to_fs("s3a://my-bucket/raw")
    [entry] = fs.ls(path, detail=True)
    assert fs.unstrip_protocol(entry["name"]) == "s3://my-bucket/raw/a.json"  # the identity stays s3://
    assert storage.spark_base_path("s3://my-bucket/raw") == f"file://{tmp_path}/my-bucket/raw"


def test_spark_sql_over_a_crawled_s3_table_mapped_onto_a_local_folder(
    spark, tmp_path, restore_storage, monkeypatch
):
    """With SPARKMARK_S3_LOCAL_ROOT, a crawled s3:// table answers Spark SQL with its rows
    (the metastore's copy points at the mapped folder), as from_catalog does; it gave 0
    rows, silently."""
    import uuid

    from sparkmark.glue.context import GlueContext

    from .test_catalog import crawl, definition

    monkeypatch.setenv("SPARKMARK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SPARKMARK_S3_LOCAL_ROOT", str(tmp_path / "buckets"))
    storage.configure(Settings.from_env())
    for day, rows in (("2026-01-01", "1,10\n2,20\n"), ("2026-01-02", "3,30\n")):
        with fsspec.open(f"s3://lake/sales/dt={day}/part.csv", "w") as out:
            out.write("id,amount\n" + rows)
    db = f"local_{uuid.uuid4().hex[:8]}"
    record, _store = crawl(spark, definition(db, "s3://lake/sales/"))
    assert record.state == "SUCCEEDED", record
    assert spark.sql(f"SELECT count(*) FROM {db}.sales").first()[0] == 3
    assert spark.sql(f"SELECT sum(amount) FROM {db}.sales WHERE dt = '2026-01-02'").first()[0] == 30
    frame = GlueContext(spark).create_dynamic_frame.from_catalog(database=db, table_name="sales")
    assert frame.count() == 3
    monkeypatch.delenv("SPARKMARK_S3_LOCAL_ROOT")
    storage.configure(Settings.from_env())  # back to S3: s3:// is S3 again in this process
    assert type(fsspec.core.url_to_fs("s3://lake/sales/")[0]).__name__ == "S3FileSystem"

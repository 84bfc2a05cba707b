"""Visual jobs: a corpus of Glue Studio job graphs (tests/fixtures/studio/*.json), each
generated into a script and run twice with bookmarks under `sparkmark studio run`, with
the output compared to the rows each fixture expects; the validation errors of broken
graphs, each naming its node; and the document shapes get-job and get-jobs print.

A fixture holds: ``files`` to write before the first run and ``more_files`` before the
second (a list of objects is written as JSON lines, or as Parquet for a ``.parquet``
name; a string as it is), optional ``catalog`` tables and ``sql`` set-up for PostgreSQL
or MariaDB, the ``job`` (get-job's shape, ``{root}`` standing for the test's folder),
the ``output`` to read back and its ``columns``, and the rows expected there after the
``first`` and the ``second`` run.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pymysql
import pytest
from typer.testing import CliRunner

from sparkmark.catalog.hive import HiveCatalog
from sparkmark.catalog.models import Column, Partition, Table
from sparkmark.catalog.store import CatalogStore
from sparkmark.cli.app import app
from sparkmark.engine.store import StateStore
from sparkmark.errors import GraphError
from sparkmark.settings import Settings
from sparkmark.studio.codegen import SUPPORTED, WRITERS, generate
from sparkmark.studio.graph import check, parse_document

from .conftest import PG_DSN

CORPUS = Path(__file__).parent / "fixtures" / "studio"
CASES = sorted(p.stem for p in CORPUS.glob("*.json"))
cli = CliRunner()


def write_files(root: Path, files: dict) -> None:
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            target.write_text(content, encoding="utf-8")
        elif name.endswith(".parquet"):
            pq.write_table(pa.Table.from_pylist(content), target)
        else:
            target.write_text("".join(json.dumps(r) + "\n" for r in content), encoding="utf-8")


def run_sql(statements: dict[str, list[str]], suffix: str) -> None:
    for database, given in statements.items():
        lines = [s.replace("{suffix}", suffix) for s in given]
        if database == "postgresql":
            with psycopg.connect(PG_DSN, autocommit=True) as conn:
                for s in lines:
                    conn.execute(s)
        else:
            conn = pymysql.connect(
                host="127.0.0.1", port=3306, user="root", password="", database="test", autocommit=True
            )
            with conn.cursor() as cursor:
                for s in lines:
                    cursor.execute(s)
            conn.close()


def read_output(spark, root: Path, output: dict | list, columns: list[str]) -> list[list]:
    """The rows in the job's output folder (or folders), ``columns`` of each, sorted."""
    rows = []
    for one in output if isinstance(output, list) else [output]:
        where = root / one["path"]
        if not where.exists():
            continue
        readers = {
            "parquet": spark.read.parquet,
            "json": spark.read.json,
            "avro": spark.read.format("avro").load,
        }
        reader = readers[one.get("format", "parquet")]
        df = reader(str(where))
        rows += [[r[c] if c in df.columns else None for c in columns] for r in df.collect()]
    return sorted(rows, key=lambda r: json.dumps(r, default=str))


def normalise(rows: list[list]) -> list[list]:
    return sorted(
        ([(float(v) if isinstance(v, float) else v) for v in r] for r in rows),
        key=lambda r: json.dumps(r, default=str),
    )


@pytest.mark.parametrize("case", CASES)
def test_corpus_job_generates_and_runs_twice_with_bookmarks(case, spark, tmp_path, monkeypatch):
    fixture = json.loads((CORPUS / f"{case}.json").read_text(encoding="utf-8"))
    suffix = uuid.uuid4().hex[:8]
    text = json.dumps(fixture["job"]).replace("{root}", str(tmp_path)).replace("{suffix}", suffix)
    job_file = tmp_path / "job.json"
    job_file.write_text(text, encoding="utf-8")
    config = tmp_path / "sparkmark.toml"
    config.write_text(
        '[connections.shop_pg]\nurl = "jdbc:postgresql://127.0.0.1:5432/test"\nuser = "postgres"\n'
        '[connections.shop_my]\nurl = "jdbc:mysql://127.0.0.1:3306/test"\nuser = "root"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("SPARKMARK_CONFIG", str(config))
    write_files(tmp_path, fixture.get("files", {}))
    run_sql(fixture.get("sql", {}), suffix)
    hive = HiveCatalog(spark, CatalogStore(StateStore.from_settings(Settings.from_env())))
    tables = [
        Table(
            f"{t['database']}_{suffix}",
            t["table"],
            str(tmp_path / t["location"]),
            t["classification"],
            tuple(Column(n, ty) for n, ty in t["columns"]),
            tuple(Column(n, ty) for n, ty in t.get("partition_keys", [])),
        )
        for t in fixture.get("catalog", [])
    ]
    for table in tables:
        hive.create_table(table)

    def register_partitions() -> None:
        """What a crawler would add: each key=value folder under a partitioned table."""
        for table in tables:
            if table.partition_keys:
                key = table.partition_keys[0].name
                known = {p.values for p in hive.partitions(table)}
                found = [
                    Partition((f.name.split("=", 1)[1],), str(f))
                    for f in sorted(Path(table.location).glob(f"{key}=*"))
                ]
                hive.add_partitions(table, [p for p in found if p.values not in known])

    try:
        script = generate(parse_document(json.loads(text))[0])
        compile(script, f"{case}.py", "exec")  # the script is Python before it is anything else

        args = ["studio", "run", str(job_file), "--job-bookmark-option", "job-bookmark-enable"]
        register_partitions()
        first = cli.invoke(app, args)
        assert first.exit_code == 0, first.output[-3000:]
        assert read_output(spark, tmp_path, fixture["output"], fixture["columns"]) == normalise(
            fixture["first"]
        )

        write_files(tmp_path, fixture.get("more_files", {}))
        run_sql(fixture.get("more_sql", {}), suffix)
        register_partitions()
        second = cli.invoke(app, args)
        assert second.exit_code == 0, second.output[-3000:]
        assert read_output(spark, tmp_path, fixture["output"], fixture["columns"]) == normalise(
            fixture["second"]
        )
    finally:
        run_sql(fixture.get("cleanup_sql", {}), suffix)


def test_the_corpus_covers_every_supported_node_type_and_join_type():
    seen: set[str] = set()
    joins: set[str] = set()
    for case in CASES:
        nodes = json.loads((CORPUS / f"{case}.json").read_text(encoding="utf-8"))["job"]["Job"][
            "CodeGenConfigurationNodes"
        ]
        for wrapped in nodes.values():
            ((kind, spec),) = wrapped.items()
            seen.add(kind)
            if kind == "Join":
                joins.add(spec["JoinType"])
    assert len(CASES) >= 12
    for fixture in (CORPUS.parent / "studio_tables").glob("*.json"):  # run by tests/test_studio_tables.py
        nodes = json.loads(fixture.read_text(encoding="utf-8"))["job"]["Job"]["CodeGenConfigurationNodes"]
        seen.update(kind for wrapped in nodes.values() for kind in wrapped)
    # The two streaming sources need a broker or a stream: their own tests are below; the
    # DynamoDB sources need moto's DynamoDB: tests/test_dynamodb.py runs them.
    own = {"DirectKafkaSource", "DirectKinesisSource", "DynamoDBCatalogSource", "DynamoDBELTConnectorSource"}
    assert seen | own == set(WRITERS), f"not tested: {set(WRITERS) - seen}"
    assert joins == {"equijoin", "left", "right", "outer", "leftsemi", "leftanti"}


def node_map(**nodes) -> dict:
    return {"Job": {"Name": "broken", "CodeGenConfigurationNodes": nodes}}


def problems(document: dict) -> list[str]:
    with pytest.raises(GraphError) as caught:
        graph = parse_document(document)[0]
        check(graph, SUPPORTED)
    return caught.value.problems


def test_each_problem_is_one_line_naming_its_node():
    found = problems(
        node_map(
            **{
                "node-1": {"S3CsvSource": {"Name": "Orders", "Paths": ["s3://b/o/"], "Separator": "dash"}},
                "node-2": {"ApplyMapping": {"Name": "Change Schema", "Inputs": ["node-9"]}},
                "node-3": {"Teleport": {"Name": "Beam"}},
                "node-4": {
                    "PIIDetection": {
                        "Name": "Mask",
                        "Inputs": ["node-1"],
                        "PiiType": "RowAudit",
                        "EntityTypesToDetect": ["EMAIL"],
                    }
                },
                "node-5": {
                    "SelectFields": {"Name": "Pick", "Inputs": ["node-1"], "Paths": [["id"]], "Colour": "red"}
                },
            }
        )
    )
    assert found == [
        "job 'broken': node node-1 (S3CsvSource 'Orders') is missing the required field 'QuoteChar'",
        "job 'broken': node node-1 (S3CsvSource 'Orders') field Separator is 'dash'; Glue allows comma, ctrla, pipe, semicolon, tab",
        "job 'broken': node node-2 (ApplyMapping 'Change Schema') is missing the required field 'Mapping'",
        "job 'broken': node node-2 (ApplyMapping 'Change Schema'): its input 'node-9' is not a node of this job",
        "job 'broken': node node-3 (Teleport 'Beam'): Teleport is not a Glue node type",
        "job 'broken': node node-4 (PIIDetection 'Mask'): sparkmark does not generate PIIDetection nodes (see docs/studio.md)",
        "job 'broken': node node-5 (SelectFields 'Pick') has an unknown field 'Colour'",
    ]


def test_a_cycle_is_named():
    found = problems(
        node_map(
            **{
                "a": {"S3JsonSource": {"Name": "In", "Paths": ["s3://b/"]}},
                "b": {"Union": {"Name": "U", "Inputs": ["a", "c"], "UnionType": "ALL"}},
                "c": {"DropNullFields": {"Name": "D", "Inputs": ["b"]}},
            }
        )
    )
    assert len(found) == 1 and "the inputs form a cycle (U -> D -> U)" in found[0]


def test_wrong_types_and_shapes_are_named():
    found = problems(node_map(n1={"S3JsonSource": {"Name": "In", "Paths": "s3://b/", "Recurse": "yes"}}))
    assert "field Paths is 's3://b/', which is not of type list, tuple" in found[0]
    assert "field Recurse is 'yes', which is not of type bool" in found[1]
    with pytest.raises(GraphError, match="must hold exactly one node type"):
        parse_document(node_map(n1={"S3JsonSource": {}, "Filter": {}}))
    with pytest.raises(GraphError, match="not a visual job"):
        parse_document({"Hello": "world"})
    with pytest.raises(GraphError, match="has no CodeGenConfigurationNodes"):
        parse_document({"Job": {"Name": "plain", "Command": {"Name": "glueetl"}}})


def test_document_shapes_get_job_get_jobs_and_bare_nodes():
    nodes = {"node-1": {"S3JsonSource": {"Name": "In", "Paths": ["s3://b/"]}}}
    assert [g.name for g in parse_document({"Job": {"Name": "one", "CodeGenConfigurationNodes": nodes}})] == [
        "one"
    ]
    several = {
        "Jobs": [
            {"Name": "x", "CodeGenConfigurationNodes": nodes},
            {"Name": "y", "CodeGenConfigurationNodes": nodes},
        ]
    }
    assert [g.name for g in parse_document(several)] == ["x", "y"]
    assert [g.name for g in parse_document(nodes, default_name="bare")] == ["bare"]
    graph = parse_document({"Job": {"Name": "one", "Role": "r", "CodeGenConfigurationNodes": nodes}})[0]
    assert graph.to_document() == {"Job": {"Role": "r", "Name": "one", "CodeGenConfigurationNodes": nodes}}


def test_the_cli_prints_each_problem_and_generates(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text(
        json.dumps(node_map(n1={"ApplyMapping": {"Name": "M", "Inputs": ["gone"], "Mapping": []}}))
    )
    done = cli.invoke(app, ["studio", "check", str(broken)])
    assert done.exit_code == 1
    lines = [line for line in done.output.splitlines() if line.strip()]
    assert lines == [
        "error: job 'broken': node n1 (ApplyMapping 'M'): its input 'gone' is not a node of this job"
    ]
    good = tmp_path / "good.json"
    case = json.loads((CORPUS / "json_mapping_parquet.json").read_text(encoding="utf-8"))
    good.write_text(json.dumps(case["job"]).replace("{root}", str(tmp_path)))
    out = tmp_path / "job.py"
    done = cli.invoke(app, ["studio", "generate", str(good), "-o", str(out)])
    assert done.exit_code == 0, done.output
    script = out.read_text(encoding="utf-8")
    assert script.startswith("import sys") and script.rstrip().endswith("job.commit()")
    ctxs = re.findall(r'transformation_ctx="([^"]+)"', script)
    assert len(ctxs) == len(set(ctxs)) == 3  # one per node, each its own bookmark
    assert cli.invoke(app, ["studio", "generate", str(tmp_path / "missing.json")]).exit_code == 1


def test_visual_jobs_round_trip_through_the_glue_api(sparkmark_home, tmp_path, monkeypatch):
    """A job created with boto3's create_job holding CodeGenConfigurationNodes is a visual
    job sparkmark can edit; one saved by sparkmark comes back from get_job with its
    nodes as given, so it can be sent to Glue as it is."""
    import boto3
    from botocore.config import Config

    from sparkmark.api.server import start_in_thread
    from sparkmark.app import App
    from sparkmark.studio.jobs import load_visual_job, save_visual_job, visual_jobs

    monkeypatch.setenv("SPARKMARK_CONFIG", str(tmp_path / "sparkmark.toml"))
    case = json.loads((CORPUS / "union_all.json").read_text(encoding="utf-8"))
    nodes = json.loads(
        json.dumps(case["job"]["Job"]["CodeGenConfigurationNodes"]).replace("{root}", str(tmp_path))
    )
    running = start_in_thread(Settings.from_env())
    try:
        glue = boto3.client(
            "glue",
            endpoint_url=running.url,
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key=running.token,
            config=Config(retries={"max_attempts": 1}),
        )
        glue.create_job(
            Name="from_glue",
            Role="arn:aws:iam::000000000000:role/glue",
            Command={"Name": "glueetl", "ScriptLocation": str(tmp_path / "whatever.py")},
            CodeGenConfigurationNodes=nodes,
            MaxRetries=3,
            Timeout=45,
        )
        service = App(Settings.from_env())
        assert "from_glue" in visual_jobs(service)
        graph = load_visual_job(service, "from_glue")
        assert graph is not None and set(graph.nodes) == set(nodes)
        # A Studio save keeps what CreateJob set beside the graph (one mapping of Glue's
        # fields for every door).
        save_visual_job(service, "from_glue", nodes, create=False)
        saved = glue.get_job(JobName="from_glue")["Job"]
        assert (saved["MaxRetries"], saved["Timeout"]) == (3, 45)
        assert saved["Command"]["ScriptLocation"].endswith("from_glue.py")
        assert service.project.job("from_glue").MaxRetries == 3  # and runs retry as set

        save_visual_job(service, "from_sparkmark", nodes, create=True)
        got = glue.get_job(JobName="from_sparkmark")["Job"]
        assert got["CodeGenConfigurationNodes"] == nodes
        script = Path(got["Command"]["ScriptLocation"])
        assert script.is_file() and "Union" in script.read_text(encoding="utf-8")
        with pytest.raises(GraphError, match="its input 'gone'"):
            save_visual_job(
                service,
                "bad",
                {"n": {"DropFields": {"Name": "D", "Inputs": ["gone"], "Paths": []}}},
                create=True,
            )
        assert load_visual_job(service, "bad") is None  # nothing stored
    finally:
        running.stop()


def test_a_streaming_visual_job_reads_each_record_once(spark, kafka_broker, tmp_path):
    """DirectKafkaSource → ApplyMapping → Glue Parquet: the stream read once, the rest of
    the graph in forEachBatch, run until caught up twice; every record once in the output."""
    from .test_streaming_kafka import Topic

    topic = Topic(kafka_broker.bootstrap_servers)
    out = tmp_path / "out"
    nodes = {
        "node-1": {
            "DirectKafkaSource": {
                "Name": "Orders stream",
                "WindowSize": 1,
                "DetectSchema": True,
                "StreamingOptions": {
                    "BootstrapServers": topic.bootstrap,
                    "TopicName": topic.name,
                    "Classification": "json",
                    "StartingOffsets": "earliest",
                },
            }
        },
        "node-2": {
            "ApplyMapping": {
                "Name": "Change Schema",
                "Inputs": ["node-1"],
                "Mapping": [
                    {"ToKey": "id", "FromPath": ["id"], "FromType": "long", "ToType": "long"},
                    {"ToKey": "amount", "FromPath": ["amount"], "FromType": "long", "ToType": "long"},
                ],
            }
        },
        "node-3": {"S3GlueParquetTarget": {"Name": "Out", "Inputs": ["node-2"], "Path": str(out)}},
    }
    script = run_stream_twice(
        spark, tmp_path, "stream_visual", nodes, "id", send=topic.send, first=range(0, 12), then=range(12, 20)
    )
    assert "glueContext.forEachBatch(" in script and "def processBatch(data_frame, batchId):" in script


def run_stream_twice(spark, tmp_path, name, nodes, column, *, send, first, then) -> str:
    """Store the visual job, send ``first``, run it until caught up; send ``then``, run again;
    each time the Parquet output holds every record sent once. Returns the script."""
    job_file = tmp_path / f"{name}.json"
    job_file.write_text(json.dumps({"Job": {"Name": name, "CodeGenConfigurationNodes": nodes}}))
    out = Path(
        nodes[next(n for n in nodes if "S3GlueParquetTarget" in nodes[n])]["S3GlueParquetTarget"]["Path"]
    )
    args = [
        "studio",
        "run",
        "--until-caught-up",
        str(job_file),
        "--job-bookmark-option",
        "job-bookmark-enable",
    ]
    sent: list[int] = []
    for batch in (first, then):
        send(batch)
        sent += list(batch)
        done = cli.invoke(app, args)
        assert done.exit_code == 0, done.output[-3000:]
        assert sorted(r[column] for r in spark.read.parquet(str(out)).collect()) == sorted(sent)
    return generate(parse_document(json.loads(job_file.read_text()))[0])


def test_a_kinesis_visual_job_reads_each_record_once(spark, s3_server, tmp_path, monkeypatch):
    """DirectKinesisSource (moto's Kinesis API over HTTP) → SelectFields → Parquet, twice."""
    from .test_streaming_kinesis import Stream

    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing-key",
        "AWS_SECRET_ACCESS_KEY": "testing-secret-studio",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    stream = Stream(s3_server.endpoint_url, shards=2)
    out = tmp_path / "out"
    options = {
        "StreamArn": f"arn:aws:kinesis:us-east-1:123456789012:stream/{stream.name}",
        "EndpointUrl": s3_server.endpoint_url,
        "StartingPosition": "trim_horizon",  # the visual node's spelling (the model's enum)
        "Classification": "json",
    }
    nodes = {
        "n1": {"DirectKinesisSource": {"Name": "Events", "WindowSize": 1, "StreamingOptions": options}},
        "n2": {"SelectFields": {"Name": "Ids", "Inputs": ["n1"], "Paths": [["event_id"]]}},
        "n3": {"S3GlueParquetTarget": {"Name": "Out", "Inputs": ["n2"], "Path": str(out)}},
    }
    script = run_stream_twice(
        spark,
        tmp_path,
        "kinesis_visual",
        nodes,
        "event_id",
        send=stream.put,
        first=range(0, 8),
        then=range(8, 13),
    )
    assert '"streamARN": "arn:aws:kinesis:' in script and '"endpointUrl": ' in script


def test_a_preview_shows_only_the_graphs_own_sources(spark, tmp_path, monkeypatch, sparkmark_home):
    """The probe: a SparkSQL node's preview returned a file the console could read
    (SELECT … FROM text.`/path`). A preview's SQL sees its inputs' views, never files."""
    from sparkmark.glue import shim
    from sparkmark.studio.preview import preview

    shim.install(Settings.from_env())
    fixture = json.loads((CORPUS / "sql_custom_collection.json").read_text(encoding="utf-8"))
    write_files(tmp_path, fixture["files"])
    secret = tmp_path / "not-for-previews.txt"
    secret.write_text("the-console-users-secret\n", encoding="utf-8")
    document = json.loads(json.dumps(fixture["job"]).replace("{root}", str(tmp_path)))
    graph = parse_document(document)[0]
    assert preview(graph, "node-2")["rows"] == [["a", 6], ["b", 4]]  # the view of its input

    nodes = document["Job"]["CodeGenConfigurationNodes"]
    nodes["node-2"]["SparkSQL"]["SqlQuery"] = f"SELECT value AS sku, 1 AS total FROM text.`{secret}`"
    with pytest.raises(GraphError) as refused:
        preview(parse_document(document)[0], "node-2")
    assert "the-console-users-secret" not in str(refused.value.problems)
    assert spark.conf.get("spark.sql.runSQLOnFiles") == "true"  # the session is as it was

"""A corpus of Glue job scripts, each with what it must write, run twice with bookmarks.

Each case is a pair under tests/fixtures/scripts: ``NAME.py``, a script as Glue users
write them (hand-written, or shaped as Glue Studio generates them), and ``NAME.json``,
what the case gives it and expects of it. The script runs as ``sparkmark run`` runs it
(``host.run_request``: ``import awsglue`` resolved to the façade, ``sys.argv`` its Glue
arguments, the run recorded), in this test session's Spark, with
``--job-bookmark-option job-bookmark-enable``, once per entry of ``runs``:

- ``files``: written under the case's data folder before the run (a list of objects is
  JSON lines, a string is the file's text);
- ``crawl``: folders (under the data folder) crawled into the ``corpus`` database first;
- ``expect``: per output folder (under the out folder), the rows it holds after the run,
  in any order (a null field left out), and optionally its schema (Spark's simpleString), its format's read
  options, the suffix every data file must have, and ``lower_names`` (read names lower-cased);
- ``stdout`` / ``log``: text the script's output / sparkmark's log must contain;
- ``catalog``: tables' columns, as the catalog has them after the run;
- ``needs_variant``: the case's choices are VARIANT columns, which Spark 3.5 lacks: it
  runs on Spark 4 (Glue 6.0) only.

- ``sql`` / ``query``: for a case that names ``{schema}``, statements run in a fresh
  PostgreSQL schema before the run, and queries whose rows must be as given after it.

``{data}`` and ``{out}`` in ``args`` are the case's folders; ``{schema}`` its PostgreSQL
schema and ``{jdbc_url}`` the database's JDBC URL. The second run sees the
first run's files and its own: what a bookmark has processed must not be read again.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sparkmark import spark_lines
from sparkmark.catalog.hive import HiveCatalog
from sparkmark.catalog.store import CatalogStore
from sparkmark.connections import Connections
from sparkmark.crawler.crawl import run_crawl
from sparkmark.crawler.definition import load_definition
from sparkmark.crawler.store import CrawlerStore
from sparkmark.engine.store import StateStore
from sparkmark.host import RunRequest
from sparkmark.host.script import run_request
from sparkmark.settings import Settings

from .conftest import PG_DSN

CORPUS = Path(__file__).parent / "fixtures" / "scripts"
JDBC_URL = "jdbc:postgresql://" + PG_DSN.split("@", 1)[1]
CASES = sorted(p.stem for p in CORPUS.glob("*.json"))


def test_every_case_has_its_script_and_no_script_is_orphaned():
    assert CASES and sorted(p.stem for p in CORPUS.glob("*.py")) == CASES


def _write_files(root: Path, files: dict[str, Any]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, list):
            path.write_text("".join(json.dumps(row) + "\n" for row in content), encoding="utf-8")
        else:
            path.write_text(content, encoding="utf-8")


def _crawl(spark, data: Path, folders: list[str]) -> None:
    settings = Settings.from_env()
    state = StateStore.from_settings(settings)
    crawlers = CrawlerStore(state)
    definition = load_definition(
        {
            "Name": "corpus",
            "DatabaseName": "corpus",
            "Targets": {"S3Targets": [{"Path": str(data / folder)} for folder in folders]},
        }
    )
    crawlers.save(definition)
    record = run_crawl(
        spark,
        state,
        HiveCatalog(spark, CatalogStore(state)),
        crawlers,
        definition,
        connections=Connections.from_settings(settings),
    )
    assert record.state == "SUCCEEDED", record


def _plain(value: Any) -> Any:
    """A value as the expectations write it: JSON's types, dates and decimals as text,
    and a field that is null left out (as Glue's JSON writer leaves it out)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return json.loads(json.dumps(value, default=str))


def _rows(spark, folder: Path, expected: dict[str, Any]) -> tuple[list[dict], str]:
    reader = spark.read.format(expected.get("format", "parquet")).options(**expected.get("options", {}))
    frame = reader.load(str(folder))
    if expected.get("lower_names"):  # a merged read names a column as whichever file came first
        frame = frame.toDF(*[c.lower() for c in frame.columns])
    rows = [_plain(row.asDict(recursive=True)) for row in frame.collect()]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True)), frame.schema.simpleString()


def _data_files(folder: Path) -> list[Path]:
    """The data files under ``folder``: what Spark reads (names under ``_``/``.`` are not)."""
    return [
        p
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(("_", ".")) for part in p.relative_to(folder).parts)
    ]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_the_script_writes_what_the_case_expects_twice_with_bookmarks(
    case, spark, tmp_path, capsys, caplog, request
):
    text = (CORPUS / f"{case}.json").read_text(encoding="utf-8")
    if json.loads(text).get("needs_variant") and not spark_lines.HAS_VARIANT:
        pytest.skip("its choices are VARIANT columns: Spark 4 (Glue 6.0); docs/glue-versions.md")
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    places = {"{data}": str(data), "{out}": str(out), "{jdbc_url}": JDBC_URL}
    if "{schema}" in text:
        places["{schema}"] = request.getfixturevalue("pg_schemas")()

    def filled(value: str) -> str:
        for place, actual in places.items():
            value = value.replace(place, actual)
        return value

    spec = json.loads(text)
    args = [filled(a) for a in spec.get("args", [])]
    arguments = ["--JOB_NAME", case, "--job-bookmark-option", "job-bookmark-enable", *args]
    store = CatalogStore(StateStore.from_settings())
    caplog.set_level(logging.INFO, logger="sparkmark")
    for number, step in enumerate(spec["runs"], start=1):
        _write_files(data, step.get("files", {}))
        if step.get("sql"):
            with psycopg.connect(PG_DSN, autocommit=True) as conn:
                for statement in step["sql"]:
                    conn.execute(filled(statement))
        if step.get("crawl"):
            _crawl(spark, data, step["crawl"])
        for table, types in step.get("retype", {}).items():
            # What a crawler of the real, larger file recorded from its first part (AWS's
            # resolveChoice sample: `provider id` bigint), which this small file cannot show.
            database, name = table.split(".")
            found = store.table(database, name)
            columns = tuple(replace(c, type=types.get(c.name, c.type)) for c in found.columns)
            store.put_table(replace(found, columns=columns))
        caplog.clear()
        capsys.readouterr()
        outcome = run_request(RunRequest(script=str(CORPUS / f"{case}.py"), arguments=arguments))
        printed = capsys.readouterr().out
        assert outcome.code == 0, f"run {number}: {outcome.error}\n{outcome.traceback}"
        assert [line.state.value for line in outcome.runs if line.state] == ["SUCCEEDED"]
        for target, expected in step.get("expect", {}).items():
            rows, schema = _rows(spark, out / target, expected)
            want = sorted(expected["rows"], key=lambda r: json.dumps(r, sort_keys=True))
            assert [json.dumps(r, sort_keys=True) for r in rows] == [
                json.dumps(r, sort_keys=True) for r in want
            ], f"run {number}, {target}"

            if "schema" in expected:
                assert schema == expected["schema"], f"run {number}, {target}"
            if "suffix" in expected:
                names = [p.name for p in _data_files(out / target)]
                assert names and all(n.endswith(expected["suffix"]) for n in names), names
        for text in step.get("stdout", []):
            assert text in printed, f"run {number}: {text!r} not printed:\n{printed}"
        for text in step.get("log", []):
            assert text in caplog.text, f"run {number}: {text!r} not logged:\n{caplog.text}"
        for query, want in step.get("query", {}).items():
            with psycopg.connect(PG_DSN) as conn:
                got = [list(r) for r in conn.execute(filled(query)).fetchall()]
            assert got == want, f"run {number}: {filled(query)}"
        for table, columns in step.get("catalog", {}).items():
            database, name = table.split(".")
            assert [[c.name, c.type] for c in store.table(database, name).columns] == columns

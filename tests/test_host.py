"""The job host's run request: one document, checked once, that the CLI builds from its
options and the scheduler sends to a job's process on its standard input."""

from __future__ import annotations

import io
import json

import pytest

from sparkmark.errors import ArgumentError
from sparkmark.host import RunRequest, handover


def test_a_request_gives_the_script_the_settings_it_names():
    request = RunRequest.checked(
        {
            "script": "jobs/orders.py",
            "arguments": ["--JOB_NAME", "orders", "--password", "s3cret"],
            "until_caught_up": True,
            "max_batches": 3,
            "remote": "sc://127.0.0.1:15002",
            "run_id": "wr_1-orders",
            "attempt": 2,
            "config": "/p/sparkmark.toml",
            "spark_master": "spark://h:7077",
            "spark_conf": {"spark.sql.shuffle.partitions": "4"},
        }
    )
    # The run id and attempt reach the runtime by the host's call (runtime.run.expect_run), never the environment.
    assert request.environment() == {
        "SPARKMARK_CONFIG": "/p/sparkmark.toml",
        "SPARKMARK_SPARK_MASTER": "spark://h:7077",
        "SPARKMARK_SPARK_CONF": '{"spark.sql.shuffle.partitions": "4"}',
        "SPARK_REMOTE": "sc://127.0.0.1:15002",
        "SPARKMARK_STREAM_UNTIL_CAUGHT_UP": "1",
        "SPARKMARK_STREAM_MAX_BATCHES": "3",
    }
    # The arguments are the script's, never settings: a password among them stays out of the environment.
    assert "s3cret" not in json.dumps(request.environment())
    assert RunRequest.checked(request.model_dump(mode="json")) == request


def test_a_plain_request_sets_nothing():
    assert RunRequest.checked({"script": "job.py"}).environment() == {}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"script": "job.py", "max_batches": 0}, "--max-batches must be 1 or more"),
        ({"script": "job.py", "remote": "http://h:15002"}, "--remote takes a Spark Connect URL"),
        ({"script": "job.py", "argv": ["x"]}, "run request field argv: Extra inputs are not permitted"),
        ({}, "run request field script: Field required"),
        ({"script": "job.py", "attempt": "second"}, "run request field attempt"),
    ],
)
def test_a_bad_request_is_one_line_naming_what_is_wrong(document, message):
    with pytest.raises(ArgumentError, match=message) as refused:
        RunRequest.checked(document)
    assert "\n" not in str(refused.value)


def test_the_launched_document_is_read_once_from_stdin(monkeypatch):
    sent = {"run": {"script": "job.py", "arguments": ["--JOB_NAME", "j"]}}
    monkeypatch.setenv(handover.ARGV_PIPE_ENV, "1")
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(sent)))
    assert handover.launched_document() == sent
    assert handover.launched_document() is None  # the variable is taken: a child of the job reads nothing


@pytest.mark.parametrize("sent", [["run", "job.py"], {"argv": "run job.py"}, {"run": "job.py"}, {}])
def test_a_launched_document_of_another_shape_is_refused(monkeypatch, sent):
    monkeypatch.setenv(handover.ARGV_PIPE_ENV, "1")
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(sent)))
    with pytest.raises(ValueError, match="neither"):
        handover.launched_document()


def test_no_document_without_the_launchers_variable(monkeypatch):
    monkeypatch.delenv(handover.ARGV_PIPE_ENV, raising=False)
    assert handover.launched_document() is None


def test_a_hosted_scripts_spark_context_is_the_running_one(spark):
    """Glue scripts start with a bare ``SparkContext()``; hosted in a process whose Spark
    runs (a test session, a notebook), that is the running context, while outside a
    hosted run PySpark's own rule (one context per process) is untouched."""
    from pyspark import SparkContext

    from sparkmark.host.shared_context import sharing

    with sharing():
        assert SparkContext() is spark.sparkContext
        assert SparkContext(master="local[1]", appName="other") is spark.sparkContext
    assert spark.sparkContext.appName == "sparkmark-tests"
    with pytest.raises(ValueError, match="Cannot run multiple SparkContexts"):
        SparkContext(master="local[1]", appName="other")
    assert spark.range(3).count() == 3


def test_what_a_terminal_run_prints_is_kept_with_each_run_it_started(tmp_path, capsys):
    """The terminal still shows everything; each run started meanwhile gets a copy of
    stdout (.log) and stderr (.err), owner-only, at the path the scheduler's runs use."""
    import logging
    import sys

    from sparkmark.engine.run_logs import Capture, error_path, log_path

    logger = logging.getLogger("sparkmark.test_capture")
    logger.setLevel(logging.INFO)
    with Capture(tmp_path) as capture:
        print("a line for the output")
        print("a line for the errors", file=sys.stderr)
        sys.stdout.buffer.flush()  # scripts may reach for the binary stream
        assert sys.stdout.writable()
        logger.info("password=hunter2 in a log record")
    capture.keep([("orders", "jr_a"), ("orders", "jr_b")])
    capture.discard()
    shown = capsys.readouterr()
    assert "a line for the output" in shown.out and "a line for the errors" in shown.err
    for run_id in ("jr_a", "jr_b"):
        out = log_path(tmp_path, "JOB", "orders", run_id)
        assert out.read_text() == "a line for the output\n"
        errors = error_path(out).read_text()
        assert "a line for the errors" in errors and "in a log record" in errors
        assert "hunter2" not in errors  # masked, as every handler of sparkmark's log
        assert oct(out.stat().st_mode & 0o777) == "0o600"


def test_a_request_with_an_invalid_run_id_is_refused_and_leaves_the_process_as_it_was(tmp_path):
    import sys

    from sparkmark.host import run_request

    script = tmp_path / "plain.py"
    script.write_text("print('never')\n")
    request = RunRequest.checked({"script": str(script), "arguments": ["--JOB_NAME", "j"], "run_id": "wr_1"})
    argv, path, finders = list(sys.argv), list(sys.path), list(sys.meta_path)
    with pytest.raises(ArgumentError, match="invalid run id 'wr_1'"):
        run_request(request)
    assert (sys.argv, sys.path, sys.meta_path) == (argv, path, finders)

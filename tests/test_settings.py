"""Settings: every SPARKMARK_* variable is declared once, read at the entry points, and
passed down."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sparkmark.connections import Connections
from sparkmark.errors import ConfigError
from sparkmark.settings import Settings

SRC = Path(__file__).resolve().parents[1] / "src" / "sparkmark"
# The modules allowed to touch os.environ: the settings themselves, the interpreter
# start-up hook (kept free of pydantic, see glue/shim.py), the launcher that hands an
# environment to child processes and records their exit, the job host, which sets a run
# request's settings for the script and hands Spark its submit arguments, `sparkmark run`,
# which points the script's boto3 at the Glue endpoint, and spark.py, which points
# PySpark's workers at this interpreter (they write, none reads a setting).
# Modules that hand this process's environment on to the processes they start (a job, a
# Spark master or worker, a Spark Connect server, a warm Spark process), besides the
# settings themselves; and the warm process, which gives each job it hosts the
# environment its run request sets and puts its own back after.
ALLOWED = {
    "pool/pool.py",
    "pool/worker.py",
    "settings.py",
    "glue/shim.py",
    "workflow/launcher.py",
    "host/handover.py",  # the launcher's variables for its child (how its work comes and where its exit goes)
    "cli/run.py",
    "host/script.py",
    "spark.py",
    "devservices/cluster.py",
    "devservices/connect.py",
    "testing/plugin.py",  # an entry point: pytest's; it sets the test's variables as a user's shell would
}


def test_defaults_and_values(tmp_path):
    s = Settings.from_env({"SPARKMARK_HOME": str(tmp_path / "h")})
    assert s.state_url == f"sqlite:///{tmp_path / 'h' / 'state.db'}"
    assert s.temp_dir == str(tmp_path / "h" / "tmp")
    assert (s.lease_seconds, s.spark_master, s.connectors, s.catalog) == (300, "local[*]", "auto", "hive")
    s = Settings.from_env(
        {
            "SPARKMARK_HOME": str(tmp_path),
            "SPARKMARK_LEASE_SECONDS": "12.5",
            "SPARKMARK_STREAM_MAX_BATCHES": "2",
            "SPARKMARK_CATALOG": "none",
            "SPARKMARK_SPARK_CONF": '{"spark.sql.shuffle.partitions": 3}',
        }
    )
    assert s.lease_seconds == 12.5 and s.stream_max_batches == 2 and not s.hive_enabled
    assert s.spark_conf_map() == {"spark.sql.shuffle.partitions": "3"}


@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("SPARKMARK_LEASE_SECONDS", "-1", "SPARKMARK_LEASE_SECONDS"),
        ("SPARKMARK_STREAM_MAX_BATCHES", "two", "SPARKMARK_STREAM_MAX_BATCHES"),
        ("SPARKMARK_SPARK_CONF", "[1, 2]", "not a JSON object"),
    ],
)
def test_a_bad_value_is_one_clear_line(tmp_path, variable, value, message):
    with pytest.raises(ConfigError, match=message) as caught:
        Settings.from_env({"SPARKMARK_HOME": str(tmp_path), variable: value}).spark_conf_map()
    assert "\n" not in str(caught.value)


def test_secrets_stay_out_of_repr_and_dumps(tmp_path):
    env = {
        "SPARKMARK_HOME": str(tmp_path),
        "SPARKMARK_METASTORE_PASSWORD": "hunter2-metastore",
        "DW_PASSWORD": "hunter2-dw",
    }
    s = Settings.from_env(env)
    for text in (repr(s), str(s), s.model_dump_json()):
        assert "hunter2" not in text
    assert s.metastore_password is not None and s.metastore_password.get_secret_value() == "hunter2-metastore"
    assert "hunter2" not in repr(Connections.from_settings(s))


def test_connections_read_the_resolved_environment_only(tmp_path, monkeypatch):
    config = tmp_path / "sparkmark.toml"
    config.write_text(
        '[connections.dw]\nurl = "jdbc:postgresql://127.0.0.1:5432/test"\npassword_env = "DW_PW"\n'
    )
    monkeypatch.setenv("DW_PW", "from-the-process")  # not in the snapshot: not used
    s = Settings.from_env(
        {"SPARKMARK_HOME": str(tmp_path), "SPARKMARK_CONFIG": str(config), "DW_PW": "given"}
    )
    assert Connections.from_settings(s).resolve("dw").password == "given"
    bare = Settings.from_env({"SPARKMARK_HOME": str(tmp_path), "SPARKMARK_CONFIG": str(config)})
    with pytest.raises(ConfigError, match=r"\$DW_PW, which is not set"):
        Connections.from_settings(bare).resolve("dw")


def _environ_reads(tree: ast.AST) -> list[int]:
    """Lines that read os.environ or call os.getenv."""
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("environ", "getenv")
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ):
            lines.append(node.lineno)
    return lines


def test_no_module_below_the_entry_points_reads_the_environment():
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        name = path.relative_to(SRC).as_posix()
        if name in ALLOWED:
            continue
        for line in _environ_reads(ast.parse(path.read_text(encoding="utf-8"))):
            offenders.append(f"{name}:{line}")
    assert offenders == [], f"declare these in Settings and pass them down: {offenders}"


def test_every_variable_the_docs_name_is_declared():
    fields = set(Settings.model_fields)
    for variable in ("HOME", "STATE_URL", "TEMP_DIR", "LEASE_SECONDS", "SPARK_MASTER", "JARS_DIR",
                     "CONNECTORS", "JDBC_JARS", "SPARK_CONF", "CATALOG", "METASTORE_URL",
                     "METASTORE_USER", "METASTORE_PASSWORD", "CONFIG", "LOG_LEVEL", "AWSGLUE",
                     "API_HOST", "API_PORT", "API_TOKEN", "CRASH_AT"):  # fmt: skip
        assert variable.lower() in fields
    root = SRC.parents[1]
    for page in (root / "README.md", root / "docs" / "tour.md", root / "CONTRIBUTING.md"):
        text = page.read_text(encoding="utf-8")
        for mentioned in {w.strip("`|") for w in text.split() if w.strip("`|").startswith("SPARKMARK_")}:
            name = mentioned.removeprefix("SPARKMARK_").split("=", 1)[0].rstrip(".,:;)").lower()
            if name and not name.startswith("connection_"):
                assert name in fields, f"{page.name} names {mentioned}, which Settings does not declare"

"""``sparkmark doctor``: what this installation has and can reach, each with a one-line fix.

Nothing is changed and nothing is fetched: a connector that is not resolved yet is
reported as fetched on first use. The exit code is 1 when something a job cannot run
without (Java, PySpark, the state store) is broken.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlparse

import typer
from rich.markup import escape

from ..settings import Settings
from .output import console, print_json, table

OK, INFO, WARN, FAIL = "ok", "info", "warn", "FAIL"


@dataclass(frozen=True)
class Finding:
    check: str
    status: str  # ok, info, warn, FAIL
    detail: str
    fix: str = ""


def _python() -> Finding:
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("sparkmark")
    except PackageNotFoundError:
        ours = "not installed as a package"
    return Finding("python", OK, f"{sys.version.split()[0]} at {sys.executable}; sparkmark {ours}")


def _java(settings: Settings) -> Finding:
    home = settings.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    fix = "install Java 17 or 21 (Debian: apt-get install openjdk-17-jre-headless), or set JAVA_HOME"
    if not java or not Path(java).exists():
        return Finding("java", FAIL, "no java on PATH and no JAVA_HOME", fix)
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Finding("java", FAIL, f"{java} does not run: {exc}", fix)
    found = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if found is None:
        return Finding("java", FAIL, f"{java} printed no version", fix)
    major = int(found.group(1)) if found.group(1) != "1" else int(found.group(2) or 0)
    if major < 17:
        return Finding("java", FAIL, f"Java {major} at {java}; Spark 4 needs 17 or later", fix)
    return Finding("java", OK, f"Java {major} at {java}")


def _pyspark() -> Finding:
    try:
        from ..connectors import spark_and_hadoop_versions

        spark, hadoop = spark_and_hadoop_versions()
    except ImportError as exc:
        return Finding(
            "pyspark", FAIL, f"cannot import PySpark: {exc}", "pip install sparkmark (it pins PySpark)"
        )
    return Finding("pyspark", OK, f"PySpark {spark} with Hadoop {hadoop}")


def _runtimes(settings: Settings) -> list[Finding]:
    """Each runtime, with the Glue version it serves; the Glue versions with none, as one
    line naming the command that adds them."""
    from .. import glue_versions, runtimes
    from ..errors import ConfigError

    try:
        found = runtimes.every(settings.runtimes_dir)
    except ConfigError as exc:
        return [Finding("runtimes", FAIL, str(exc))]
    out = [
        Finding(
            f"runtime glue {r.glue_version}",
            OK,
            f"Spark {r.spark}, Python at {r.python}" + ("" if r.own else f" ({r.folder})"),
        )
        for r in found
    ]
    served = {r.glue_version for r in found}
    missing = [v for v in glue_versions.RELEASES if v not in served]
    if missing:
        out.append(
            Finding(
                "runtimes",
                INFO,
                f"no runtime for Glue {', '.join(missing)}: jobs naming those versions are refused",
                " ; ".join(f"sparkmark runtime add {v}" for v in missing),
            )
        )
    return out


def _awsglue(settings: Settings) -> Finding:
    import importlib.util

    from ..glue import shim

    if settings.awsglue.lower() in ("off", "0", "false", "aws"):
        return Finding("awsglue", INFO, "SPARKMARK_AWSGLUE is off: `import awsglue` is left to AWS's library")
    hooked = any(isinstance(f, shim.AwsGlueFinder) for f in sys.meta_path)
    if not hooked:
        return Finding(
            "awsglue",
            WARN,
            "the import hook is not installed in this environment: `import awsglue` fails outside `sparkmark run`",
            "sparkmark glue install-shim (a wheel install has it already)",
        )
    spec = importlib.util.find_spec("awsglue")
    target = getattr(getattr(spec, "loader", None), "target", None)
    aws_own = any((Path(p) / "awsglue" / "__init__.py").exists() for p in sys.path if p)
    note = (
        "; AWS's own awsglue is installed too, and is shadowed (SPARKMARK_AWSGLUE=off uses it)"
        if aws_own
        else ""
    )
    return Finding("awsglue", OK, f"`import awsglue` loads {target or 'sparkmark.glue'}{note}")


def _connectors(settings: Settings) -> list[Finding]:
    from .. import connectors
    from ..table_formats import FORMATS

    found = []
    on_demand = settings.connector_resolution == "on-demand"
    for connector in (*connectors.CONNECTORS, *FORMATS.values()):
        jars = connectors.resolved_jars(settings.jars_dir, connector)
        coords = connectors.coordinates(connector)
        damaged = connectors.damaged_jars(settings.jars_dir, connector)
        if damaged:
            jar, problem = next(iter(damaged.items()))
            found.append(
                Finding(
                    f"connector {connector.name}",
                    WARN,
                    f"{jar} is damaged: {problem}; jobs needing {connector.provides} fail until it is fetched again",
                    f"sparkmark connectors fetch {connector.name}",
                )
            )
        elif jars:
            pinned = connectors.listing(settings.jars_dir, connector).with_suffix(".coordinates").exists()
            how = "fetched on demand" if pinned else "from make jars"
            found.append(Finding(f"connector {connector.name}", OK, f"{len(jars)} jar(s), {how}: {coords}"))
        elif on_demand:
            found.append(
                Finding(
                    f"connector {connector.name}",
                    INFO,
                    f"not fetched yet; the first job that needs it fetches {coords}",
                    f"sparkmark connectors fetch {connector.name} (now, e.g. for an offline CI image)",
                )
            )
        else:
            found.append(
                Finding(
                    f"connector {connector.name}",
                    WARN,
                    f"not resolved, and SPARKMARK_CONNECTOR_RESOLUTION is off: jobs needing {connector.provides} fail",
                    f"sparkmark connectors fetch {connector.name}, or make jars",
                )
            )
    return found


def _state_store(settings: Settings) -> Finding:
    from sqlalchemy import make_url

    from ..app import App
    from ..engine.schema import SCHEMA_VERSION, stored_version
    from ..errors import SparkmarkError

    url = make_url(settings.state_url)
    shown = url.render_as_string(hide_password=True)
    if url.get_backend_name() == "sqlite" and url.database and not Path(url.database).exists():
        return Finding("state store", INFO, f"{shown}: not created yet (made by the first run)")
    try:
        store = App.unmigrated_handle(settings)
        try:
            with store.engine.connect() as conn:
                version = stored_version(conn)
        finally:
            store.close()
    except SparkmarkError as exc:
        return Finding("state store", FAIL, str(exc), "start the database, or fix SPARKMARK_STATE_URL")
    except Exception as exc:  # noqa: BLE001 - a driver's error, told in one line
        return Finding("state store", FAIL, f"{shown}: {str(exc).splitlines()[0]}", "fix SPARKMARK_STATE_URL")
    state = "current" if version == SCHEMA_VERSION else f"migrated to {SCHEMA_VERSION} when next opened"
    return Finding("state store", OK, f"{shown}: schema {version} ({state})")


def _answers(url: str, default_port: int) -> bool:
    from ..devservices.process import port_answers

    parsed = urlparse(url if "://" in url else f"tcp://{url}")
    return port_answers(parsed.port or default_port, parsed.hostname or "127.0.0.1", timeout=2)


def _servers(settings: Settings) -> list[Finding]:
    from ..api.server import running_endpoint

    found = []
    if settings.spark_master.startswith("spark://"):
        from ..errors import ConfigError
        from ..spark import check_master  # the check a session makes before it starts

        try:
            check_master(settings.spark_master)
            found.append(Finding("spark master", OK, f"{settings.spark_master} answers"))
        except ConfigError as exc:
            found.append(
                Finding(
                    "spark master",
                    FAIL,
                    str(exc),
                    "start the cluster, or unset SPARKMARK_SPARK_MASTER for local[*]",
                )
            )
    else:
        found.append(Finding("spark master", OK, f"{settings.spark_master} (in this process)"))
    if settings.spark_remote:
        up = _answers(settings.spark_remote.replace("sc://", "tcp://"), 15002)
        found.append(
            Finding(
                "spark connect",
                OK if up else FAIL,
                f"{settings.spark_remote} {'answers' if up else 'does not answer'}",
                "" if up else "start the Spark Connect server, or unset SPARK_REMOTE",
            )
        )
    if settings.aws_endpoint_url_s3:
        up = _answers(settings.aws_endpoint_url_s3, 443)
        found.append(
            Finding(
                "s3 endpoint",
                OK if up else WARN,
                f"{settings.aws_endpoint_url_s3} {'answers' if up else 'does not answer'}",
                "" if up else "start the S3 server, or fix AWS_ENDPOINT_URL_S3",
            )
        )
    else:
        found.append(Finding("s3 endpoint", INFO, "AWS's own (no AWS_ENDPOINT_URL_S3)"))
    glue = settings.environ.get("AWS_ENDPOINT_URL_GLUE") or running_endpoint(settings)
    if glue:
        up = _answers(glue, 443)
        found.append(
            Finding(
                "glue endpoint",
                OK if up else WARN,
                f"{glue} {'answers' if up else 'does not answer'}",
                "" if up else "sparkmark api starts it",
            )
        )
    else:
        found.append(
            Finding(
                "glue endpoint",
                INFO,
                "none running; `sparkmark run` starts one in its own process for a script that calls boto3",
                "sparkmark api (for the AWS CLI, boto3 and Airflow outside a run)",
            )
        )
    if settings.metastore_url:
        rest = settings.metastore_url.split(":", 1)[1] if settings.metastore_url.startswith("jdbc:") else ""
        up = _answers(rest, 5432) if "//" in rest else True
        found.append(
            Finding(
                "metastore",
                OK if up else FAIL,
                f"{urlparse(rest).scheme or 'derby'} metastore {'answers' if up else 'does not answer'}",
                "" if up else "start its database, or unset SPARKMARK_METASTORE_URL",
            )
        )
    return found


def findings(settings: Settings) -> list[Finding]:
    return [
        _python(),
        _java(settings),
        _pyspark(),
        *_runtimes(settings),
        _awsglue(settings),
        *_connectors(settings),
        _state_store(settings),
        *_servers(settings),
    ]


def doctor_command(as_json: bool = typer.Option(False, "--json", help="Print JSON")) -> None:
    """Print what is installed and resolved (Java, PySpark, each connector, the state
    store, the servers it can reach), each with a one-line fix; exit 1 when a job cannot run."""
    settings = Settings.from_env()
    found = findings(settings)
    if as_json:
        print_json([asdict(f) for f in found])
    else:
        style = {OK: "green", INFO: "cyan", WARN: "yellow", FAIL: "bold red"}
        rows = [
            [f.check, f"[{style[f.status]}]{f.status}[/]", escape(f.detail), escape(f.fix)] for f in found
        ]
        console.print(table("sparkmark doctor", ["check", "status", "detail", "fix"], rows))
    if any(f.status == FAIL for f in found):
        raise typer.Exit(1)

"""A Spark Connect server on 127.0.0.1, started with the pinned PySpark's spark-submit
(its connect jar ships inside PySpark), over ``local[N]`` or a standalone master."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from .cluster import spark_home
from .process import ServerProcess, free_port, port_answers

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


@dataclass
class ConnectServer:
    url: str  # sc://127.0.0.1:PORT
    process: ServerProcess
    ui_url: str | None = None  # its Spark UI (http://127.0.0.1:PORT), when started with one

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        self.process.stop()


def start_connect(
    work: Path,
    master: str = "local[2]",
    port: int | None = None,
    conf: dict[str, str] | None = None,
    *,
    ui: bool = False,
) -> ConnectServer:
    """The server; with ``ui``, its Spark UI on a port of its own too, whose REST API
    gives the runs' Spark metrics (``SPARKMARK_SPARK_UI_URL``)."""
    submit = spark_home() / "bin" / "spark-submit"
    if not submit.exists():
        raise ConfigError(f"{submit} is missing: the pinned PySpark should ship it")
    work.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    ui_port = free_port() if ui else None
    argv = [str(submit), "--class", SERVER_CLASS, "--master", master, "--name", "Spark Connect server"]
    settings = {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "true" if ui_port else "false",
        **({"spark.ui.port": str(ui_port)} if ui_port else {}),
        "spark.sql.session.timeZone": "UTC",
        **(conf or {}),
    }
    for key, value in settings.items():
        argv += ["--conf", f"{key}={value}"]
    argv.append("spark-internal")
    env = dict(os.environ, SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP="127.0.0.1")
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    process = ServerProcess("the Spark Connect server", argv, work / "connect.log", env=env)
    process.wait_until(lambda: port_answers(port), 120, "listening")
    return ConnectServer(
        f"sc://127.0.0.1:{port}", process, f"http://127.0.0.1:{ui_port}" if ui_port else None
    )

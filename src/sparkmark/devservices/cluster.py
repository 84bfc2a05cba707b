"""A Spark standalone cluster on 127.0.0.1: one master and its workers, each a separate
JVM started with ``spark-class`` from the pinned PySpark (nothing downloaded), each
worker with one core and a little memory. Stopped by process id.

Ready means the master's status page lists every worker ALIVE."""

from __future__ import annotations

import json
import os
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError
from .process import ServerProcess, free_port


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _spark_class() -> str:
    path = spark_home() / "bin" / "spark-class"
    if not path.exists():
        raise ConfigError(f"{path} is missing: the pinned PySpark should ship it")
    return str(path)


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(work / "logs"),
        SPARK_WORKER_DIR=str(work / "work"),
        SPARK_NO_DAEMONIZE="1",
        # Each executor gets its own copy of every jar an application ships (with the
        # connectors, hundreds of MB): a finished application's folder is removed after
        # a minute, not Spark's seven days.
        SPARK_WORKER_OPTS=" ".join(
            [
                os.environ.get("SPARK_WORKER_OPTS", ""),
                "-Dspark.worker.cleanup.enabled=true",
                "-Dspark.worker.cleanup.interval=60",
                "-Dspark.worker.cleanup.appDataTtl=60",
            ]
        ).strip(),
    )
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    return env


@dataclass
class SparkCluster:
    master_url: str
    ui_url: str
    master: ServerProcess
    workers: list[ServerProcess] = field(default_factory=list)
    work: Path | None = None

    @property
    def pids(self) -> list[int]:
        return [self.master.pid, *[w.pid for w in self.workers]]

    def status(self) -> dict:
        with urllib.request.urlopen(self.ui_url + "/json/", timeout=5) as answer:
            return json.loads(answer.read())

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.status().get("workers", []) if w.get("state") == "ALIVE")
        except OSError:
            return 0

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()
        self.master.stop()
        if self.work is not None:
            # The executors' copies of shipped jars; their logs stay.
            for jar in self.work.glob("worker-*/app-*/*/*.jar"):
                jar.unlink(missing_ok=True)


def start_cluster(
    work: Path, workers: int = 2, worker_memory: str = "1g", port: int | None = None
) -> SparkCluster:
    """Start a master and ``workers`` workers (one core each); return once all are ALIVE."""
    work.mkdir(parents=True, exist_ok=True)
    env = _env(work)
    port, ui = port or free_port(), free_port()
    master = ServerProcess(
        "the Spark master",
        [
            _spark_class(),
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(ui),
        ],
        work / "master.log",
        env=env,
    )
    cluster = SparkCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}", master, work=work)
    try:
        master.wait_until(lambda: _answers(cluster), 60, "listening")
        for n in range(workers):
            cluster.workers.append(
                ServerProcess(
                    f"Spark worker {n + 1}",
                    [
                        _spark_class(),
                        "org.apache.spark.deploy.worker.Worker",
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        "1",
                        "--memory",
                        worker_memory,
                        "--webui-port",
                        str(free_port()),
                        "--work-dir",
                        str(work / f"worker-{n + 1}"),
                        cluster.master_url,
                    ],
                    work / f"worker-{n + 1}.log",
                    env=env,
                )
            )
        master.wait_until(lambda: cluster.alive_workers() == workers, 60, f"joined by {workers} workers")
    except ConfigError:
        cluster.stop()
        raise
    return cluster


def _answers(cluster: SparkCluster) -> bool:
    try:
        cluster.status()
        return True
    except OSError:
        return False

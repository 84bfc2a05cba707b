"""A single-node Apache Kafka broker in KRaft mode (broker and controller in one
process), from the jars ``make jars`` resolves (the ``kafka-broker`` module). Its log
directory is a folder it is given; nothing else is written."""

from __future__ import annotations

import base64
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from .process import ServerProcess, free_port

CLASSPATH_FILE = "kafka-broker.classpath"
STARTED = "Kafka Server started"

_LOG4J = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
"""


def broker_classpath(jars_dir: Path) -> str:
    listing = jars_dir / CLASSPATH_FILE
    try:
        classpath = listing.read_text(encoding="utf-8").strip()
    except OSError:
        classpath = ""
    missing = [j for j in classpath.split(":") if j and not Path(j).is_file()]
    if not classpath or missing:
        raise ConfigError(
            f"the Kafka broker's jars are not resolved ({listing} is missing or stale): run `make jars` first"
        )
    return classpath


@dataclass
class KafkaBroker:
    bootstrap_servers: str
    process: ServerProcess
    log_dir: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        self.process.stop()


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise ConfigError("the Kafka broker needs Java 17 on the PATH (`java` was not found)")
    return java


def new_cluster_id() -> str:
    """16 random bytes in URL-safe base64 without padding, as Kafka's own ids; never
    starting with '-', which the storage tool's argument parser takes for an option."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def start_kafka(
    workdir: Path,
    jars_dir: Path,
    port: int | None = None,
    timeout: float = 90.0,
    controller_port: int | None = None,
) -> KafkaBroker:
    """Formats a fresh KRaft log directory under ``workdir`` and starts the broker on
    127.0.0.1:``port`` and its controller on ``controller_port`` (free ports by
    default); returns once it serves clients."""
    classpath = broker_classpath(jars_dir)
    port = port or free_port()
    controller_port = controller_port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    log_dir = workdir / "kraft-logs"
    server_log = workdir / "server.log"
    props = workdir / "server.properties"
    props.write_text(
        "\n".join(
            [
                "process.roles=broker,controller",
                "node.id=1",
                f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
                f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
                "controller.listener.names=CONTROLLER",
                "inter.broker.listener.name=PLAINTEXT",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                f"log.dirs={log_dir}",
                "num.partitions=1",
                "offsets.topic.replication.factor=1",
                "transaction.state.log.replication.factor=1",
                "transaction.state.log.min.isr=1",
                "share.coordinator.state.topic.replication.factor=1",
                "share.coordinator.state.topic.min.isr=1",
                "group.initial.rebalance.delay.ms=0",
                "auto.create.topics.enable=true",
                "",
            ]
        ),
        encoding="utf-8",
    )
    log4j = workdir / "log4j2.properties"
    log4j.write_text(_LOG4J.format(log=server_log), encoding="utf-8")
    java = [_java(), "-Xmx512m", "-XX:+UseSerialGC", f"-Dlog4j2.configurationFile={log4j}", "-cp", classpath]

    cluster_id = new_cluster_id()
    formatter = ServerProcess(
        "the Kafka storage formatter",
        [*java, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(props)],
        workdir / "format.log",
    )
    if formatter.process.wait(timeout) != 0:
        raise ConfigError(f"formatting the Kafka log directory failed; see {workdir / 'format.log'}")

    process = ServerProcess("the Kafka broker", [*java, "kafka.Kafka", str(props)], workdir / "stdout.log")

    def started() -> bool:
        try:
            return STARTED in server_log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False

    process.wait_until(started, timeout, f"serving on 127.0.0.1:{port}")
    return KafkaBroker(f"127.0.0.1:{port}", process, log_dir)

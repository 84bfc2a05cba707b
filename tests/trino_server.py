"""Trino as a test starts it: the server `make trino` unpacked in .trino, one node on
127.0.0.1, with a Hive catalog and an Iceberg catalog on a Glue endpoint (Trino's Glue
metastore, ``hive.metastore=glue`` and ``iceberg.catalog.type=glue``) and S3 at a given
endpoint, each exactly as Trino's documentation configures them."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VERSION = os.environ.get("SPARKMARK_TRINO_VERSION", "476")
SERVER = REPO / ".trino" / f"trino-server-{VERSION}"
JAVA = Path(os.environ.get("SPARKMARK_TRINO_JAVA_HOME", "/usr/lib/jvm/temurin-25-jdk-amd64"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Trino:
    def __init__(self, root: Path, glue_url: str, glue_secret: str, s3_url: str, cert: Path | None = None):
        if not (SERVER / "bin" / "launcher").exists():
            pytest.fail("Trino is not installed: run `make trino`")
        if not (JAVA / "bin" / "java").exists():
            pytest.fail(f"Trino needs Java 24 or newer: none at {JAVA} (SPARKMARK_TRINO_JAVA_HOME)")
        etc, data = root / "etc", root / "data"
        (etc / "catalog").mkdir(parents=True, exist_ok=True)
        data.mkdir(exist_ok=True)
        self.port = _free_port()
        (etc / "node.properties").write_text(
            f"node.environment=sparkmark\nnode.id=trino-test\nnode.data-dir={data}\n"
            "node.bind-ip=127.0.0.1\nnode.internal-address=127.0.0.1\n"
        )
        jvm = [
            "-server",
            "-Xmx1536M",
            "-XX:+UseG1GC",
            "-XX:+ExitOnOutOfMemoryError",
            "-Djdk.attach.allowAttachSelf=true",
        ]
        if cert is not None:  # the endpoint's self-signed certificate, trusted as a private CA's would be
            store = root / "trust.p12"
            subprocess.run(
                [str(JAVA / "bin" / "keytool"), "-importcert", "-noprompt", "-alias", "sparkmark", "-file", str(cert),
                 "-keystore", str(store), "-storetype", "PKCS12", "-storepass", "changeit"],
                check=True, capture_output=True,
            )  # fmt: skip
            jvm += [f"-Djavax.net.ssl.trustStore={store}", "-Djavax.net.ssl.trustStorePassword=changeit"]
        (etc / "jvm.config").write_text("\n".join(jvm) + "\n")
        (etc / "config.properties").write_text(
            f"coordinator=true\nnode-scheduler.include-coordinator=true\nhttp-server.http.port={self.port}\n"
            f"discovery.uri=http://127.0.0.1:{self.port}\nquery.max-memory=1GB\nquery.max-memory-per-node=512MB\n"
        )
        storage = (
            f"fs.native-s3.enabled=true\ns3.endpoint={s3_url}\ns3.region=us-east-1\ns3.path-style-access=true\n"
            "s3.aws-access-key=test\ns3.aws-secret-key=test\n"
        )
        glue = (
            f"hive.metastore.glue.region=us-east-1\nhive.metastore.glue.endpoint-url={glue_url}\n"
            f"hive.metastore.glue.aws-access-key=trino\nhive.metastore.glue.aws-secret-key={glue_secret}\n"
        )
        (etc / "catalog" / "hive.properties").write_text(
            "connector.name=hive\nhive.metastore=glue\n" + glue + storage
        )
        (etc / "catalog" / "iceberg.properties").write_text(
            "connector.name=iceberg\niceberg.catalog.type=glue\n" + glue + storage
        )
        self.log = root / "trino.log"
        env = {**os.environ, "JAVA_HOME": str(JAVA), "PATH": f"{JAVA / 'bin'}:{os.environ['PATH']}"}
        self.process = subprocess.Popen(
            [str(SERVER / "bin" / "launcher"), "run", f"--etc-dir={etc}", f"--data-dir={data}"],
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.monotonic() + 180
        while "SERVER STARTED" not in self.log.read_text(errors="replace"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise AssertionError("Trino did not start:\n" + self.log.read_text(errors="replace")[-4000:])
            time.sleep(0.5)

    def query(self, sql: str) -> list[list]:
        import trino

        with trino.dbapi.connect(host="127.0.0.1", port=self.port, user="analyst") as conn:
            cursor = conn.cursor()
            cursor.execute(sql)
            return [list(row) for row in cursor.fetchall()]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()

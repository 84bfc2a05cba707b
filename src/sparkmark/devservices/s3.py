"""An S3 API server on 127.0.0.1: moto's server mode, from the test extras
(``pip install -e '.[test]'``). Clients reach it over HTTP as they would reach AWS,
with the endpoint URL and any access key. The same server answers the Kinesis API
(the streaming source's ``endpointUrl``)."""

from __future__ import annotations

import importlib.util
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from .process import ServerProcess, free_port


@dataclass
class S3Server:
    endpoint_url: str
    process: ServerProcess

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        self.process.stop()


def start_s3(workdir: Path, port: int | None = None, timeout: float = 60.0) -> S3Server:
    if importlib.util.find_spec("moto") is None:
        raise ConfigError("the S3 server is moto's server mode: install it with `pip install -e '.[test]'`")
    port = port or free_port()
    endpoint = f"http://127.0.0.1:{port}"
    process = ServerProcess(
        "the S3 server (moto)",
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        workdir / "moto.log",
    )

    def answers() -> bool:
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1):
                return True
        except OSError:
            return False

    process.wait_until(answers, timeout, f"answering at {endpoint}")
    return S3Server(endpoint, process)

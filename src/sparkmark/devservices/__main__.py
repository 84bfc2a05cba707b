"""``python -m sparkmark.devservices kafka|s3|cluster [--port N]``: run one development
server in the foreground until Ctrl-C (``make kafka``, ``make s3``, ``make cluster``)."""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
from pathlib import Path

from ..errors import SparkmarkError
from ..settings import Settings
from .cluster import SparkCluster, start_cluster
from .kafka import KafkaBroker, start_kafka
from .s3 import S3Server, start_s3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparkmark.devservices")
    parser.add_argument("server", choices=["kafka", "s3", "cluster"])
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument(
        "--controller-port",
        type=int,
        default=None,
        help="kafka: the KRaft controller's port (default: a free one)",
    )
    args = parser.parse_args(argv)
    if args.controller_port is not None and args.server != "kafka":
        parser.error("--controller-port is for kafka")
    workdir = Path(tempfile.mkdtemp(prefix=f"sparkmark-{args.server}-"))
    server: KafkaBroker | S3Server | SparkCluster
    try:
        if args.server == "cluster":
            server = start_cluster(workdir, workers=2, port=args.port or 7077)
            print(
                f"Spark standalone master {server.master_url} (status {server.ui_url}), 2 workers, "
                f"pids {server.pids}; export SPARKMARK_SPARK_MASTER={server.master_url}"
            )
        elif args.server == "kafka":
            server = start_kafka(
                workdir, Settings.from_env().jars_dir, args.port or 9092, controller_port=args.controller_port
            )
            print(f"Kafka (KRaft) on {server.bootstrap_servers}, pid {server.pid}, data in {workdir}")
        else:
            server = start_s3(workdir, args.port or 9000)
            print(
                f"S3 API (moto) at {server.endpoint_url}, pid {server.pid}; "
                f"export AWS_ENDPOINT_URL_S3={server.endpoint_url}"
            )
    except SparkmarkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    # The signals that stop the server are blocked, so that sigwait receives them
    # instead of their default action ending this process and leaving the server
    # running. Blocked only now: the server's processes, started above, keep theirs.
    stops = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    print("Ctrl-C stops it.", flush=True)
    try:
        received = signal.sigwait(stops)
        print(f"stopping on {signal.Signals(received).name}", flush=True)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

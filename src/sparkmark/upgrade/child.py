"""``python -m sparkmark.upgrade.child``: the upgrade check's runs under one Glue version,
in that version's runtime. Reads one JSON document on stdin (the jobs: each a script,
its arguments and a name; the capture folder; the sample size) and runs each job in
this process, one after another on one Spark, as ``sparkmark run`` would, with its
writes captured (``runtime.capture``) rather than made. Beside each job's capture it
leaves ``run.json``: its exit code, its error line and the warnings it logged. The
state store is the scratch home the check gave this process: no bookmark of the
user's moves.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any


class _Warnings(logging.Handler):
    """The warnings a job logs (sparkmark's, and Python's warnings, e.g. deprecations)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(("sparkmark", "py.warnings")):
            self.seen.append(record.getMessage().splitlines()[0][:300])


def run_jobs(document: dict[str, Any]) -> None:
    from ..errors import first_line
    from ..host import RunRequest, run_request
    from ..pool import reset
    from ..runtime import capture

    logging.captureWarnings(True)
    warnings = _Warnings()
    logging.getLogger().addHandler(warnings)
    root = Path(document["folder"])
    for job in document["jobs"]:
        folder = root / job["name"]
        capture.begin(folder, document.get("sample_rows"))
        warnings.seen = []
        saved_argv, saved_modules = list(sys.argv), set(sys.modules)
        code, error = 1, None
        try:
            request = RunRequest.checked({"script": job["script"], "arguments": job["arguments"]})
            outcome = run_request(request)
            code, error = outcome.code, outcome.error
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception as exc:  # noqa: BLE001 - the job's failure is what the check compares
            code, error = 1, first_line(exc)
        finally:
            capture.end()
            sys.argv[:] = saved_argv
            reset.forget_modules(saved_modules)
            _fresh_session()
        ran = {"code": code, "error": error, "warnings": sorted(set(warnings.seen))}
        (folder / "run.json").write_text(json.dumps(ran), encoding="utf-8")


def _fresh_session() -> None:
    """The next job starts on a session of its own on the same Spark."""
    from pyspark.sql import SparkSession

    from ..pool import reset

    session = SparkSession.getActiveSession()
    if session is not None:
        reset.clear(session)
        reset.fresh_session(session)


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run_jobs(json.load(sys.stdin))


if __name__ == "__main__":
    main()

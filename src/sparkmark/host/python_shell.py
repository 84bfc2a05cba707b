"""A Python shell job's run (Glue's ``pythonshell`` command): the script as ``__main__``
in a plain Python process, with no JVM and no Spark.

The scheduler starts ``python -m sparkmark.host.python_shell`` with the run's request
on standard input (``handover``), its Glue, CloudWatch and CloudWatch Logs endpoints in
the environment, and its output in the run's log: what the script prints is the
``/aws-glue/python-jobs/output`` stream, what it writes to stderr (a traceback
included) the ``/error`` one. Before the script runs:

- its arguments are resolved as Glue passes them, so ``getResolvedOptions`` works;
  ``--job-bookmark-option`` is ignored, since Python shell jobs have no bookmarks;
- ``--library-set analytics`` is checked to be importable (pandas, numpy, scikit-learn,
  awswrangler), ``--additional-python-modules`` installed once per list and put first
  on the path, ``--extra-py-files`` put on the path; ``--extra-files`` is refused, as
  Glue refuses it for Python shell jobs;
- the process may use its DPU share of memory (1 GB at ``MaxCapacity`` 0.0625, 16 GB at
  1): beyond it an allocation raises ``MemoryError`` and the run fails saying so.

The scheduler records the run when the process ends, from its exit status and the one
line this process leaves beside it; this process touches no state store, so it starts
in a fraction of a second.
"""

from __future__ import annotations

import importlib.util
import logging
import runpy
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ArgumentError, SparkmarkError
from .handover import launched_document, record_exit
from .request import RunRequest

if TYPE_CHECKING:
    from ..settings import Settings

log = logging.getLogger("sparkmark.pythonshell")


@dataclass(frozen=True)
class Prepared:
    script: Path
    argv: list[str]
    path: list[str]  # folders and archives first on sys.path after the script's own
    memory: int  # bytes


def prepare(request: RunRequest, settings: Settings) -> Prepared:
    """Everything before the script runs; raises ArgumentError (one line) for what
    would stop it."""
    from .. import args as job_args
    from .. import python_modules
    from ..workflow import capacity

    script = Path(request.script.removeprefix("file://"))
    if "://" in request.script and not request.script.startswith("file://"):
        from .script import fetch_script

        script = fetch_script(request.script, settings)
    if not script.is_file():
        raise ArgumentError(f"script {str(script)!r} does not exist")
    resolved = job_args.resolve(list(request.arguments), default_job_name=script.stem)
    values = resolved.values
    if values.get("extra-files"):
        raise ArgumentError("--extra-files: Glue's Python shell jobs cannot use it (only Spark jobs can)")
    if resolved.bookmark_option.value != "job-bookmark-disable":
        log.warning(
            "%s: Python shell jobs have no bookmarks, as on Glue; %s is ignored",
            resolved.job_name,
            resolved.bookmark_option.value,
        )
    try:
        wanted = capacity.library_set(values.get("library-set"))
    except ValueError as exc:
        raise ArgumentError(str(exc)) from None
    if wanted == "analytics":
        missing = [name for name, module in capacity.ANALYTICS_MODULES.items() if not _importable(module)]
        if missing:
            raise ArgumentError(
                f"--library-set analytics: {', '.join(missing)} not installed in this Python "
                "(pip install 'sparkmark[analytics]')"
            )
    path = [str(folder) for folder in python_modules.for_run(values, [], settings.home)]
    path += _extra_py_files(values.get("extra-py-files"), settings)
    return Prepared(
        script, [str(script), *request.arguments], path, capacity.shell_memory_bytes(request.max_capacity)
    )


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _extra_py_files(text: str | None, settings: Settings) -> list[str]:
    """``--extra-py-files``: .py files (their folder), .zip, .whl and .egg archives (as
    they are: Python imports from them), local or fetched from a URL."""
    found = []
    for item in [p.strip() for p in (text or "").split(",") if p.strip()]:
        if "://" in item and not item.startswith("file://"):
            from .script import fetch_script

            local = fetch_script(item, settings)
        else:
            local = Path(item.removeprefix("file://"))
        if not local.exists():
            raise ArgumentError(f"--extra-py-files {item}: no such file")
        found.append(str(local.parent if local.suffix == ".py" else local))
    return found


def limit_memory(limit: int) -> None:
    """The process may allocate at most ``limit`` bytes of data (its heap and anonymous
    maps; RLIMIT_DATA, which unlike the address space does not count what libraries only
    reserve)."""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY and hard < limit:
        limit = hard
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def run(request: RunRequest, settings: Settings) -> tuple[int, str | None]:
    """Run the request's script in this process; its exit code and, when it failed, the
    one line saying why."""
    prepared = prepare(request, settings)
    from ..glue import shim

    shim.install()  # ``import awsglue.utils`` is sparkmark's façade, as in a Spark job
    sys.argv = prepared.argv
    sys.path[:0] = [str(prepared.script.resolve().parent), *prepared.path]
    limit_memory(prepared.memory)
    try:
        runpy.run_path(str(prepared.script), run_name="__main__")
    except SystemExit as exc:
        if exc.code in (None, 0):
            return 0, None
        code = exc.code if isinstance(exc.code, int) else 1
        return code, f"the script exited with status {exc.code}"
    except MemoryError:
        traceback.print_exc()
        gigabytes = prepared.memory / 1024**3
        return 1, (
            f"MemoryError: the job used more than its {gigabytes:g} GB (MaxCapacity "
            f"{request.max_capacity or 0.0625:g} DPU; a DPU is 16 GB)"
        )
    except BaseException as exc:  # noqa: BLE001 - every failure of the script is the run's, in one line
        traceback.print_exc()
        return (130 if isinstance(exc, KeyboardInterrupt) else 1), _error_line(exc, prepared.script)
    return 0, None


def _error_line(error: BaseException, script: Path) -> str:
    from ..engine.masking import mask_text

    text = str(error).strip().splitlines()
    line = f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
    where = None
    for frame in traceback.extract_tb(error.__traceback__):
        if Path(frame.filename).resolve() == script.resolve():
            where = f"{script.name} line {frame.lineno}"
    return mask_text(line + (f" ({where})" if where else ""))


def main() -> int:
    from ..settings import Settings

    try:
        settings = Settings.from_env()
        logging.basicConfig(
            level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
        document = launched_document()
        if document is None or "run" not in document:
            print("error: a Python shell job's process is started by sparkmark's scheduler", file=sys.stderr)
            return 2
        code, error = run(RunRequest.checked(document["run"]), settings)
    except SparkmarkError as exc:
        code, error = 1, str(exc)
    except ValueError as exc:  # a document that is not a run request
        code, error = 2, str(exc)
    sys.stdout.flush()
    if error:
        print(f"error: {error}", file=sys.stderr, flush=True)
    record_exit(code, error)
    return code


if __name__ == "__main__":
    raise SystemExit(main())

"""Glue's ``--additional-python-modules``: the Python packages a job or a session asks
for, installed with pip before its script runs, and the Python package each
``--datalake-formats`` format brings (Glue provides ``delta`` for Delta Lake).

A list is installed once per machine into sparkmark's home, in a folder named for what
was asked, and put first on the path of each run that asks for it again. The folder is
filled under another name and renamed when pip has finished, so a failed or interrupted
install is never taken for a done one. pip is the installer, as on Glue; a module it
cannot install fails the run in one line naming it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .errors import ArgumentError

log = logging.getLogger("sparkmark.modules")


def _format_packages() -> dict[str, str]:
    """The Python package of a table format whose jars --datalake-formats adds, at the
    version of those jars (read from their Maven coordinates in table_formats.py, so the
    two never drift), installed without its dependencies (it would otherwise bring a
    PySpark of its own)."""
    from .connectors import coordinates
    from .table_formats import FORMATS

    version = coordinates(FORMATS["delta"]).rsplit(":", 1)[-1]
    return {"delta": f"delta-spark=={version}"}


def requested(text: str | None) -> list[str]:
    """Glue's comma-separated list (``pandas==2.2.3,s3://bucket/x.whl``), each once."""
    return list(dict.fromkeys(m.strip() for m in (text or "").split(",") if m.strip()))


def installer_options(text: str | None) -> list[str]:
    """``--python-modules-installer-option``: pip options, space-separated (``-r`` makes
    each module a requirements file, as AWS documents it)."""
    return [o for o in (text or "").split() if o]


def _local(module: str, into: Path) -> str:
    """A wheel or requirements file named by URL (``s3://…``) is fetched first; pip reads
    local paths and requirement specifiers itself."""
    if "://" not in module or module.startswith(("http://", "https://", "git+")):
        return module
    import fsspec

    name = module.rstrip("/").rsplit("/", 1)[-1]
    target = into / name
    try:
        with fsspec.open(module, "rb") as src, open(target, "wb") as out:
            shutil.copyfileobj(src, out)
    except (OSError, ValueError) as exc:
        raise ArgumentError(f"--additional-python-modules {module}: cannot be read: {exc}") from None
    return str(target)


def install(
    modules: list[str], home: Path, options: list[str] | None = None, *, no_deps: bool = False
) -> Path | None:
    """Install ``modules`` (once per machine) and return the folder to put first on
    ``sys.path``; None when nothing is asked."""
    if not modules:
        return None
    options = list(options or [])
    key = hashlib.sha256("\0".join([*modules, "|", *options, str(no_deps)]).encode()).hexdigest()[:16]
    done = home / "python-modules" / key
    if done.is_dir():
        return done
    done.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=done.parent))
    try:
        fetched = work / "fetched"
        fetched.mkdir()
        target = work / "site-packages"
        args: list[str] = []
        for module in modules:
            local = _local(module, fetched)
            args += ["-r", local] if "-r" in options else [local]
        rest = [o for o in options if o != "-r"]
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        command += ["--target", str(target), *(["--no-deps"] if no_deps else []), *rest, *args]
        log.info("installing Python modules %s", ", ".join(modules))
        finished = subprocess.run(command, capture_output=True, text=True, check=False)
        if finished.returncode != 0:
            lines = [line for line in finished.stderr.splitlines() if line.strip()]
            raise ArgumentError(
                f"--additional-python-modules {','.join(modules)}: pip failed: "
                + (lines[-1].strip() if lines else f"exit code {finished.returncode}")
            )
        try:
            os.replace(target, done)
        except OSError:
            if not done.is_dir():  # another run finished the same install first: use it
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return done


def for_run(arguments: dict[str, str], formats: Sequence[str], home: Path) -> list[Path]:
    """The folders a run's path gains: its ``--additional-python-modules`` (with
    ``--python-modules-installer-option``) and its table formats' Python packages."""
    found = []
    known = _format_packages() if formats else {}  # (it reads PySpark's version: none for a shell job)
    packages = [known[f] for f in formats if f in known]
    for folder in (
        install(packages, home, no_deps=True),
        install(
            requested(arguments.get("additional-python-modules")),
            home,
            installer_options(arguments.get("python-modules-installer-option")),
        ),
    ):
        if folder is not None:
            found.append(folder)
    return found

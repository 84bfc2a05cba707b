"""Runtimes: the Python environments a job's ``GlueVersion`` runs in.

sparkmark's own environment is one runtime: the Glue version its PySpark is
(``glue_versions.release_for_spark``). ``sparkmark runtime add 5.0`` makes another in the runtimes
folder (``Settings.runtimes_dir``: ``$SPARKMARK_HOME/runtimes``), as ``glue-5.0``: a virtual environment holding the PySpark that
Glue version runs, from PyPI, *layered over* sparkmark's own environment (a ``.pth``
file adds its site-packages after the runtime's own). So a runtime has its own Spark
and exactly the sparkmark, and the libraries, of the install that starts its runs: a
run's process always speaks the hand-over protocol of the scheduler that started it.
docs/design/runtimes.md says why this and not a second full install.

Nothing here imports PySpark: the versions are read from package metadata.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version
from pathlib import Path

from . import glue_versions
from .errors import ConfigError

MARK = "runtime.json"  # written last: a folder without it is a runtime not finished
LAYER = "zz_sparkmark_layer.pth"


@dataclass(frozen=True)
class Runtime:
    glue_version: str
    spark: str  # the PySpark it has
    python: str  # its interpreter
    own: bool  # sparkmark's own environment, not one in the runtimes folder
    folder: Path | None = None

    @property
    def label(self) -> str:
        return f"Glue {self.glue_version} (Spark {self.spark})"


def own_spark() -> str:
    """The PySpark sparkmark's own environment has."""
    try:
        return installed_version("pyspark")
    except PackageNotFoundError:
        raise ConfigError(
            "PySpark is not installed in sparkmark's environment: pip install pyspark"
        ) from None


def own() -> Runtime:
    spark = own_spark()
    return Runtime(glue_versions.release_for_spark(spark).version, spark, sys.executable, True)


def folder(root: Path, glue_version: str) -> Path:
    return root / f"glue-{glue_version}"


def _python_of(venv: Path) -> Path:
    return venv / "bin" / "python"


def added(root: Path) -> list[Runtime]:
    """The runtimes ``sparkmark runtime add`` made in ``root``, by Glue version."""
    found = []
    for mark in sorted(root.glob(f"glue-*/{MARK}")) if root.is_dir() else []:
        try:
            doc = json.loads(mark.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        python = _python_of(mark.parent)
        if python.exists():
            found.append(
                Runtime(str(doc["glue_version"]), str(doc["spark"]), str(python), False, mark.parent)
            )
    return found


def every(root: Path) -> list[Runtime]:
    """Every runtime a run may use: sparkmark's own, then the added ones."""
    mine = own()
    return [mine, *(r for r in added(root) if r.glue_version != mine.glue_version)]


def for_version(root: Path, glue_version: str | None, *, job: str | None = None) -> Runtime:
    """The runtime a run of a job with ``glue_version`` uses: sparkmark's own when the job
    names none or names the version its Spark is, else the one added for it. A version
    with no runtime is one ConfigError line naming the command that adds it: a job never
    runs on another Spark than its version's."""
    mine = own()
    if glue_version is None or str(glue_version).strip() == mine.glue_version:
        return mine
    wanted = glue_versions.release(str(glue_version))
    for runtime in added(root):
        if runtime.glue_version == wanted.version:
            return runtime
    who = f"job {job!r}: " if job else ""
    raise ConfigError(
        f"{who}GlueVersion {wanted.version} runs Spark {wanted.spark}, and this install has no runtime "
        f"for it (it has {', '.join(r.label for r in every(root))}): run `sparkmark runtime add {wanted.version}`"
    )


def add(root: Path, glue_version: str, *, pip_args: tuple[str, ...] = ()) -> Runtime:
    """Make the runtime for ``glue_version`` in ``root``: a virtual environment with its
    Glue release's PySpark from PyPI, layered over this environment. Its mark is written
    last, so an interrupted add leaves no runtime (the next add starts again)."""
    release = glue_versions.release(glue_version)
    mine = own()
    if release.version == mine.glue_version:
        return mine
    target = folder(root, release.version)
    shutil.rmtree(target, ignore_errors=True)  # an unfinished one (no mark) or the one replaced
    target.parent.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "venv", str(target)], f"making a virtual environment in {target}")
    python = _python_of(target)
    _run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pip_args]
        + [f"pyspark=={release.spark}"],
        f"installing PySpark {release.spark} from PyPI",
    )
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / LAYER).write_text(
        "".join(f"import site; site.addsitedir({path!r})\n" for path in ours), encoding="utf-8"
    )
    script = target / "bin" / "sparkmark"
    script.write_text(
        f"#!{python}\nimport sys\nfrom sparkmark.cli.app import main\nsys.exit(main())\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    found = _run(
        [str(python), "-c", "import pyspark, sparkmark; print(pyspark.__version__)"],
        "checking that the runtime imports PySpark and sparkmark",
    ).strip()
    if found != release.spark:
        raise ConfigError(f"the runtime for Glue {release.version} has PySpark {found}, not {release.spark}")
    (target / MARK).write_text(
        json.dumps({"glue_version": release.version, "spark": found, "layered_over": list(ours)}) + "\n",
        encoding="utf-8",
    )
    return next(r for r in added(root) if r.glue_version == release.version)


def remove(root: Path, glue_version: str) -> bool:
    """Remove the runtime added for ``glue_version``; whether there was one."""
    target = folder(root, glue_versions.release(glue_version).version)
    if not target.exists():
        return False
    shutil.rmtree(target)
    return True


def _run(command: list[str], what: str) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()[
            -1
        ]
        raise ConfigError(f"{what} failed: {last}")
    return done.stdout

"""The upgrade check: jobs run under two Glue versions, each in its own runtime, and what
each did compared (``compare``).

Each version's runs are one process (``upgrade.child``) in that version's runtime, with
a scratch home of its own: a fresh state store and catalog, so no bookmark of the user's
moves and nothing is committed where they look. Every write goes into a capture instead
of its target (``runtime.capture``). The two processes run side by side.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from .. import runtimes
from ..errors import ConfigError
from ..settings import Settings
from .compare import Difference, Ran, compare

# Settings that would point a check's runs at the user's own state, catalog or temp.
_OWN_STATE = ("SPARKMARK_STATE_URL", "SPARKMARK_TEMP_DIR", "SPARKMARK_METASTORE_URL", "SPARKMARK_CONFIG")


@dataclass(frozen=True)
class Job:
    name: str
    script: str
    arguments: list[str]


@dataclass
class Report:
    old: str  # the Glue versions compared
    new: str
    jobs: list[str]
    differences: list[Difference] = field(default_factory=list)
    ends: dict[str, tuple[str, str]] = field(default_factory=dict)  # job: (old end, new end)

    def document(self) -> dict:
        return {
            "from": self.old,
            "to": self.new,
            "jobs": {
                j: {"old": self.ends.get(j, ("", ""))[0], "new": self.ends.get(j, ("", ""))[1]}
                for j in self.jobs
            },
            "differences": [
                {
                    "job": d.job,
                    "what": d.what,
                    "where": d.where,
                    "old": d.old,
                    "new": d.new,
                    "change": d.change.key if d.change else None,
                    "explanation": d.explanation,
                }
                for d in self.differences
            ],
        }


def run_check(
    settings: Settings,
    jobs: list[Job],
    old: str,
    new: str,
    *,
    key: list[str] | None = None,
    sample_rows: int | None = None,
    keep: Path | None = None,
) -> Report:
    """Run ``jobs`` under Glue ``old`` and ``new`` and compare them. A version with no
    runtime is one ConfigError line naming the command that adds it."""
    if old == new:
        raise ConfigError(f"--from and --to are both Glue {old}: name two versions")
    chosen = {v: runtimes.for_version(settings.runtimes_dir, v) for v in (old, new)}
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise ConfigError("two jobs of the check have one name: give each script its own file name")
    work = keep or Path(tempfile.mkdtemp(prefix="sparkmark-upgrade-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            done = list(
                pool.map(
                    lambda v: _run_version(settings, chosen[v], v, jobs, work, sample_rows),
                    (old, new),
                )
            )
        report = Report(old, new, names)
        for job in jobs:
            sides = []
            for version, problem in zip((old, new), done, strict=True):
                folder = work / version / job.name
                if not (folder / "run.json").exists():
                    raise ConfigError(f"the Glue {version} runs ended before job {job.name} ran: {problem}")
                sides.append(Ran.read(folder))
            report.ends[job.name] = (_end(sides[0]), _end(sides[1]))
            report.differences += compare(job.name, sides[0], sides[1], key)
        return report
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def _run_version(
    settings: Settings,
    runtime: runtimes.Runtime,
    version: str,
    jobs: list[Job],
    work: Path,
    sample: int | None,
) -> str:
    """Run every job under one version; the last lines of its log (for a process that
    ended early)."""
    env = {k: v for k, v in settings.environ.items() if k not in _OWN_STATE}
    env.update(
        SPARKMARK_HOME=str(work / f"home-{version}"),
        SPARKMARK_RUNTIMES_DIR=str(settings.runtimes_dir),
        SPARKMARK_CONFIG=str(work / "none.toml"),  # no project: only the jobs named here
    )
    document = {
        "folder": str(work / version),
        "sample_rows": sample,
        "jobs": [{"name": j.name, "script": j.script, "arguments": _with_name(j)} for j in jobs],
    }
    log = work / f"glue-{version}.log"
    with log.open("w", encoding="utf-8") as out:
        subprocess.run(
            [runtime.python, "-m", "sparkmark.upgrade.child"],
            input=json.dumps(document),
            text=True,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            check=False,
        )
    lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return " | ".join(lines[-3:]) if lines else "it printed nothing"


def _with_name(job: Job) -> list[str]:
    """The job's arguments, with ``--JOB_NAME`` its name unless they give one."""
    return job.arguments if "--JOB_NAME" in job.arguments[::2] else ["--JOB_NAME", job.name, *job.arguments]


def _end(ran: Ran) -> str:
    return "succeeded" if ran.code == 0 else "failed"

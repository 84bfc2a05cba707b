"""Starting a workflow run or a job run from a command, with or without a scheduler.

When a ``sparkmark scheduler`` leads, the run is handed to it (its supervisor is left
empty and the leader adopts it on its next pass). When none runs, the command
supervises the run itself, in the foreground, until the run ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..engine.schema import utcnow
from ..errors import SparkmarkError
from .records import ActionRecord, WorkflowRunRecord
from .scheduler import Scheduler

FINAL_RUN = ("COMPLETED", "STOPPED", "ERROR")


def _wait(check: Callable[[], bool], timeout: float | None, poll: float = 0.5) -> None:
    deadline = None if timeout is None else time.monotonic() + timeout
    while not check():
        if deadline is not None and time.monotonic() > deadline:
            raise SparkmarkError(f"the run did not end within {timeout:.0f} s")
        time.sleep(poll)


def start_workflow(
    scheduler: Scheduler,
    name: str,
    *,
    wait: bool = True,
    properties: dict[str, str] | None = None,
    timeout: float | None = None,
) -> WorkflowRunRecord:
    store = scheduler.store
    scheduler.leading = False  # drive this run only: schedules stay with `sparkmark scheduler`
    leader = store.leader(utcnow())
    supervisor = None if leader else scheduler.owner
    run_id = scheduler.start_workflow_run(name, supervisor=supervisor, properties=properties)
    if run_id is None:  # pragma: no cover - a fresh key cannot collide
        raise SparkmarkError(f"workflow {name!r} could not be started")
    done = lambda: store.workflow_run(run_id).status.value in FINAL_RUN  # noqa: E731
    if leader is None:
        if not scheduler.run(until=done, max_seconds=timeout):
            raise SparkmarkError(f"the run did not end within {timeout:.0f} s")
    elif wait:
        _wait(done, timeout)
    return store.workflow_run(run_id)


def run_job(
    scheduler: Scheduler,
    name: str,
    arguments: dict[str, str] | None = None,
    *,
    wait: bool = True,
    timeout: float | None = None,
) -> ActionRecord:
    """Run a declared job (with its retries) and return its last attempt."""
    store = scheduler.store
    scheduler.leading = False
    leader = store.leader(utcnow())
    first = scheduler.start_job_run(name, arguments, supervisor=None if leader else scheduler.owner)

    def last() -> ActionRecord:
        return store.actions_of(kind="JOB", name=name, first_id=first)[-1]

    done = lambda: last().final  # noqa: E731
    if leader is None:
        if not scheduler.run(until=done, max_seconds=timeout):
            raise SparkmarkError(f"the run did not end within {timeout:.0f} s")
    elif wait:
        _wait(done, timeout)
    return last()

"""Separate processes on one state store: commits of different jobs lose no update, and
of two processes starting the same job at the same moment exactly one runs."""

from __future__ import annotations

import multiprocessing as mp

import pytest

from sparkmark.engine.models import BookmarkOption, CtxCommit, FileEntry, RunState
from sparkmark.engine.store import StateStore
from sparkmark.errors import ConcurrentRunsExceeded

from ..conftest import pg_url

COMMITS = 15
ROUNDS = 8


def _commit_many(url: str, job: str, barrier, results) -> None:
    store = StateStore(url)
    barrier.wait()
    for k in range(COMMITS):
        run = store.start_run(
            job_name=job,
            run_id=f"jr_{job}_{k}",
            attempt=0,
            option=BookmarkOption.ENABLE,
            arguments={},
            owner=f"proc:{job}",
            lease_seconds=60,
        )
        store.commit(
            run,
            [CtxCommit("src", {"commits": k + 1}, [FileEntry(f"file:///in/{job}/{k}.json", k, 10)])],
            metrics={},
        )
    store.close()
    results.put(job)


def _race(url: str, job: str, who: int, barrier, results) -> None:
    store = StateStore(url)
    for rnd in range(ROUNDS):
        barrier.wait()
        try:
            run = store.start_run(
                job_name=job,
                run_id=f"jr_{job}_{rnd}_{who}",
                attempt=0,
                option=BookmarkOption.ENABLE,
                arguments={},
                owner=f"proc:{who}",
                lease_seconds=60,
            )
            outcome = "ran"
        except ConcurrentRunsExceeded:
            run, outcome = None, "refused"
        results.put((rnd, outcome))
        barrier.wait()  # both have tried; the winner now ends its run
        if run is not None:
            store.commit(run, [CtxCommit("src", {"round": rnd})], metrics={})
    store.close()


def _state_url(backend: str, tmp_path, pg_schemas) -> str:
    return f"sqlite:///{tmp_path / 'state.db'}" if backend == "sqlite" else pg_url(pg_schemas())


def test_eight_processes_committing_different_jobs_lose_no_update(tmp_path, pg_schemas):
    url = _state_url("postgresql", tmp_path, pg_schemas)
    StateStore(url).close()  # tables made once, before the race
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(8), ctx.Queue()
    jobs = [f"job{n}" for n in range(8)]
    procs = [ctx.Process(target=_commit_many, args=(url, j, barrier, results)) for j in jobs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 8
    assert sorted(results.get(timeout=5) for _ in jobs) == jobs
    store = StateStore(url)
    for job in jobs:
        latest = store.latest_version(job)
        assert latest.version == COMMITS and latest.ctx_states["src"] == {"commits": COMMITS}
        assert len(store.processed_files(job, "src", latest.lineage)) == COMMITS
        assert {r.state for r in store.list_runs(job)} == {RunState.SUCCEEDED}
    store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_two_processes_racing_on_one_job_exactly_one_runs(backend, tmp_path, pg_schemas):
    url = _state_url(backend, tmp_path, pg_schemas)
    StateStore(url).close()
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(url, "shared", who, barrier, results)) for who in (0, 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    outcomes: dict[int, list[str]] = {}
    for _ in range(2 * ROUNDS):
        rnd, outcome = results.get(timeout=5)
        outcomes.setdefault(rnd, []).append(outcome)
    assert all(sorted(o) == ["ran", "refused"] for o in outcomes.values()), outcomes
    store = StateStore(url)
    assert store.latest_version("shared").version == ROUNDS  # every winner committed
    store.close()

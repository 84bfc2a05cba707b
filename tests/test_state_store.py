"""The state store on SQLite and on the real PostgreSQL."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select

from sparkmark import (
    BookmarkConflict,
    ConcurrentRunsExceeded,
    NotFound,
    RunFinished,
    StateStoreError,
    UnknownJob,
    UnknownRun,
)
from sparkmark.engine import schema as t
from sparkmark.engine.bookmark_store import extend_lineage
from sparkmark.engine.models import BookmarkOption, CtxCommit, FileEntry, RunState
from sparkmark.engine.store import StateStore


def start(store, job, run_id, lease_seconds=60.0, **kw):
    return store.start_run(
        job_name=job,
        run_id=run_id,
        attempt=kw.get("attempt", 0),
        option=BookmarkOption.ENABLE,
        arguments=kw.get("arguments", {}),
        owner="test:1",
        lease_seconds=lease_seconds,
    )


def commit_files(store, job, run_id, names, ctx="src"):
    run = start(store, job, run_id)
    files = [FileEntry(f"file:///d/{n}", 1000, 10) for n in names]
    return store.commit(run, [CtxCommit(ctx, {"type": "files"}, files)], metrics={})


def file_rows(store) -> int:
    with store.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(t.files)).scalar()


def test_extend_lineage():
    assert extend_lineage((), 1) == ((1, 1),)
    assert extend_lineage(((1, 3),), 4) == ((1, 4),)
    assert extend_lineage(((1, 2),), 5) == ((1, 2), (5, 5))


def test_schema_is_versioned_and_reopening_is_idempotent(store):
    with store.engine.connect() as conn:
        assert t.stored_version(conn) == t.SCHEMA_VERSION
    again = StateStore(store.url.render_as_string(hide_password=False))
    with again.engine.connect() as conn:
        assert t.stored_version(conn) == t.SCHEMA_VERSION
    again.close()


def test_store_from_a_newer_sparkmark_is_refused(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    s = StateStore(url)
    with s.engine.begin() as conn:
        conn.execute(t.schema_info.update().values(value=str(t.SCHEMA_VERSION + 1)))
    s.close()
    with pytest.raises(StateStoreError, match="newer than this sparkmark"):
        StateStore(url)


def test_commit_cost_is_the_new_files_only(store, job_name):
    commit_files(store, job_name, "jr_1", [f"a{i}" for i in range(50)])
    assert file_rows(store) == 50
    commit_files(store, job_name, "jr_2", ["b0", "b1", "b2"])
    # The second commit wrote its 3 files and left the first 50 rows alone.
    assert file_rows(store) == 53
    latest = store.latest_version(job_name)
    assert latest.lineage == ((1, 2),)
    assert len(store.processed_files(job_name, "src", latest.lineage)) == 53


def test_versions_are_immutable_through_reset_and_rewind(store, job_name):
    commit_files(store, job_name, "jr_1", ["a"])
    commit_files(store, job_name, "jr_2", ["b"])
    store.reset(job_name)
    commit_files(store, job_name, "jr_3", ["c"])
    rewound = store.rewind(job_name, "jr_2")
    assert [v.kind.value for v in store.history(job_name)] == [
        "REWIND",
        "COMMIT",
        "RESET",
        "COMMIT",
        "COMMIT",
    ]
    assert rewound.rewound_to == 2
    assert set(store.processed_files(job_name, "src", rewound.lineage)) == {"file:///d/a", "file:///d/b"}
    # Older versions still read as they were.
    v4 = store.get_version(job_name, 4)
    assert set(store.processed_files(job_name, "src", v4.lineage)) == {"file:///d/c"}
    after = commit_files(store, job_name, "jr_4", ["d"])
    assert set(store.processed_files(job_name, "src", after.lineage)) == {
        "file:///d/a",
        "file:///d/b",
        "file:///d/d",
    }
    # The rewind version stands for the state after jr_2, so the next commit follows it.
    assert after.run == 3 and after.previous_run_id == "jr_2"


def test_rewind_to_a_failed_run_means_the_last_commit_before_it(store, job_name):
    commit_files(store, job_name, "jr_1", ["a"])
    start(store, job_name, "jr_bad")
    store.finish_run("jr_bad", RunState.FAILED, error="boom")
    commit_files(store, job_name, "jr_2", ["b"])
    assert store.version_after_run(job_name, "jr_bad").run_id == "jr_1"
    with pytest.raises(UnknownRun):
        store.version_after_run(job_name, "jr_nope")


def test_reset_of_unknown_job_is_refused(store):
    with pytest.raises(UnknownJob):
        store.reset("never_ran")


def test_optimistic_commit_refuses_a_stale_base(store, job_name):
    run = start(store, job_name, "jr_1")
    store.finish_run("jr_1", RunState.SUCCEEDED)  # frees the lease, bookmark unchanged
    commit_files(store, job_name, "jr_2", ["x"])  # moves the bookmark to version 1
    # jr_1 was based on version 0; a forged attempt to commit it must fail.
    with pytest.raises((BookmarkConflict, RunFinished)):
        store.commit(run, [], metrics={})
    run3 = start(store, job_name, "jr_3")
    store.reset(job_name)
    with pytest.raises(BookmarkConflict, match="moved from version 1 to 2"):
        store.commit(run3, [CtxCommit("src", {}, [FileEntry("file:///z", 1, 1)])], metrics={})
    assert store.get_run("jr_3").state is RunState.RUNNING  # the caller decides how it ends
    assert file_rows(store) == 1


def test_finish_twice_is_refused(store, job_name):
    start(store, job_name, "jr_1")
    store.finish_run("jr_1", RunState.STOPPED)
    with pytest.raises(RunFinished):
        store.finish_run("jr_1", RunState.SUCCEEDED)


def test_heartbeat_fails_after_takeover(store, job_name):
    start(store, job_name, "jr_old", lease_seconds=-1)
    assert store.heartbeat(job_name, "jr_old", 60) is True  # still ours until taken
    with store.engine.begin() as conn:  # let it lapse again
        conn.execute(t.leases.update().values(expires_at=t.utcnow().replace(year=2000)))
    start(store, job_name, "jr_new")
    assert store.heartbeat(job_name, "jr_old", 60) is False
    assert store.get_run("jr_old").state is RunState.FAILED


def test_racing_starts_of_one_job_let_exactly_one_run(store, job_name):
    outcomes: list[str] = []
    barrier = threading.Barrier(6)

    def attempt(n):
        barrier.wait()
        try:
            start(store, job_name, f"jr_race{n}")
            outcomes.append("ran")
        except ConcurrentRunsExceeded:
            outcomes.append("refused")

    threads = [threading.Thread(target=attempt, args=(n,)) for n in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(outcomes) == ["ran"] + ["refused"] * 5


def test_parallel_commits_of_different_jobs_lose_nothing(store, job_name):
    def work(n):
        for k in range(3):
            commit_files(store, f"{job_name}_{n}", f"jr_{job_name}_{n}_{k}", [f"{n}-{k}"])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for n in range(4):
        latest = store.latest_version(f"{job_name}_{n}")
        assert latest.version == 3
        assert len(store.processed_files(f"{job_name}_{n}", "src", latest.lineage)) == 3


def test_arguments_are_stored_as_given(store, job_name):
    run = start(store, job_name, "jr_1", arguments={"input": "/data", "JOB_NAME": job_name})
    assert run.arguments == {"input": "/data", "JOB_NAME": job_name}
    assert run.run_id == "jr_1" and run.state is RunState.RUNNING


def test_compaction_keeps_the_state_and_drops_superseded_rows(store, job_name):
    commit_files(store, job_name, "jr_1", ["a", "b"])
    run = start(store, job_name, "jr_2")  # b modified, c new
    store.commit(
        run,
        [
            CtxCommit(
                "src",
                {"type": "files"},
                [FileEntry("file:///d/b", 2000, 11), FileEntry("file:///d/c", 1000, 10)],
            )
        ],
        metrics={},
    )
    before = store.processed_files(job_name, "src", store.latest_version(job_name).lineage)
    result = store.compact(job_name)
    assert (result.rows_before, result.rows_after) == (4, 3)
    assert file_rows(store) == 3
    assert store.processed_files(job_name, "src", result.version.lineage) == before
    assert result.version.kind.value == "COMPACT" and result.version.run_id == "jr_2"
    # States from before the compaction are retired, with a clear error.
    with pytest.raises(NotFound, match="older than the compaction"):
        store.rewind(job_name, "jr_1")
    after = commit_files(store, job_name, "jr_3", ["d"])
    assert len(store.processed_files(job_name, "src", after.lineage)) == 4
    assert store.rewind(job_name, "jr_3").rewound_to == after.version


def test_compaction_can_forget_missing_files_and_is_refused_while_running(store, job_name):
    commit_files(store, job_name, "jr_1", ["a", "gone"])
    result = store.compact(job_name, keep=lambda ctx, path: not path.endswith("gone"))
    assert result.dropped_missing == 1
    assert set(store.processed_files(job_name, "src", result.version.lineage)) == {"file:///d/a"}
    start(store, job_name, "jr_2")
    with pytest.raises(ConcurrentRunsExceeded):
        store.compact(job_name)


def test_processed_files_below_folders(store, job_name):
    names = ["dt=1/a", "dt=10/b", "dt=1_x/c", "d%t/d", "dt=2/e"]
    run = start(store, job_name, "jr_1")
    store.commit(run, [CtxCommit("src", {}, [FileEntry(f"file:///r/{n}", 1, 1) for n in names])], metrics={})
    lineage = store.latest_version(job_name).lineage
    got = store.processed_files(job_name, "src", lineage, ["file:///r/dt=1", "file:///r/d%t"])
    assert sorted(got) == ["file:///r/d%t/d", "file:///r/dt=1/a"]  # not dt=10, not dt=1_x
    assert store.processed_files(job_name, "src", lineage, []) == {}
    assert len(store.processed_files(job_name, "src", lineage)) == 5
    with store.engine.connect() as conn:
        assert t.stored_version(conn) == t.SCHEMA_VERSION >= 2  # the path index's migration


def test_a_crashed_runs_lease_is_taken_over_with_a_log_line(store, job_name, caplog):
    import socket
    import subprocess
    import sys

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a process of this host that no longer runs
    store.start_run(
        job_name=job_name,
        run_id="jr_dead",
        attempt=0,
        option=BookmarkOption.ENABLE,
        arguments={},
        owner=f"{socket.gethostname()}:{gone.pid}",
        lease_seconds=600,
    )
    with caplog.at_level("WARNING", logger="sparkmark.state"):
        start(store, job_name, "jr_next")  # no wait for the 600 s lease
    assert "taking over the lease of run jr_dead" in caplog.text and "is gone" in caplog.text
    assert "run jr_next takes the job over" in caplog.text
    assert store.get_run("jr_dead").state is RunState.FAILED
    assert "taken over by run jr_next" in store.get_run("jr_dead").error

    store.finish_run("jr_next", RunState.SUCCEEDED)
    start(store, job_name, "jr_lapsed", lease_seconds=-1)  # alive elsewhere, lease expired
    caplog.clear()
    with caplog.at_level("WARNING", logger="sparkmark.state"):
        start(store, job_name, "jr_after")
    assert "stopped renewing its lease, which expired at" in caplog.text
    with pytest.raises(ConcurrentRunsExceeded):
        start(store, job_name, "jr_third")  # jr_after is alive: no takeover


def test_a_version_2_store_is_migrated_to_hold_outputs(tmp_path):
    """A store written before exactly-once sinks (schema 2) gains the outputs table."""
    from sqlalchemy import create_engine, inspect

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    with engine.begin() as conn:
        t._v1(conn)
        conn.execute(t.schema_info.insert().values(name="schema_version", value="1"))
        t._v2(conn)
        conn.execute(t.schema_info.update().values(value="2"))
    assert "sm_outputs" not in inspect(engine).get_table_names()
    engine.dispose()
    store = StateStore(url)
    with store.engine.connect() as conn:
        assert t.stored_version(conn) == t.SCHEMA_VERSION
    assert "sm_outputs" in inspect(store.engine).get_table_names()
    assert store.outputs("any") == []
    store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_version_3_store_keeps_its_entries_through_every_migration(backend, request, tmp_path):
    """Before object storage (schema 3) file entries had no ETag, and until schema 10
    each row held its whole path. Opening such a store moves every entry into folders
    and names: each path reads back with its mtime, size and version, no ETag, and each
    version's count is kept."""
    from sqlalchemy import create_engine, inspect

    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'old.db'}"
    else:
        from tests.conftest import pg_url

        url = pg_url(request.getfixturevalue("pg_schemas")())
    engine = create_engine(url)
    with engine.begin() as conn:
        t.schema_info.create(conn)
        t.metadata.create_all(conn, tables=[tb for tb in t._V1_TABLES if tb is not t.file_entries])
        conn.exec_driver_sql(
            "CREATE TABLE sm_file_entries (source_id INTEGER NOT NULL REFERENCES sm_sources (source_id), "
            "version INTEGER NOT NULL, path TEXT NOT NULL, mtime_ms BIGINT NOT NULL, size BIGINT NOT NULL, "
            "PRIMARY KEY (source_id, version, path))" + (" WITHOUT ROWID" if backend == "sqlite" else "")
        )
        conn.execute(t.schema_info.insert().values(name="schema_version", value="3"))
        t._v2(conn)
        t._v3(conn)
        conn.execute(t.sources.insert().values(source_id=1, job_name="old", ctx="src"))
        conn.exec_driver_sql(
            "INSERT INTO sm_file_entries VALUES "
            "(1, 1, 's3://b/t/dt=1/a.json', 10, 100), (1, 1, 's3://b/t/dt=2/b.json', 20, 200), "
            "(1, 2, 's3://b/t/dt=1/a.json', 11, 101), (1, 2, 's3://b/t/top.json', 30, 300)"
        )
    engine.dispose()
    store = StateStore(url)
    tables = set(inspect(store.engine).get_table_names())
    assert "sm_file_entries" not in tables and {"sm_files", "sm_folders"} <= tables
    with store.engine.connect() as conn:
        assert t.stored_version(conn) == t.SCHEMA_VERSION
    assert {
        p: (e.mtime_ms, e.size, e.etag, e.version)
        for p, e in store.processed_files("old", "src", ((1, 2),)).items()
    } == {
        "s3://b/t/dt=1/a.json": (11, 101, None, 2),
        "s3://b/t/dt=2/b.json": (20, 200, None, 1),
        "s3://b/t/top.json": (30, 300, None, 2),
    }
    # Version 1's state alone: the first a.json.
    assert store.processed_files("old", "src", ((1, 1),))["s3://b/t/dt=1/a.json"].mtime_ms == 10
    assert store.files_recorded("old", [1, 2, 3]) == {(1, "src"): 2, (2, "src"): 2}
    # Three folders, each path once.
    with store.engine.connect() as conn:
        assert sorted(conn.execute(select(t.folders.c.path)).scalars()) == [
            "s3://b/t/",
            "s3://b/t/dt=1/",
            "s3://b/t/dt=2/",
        ]
    store.close()


def plan_against_latest(store, job, folder, opts):
    """A file source's plan for ``folder`` against the job's latest bookmark version."""
    from sparkmark.engine.fileplan import plan_bookmarked

    latest = store.latest_version(job)
    return plan_bookmarked(
        store,
        job,
        "src",
        [str(folder)],
        opts,
        lineage=latest.lineage if latest else (),
        previous=latest.ctx_states.get("src", {}) if latest else {},
        now_ms=10**13,
    )


def test_folder_marks_are_recorded_when_they_change(store, tmp_path):
    """A run records a folder's mark (its mtime once every file in it is processed)
    only when the mark is new or has changed: the marks of unchanged folders stay in
    force from earlier versions, so skipping keeps working and a commit does not grow
    with the number of folders."""
    import os

    from sqlalchemy import func, select

    from sparkmark.engine.fileplan import ctx_commit
    from sparkmark.engine.increment import FileSourceOptions

    data = tmp_path / "data"
    for day in range(4):
        (data / f"dt={day}").mkdir(parents=True)
        (data / f"dt={day}" / "a.json").write_text("{}\n")
    opts = FileSourceOptions(max_band_ms=0, skip_unchanged_partitions=True)
    job, written = "marks", []

    def run(n):
        plan = plan_against_latest(store, job, data, opts)
        commit = ctx_commit(plan, previous=None, schema_json=None, run_id=f"jr_{n:064x}")
        written.append(sorted(d.rsplit("/", 1)[-1] for d in commit.dirs))
        store.commit(start(store, job, f"jr_{n:064x}"), [commit], metrics={})
        return plan

    first = run(1)
    assert len(first.increment.selected) == 4
    (data / "dt=2" / "b.json").write_text("{}\n")
    os.utime(data / "dt=2", (1_800_000_000, 1_800_000_000))  # whatever the clock's grain
    second = run(2)
    assert [f.name for f in second.increment.selected] == ["b.json"]
    third = run(3)
    assert third.increment.selected == []
    assert len(third.listing.skipped_dirs) == 4  # every folder's mark is still in force
    assert written == [["dt=0", "dt=1", "dt=2", "dt=3"], ["dt=2"], []]
    with store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(t.dir_entries)).scalar() == 5


def test_unchanged_folders_are_settled_by_their_digest_and_a_rewrite_is_still_found(store, tmp_path):
    """With the defaults every folder is listed and every file stat'ed; a folder whose
    files (names, mtimes, sizes) are those its mark recorded needs no per-file rows. A
    file rewritten in place, which leaves its folder's mtime as it was, changes the
    folder's digest and is read again."""
    import os

    from sparkmark.engine.fileplan import ctx_commit
    from sparkmark.engine.increment import FileSourceOptions

    data = tmp_path / "data"
    for day in range(3):
        (data / f"dt={day}").mkdir(parents=True)
        for n in range(2):
            (data / f"dt={day}" / f"{n}.json").write_text('{"v": 1}\n')
    opts = FileSourceOptions(max_band_ms=0)  # the defaults: no partition skipping

    def plan():
        return plan_against_latest(store, "digests", data, opts)

    def commit(p, n):
        run = start(store, "digests", f"jr_{n:064x}")
        store.commit(run, [ctx_commit(p, previous=None, schema_json=None, run_id=run.run_id)], metrics={})

    first = plan()
    assert len(first.increment.selected) == 6 and first.settled == set()
    commit(first, 1)
    again = plan()
    assert again.increment.selected == [] and len(again.settled) == 3
    assert again.increment.already_processed == 6

    target = data / "dt=1" / "0.json"
    folder_times = os.stat(data / "dt=1")
    target.write_text('{"v": 2}\n')  # same size, new content
    os.utime(target, (1_900_000_000, 1_900_000_000))
    os.utime(data / "dt=1", ns=(folder_times.st_atime_ns, folder_times.st_mtime_ns))
    rewritten = plan()
    assert [f.name for f in rewritten.increment.selected] == ["0.json"]
    assert rewritten.increment.modified == 1
    assert rewritten.settled == {f"file://{data}/dt=0", f"file://{data}/dt=2"}


def test_the_files_of_given_folders_are_read_without_their_siblings(store, job_name):
    """A run reads the state of the folders it compares: exactly the files in each
    (a folder named like the start of another, dt=1 beside dt=10, stays out), with a
    trailing slash or without, and nothing for a folder never recorded."""
    run = start(store, job_name, "jr_" + "1" * 64)
    files = [
        FileEntry("s3://b/t/dt=1/a.json", 1, 10),
        FileEntry("s3://b/t/dt=1/b.json", 2, 20),
        FileEntry("s3://b/t/dt=10/c.json", 3, 30),
        FileEntry("s3://b/t/dt=1/x=2/d.json", 4, 40),
    ]
    store.commit(run, [CtxCommit("src", {"type": "files"}, files)], metrics={})
    lineage = store.latest_version(job_name).lineage
    assert set(store.processed_files(job_name, "src", lineage, ["s3://b/t/dt=1"])) == {
        "s3://b/t/dt=1/a.json",
        "s3://b/t/dt=1/b.json",
    }
    both = store.processed_files(job_name, "src", lineage, ["s3://b/t/dt=10/", "s3://b/t/dt=1/x=2"])
    assert {p: (e.mtime_ms, e.size) for p, e in both.items()} == {
        "s3://b/t/dt=10/c.json": (3, 30),
        "s3://b/t/dt=1/x=2/d.json": (4, 40),
    }
    assert len(store.processed_files(job_name, "src", lineage, ["s3://b/t/dt=2"])) == 0
    assert len(store.processed_files(job_name, "src", lineage, [])) == 0


def test_closing_a_store_waits_for_the_late_writes_it_was_told_of(tmp_path):
    """A run's last metrics sample is kept after its commit, from a thread; whoever closes
    the store next (and may then move its file or drop its database) waits for it."""
    store = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    run = start(store, "late", "r-late")
    store.commit(run, [], metrics={})
    go = threading.Event()
    kept: list[str] = []

    def late() -> None:
        go.wait(10)
        store.add_run_metrics("r-late", {"glue": {"numRecords": 3}})
        kept.append("metrics")
        store.late_write_done()

    store.expect_late_write()
    writer = threading.Thread(target=late)
    writer.start()
    closing = threading.Thread(target=lambda: (store.close(), kept.append("closed")))
    closing.start()
    closing.join(0.3)
    assert closing.is_alive() and kept == []  # close() is waiting for the write
    go.set()
    closing.join(10)
    writer.join(10)
    assert kept == ["metrics", "closed"]
    reopened = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    assert reopened.get_run("r-late").metrics["glue"] == {"numRecords": 3}
    reopened.close()
    # Told of none, it closes at once; a write that never ends is waited for only so long.
    quick = StateStore(f"sqlite:///{tmp_path / 'other.db'}")
    quick.expect_late_write()
    quick.close(wait=0.05)

"""What the console reads, below the pages: the state store's paged queries on both
backends, and the workflow graph's layout."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkmark.console.graph import NODE_W, layout
from sparkmark.engine.models import BookmarkOption, CtxCommit, FileEntry, RunState
from sparkmark.engine.store import StateStore


def run_once(store: StateStore, job: str, files: list[FileEntry] | None, ctx: str = "src") -> str:
    run = store.start_run(
        job_name=job,
        run_id="jr_" + uuid.uuid4().hex + uuid.uuid4().hex,
        attempt=0,
        option=BookmarkOption.ENABLE,
        arguments={},
        owner="test",
        lease_seconds=60,
    )
    if files is None:
        store.finish_run(run.run_id, RunState.FAILED, error="boom")
    else:
        store.commit(run, [CtxCommit(ctx, {"type": "files"}, files)], metrics={})
    return run.run_id


def f(path: str, mtime: int = 1, size: int = 1) -> FileEntry:
    return FileEntry(path, mtime, size)


def test_runs_page_and_job_summaries(store):
    ids = [run_once(store, "a", [f(f"/d/{i}")]) for i in range(7)]
    failed = run_once(store, "a", None)
    other = run_once(store, "b", [f("/x")])
    assert store.count_runs("a") == 8 and store.count_runs("nope") == 0
    everything = [r.run_id for r in store.list_runs("a")]
    assert everything[0] == failed and set(everything) == {*ids, failed}
    pages = [r.run_id for n in range(3) for r in store.list_runs("a", limit=3, offset=3 * n)]
    assert pages == everything
    summaries = {s.job_name: s for s in store.job_summaries()}
    assert set(summaries) == {"a", "b"}
    assert (summaries["a"].runs, summaries["a"].latest.run_id) == (8, failed)
    assert (summaries["b"].runs, summaries["b"].latest.run_id) == (1, other)


def test_history_pages_and_files_recorded_per_version(store):
    run_once(store, "j", [f("/d/a"), f("/d/b")])
    run_once(store, "j", [f("/d/c")])
    run_once(store, "j", [f("/d/a", mtime=2)])  # a modified: recorded again
    assert [v.version for v in store.history("j")] == [3, 2, 1]
    assert [v.version for v in store.history("j", limit=2)] == [3, 2]
    assert [v.version for v in store.history("j", limit=2, offset=2)] == [1]
    assert store.files_recorded("j", [1, 2, 3]) == {(1, "src"): 2, (2, "src"): 1, (3, "src"): 1}
    assert store.files_recorded("j", []) == {}


def test_file_page_latest_entry_lineage_and_search(store):
    first = run_once(store, "j", [f("/d/a_1"), f("/d/b%1"), f("/d/c")])
    run_once(store, "j", [f("/d/a_1", mtime=9), f("/d/d")])
    current = store.latest_version("j")
    page = store.file_page("j", "src", current)
    assert [(x.path, x.mtime_ms, x.version) for x in page] == [
        ("/d/a_1", 9, 2),
        ("/d/b%1", 1, 1),
        ("/d/c", 1, 1),
        ("/d/d", 1, 2),
    ]
    assert page[0].run_id == current.run_id
    # % and _ are literal characters in the search, not patterns.
    assert [x.path for x in store.file_page("j", "src", current, contains="%")] == ["/d/b%1"]
    assert [x.path for x in store.file_page("j", "src", current, contains="_")] == ["/d/a_1"]
    assert [x.path for x in store.file_page("j", "src", current, after="/d/b%1", limit=1)] == ["/d/c"]
    # After a rewind to run 1, the version 2 rows are outside the lineage.
    rewound = store.rewind("j", first)
    assert [(x.path, x.mtime_ms) for x in store.file_page("j", "src", rewound)] == [
        ("/d/a_1", 1),
        ("/d/b%1", 1),
        ("/d/c", 1),
    ]
    assert store.file_page("j", "nope", rewound) == []
    assert store.file_page("j", "src", store.reset("j")) == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    commits=st.lists(
        st.lists(st.tuples(st.sampled_from("abcdefgh"), st.integers(0, 3)), min_size=1, max_size=6),
        min_size=1,
        max_size=4,
    ),
    size=st.integers(1, 5),
)
def test_file_pages_walk_every_path_once_in_order(tmp_path_factory, commits, size):
    store = StateStore(f"sqlite:///{tmp_path_factory.mktemp('pages') / 'state.db'}")
    try:
        for files in commits:
            unique = {f"/p/{name}": mtime for name, mtime in files}
            run_once(store, "j", [f(p, m) for p, m in unique.items()])
        version = store.latest_version("j")
        walked, after = [], None
        while True:
            page = store.file_page("j", "src", version, after=after, limit=size)
            walked += page
            if len(page) < size:
                break
            after = page[-1].path
        expected = store.committed_files("j", "src", version)
        assert [(x.path, x.mtime_ms, x.version) for x in walked] == [
            (x.path, x.mtime_ms, x.version) for x in expected
        ]
    finally:
        store.close()


def test_graph_layout_columns_edges_and_states():
    graph = {
        "Nodes": [
            {"Type": "TRIGGER", "Name": "start", "UniqueId": "t:start"},
            {"Type": "JOB", "Name": "a", "UniqueId": "j:a"},
            {"Type": "JOB", "Name": "b", "UniqueId": "j:b"},
            {"Type": "TRIGGER", "Name": "after", "UniqueId": "t:after"},
            {"Type": "JOB", "Name": "c", "UniqueId": "j:c"},
        ],
        "Edges": [
            {"SourceId": "t:start", "DestinationId": "j:a"},
            {"SourceId": "t:start", "DestinationId": "j:b"},
            {"SourceId": "j:a", "DestinationId": "t:after"},
            {"SourceId": "j:b", "DestinationId": "t:after"},
            {"SourceId": "t:after", "DestinationId": "j:c"},
            {"SourceId": "t:after", "DestinationId": "j:missing"},  # a stale edge is not drawn
        ],
    }
    drawn = layout(graph, {"j:a": ("SUCCEEDED", "1.0 s"), "t:start": ("FIRED", "")})
    at = {n.uid: n for n in drawn.nodes}
    columns = sorted({n.x for n in drawn.nodes})
    assert [sorted(u for u, n in at.items() if n.x == x) for x in columns] == [
        ["t:start"],
        ["j:a", "j:b"],
        ["t:after"],
        ["j:c"],
    ]
    assert at["j:a"].y < at["j:b"].y  # the definitions' order within a column
    assert (at["j:a"].state, at["j:b"].state, at["t:after"].state) == ("SUCCEEDED", "NOT RUN", "NOT FIRED")
    assert at["j:a"].colour == "#2e7d32" and at["j:b"].colour != at["j:a"].colour
    assert len(drawn.edges) == 5
    edge = next(e for e in drawn.edges if (e.source, e.target) == ("t:start", "j:a"))
    assert edge.path.startswith(f"M{at['t:start'].x + NODE_W},")
    assert drawn.width >= at["j:c"].x + NODE_W and drawn.height >= at["j:b"].y


def test_graph_layout_of_nothing_and_of_a_cycle():
    empty = layout({"Nodes": [], "Edges": []})
    assert empty.nodes == [] and empty.edges == [] and empty.width > 0
    cycle = {
        "Nodes": [{"Type": "JOB", "Name": n, "UniqueId": n} for n in "xy"],
        "Edges": [{"SourceId": "x", "DestinationId": "y"}, {"SourceId": "y", "DestinationId": "x"}],
    }
    drawn = layout(cycle)  # drawn in one column rather than refused
    assert {n.uid for n in drawn.nodes} == {"x", "y"} and len({n.x for n in drawn.nodes}) == 1

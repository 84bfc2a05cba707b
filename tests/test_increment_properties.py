"""Properties of the file bookmark algorithm (``plan_increment``, ``range_increment``)
over random histories of file events, without Spark or I/O.

A history interleaves file events (a new file, a file rewritten in place, a file copied
in with an old mtime, a file rewritten with its old mtime kept, a file deleted, several
files sharing one mtime) with runs, each
of which commits, fails or runs paused. The bookmark is modelled as Glue keeps it: the
(path, mtime, size) each committed run read. What must hold, for every history:
- no file version is read by two committed runs;
- a failed or paused run leaves the bookmark as it was;
- once writing stops, repeated runs read every file version still listed, whatever
  the band and bound limits, and then nothing more;
- a run never reads a version the bookmark already has;
- ``range_increment`` between the bookmarks just before and just after a run gives
  back exactly what that run read, of what is still listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from sparkmark.engine.increment import FileSourceOptions, plan_increment, range_increment
from sparkmark.engine.listing import ListedFile, Listing
from sparkmark.engine.models import FileEntry

ROOT = "file:///lake/events"
PATHS = [f"{ROOT}/dt={d}/part-{i}.json" for d in ("2026-11-01", "2026-11-02") for i in range(4)]


@dataclass
class World:
    """The folder as a listing would see it, and the clock."""

    now: int = 1_000_000
    files: dict[str, tuple[int, int]] = field(default_factory=dict)  # path -> (mtime, size)

    def listing(self) -> Listing:
        return Listing(
            files=[
                ListedFile(path, ROOT, path.rsplit("/", 1)[0], mtime, size)
                for path, (mtime, size) in sorted(self.files.items())
            ]
        )


@dataclass
class Bookmark:
    processed: dict[str, FileEntry] = field(default_factory=dict)
    high_water: int | None = None
    snapshots: list[dict[str, FileEntry]] = field(default_factory=lambda: [{}])
    runs: list[set[tuple[str, int, int]]] = field(default_factory=list)  # what each commit read

    def commit(self, selected: list[ListedFile]) -> None:
        read = {(f.url, f.mtime_ms, f.size) for f in selected}
        self.processed = {**self.processed, **{f.url: FileEntry(f.url, f.mtime_ms, f.size) for f in selected}}
        if selected:
            top = max(f.mtime_ms for f in selected)
            self.high_water = max(self.high_water or 0, top)
        self.snapshots.append(dict(self.processed))
        self.runs.append(read)


event = st.one_of(
    st.tuples(st.just("new"), st.sampled_from(PATHS), st.integers(1, 500)),
    st.tuples(st.just("rewrite"), st.sampled_from(PATHS), st.integers(1, 500)),
    st.tuples(st.just("copy_old"), st.sampled_from(PATHS), st.integers(1, 500)),
    st.tuples(st.just("keep_mtime"), st.sampled_from(PATHS), st.integers(1, 500)),
    st.tuples(st.just("delete"), st.sampled_from(PATHS), st.just(0)),
    st.tuples(
        st.just("same_mtime"), st.lists(st.sampled_from(PATHS), min_size=2, max_size=4), st.integers(1, 500)
    ),
    st.tuples(st.just("tick"), st.just(""), st.integers(1, 2_000_000)),
    st.tuples(st.sampled_from(["commit", "fail", "pause"]), st.just(""), st.just(0)),
)

options = st.builds(
    FileSourceOptions,
    max_band_ms=st.sampled_from([0, 1_000, 900_000]),
    max_files_in_band=st.integers(1, 5),
    bounded_files=st.one_of(st.none(), st.integers(1, 4)),
    bounded_size=st.one_of(st.none(), st.integers(1, 1_200)),
)


def apply(world: World, kind: str, target, size: int) -> None:
    if kind in ("new", "rewrite"):
        if kind == "new" and target in world.files:
            return
        world.now += 1
        world.files[target] = (world.now, size)
    elif kind == "copy_old":
        # An object copied in keeps the mtime it had elsewhere: older than what was read.
        world.files[target] = (max(1, world.now - 500_000 - size), size)
    elif kind == "keep_mtime":
        # Rewritten by a tool that restores the old mtime (touch -r, rsync -t): only the
        # size tells the new content apart.
        if target in world.files:
            mtime, old_size = world.files[target]
            world.files[target] = (mtime, old_size + size)
    elif kind == "delete":
        world.files.pop(target, None)
    elif kind == "same_mtime":
        world.now += 1
        for path in target:
            world.files[path] = (world.now, size + len(path))
    elif kind == "tick":
        world.now += size


def plan(world: World, bookmark: Bookmark, opts: FileSourceOptions) -> list[ListedFile]:
    inc = plan_increment(
        world.listing(),
        bookmark.processed,
        options=opts,
        now_ms=world.now,
        high_water_ms=bookmark.high_water,
    )
    assert inc.new + inc.modified + inc.already_processed == len(world.files)
    assert len(inc.selected) + inc.deferred_by_band + inc.deferred_by_bound == inc.new + inc.modified
    for f in inc.selected:  # never a version the bookmark already has
        assert bookmark.processed.get(f.url) != FileEntry(f.url, f.mtime_ms, f.size)
    return inc.selected


def drain(world: World, bookmark: Bookmark, opts: FileSourceOptions) -> None:
    """Runs, with the clock moved past every band, until a run finds nothing."""
    for _ in range(len(PATHS) + 2):
        world.now += opts.max_band_ms + 1
        selected = plan(world, bookmark, opts)
        if not selected:
            return
        bookmark.commit(selected)
    raise AssertionError("runs kept finding files after writing stopped")


@settings(max_examples=300, deadline=None)
@given(history=st.lists(event, max_size=40), opts=options)
def test_every_version_is_read_once_and_nothing_is_lost(history, opts):
    world, bookmark = World(), Bookmark()
    for kind, target, size in history:
        if kind in ("commit", "fail", "pause"):
            before = dict(bookmark.processed)
            selected = plan(world, bookmark, opts)
            if kind == "commit":
                bookmark.commit(selected)
            else:  # the run read, but did not commit: nothing of it is remembered
                assert bookmark.processed == before
        else:
            apply(world, kind, target, size)
    drain(world, bookmark, opts)

    reads = [version for run in bookmark.runs for version in run]
    assert len(reads) == len(set(reads)), "a file version was read by two committed runs"
    listed = {(path, mtime, size) for path, (mtime, size) in world.files.items()}
    assert listed <= set(reads), "a listed file version was never read"
    assert plan(world, bookmark, opts) == []


@settings(max_examples=200, deadline=None)
@given(history=st.lists(event, max_size=40), opts=options, data=st.data())
def test_a_range_between_two_bookmarks_is_what_the_runs_between_them_read(history, opts, data):
    world, bookmark = World(), Bookmark()
    for kind, target, size in history:
        if kind == "commit":
            bookmark.commit(plan(world, bookmark, opts))
        elif kind not in ("fail", "pause"):
            apply(world, kind, target, size)
    drain(world, bookmark, opts)
    if not bookmark.runs:
        return
    last = len(bookmark.runs)
    lower = data.draw(st.integers(0, last - 1), label="from")
    upper = data.draw(st.integers(lower + 1, last), label="to")

    listing = world.listing()
    inc, missing = range_increment(listing, bookmark.snapshots[upper], bookmark.snapshots[lower])
    read_between = {}
    for run in bookmark.runs[lower:upper]:
        for path, mtime, size in run:
            read_between[path] = (mtime, size)  # the later read of a path wins
    listed = {f.url for f in listing.files}
    # The paths the runs read that the bookmark at `from` did not already have as read.
    expected = {p for p, v in read_between.items() if bookmark.snapshots[lower].get(p) != FileEntry(p, *v)}
    assert {f.url for f in inc.selected} == expected & listed
    assert set(missing) == expected - listed
    assert [f.mtime_ms for f in inc.selected] == sorted(f.mtime_ms for f in inc.selected)


def test_files_sharing_an_mtime_at_the_band_cut_are_split_never_lost():
    """Five files written in the same millisecond, one per run: each run takes the next,
    in path order, and none is read twice (the documented tie-break, in isolation)."""
    world, bookmark = World(now=10_000), Bookmark()
    for i in range(5):
        world.files[f"{ROOT}/same-{i}.json"] = (10_000, 10)
    opts = FileSourceOptions(max_band_ms=900_000, max_files_in_band=1)
    order = []
    for _ in range(5):
        selected = plan(world, bookmark, opts)
        assert len(selected) == 1
        order.append(selected[0].url)
        bookmark.commit(selected)
    assert order == sorted(world.files)
    assert plan(world, bookmark, opts) == []


etags = st.one_of(st.none(), st.sampled_from(["a1", "b2", "c3-2"]))


@given(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), etags, etags)
def test_an_object_is_the_one_processed_only_when_its_etag_agrees(m1, m2, z1, z2, e1, e2):
    """Same mtime and size, and the same ETag whenever both sides know one (a file
    system has none; a bookmark written before ETags were kept has none)."""
    seen = FileEntry("s3://b/k", m1, z1, e1)
    expected = (m1, z1) == (m2, z2) and (e1 is None or e2 is None or e1 == e2)
    assert seen.same_content(m2, z2, e2) is expected
    listing = Listing(files=[ListedFile("s3://b/k", "s3://b", "s3://b", m2, z2, e2)])
    inc = plan_increment(listing, {"s3://b/k": seen}, options=FileSourceOptions(max_band_ms=0), now_ms=10)
    assert (inc.already_processed, inc.modified) == ((1, 0) if expected else (0, 1))

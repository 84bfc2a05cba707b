"""Listing and Glue glob exclusions, on real folders."""

from __future__ import annotations

import pytest

from sparkmark import SourceError
from sparkmark.engine.globs import ExclusionMatcher, compile_glob
from sparkmark.engine.listing import FileLister
from sparkmark.engine.storage import spark_path


@pytest.mark.parametrize(
    "pattern,path,matches",
    [
        ("*.pdf", "a.pdf", True),
        ("*.pdf", "x/a.pdf", False),  # * stays inside a folder
        ("**.pdf", "x/y/a.pdf", True),  # ** crosses folders
        ("**/*.csv", "a/b/c.csv", True),
        ("dt=?/**", "dt=1/f", True),
        ("dt=?/**", "dt=10/f", False),
        ("{a,b}/*", "b/f", True),
        ("{a,b}/*", "c/f", False),
        ("[!x]*.json", "y1.json", True),
        ("[!x]*.json", "x1.json", False),
        (r"\*.txt", "*.txt", True),
        (r"\*.txt", "a.txt", False),
    ],
)
def test_glue_glob_rules(pattern, path, matches):
    assert bool(compile_glob(pattern).fullmatch(path)) is matches


def test_bad_patterns_are_clear_errors():
    with pytest.raises(SourceError, match="unclosed"):
        compile_glob("[abc")
    with pytest.raises(SourceError, match="unclosed"):
        compile_glob("{a,b")


def test_listing_walks_partitions_in_parallel_and_counts(tmp_path):
    for day in range(5):
        for n in range(3):
            p = tmp_path / f"dt={day}" / f"f{n}.json"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text("{}\n")
    (tmp_path / "dt=0" / "_SUCCESS").write_text("")
    (tmp_path / "dt=1" / "skip.tmp").write_text("")
    listing = FileLister(exclusions=ExclusionMatcher(["**.tmp"])).list([str(tmp_path)])
    assert len(listing.files) == 15
    assert (listing.hidden, listing.excluded, listing.dirs_listed) == (1, 1, 6)
    assert len(listing.leaf_dirs) == 5
    assert all(f.url.startswith("file://") for f in listing.files)


def test_single_file_and_glob_roots(tmp_path):
    a = tmp_path / "a.json"
    a.write_text("{}\n")
    (tmp_path / "b.json").write_text("{}\n")
    assert [f.url for f in FileLister().list([str(a)]).files] == [f"file://{a}"]
    assert len(FileLister().list([str(tmp_path / "*.json")]).files) == 2


def test_spark_path_maps_s3_and_escapes_globs():
    assert spark_path("s3://bucket/k.json") == "s3a://bucket/k.json"
    assert spark_path("file:///d/a[1].json") == r"file:///d/a\[1\].json"


def test_listing_works_on_other_fsspec_file_systems():
    """Any fsspec URL lists the same way; here the in-memory file system."""
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe({"/lake/t/dt=1/a.json": b"{}\n", "/lake/t/dt=2/b.json": b"{}\n{}\n", "/lake/t/_SUCCESS": b""})
    listing = FileLister().list(["memory://lake/t"])
    assert sorted(f.url for f in listing.files) == [
        "memory:///lake/t/dt=1/a.json",
        "memory:///lake/t/dt=2/b.json",
    ]
    assert {f.size for f in listing.files} == {3, 6}
    assert all(f.mtime_ms > 0 for f in listing.files)
    assert listing.hidden == 1
    fs.rm("/lake", recursive=True)


def test_local_listing_reports_what_fsspec_reports(tmp_path):
    """The local listing reads the directory itself, without fsspec's per-file
    dictionaries; every file's identity (URL, mtime in ms, size) must be the one fsspec
    reports, or bookmarks recorded before would see every file as modified."""
    import os

    import fsspec

    for day in range(3):
        folder = tmp_path / f"dt={day}"
        folder.mkdir()
        for n in range(4):
            (folder / f"part-{n}.json").write_text("{}\n" * (n + 1))
    (tmp_path / "dt=1" / ".hidden").write_text("x")
    (tmp_path / "target.json").write_text('{"a": 1}\n')
    os.symlink(tmp_path / "target.json", tmp_path / "dt=2" / "link.json")
    os.symlink(tmp_path / "gone.json", tmp_path / "dt=2" / "dangling.json")
    os.utime(tmp_path / "dt=0" / "part-0.json", (1_700_000_000.1239, 1_700_000_000.1239))

    fs = fsspec.filesystem("file")
    listing = FileLister().list([str(tmp_path)])
    got = {f.url: (f.mtime_ms, f.size, f.dir) for f in listing.files}
    expected = {}
    for path in fs.find(str(tmp_path)):
        name = path.rsplit("/", 1)[-1]
        if name.startswith(".") or name == "dangling.json":
            continue
        info = fs.info(path)
        expected[fs.unstrip_protocol(path)] = (
            int(info["mtime"] * 1000),
            info["size"],
            fs.unstrip_protocol(path.rsplit("/", 1)[0]),
        )
    assert got == expected
    assert got[f"file://{tmp_path}/dt=0/part-0.json"][0] == 1_700_000_000_123
    assert got[f"file://{tmp_path}/dt=2/link.json"][1] == 9  # the link's target
    assert listing.hidden == 1
    assert set(listing.leaf_dirs) == {f"file://{tmp_path}/dt={d}" for d in range(3)}

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

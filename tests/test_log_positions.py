"""A run's log served by position (``api/logs.py``): reads from an offset forward or
back from one, each costing what it returns, never the size of the log; checked on a
100 MB log with the bytes this process actually read (``/proc/self/io``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkmark.api.logs import MAX_ANSWER_BYTES, _matcher, _prefilter, _Stream
from sparkmark.engine.masking import mask_text, register_secret


def read_bytes() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


@pytest.fixture(scope="module")
def big_log(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("logs") / "jr_big.log"
    line = b"x" * 99 + b"\n"
    with open(path, "wb") as f:
        f.write(b"first line password=hunter2pw\n")
        for _ in range(10):
            f.write(line * 100_000)  # 100 MB in all
        f.write(b"last line\n")
    return path


def test_the_last_line_of_a_100_mb_log_costs_one_chunk(big_log):
    stream = _Stream("jr_big", big_log)
    before = read_bytes()
    lines = stream.backward(stream.size, 1)
    assert read_bytes() - before < 200_000
    assert lines == [(stream.size - len(b"last line\n"), "last line")]


def test_forward_reads_stop_at_the_limit_and_at_one_megabyte(big_log):
    stream = _Stream("jr_big", big_log)
    before = read_bytes()
    lines, after = stream.forward(0, 3)
    assert read_bytes() - before < 200_000
    assert [text for _, text in lines] == ["first line password=****", "x" * 99, "x" * 99]  # masked
    assert after == lines[-1][0] + 100
    more, end = stream.forward(after, 10_000)
    assert len(more) == 10_000 and end == after + 10_000 * 100
    capped, end = stream.forward(0, 1_000_000)
    assert end <= MAX_ANSWER_BYTES + 100 and len(capped) < 1_000_000


def test_backward_pages_meet_the_forward_ones(big_log):
    """Paging back from the end with each answer's first offset gives the lines a forward
    read gives, in order, with nothing skipped or doubled at the page edges."""
    stream = _Stream("jr_big", big_log)
    tail = stream.backward(stream.size, 5)
    before = stream.backward(tail[0][0], 5)
    forward, end = stream.forward(before[0][0], 10)
    assert forward == before + tail and end == stream.size


def test_an_empty_log_and_a_position_past_its_end(tmp_path):
    empty = tmp_path / "jr_empty.log"
    empty.write_bytes(b"")
    stream = _Stream("jr_empty", empty)
    assert stream.backward(0, 10) == [] and stream.forward(0, 10) == ([], 0)
    missing = _Stream("jr_gone", tmp_path / "jr_gone.log")
    assert missing.size == 0 and missing.forward(0, 10) == ([], 0)
    text = tmp_path / "jr_small.log"
    text.write_bytes(b"a\r\nb\nno line break at the end")
    small = _Stream("jr_small", text)
    assert [t for _, t in small.backward(small.size, 10)] == ["a", "b", "no line break at the end"]
    assert small.forward(small.size + 50, 10) == ([], small.size)  # nothing, and a token at the end


def test_a_registered_secret_is_masked_in_what_is_returned(tmp_path):
    register_secret("the-connection-password-7")
    path = tmp_path / "jr_secret.log"
    path.write_text("connecting with the-connection-password-7\n")
    assert _Stream("jr_secret", path).forward(0, 1)[0] == [(0, "connecting with ****")]


WORDS = st.sampled_from(["password=hunter2pw", "batch", "1", "x", "pw", "****", "-", "ok", "=", "hunter2pw"])


@given(line=st.lists(WORDS, max_size=6).map(" ".join), terms=st.lists(WORDS, min_size=1, max_size=3))
def test_the_prefilter_never_passes_over_a_line_that_matches(line, terms):
    """A filter is matched against the masked line; lines are passed over before masking
    only when they cannot match it, whatever masking hid."""
    register_secret("hunter2pw")
    pattern = " ".join(f'"{t}"' for t in terms)
    could_match = _prefilter(pattern)
    if _matcher(pattern)(mask_text(line)):
        assert could_match is None or could_match(line)

"""The contract between the pool and its warm processes (``pool/protocol.py``): every
order and event crosses a real socket pair typed, a line that is not one of them is
refused in one line naming what is wrong and the next message still gets through, and
no other module spells a message as a plain dict."""

from __future__ import annotations

import ast
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sparkmark.pool import protocol
from sparkmark.pool.protocol import (
    EVENTS,
    ORDERS,
    BecomeSession,
    CancelStatement,
    Channel,
    Failed,
    HostJob,
    JobEnded,
    Ready,
    RunStatement,
    SessionState,
    StatementOutput,
    StatementProgress,
    StatementState,
    Stop,
)

SRC = Path(__file__).resolve().parents[1] / "src" / "sparkmark"


@pytest.fixture
def pair():
    parent_end, child_end = socket.socketpair()
    parent = Channel(parent_end, EVENTS)  # reads what the warm process says
    child = Channel(child_end, ORDERS)  # reads what the parent orders
    yield parent, child
    parent.close()
    child.close()


ORDERS_SENT = [
    HostJob(
        request={"script": "job.py", "arguments": ["--JOB_NAME", "j"]},
        log="/l/run.log",
        err="/l/run.err",
        exit="/l/run.exit",
        env={"A": "1"},
        endpoint={"AWS_ENDPOINT_URL_GLUE": "http://127.0.0.1:9"},
    ),
    BecomeSession(id="s1", arguments={"--a": "b"}, environment={"X": "y"}),
    RunStatement(id=3, code="print('é' * 3)\n"),
    CancelStatement(id=3),
    Stop(),
]

EVENTS_SENT = [
    Ready(pid=42, rss=1024),
    JobEnded(code=3, rss=2048, dirty="the run was given secrets"),
    SessionState(status="FAILED", error="no Spark"),
    StatementState(
        id=1,
        state="AVAILABLE",
        output=StatementOutput(ExecutionCount=1, Status="ok", Data={"TextPlain": "1\n"}),
        progress=1.0,
    ),
    StatementProgress(id=1, value=0.5),
    Failed(error="could not start"),
]


def test_every_order_and_event_crosses_the_socket_typed(pair):
    parent, child = pair
    for order in ORDERS_SENT:
        assert parent.send(order)
        assert child.receive() == order
    for event in EVENTS_SENT:
        assert child.send(event)
        assert parent.receive() == event


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (b"not json\n", "(message)"),
        (b'{"op": "dance"}\n', "(message)"),  # an order nobody defined
        (b'{"op": "statement", "id": 1}\n', "statement.code: Field required"),
        (b'{"op": "cancel", "id": "one"}\n', "cancel.id"),
        (b'{"op": "stop", "now": true}\n', "stop.now: Extra inputs are not permitted"),
        (b'{"event": "ready", "pid": 1}\n', "(message)"),  # an event is not an order
    ],
)
def test_a_line_that_is_not_an_order_is_refused_in_one_line_and_the_next_gets_through(pair, line, says):
    parent, child = pair
    parent.sock.sendall(line)
    parent.send(Stop())
    refused = child.receive()
    assert isinstance(refused, Failed)
    assert says in refused.error and "\n" not in refused.error
    assert child.receive() == Stop()


def test_a_message_over_the_limit_is_refused_whole(pair, monkeypatch):
    parent, child = pair
    monkeypatch.setattr(protocol, "MAX_LINE", 64)
    parent.send(RunStatement(id=1, code="x" * 500))
    parent.send(CancelStatement(id=1))
    refused = child.receive()
    assert isinstance(refused, Failed) and "over 64 bytes" in refused.error
    assert child.receive() == CancelStatement(id=1)


def test_the_other_end_gone_is_none(pair):
    parent, child = pair
    parent.close()
    assert child.receive() is None


def test_a_statement_output_shows_as_glue_shows_it():
    assert StatementOutput.cancelled(4).document() == {"ExecutionCount": 4, "Status": "CANCELLED"}
    assert StatementOutput.not_run(5, "SessionEnded", "gone").document() == {
        "ExecutionCount": 5,
        "Status": "ERROR",
        "ErrorName": "SessionEnded",
        "ErrorValue": "gone",
    }
    with pytest.raises(ValueError, match="Status"):
        StatementOutput(ExecutionCount=1, Status="fine")


def _plain_messages(tree: ast.AST) -> list[int]:
    """Lines of dict literals that spell a message (a key ``op`` or ``event``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            if keys & {"op", "event"}:
                found.append(node.lineno)
    return found


def test_no_message_is_a_plain_dict_outside_the_protocol_module():
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "pool" / "protocol.py":
            continue
        for line in _plain_messages(ast.parse(path.read_text(encoding="utf-8"))):
            offenders.append(f"{path.relative_to(SRC)}:{line}")
    assert offenders == []
    # the check finds one where there is one
    assert _plain_messages(ast.parse('send({"op": "stop"})')) == [1]


def test_the_worker_is_not_started_by_hand():
    done = subprocess.run(
        [sys.executable, "-m", "sparkmark.pool.worker"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "error: a warm process is started by sparkmark's pool, not by hand"
    assert not list((SRC / "cli").glob("warm*.py"))

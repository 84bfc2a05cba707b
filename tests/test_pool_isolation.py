"""What a job run leaves in a warm process (``pool.isolation``), checked without Spark:
threads still running, replaced functions and builtins, secrets it was given."""

from __future__ import annotations

import builtins
import json
import threading

from sparkmark.engine.masking import known_secrets, mask_text, register_secret, restore_known
from sparkmark.pool.isolation import ProcessState


def test_nothing_left_is_no_residue():
    state = ProcessState.take()
    done = threading.Thread(target=lambda: None)
    done.start()  # a thread that ended is not left behind
    assert state.residue() is None


def test_a_thread_still_running_is_residue():
    state = ProcessState.take()
    stop = threading.Event()
    spy = threading.Thread(target=stop.wait, name="spy", daemon=True)
    spy.start()
    try:
        assert state.residue() == "the run left threads running (spy)"
    finally:
        stop.set()
        spy.join()


def test_a_patched_function_and_a_new_builtin_are_put_back_and_are_residue():
    original = json.dumps
    state = ProcessState.take()
    json.dumps = lambda *a, **k: "patched"
    builtins.sneaky = 1  # type: ignore[attr-defined]
    try:
        assert state.put_back() == ["builtins.sneaky", "json.dumps"]
        assert json.dumps is original and not hasattr(builtins, "sneaky")
        assert state.residue() == "the run replaced builtins.sneaky, json.dumps"
    finally:
        json.dumps = original
        vars(builtins).pop("sneaky", None)


def test_a_secret_given_is_residue_and_is_unlisted_after():
    state = ProcessState.take()
    register_secret("the-job-password-1")
    assert state.residue() == "the run was given secrets"
    restore_known(state.secrets)
    assert "the-job-password-1" not in known_secrets()
    assert mask_text("x the-job-password-1") == "x the-job-password-1"  # no longer registered

"""One App per ``sparkmark`` call (``cli/context.py``): every command of the call shares
it, a command naming another store gets its own, and all of them are closed when the
call ends."""

from __future__ import annotations

from sparkmark.cli import context
from sparkmark.settings import Settings


def test_one_app_per_call_closed_when_the_call_ends(tmp_path, monkeypatch):
    closed = []

    def close(app):
        closed.append(app)

    monkeypatch.setattr(context.App, "close", close)
    home = Settings.from_env({"SPARKMARK_HOME": str(tmp_path / "a")})
    first = context.current_app(home)
    assert context.current_app(home) is first
    same_store = context.current_app(home.model_copy(update={"config": tmp_path / "other.toml"}))
    assert same_store is not first and same_store.state is first.state
    other = context.current_app(Settings.from_env({"SPARKMARK_HOME": str(tmp_path / "b")}))
    assert other.state is not first.state
    context.end_call()
    assert closed == [other, first]  # the other store's App too; the shared store once
    assert context.current_app(home) is not first  # the next call makes its own
    context.end_call()

"""The one :class:`App` of a ``sparkmark`` call: every command that reads or changes
state reaches the store through it, made on first use and closed when the call ends."""

from __future__ import annotations

from ..app import App
from ..settings import Settings

_current: App | None = None
_others: list[App] = []  # Apps over another store, made in the same call: closed with it


def current_app(settings: Settings | None = None) -> App:
    """This call's App, over ``settings`` (the environment's when None). A command that
    names other settings (another project file) gets an App of its own for them, over
    the same store when the store is the same."""
    global _current  # noqa: PLW0603 - one App per call of the command
    settings = settings or Settings.from_env()
    if _current is None:
        _current = App(settings)
        return _current
    if _current.settings == settings:
        return _current
    if _current.settings.state_url == settings.state_url:
        return App(settings, _current.state)
    other = App(settings)
    _others.append(other)
    return other


def end_call() -> None:
    """The call ended: its App is closed, and the next call makes its own."""
    global _current
    found, _current = _current, None
    ended = [*_others, *([found] if found is not None else [])]
    _others.clear()
    for app in ended:
        app.close()

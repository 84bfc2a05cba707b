"""Who holds a lease: ``host:pid`` of a process, and whether that process still lives."""

from __future__ import annotations

import os
import socket


def this_process() -> str:
    """The owner string of the calling process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def is_dead(owner: str | None) -> bool:
    """True when ``owner`` is a process of this host that no longer runs.

    A process on another host cannot be checked from here: it counts as alive, and
    only its lease's expiry frees what it holds.
    """
    if not owner or ":" not in owner:
        return True
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError):
        return False
    return False

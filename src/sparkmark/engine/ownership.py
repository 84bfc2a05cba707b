"""Whether an output belongs to this state store.

Every write of an exactly-once sink leaves its key (``<run id>-<seq>``) in the
output: a ``.published``/``.pending`` record in a folder's ``_sparkmark/runs``, a
row of the applied-writes table beside a database table. A store that has no run
for one of those keys is not the store that wrote the output: it was emptied,
replaced by a new one, or restored from a backup older than the write. Running on
would read again the input those writes came from and publish it twice, so the
write is refused until the user says which store is right: restore the old store,
or adopt the output into this one (``sparkmark outputs adopt``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from ..errors import SparkmarkError
from .names import some_of
from .store import StateStore

log = logging.getLogger("sparkmark.state")

RUN_OF_KEY_LENGTH = 67  # "jr_" + 64 hex digits


class ForeignOutput(SparkmarkError):
    """An output holds writes of runs this state store has no record of."""


def run_of(key: str) -> str:
    return key[:RUN_OF_KEY_LENGTH]


def unknown_writes(store: StateStore, keys: Iterable[str]) -> list[str]:
    """The write keys whose run this store does not know and that were not adopted."""
    keys = sorted(set(keys))
    if not keys:
        return []
    known = store.known_runs(run_of(k) for k in keys)
    unknown = [k for k in keys if run_of(k) not in known]
    if not unknown:
        return []
    adopted = store.adopted_writes(unknown)
    return [k for k in unknown if k not in adopted]


def check_output(
    store: StateStore,
    target: str,
    keys: Iterable[str],
    *,
    recorded_by: Callable[[str], str | None] = lambda _key: None,
    take_over: str | None = None,
) -> None:
    """Refuse to write ``target`` when it holds writes this store did not make.
    ``recorded_by`` gives the id of the store that published a write, when known;
    ``take_over`` says how to adopt the output (a folder's command by default)."""
    unknown = unknown_writes(store, keys)
    if not unknown:
        return
    owner = recorded_by(unknown[-1])
    if owner is None:
        whose = "a state store that is not this one"
    elif owner == store.store_id:
        whose = (
            f"this very store ({owner}), which has since lost them: it was restored from a "
            "backup older than those runs"
        )
    else:
        whose = f"state store {owner}, not this one ({store.store_id})"
    shown = some_of(unknown)
    raise ForeignOutput(
        f"output {target} holds {len(unknown)} write(s) of runs the state store at "
        f"{store.display_url} has no record of ({shown}), published by {whose}. Writing on "
        "would publish again the input those runs read. Point SPARKMARK_STATE_URL at the store "
        "that made them, or take the output over: "
        + (
            take_over
            or f"`sparkmark outputs adopt {target}` keeps their rows (this store's bookmark then "
            "decides what is read again), `--drop` removes the files they published first"
        )
    )

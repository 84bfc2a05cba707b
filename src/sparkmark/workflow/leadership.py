"""Who leads the schedulers of one state store, and who still supervises its runs: the
leader's lease (one row, taken over when its owner died or stopped renewing it) and
each supervisor's beat. Part of :class:`workflow.store.WorkflowStore`."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from ..engine.owner import is_dead
from .records import meta, supervisors


class Leadership:
    """The lead and the supervisors' beats, on the store's transactions."""

    def begin(self):
        raise NotImplementedError

    def connect(self):
        raise NotImplementedError

    def lead(self, owner: str, now: datetime, lease_seconds: float) -> bool:
        """Take or keep the scheduler's lead. A lead whose owner died on this host, or
        whose lease expired, is taken over."""
        expires = now + timedelta(seconds=lease_seconds)
        try:
            with self.begin() as conn:
                row = conn.execute(select(meta).where(meta.c.key == "leader")).first()
                if row is None:
                    conn.execute(insert(meta).values(key="leader", value="", owner=owner, expires_at=expires))
                    return True
                if row.owner != owner and row.owner and row.expires_at > now and not is_dead(row.owner):
                    return False
                conn.execute(
                    update(meta)
                    .where(meta.c.key == "leader", meta.c.owner == row.owner)
                    .values(owner=owner, expires_at=expires)
                )
                return True
        except IntegrityError:
            return False

    def leader(self, now: datetime) -> str | None:
        """The live leader's owner string, or None."""
        with self.connect() as conn:
            row = conn.execute(select(meta).where(meta.c.key == "leader")).first()
        if row is None or not row.owner or row.expires_at <= now or is_dead(row.owner):
            return None
        return row.owner

    def resign(self, owner: str) -> None:
        with self.begin() as conn:
            conn.execute(update(meta).where(meta.c.key == "leader", meta.c.owner == owner).values(owner=None))

    def beat(self, owner: str, now: datetime, lease_seconds: float) -> None:
        """Say that ``owner`` still supervises its runs, for the next ``lease_seconds``."""
        expires = now + timedelta(seconds=lease_seconds)
        with self.begin() as conn:
            if (
                conn.execute(
                    update(supervisors).where(supervisors.c.owner == owner).values(expires_at=expires)
                ).rowcount
                == 0
            ):
                conn.execute(insert(supervisors).values(owner=owner, expires_at=expires))

    def supervisor_gone(self, owner: str | None, now: datetime) -> bool:
        """True when nobody drives what ``owner`` supervised: no owner, a dead process on
        this host, or (on any host) a supervisor that stopped renewing its beat."""
        if owner is None or is_dead(owner):
            return True
        with self.connect() as conn:
            expires = conn.execute(
                select(supervisors.c.expires_at).where(supervisors.c.owner == owner)
            ).scalar()
        return expires is None or expires <= now

"""Crawler definitions and crawl records in the state store."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Column, MetaData, String, Table, Text, delete, insert, or_, select, update

from ..engine.owner import is_dead, this_process
from ..engine.schema import UTCDateTime, utcnow
from ..engine.store import StateStore
from ..errors import NotFound, SparkmarkError
from ..state import components
from .definition import CrawlerDefinition, load_definition

metadata = MetaData()
crawlers = Table(
    "sm_crawlers",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("definition", Text, nullable=False),
    Column("state", String(16), nullable=False),  # READY, RUNNING, STOPPING
    Column("owner", String(255)),  # host:pid of the process running a crawl
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)
crawls = Table(
    "sm_crawls",
    metadata,
    Column("crawl_id", String(80), primary_key=True),
    Column("crawler", String(255), nullable=False),
    Column("state", String(16), nullable=False),  # RUNNING, SUCCEEDED, FAILED, CANCELLED
    Column("started_at", UTCDateTime, nullable=False),
    Column("ended_at", UTCDateTime),
    Column("summary", Text, nullable=False),
    Column("errors", Text, nullable=False),
)
COMPONENT = components.declare("crawlers", "crawler_schema_version", metadata, [crawlers, crawls])


@dataclass(frozen=True)
class CrawlRecord:
    crawl_id: str
    crawler: str
    state: str
    started_at: datetime
    ended_at: datetime | None
    summary: dict[str, Any]
    errors: list[dict[str, str]]


class CrawlerStore:
    def __init__(self, state: StateStore):
        self.state = state
        state.open_component(COMPONENT)

    def save(self, definition: CrawlerDefinition, transaction=None) -> None:
        """Store a crawler's definition (in ``transaction``, when given)."""
        doc = definition.model_dump_json()
        now = utcnow()
        with self.state.within(transaction) as conn:
            key = crawlers.c.name == definition.Name
            if conn.execute(select(crawlers.c.name).where(key)).first():
                conn.execute(update(crawlers).where(key).values(definition=doc, updated_at=now))
            else:
                conn.execute(
                    insert(crawlers).values(
                        name=definition.Name, definition=doc, state="READY", created_at=now, updated_at=now
                    )
                )

    def get(self, name: str) -> tuple[CrawlerDefinition, str]:
        with self.state.connect() as conn:
            row = conn.execute(select(crawlers).where(crawlers.c.name == name)).first()
        if row is None:
            raise NotFound(f"unknown crawler {name!r}: create it with `sparkmark crawler create --file F`")
        return load_definition(json.loads(row.definition)), row.state

    def delete(self, name: str, transaction=None) -> None:
        """Forget a crawler (its past crawls stay on record); refused while it crawls."""
        with self.state.within(transaction) as conn:
            row = conn.execute(select(crawlers.c.state).where(crawlers.c.name == name)).first()
            if row is None:
                raise NotFound(f"unknown crawler {name!r}")
            if row.state != "READY":
                raise SparkmarkError(f"crawler {name!r} is {row.state}; stop its crawl first")
            conn.execute(delete(crawlers).where(crawlers.c.name == name))

    def names(self) -> list[str]:
        with self.state.connect() as conn:
            return sorted(conn.execute(select(crawlers.c.name)).scalars())

    def begin(self, name: str, crawl_id: str) -> None:
        """Mark the crawler RUNNING; refuse when another live process is crawling with it.
        A crawl whose process died on this host is marked FAILED and taken over."""
        owner = this_process()
        with self.state.begin() as conn:
            row = conn.execute(
                select(crawlers.c.state, crawlers.c.owner).where(crawlers.c.name == name)
            ).first()
            if row is None:
                raise NotFound(f"unknown crawler {name!r}")
            if row.state != "READY":
                if not is_dead(row.owner):
                    raise SparkmarkError(
                        f"crawler {name!r} is already RUNNING ({row.owner}); wait for its crawl to end"
                    )
                conn.execute(
                    update(crawls)
                    .where(crawls.c.crawler == name, crawls.c.state == "RUNNING")
                    .values(
                        state="FAILED",
                        ended_at=utcnow(),
                        errors=json.dumps([{"path": "(crawl)", "error": f"its process {row.owner} died"}]),
                    )
                )
            conn.execute(
                update(crawlers)
                .where(crawlers.c.name == name)
                .values(state="RUNNING", owner=owner, updated_at=utcnow())
            )
            conn.execute(
                insert(crawls).values(
                    crawl_id=crawl_id,
                    crawler=name,
                    state="RUNNING",
                    started_at=utcnow(),
                    summary="{}",
                    errors="[]",
                )
            )

    def finish(self, name: str, crawl_id: str, state: str, summary: dict, errors: list[dict]) -> None:
        with self.state.begin() as conn:
            conn.execute(
                update(crawls)
                .where(crawls.c.crawl_id == crawl_id)
                .values(
                    state=state, ended_at=utcnow(), summary=json.dumps(summary), errors=json.dumps(errors)
                )
            )
            conn.execute(
                update(crawlers)
                .where(crawlers.c.name == name)
                .values(state="READY", owner=None, updated_at=utcnow())
            )

    def crawls(self, name: str, limit: int = 20) -> list[CrawlRecord]:
        with self.state.connect() as conn:
            rows = conn.execute(
                select(crawls)
                .where(crawls.c.crawler == name)
                .order_by(crawls.c.started_at.desc())
                .limit(limit)
            ).all()
        return [_record(r) for r in rows]

    def crawls_between(
        self, since: datetime | None, until: datetime | None, limit: int = 2000
    ) -> list[CrawlRecord]:
        """Crawls of every crawler alive at some moment from ``since`` to ``until``,
        newest first."""
        query = select(crawls).order_by(crawls.c.started_at.desc()).limit(limit)
        if until is not None:
            query = query.where(crawls.c.started_at <= until)
        if since is not None:
            query = query.where(or_(crawls.c.ended_at.is_(None), crawls.c.ended_at >= since))
        with self.state.connect() as conn:
            rows = conn.execute(query).all()
        return [_record(r) for r in rows]

    def crawl(self, crawl_id: str) -> CrawlRecord | None:
        """One crawl by its id, or None when it was never recorded."""
        with self.state.connect() as conn:
            row = conn.execute(select(crawls).where(crawls.c.crawl_id == crawl_id)).first()
        return None if row is None else _record(row)


def _record(row) -> CrawlRecord:
    return CrawlRecord(
        row.crawl_id,
        row.crawler,
        row.state,
        row.started_at,
        row.ended_at,
        json.loads(row.summary),
        json.loads(row.errors),
    )

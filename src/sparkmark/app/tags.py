"""Tags on Glue resources (jobs, crawlers, triggers, workflows, databases, connections),
kept in the state store by the resource's kind and name: a client names the resource by
an ARN it builds with its own region and account, and any such ARN finds the same tags."""

from __future__ import annotations

import re

from sqlalchemy import Column, MetaData, String, Table, Text, delete, insert, select

from ..engine.store import StateStore
from ..errors import ArgumentError
from ..state import components

metadata = MetaData()
tags_table = Table(
    "sm_tags",
    metadata,
    Column("resource", String(600), primary_key=True),  # kind/name, e.g. job/nightly
    Column("tag_key", String(128), primary_key=True),
    Column("tag_value", Text, nullable=False),
)
COMPONENT = components.declare("tags", "tags_schema_version", metadata, [tags_table])

RULESET_KIND = "dataQualityRuleset"  # as Glue's ARNs name a data quality ruleset
KINDS = ("job", "crawler", "trigger", "workflow", "database", "connection", "table", "session", RULESET_KIND)
_ARN = re.compile(r"arn:aws[\w-]*:glue:[^:]*:[^:]*:(?P<kind>[A-Za-z]+)/(?P<name>.+)")


def resource_of(arn: str) -> tuple[str, str]:
    """(kind, name) of a Glue ARN (``arn:aws:glue:REGION:ACCOUNT:job/NAME``), or an
    ArgumentError naming the ARN."""
    match = _ARN.fullmatch(arn or "")
    if match is None or match["kind"] not in KINDS:
        raise ArgumentError(
            f"{arn!r} is not the ARN of a Glue job, crawler, trigger, workflow, database, connection, table, session or data quality ruleset"
        )
    return match["kind"], match["name"]


class TagStore:
    def __init__(self, state: StateStore):
        self.state = state
        state.open_component(COMPONENT)

    def tags(self, kind: str, name: str) -> dict[str, str]:
        with self.state.connect() as conn:
            rows = conn.execute(
                select(tags_table.c.tag_key, tags_table.c.tag_value).where(
                    tags_table.c.resource == f"{kind}/{name}"
                )
            ).all()
        return {r.tag_key: r.tag_value for r in rows}

    def tag(self, kind: str, name: str, tags: dict[str, str]) -> None:
        """Add ``tags``; a key the resource has already takes the new value."""
        if not tags:
            return
        resource = f"{kind}/{name}"
        with self.state.begin() as conn:
            conn.execute(
                delete(tags_table).where(
                    (tags_table.c.resource == resource) & tags_table.c.tag_key.in_(list(tags))
                )
            )
            conn.execute(
                insert(tags_table),
                [{"resource": resource, "tag_key": k, "tag_value": v} for k, v in tags.items()],
            )

    def all_tags(self, kind: str) -> dict[str, dict[str, str]]:
        """Every tagged resource of ``kind``: its name and its tags, in one query."""
        prefix = f"{kind}/"
        with self.state.connect() as conn:
            rows = conn.execute(
                select(tags_table.c.resource, tags_table.c.tag_key, tags_table.c.tag_value).where(
                    tags_table.c.resource.startswith(prefix, autoescape=True)
                )
            ).all()
        found: dict[str, dict[str, str]] = {}
        for row in rows:
            found.setdefault(row.resource[len(prefix) :], {})[row.tag_key] = row.tag_value
        return found

    def untag(self, kind: str, name: str, keys: list[str]) -> None:
        with self.state.begin() as conn:
            conn.execute(
                delete(tags_table).where(
                    (tags_table.c.resource == f"{kind}/{name}") & tags_table.c.tag_key.in_(keys)
                )
            )

    def forget(self, kind: str, name: str) -> None:
        with self.state.begin() as conn:
            conn.execute(delete(tags_table).where(tags_table.c.resource == f"{kind}/{name}"))

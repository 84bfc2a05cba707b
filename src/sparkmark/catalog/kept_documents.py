"""Glue resources the catalog keeps and answers as given, with no local meaning beyond
that: security configurations, resource policies and the Data Catalog's encryption
settings. A team's Terraform or CloudFormation that declares them applies, and reads back
what it wrote; sparkmark encrypts nothing with them (its own sealing of passwords and
secrets is docs/security.md's) and enforces no policy (the endpoint's signature is its
access control)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Column, MetaData, String, Table, Text, delete, insert, select, update

from ..engine.schema import UTCDateTime, utcnow
from ..engine.store import StateStore
from ..errors import AlreadyExists, NotFound
from ..state import components

metadata = MetaData()
documents = Table(
    "sm_catalog_documents",
    metadata,
    Column("kind", String(64), primary_key=True),  # security-configuration, resource-policy, encryption
    Column("name", String(600), primary_key=True),
    Column("document", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)
COMPONENT = components.declare("catalog_documents", "catalog_documents_schema_version", metadata, [documents])


@dataclass(frozen=True)
class KeptDocument:
    kind: str
    name: str
    document: Any
    created_at: datetime
    updated_at: datetime


class KeptDocuments:
    def __init__(self, state: StateStore):
        self.state = state
        state.open_component(COMPONENT)

    def get(self, kind: str, name: str) -> KeptDocument | None:
        with self.state.connect() as conn:
            row = conn.execute(
                select(documents).where(documents.c.kind == kind, documents.c.name == name)
            ).first()
        return (
            None
            if row is None
            else KeptDocument(kind, name, json.loads(row.document), row.created_at, row.updated_at)
        )

    def all(self, kind: str, prefix: str = "") -> list[KeptDocument]:
        """The documents of a kind (whose names start with ``prefix``), by name."""
        query = select(documents).where(documents.c.kind == kind)
        if prefix:
            query = query.where(documents.c.name.startswith(prefix, autoescape=True))
        with self.state.connect() as conn:
            rows = conn.execute(query.order_by(documents.c.name)).all()
        return [KeptDocument(kind, r.name, json.loads(r.document), r.created_at, r.updated_at) for r in rows]

    def create(self, kind: str, name: str, document: Any) -> KeptDocument:
        now = utcnow()
        with self.state.begin() as conn:
            key = (documents.c.kind == kind) & (documents.c.name == name)
            if conn.execute(select(documents.c.name).where(key)).first():
                raise AlreadyExists(f"{kind} {name!r} already exists")
            conn.execute(
                insert(documents).values(
                    kind=kind,
                    name=name,
                    document=json.dumps(document, default=str),
                    created_at=now,
                    updated_at=now,
                )
            )
        return KeptDocument(kind, name, document, now, now)

    def put(self, kind: str, name: str, document: Any) -> None:
        """Create or replace."""
        now = utcnow()
        text = json.dumps(document, default=str)
        with self.state.begin() as conn:
            key = (documents.c.kind == kind) & (documents.c.name == name)
            if conn.execute(select(documents.c.name).where(key)).first():
                conn.execute(update(documents).where(key).values(document=text, updated_at=now))
            else:
                conn.execute(
                    insert(documents).values(
                        kind=kind, name=name, document=text, created_at=now, updated_at=now
                    )
                )

    def delete(self, kind: str, name: str) -> None:
        with self.state.begin() as conn:
            gone = conn.execute(
                delete(documents).where(documents.c.kind == kind, documents.c.name == name)
            ).rowcount
        if not gone:
            raise NotFound(f"{kind} {name!r} does not exist")

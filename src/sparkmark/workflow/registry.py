"""Jobs, triggers and workflows created through the Glue API, kept in the state store.

``sparkmark.toml`` and this registry are the two homes of definitions, and a name has
exactly one of them: the API refuses to create, change or delete a job, trigger or
workflow the file declares (edit the file instead), and when a later edit of the file
declares a name the registry also holds, the file wins and the registry's entry is
reported as shadowed. :func:`load_project` reads both into one :class:`Project`.

Each entry keeps the sparkmark definition (the fields ``sparkmark.toml`` takes) and,
beside it, the Glue fields sparkmark stores without acting on (``Role``,
``WorkerType``, ``GlueVersion``…), so ``GetJob`` answers with what ``CreateJob`` was
given.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Column, MetaData, String, Table, Text, delete, func, insert, select, update

from ..crawler.store import CrawlerStore
from ..engine.schema import UTCDateTime, utcnow
from ..engine.store import StateStore
from ..errors import AlreadyExists, NotFound
from ..state import components
from .definition import (
    JobDefinition,
    Project,
    TriggerDefinition,
    WorkflowDefinition,
    _validate,
    read_project_file,
)

log = logging.getLogger("sparkmark.workflow")

metadata = MetaData()
definitions = Table(
    "sm_definitions",
    metadata,
    Column("kind", String(16), primary_key=True),  # job, trigger, workflow
    Column("name", String(255), primary_key=True),
    Column("definition", Text, nullable=False),  # the sparkmark.toml fields, as JSON
    Column("glue", Text, nullable=False),  # Glue fields kept as given, as JSON
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)
COMPONENT = components.declare("definitions", "definitions_schema_version", metadata, [definitions])
KINDS: dict[str, tuple[str, type[BaseModel]]] = {
    "job": ("jobs", JobDefinition),
    "trigger": ("triggers", TriggerDefinition),
    "workflow": ("workflows", WorkflowDefinition),
}


@dataclass(frozen=True)
class Entry:
    kind: str
    name: str
    definition: dict[str, Any]
    glue: dict[str, Any]
    created_at: datetime
    updated_at: datetime


class Registry:
    def __init__(self, state: StateStore):
        self.state = state
        state.open_component(COMPONENT)

    def put(
        self,
        kind: str,
        name: str,
        definition: dict[str, Any],
        glue: dict[str, Any],
        *,
        create: bool,
        transaction=None,
    ) -> None:
        """Store an entry: a new one (``create``) or a change to an existing one (in
        ``transaction``, when given)."""
        now = utcnow()
        values = {"definition": json.dumps(definition, default=str), "glue": json.dumps(glue, default=str)}
        key = (definitions.c.kind == kind) & (definitions.c.name == name)
        with self.state.within(transaction) as conn:
            there = conn.execute(select(definitions.c.name).where(key)).first() is not None
            if create and there:
                raise AlreadyExists(f"{kind} {name!r} already exists")
            if not create and not there:
                raise NotFound(f"no {kind} {name!r}")
            if there:
                conn.execute(update(definitions).where(key).values(**values, updated_at=now))
            else:
                conn.execute(
                    insert(definitions).values(kind=kind, name=name, **values, created_at=now, updated_at=now)
                )

    def get(self, kind: str, name: str) -> Entry | None:
        with self.state.connect() as conn:
            row = conn.execute(
                select(definitions).where((definitions.c.kind == kind) & (definitions.c.name == name))
            ).first()
        return None if row is None else _entry(row)

    def delete(self, kind: str, name: str, transaction=None) -> bool:
        with self.state.within(transaction) as conn:
            done = conn.execute(
                delete(definitions).where((definitions.c.kind == kind) & (definitions.c.name == name))
            )
        return bool(done.rowcount)

    def entries(self, kind: str) -> dict[str, Entry]:
        with self.state.connect() as conn:
            rows = conn.execute(
                select(definitions).where(definitions.c.kind == kind).order_by(definitions.c.name)
            ).all()
        return {r.name: _entry(r) for r in rows}

    def stamp(self) -> tuple[int, datetime | None]:
        """Changes to the registry show as a change of this value."""
        with self.state.connect() as conn:
            row = conn.execute(select(func.count(), func.max(definitions.c.updated_at))).first()
        return (int(row[0]), row[1]) if row else (0, None)


def _entry(row) -> Entry:
    return Entry(
        row.kind,
        row.name,
        json.loads(row.definition),
        json.loads(row.glue),
        row.created_at,
        row.updated_at,
    )


def stored_definition(entry: Entry):
    section, model = KINDS[entry.kind]
    definition = entry.definition
    if entry.kind == "job" and "GlueVersion" not in definition and entry.glue.get("GlueVersion"):
        # Kept beside the definition by stores older than runtimes: it now picks the Spark.
        definition = {**definition, "GlueVersion": str(entry.glue["GlueVersion"])}
    return _validate(model, section, entry.name, definition)


def load_project(config: Path | str | None, state: StateStore | None = None) -> Project:
    """The definitions of ``config`` (when the file exists) and of the registry (when a
    state store is given), checked as one project; the file wins on a shared name."""
    path = Path(config) if config is not None else None
    if path is not None and path.exists():
        jobs, triggers, workflows, crawlers = read_project_file(path)
        where = path.resolve()
    elif state is None:
        jobs, triggers, workflows, crawlers = read_project_file(path or Path("sparkmark.toml"))
        where = (path or Path("sparkmark.toml")).resolve()
    else:
        jobs, triggers, workflows, crawlers = {}, {}, {}, {}
        where = (path or Path("sparkmark.toml")).resolve()
    if state is not None:
        registry = Registry(state)
        for kind, target in (("job", jobs), ("trigger", triggers), ("workflow", workflows)):
            for name, entry in registry.entries(kind).items():
                if name in target:
                    log.warning(
                        "%s %r is declared in %s and was also created through the API; "
                        "the file's definition is used",
                        kind,
                        name,
                        where,
                    )
                    continue
                target[name] = stored_definition(entry)
        stored_crawlers = CrawlerStore(state)
        for name in stored_crawlers.names():
            if name not in crawlers:
                crawlers[name] = stored_crawlers.get(name)[0]
    return Project(where, jobs, triggers, workflows, crawlers)


class ProjectSource:
    """The project of a config file and a registry, read again when either changes
    (for a long-running scheduler or API endpoint)."""

    def __init__(self, config: Path | str | None, state: StateStore):
        self.config = Path(config) if config is not None else None
        self.state = state
        self.registry = Registry(state)
        self._key: tuple | None = None
        self._project: Project | None = None
        # A server's request threads and its scheduler's thread ask at once: without the
        # lock, a load that began before a change could land after one that saw it, and
        # its stale project would then be kept under the newer stamp.
        self._lock = threading.Lock()

    def _stamp(self) -> tuple:
        try:
            mtime = self.config.stat().st_mtime_ns if self.config is not None else None
        except OSError:
            mtime = None
        return (mtime, self.registry.stamp(), tuple(CrawlerStore(self.state).names()))

    def current(self) -> Project:
        """The project as of now. The stamp is taken before the load: a change made while
        loading shows as a new stamp, and is loaded at the next call."""
        key = self._stamp()
        with self._lock:
            if self._project is None or key != self._key:
                try:
                    self._project = load_project(self.config, self.state)
                finally:
                    self._key = key  # a file that does not load is not read again until it changes
            return self._project

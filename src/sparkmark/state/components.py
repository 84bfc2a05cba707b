"""The components that keep tables in the state store, and their numbered migrations.

Each component (bookmarks, catalog, crawlers, sessions…) declares its tables in its own
package and registers a ``Component``: a name, the row of ``sm_schema_info`` that holds
its version, and its steps, numbered from 1. Opening the component on a store runs every
step newer than the version found, in one transaction with the version's update, so a
store is always at a version some release wrote: a process killed mid-way leaves the
version before, and the next open runs the steps again. A store at a version newer than
this sparkmark knows is refused and left as it is.

Steps are written so that running one on a store that already has its change is
harmless (tables are created when missing, columns added when missing): stores written
before numbered migrations recorded a version while some of them had a later release's
tables already. The changes themselves go through Alembic's operations, which know each
database's way of altering a table (SQLite's batch mode among them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Column, Connection, MetaData, String, Table, inspect, select

from ..errors import StateStoreError

if TYPE_CHECKING:
    from alembic.operations import Operations

# One row per component: its version ("schema_version" is the bookmark component's,
# for the stores written before components had names of their own), and the store's id.
info_metadata = MetaData()
schema_info = Table(
    "sm_schema_info",
    info_metadata,
    Column("name", String(64), primary_key=True),
    Column("value", String(255), nullable=False),
)

Step = Callable[[Connection], None]


@dataclass(frozen=True)
class Component:
    """A part of sparkmark that keeps tables in the state store."""

    name: str  # what messages and `sparkmark store check` call it
    key: str  # its row in sm_schema_info
    metadata: MetaData  # its tables as this release has them
    steps: Mapping[int, Step]  # 1 makes its first tables; each later one is a change
    retired: frozenset[str] = frozenset()  # tables declared for a step that moves them away

    @property
    def tables(self) -> list[Table]:
        """The tables a store at this release's version holds."""
        return [t for t in self.metadata.sorted_tables if t.name not in self.retired]

    def __post_init__(self) -> None:
        if sorted(self.steps) != list(range(1, len(self.steps) + 1)):
            raise ValueError(f"the steps of component {self.name!r} must be numbered 1, 2, … without gaps")

    @property
    def version(self) -> int:
        return len(self.steps)


_REGISTRY: dict[str, Component] = {}


def register(component: Component) -> Component:
    """Add ``component`` to the registry (once per name), and give it back."""
    known = _REGISTRY.get(component.name)
    if known is not None and known is not component:
        raise ValueError(f"two components are called {component.name!r}")
    _REGISTRY[component.name] = component
    return component


def registered() -> list[Component]:
    """The components imported so far, by name."""
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def stored_version(conn: Connection, component: Component) -> int:
    """The version of ``component`` the store holds: 0 when it has none of its tables."""
    if not conn.dialect.has_table(conn, schema_info.name):
        return 0
    value = conn.execute(select(schema_info.c.value).where(schema_info.c.name == component.key)).scalar()
    return int(value) if value is not None else 0


def check_not_newer(found: int, component: Component) -> None:
    if found > component.version:
        raise StateStoreError(
            f"the state store's {component.name} tables are at version {found}, newer than this "
            f"sparkmark understands ({component.version}); upgrade sparkmark (the store was left as it is)"
        )


def migrate(conn: Connection, component: Component) -> int:
    """Bring ``component``'s tables in the store up to this release, inside the caller's
    transaction. Returns the version found before."""
    info_metadata.create_all(conn, checkfirst=True)
    found = stored_version(conn, component)
    check_not_newer(found, component)
    for number in range(found + 1, component.version + 1):
        component.steps[number](conn)
    if found < component.version:
        if found == 0:
            conn.execute(schema_info.insert().values(name=component.key, value=str(component.version)))
        else:
            conn.execute(
                schema_info.update()
                .where(schema_info.c.name == component.key)
                .values(value=str(component.version))
            )
    return found


# ------------------------------------------------------------------ step helpers


def create(conn: Connection, *tables: Table) -> None:
    """Create ``tables`` (with their indexes) where they are missing."""
    for table in tables:
        table.create(conn, checkfirst=True)


def columns(conn: Connection, table: str) -> set[str]:
    return {c["name"] for c in inspect(conn).get_columns(table)}


def operations(conn: Connection) -> Operations:
    """Alembic's operations on ``conn`` (its transaction is the caller's). Alembic is
    imported here, when a step alters a table, not by every process that opens a store."""
    logging.getLogger("alembic").setLevel(logging.WARNING)  # its plugin set-up is not news
    from alembic.migration import MigrationContext
    from alembic.operations import Operations

    return Operations(MigrationContext.configure(conn))


def add_column(conn: Connection, table: str, column: Column) -> None:
    """Add ``column`` to ``table`` unless it has it already."""
    if column.name not in columns(conn, table):
        operations(conn).add_column(table, column)


def declare(name: str, key: str, metadata: MetaData, *steps: Step | Sequence[Table]) -> Component:
    """Register the component ``name`` (its version in ``sm_schema_info``'s row ``key``)
    with ``steps`` in order, numbered from 1; a step given as tables creates them."""
    numbered = {n: s if callable(s) else tables_step(*s) for n, s in enumerate(steps, start=1)}
    return register(Component(name=name, key=key, metadata=metadata, steps=numbered))


def tables_step(*tables: Table) -> Step:
    """A step that creates ``tables`` where they are missing."""

    def step(conn: Connection) -> None:
        create(conn, *tables)

    return step

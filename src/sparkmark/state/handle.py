"""The state store's handle: one database (SQLite in a file of its own, or PostgreSQL),
opened once, with the components that keep tables in it brought up to this release.

SQLite files are made owner-only; every write transaction on SQLite takes the write
lock up front (BEGIN IMMEDIATE), and PostgreSQL serializes migrations on an advisory
lock, so two processes opening one store never migrate it twice. A lost or refused
connection is said in one line naming the store, its password hidden.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError as SAArgumentError
from sqlalchemy.exc import DatabaseError, OperationalError

from ..errors import ConfigError, StateStoreError
from . import components as c

log = logging.getLogger("sparkmark.state")

__all__ = ["StoreHandle", "private_dir", "private_file", "private_secret"]

# Every process that opens or migrates a store on PostgreSQL queues on this lock.
MIGRATION_LOCK = 7357111
LATE_WRITE_WAIT = 60.0  # seconds close() waits for the late writes said (expect_late_write)


def private_dir(path: Path) -> None:
    """Make ``path`` (and missing parents) a folder only its owner can enter, whatever
    the umask; one that exists is narrowed to 0700 too, unless it is shared (sticky, as
    /tmp is) or another user's: the files sparkmark puts there are 0600 themselves.
    Sparkmark's own folders hold run arguments, bookmark state, logs and quarantined
    records."""
    if not path.exists():
        path.mkdir(parents=True, mode=0o700)
    with contextlib.suppress(OSError):  # not ours to change (another owner): leave it
        info = path.stat()
        if info.st_mode & stat.S_ISVTX or info.st_uid != os.getuid():
            return  # a shared folder such as /tmp (sticky), or another user's: never narrowed
        if info.st_mode & 0o077:
            path.chmod(0o700)


def private_file(path: Path) -> None:
    """Narrow an existing file to 0600 (it may have been made under a loose umask)."""
    with contextlib.suppress(OSError):
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)


def private_secret(path: Path, make: Callable[[], str]) -> str:
    """The secret kept in ``path`` (a token, a key): read, or made with ``make()`` and
    written owner-only (0600 in a 0700 folder) when there is none. Two processes making
    it at once agree on the one written first."""
    try:
        found = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        found = ""
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    if found:
        private_file(path)
        return found
    private_dir(path.parent)
    made = make()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="utf-8").strip() or made
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(made + "\n")
    return made


def _prepare_sqlite_file(path: Path) -> None:
    """The SQLite file is created 0600 (SQLite gives its -wal and -shm files the same
    mode). An existing file must be a store: an empty one is not taken as a new store,
    since a new store in front of existing outputs would write their input again."""
    if path.exists():
        if path.stat().st_size == 0:
            raise StateStoreError(
                f"the state store {path} is an empty file, not a sparkmark state store. "
                "If it was emptied by accident, restore it from a backup; to start a new "
                "store on purpose, delete the file (outputs the old store wrote are then "
                "refused until you adopt them: `sparkmark outputs adopt PATH`)"
            )
        for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            private_file(name)
        return
    private_dir(path.parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))


class StoreHandle:
    """A handle on one state store's database. Cheap to keep open; thread-safe like an
    Engine. ``components`` are brought up to this release when it opens; services bring
    up their own with ``open_component`` when they first use the store."""

    def __init__(self, url: str, components: Iterable[c.Component] = ()):
        try:
            parsed = make_url(url)
        except SAArgumentError:
            raise ConfigError(
                f"SPARKMARK_STATE_URL is not a database URL: {url!r} "
                "(expected e.g. sqlite:///path/state.db or postgresql+psycopg://host/db)"
            ) from None
        self.url = parsed
        self.dialect = parsed.get_backend_name()
        if self.dialect not in ("sqlite", "postgresql"):
            raise ConfigError(
                f"state store backend {self.dialect!r} is not supported; use sqlite or postgresql"
            )
        self.fresh = self.dialect == "sqlite" and not self._sqlite_path_exists(parsed)
        if self.dialect == "sqlite" and parsed.database and parsed.database != ":memory:":
            _prepare_sqlite_file(Path(parsed.database))
        self.engine = self._make_engine(parsed)
        self._opened: set[str] = set()
        self._opening = threading.Lock()
        self._late = threading.Condition()
        self._late_writes = 0
        display = self.display_url

        @event.listens_for(self.engine, "handle_error")
        def _unreachable(context):
            # A lost or refused connection is the store's problem, said in one line; other
            # database errors (constraints the code relies on) pass through unchanged.
            if context.is_disconnect or isinstance(context.sqlalchemy_exception, OperationalError):
                first = str(context.original_exception).strip().splitlines() or ["(no message)"]
                return StateStoreError(f"the state store at {display} is unreachable: {first[0]}")
            return None

        for component in components:
            self.open_component(component)

    def open_component(self, component: c.Component) -> None:
        """Bring ``component``'s tables up to this release (once per handle): every step
        newer than the store's version, in one transaction."""
        if component.name in self._opened:
            return
        with self._opening:
            if component.name in self._opened:
                return
            try:
                with self.engine.begin() as conn:
                    if self.dialect == "postgresql":
                        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
                    found = c.migrate(conn, component)
            except StateStoreError as exc:
                raise StateStoreError(
                    str(exc).replace(" is unreachable: ", " cannot be opened: ", 1)
                ) from None
            except DatabaseError as exc:  # e.g. "file is not a database"
                raise StateStoreError(
                    f"the state store at {self.display_url} is unreadable ({str(exc.orig).strip()}); "
                    "restore it from a backup, or move it aside to start a new store"
                ) from None
            if 0 < found < component.version:
                log.info(
                    "state store %s: %s tables migrated from version %d to %d",
                    self.display_url,
                    component.name,
                    found,
                    component.version,
                )
            self._opened.add(component.name)

    @staticmethod
    def _sqlite_path_exists(url) -> bool:
        return not url.database or url.database == ":memory:" or Path(url.database).exists()

    @property
    def display_url(self) -> str:
        """The URL with any password hidden, safe for logs."""
        return self.url.render_as_string(hide_password=True)

    @staticmethod
    def _make_engine(url) -> Engine:
        if url.get_backend_name() != "sqlite":
            return create_engine(url, pool_pre_ping=True)
        if url.database and url.database != ":memory:":
            private_dir(Path(url.database).parent)
        engine = create_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn, _record):
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn):
            # Take the write lock up front so two writers queue instead of deadlocking.
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine

    def expect_late_write(self) -> None:
        """Say that a write will come after its caller has moved on (a run's last metrics
        sample, kept after its commit); :meth:`close` waits for it. Each is ended by
        :meth:`late_write_done`."""
        with self._late:
            self._late_writes += 1

    def late_write_done(self) -> None:
        with self._late:
            self._late_writes = max(0, self._late_writes - 1)
            self._late.notify_all()

    def close(self, wait: float = LATE_WRITE_WAIT) -> None:
        """Close the store's connections, once the late writes said are done (at most
        ``wait`` seconds): a closed store's file may be moved or its database dropped
        next, under a write still on its way."""
        with self._late:
            if not self._late.wait_for(lambda: self._late_writes == 0, timeout=wait):
                log.warning(
                    "closing the state store at %s with a late write still on its way", self.display_url
                )
        self.engine.dispose()

    def begin(self):
        """A transaction on the store's database, for a component's own tables."""
        return self.engine.begin()

    def within(self, conn=None):
        """``conn``'s transaction when given (one that spans several components' tables),
        else a transaction of its own."""
        return contextlib.nullcontext(conn) if conn is not None else self.engine.begin()

    def serialize(self, conn, key: str) -> None:
        """Make the rest of ``conn``'s transaction run alone among those that serialize
        on ``key``: an advisory lock on PostgreSQL; on SQLite every write transaction
        already runs alone (BEGIN IMMEDIATE)."""
        if self.dialect == "postgresql":
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(hashtext(%(key)s))", {"key": key})

    def connect(self):
        """A connection to the store's database, for a component's own tables."""
        return self.engine.connect()

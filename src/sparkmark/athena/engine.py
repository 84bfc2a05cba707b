"""The Athena engine: queries queued by StartQueryExecution run one after another on a
warm Spark, an interactive session of the server's own (``sparkmark-athena``) whose Spark
SQL shares the Glue catalog. The session is created on the first query and ends when
idle for its IdleTimeout; the next query starts another.

A query is QUEUED until the session takes it, RUNNING while its statement runs, then
SUCCEEDED, FAILED (with Athena's one-line reason) or CANCELLED (StopQueryExecution
cancels its Spark jobs). Its results are in its result location; its record keeps the
columns, the counts and where the files are.
"""

from __future__ import annotations

import json
import logging
import threading
from datetime import datetime
from typing import Any

from ..engine.owner import is_dead, this_process
from ..engine.schema import utcnow
from ..errors import SparkmarkError
from ..sessions import owned
from . import dialect
from .execute import outcome_of
from .records import CANCELLED, ENDED, FAILED, QUEUED, RUNNING, SUCCEEDED, AthenaStore, QueryRecord

log = logging.getLogger("sparkmark.athena")

SESSION_ID = "sparkmark-athena"
ICEBERG_CATALOG = "athena_iceberg"  # the engine's Spark catalog of the Glue catalog's Iceberg tables
# Iceberg's REST catalog on Glue's Iceberg REST endpoint, as AWS's page gives it; the
# session's set-up points it at this server's /iceberg and its S3 endpoint.
ICEBERG_CONF = (
    "spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
    f" --conf spark.sql.catalog.{ICEBERG_CATALOG}=org.apache.iceberg.spark.SparkCatalog"
    f" --conf spark.sql.catalog.{ICEBERG_CATALOG}.type=rest"
    f" --conf spark.sql.catalog.{ICEBERG_CATALOG}.uri=https://glue.us-east-1.amazonaws.com/iceberg"
    f" --conf spark.sql.catalog.{ICEBERG_CATALOG}.warehouse=000000000000"
    f" --conf spark.sql.catalog.{ICEBERG_CATALOG}.rest.sigv4-enabled=true"
    f" --conf spark.sql.catalog.{ICEBERG_CATALOG}.rest.signing-name=glue"
    # every query sees the commits other writers made since the last one
    f" --conf spark.sql.catalog.{ICEBERG_CATALOG}.cache-enabled=false"
)
IDLE_MINUTES = 30
# Athena's ErrorCategory: 1 the system's, 2 the user's (the query), 3 other.
SYSTEM, USER = 1, 2


class AthenaEngine:
    def __init__(self, app: Any):
        from ..engine import storage

        self.app = app
        self.store = AthenaStore(app.state)
        self.owner = this_process()
        storage.configure(app.settings)  # result files are read here (GetQueryResults)
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._adopt_orphans()

    def _adopt_orphans(self) -> None:
        for record in self.store.queries(states=frozenset({QUEUED, RUNNING})):
            if record.owner != self.owner and record.owner and is_dead(record.owner):
                self.store.set_query(
                    record.id,
                    state=FAILED,
                    reason="the server that ran this query ended",
                    error_category=SYSTEM,
                )

    # ------------------------------------------------------------------ queries
    def start(
        self,
        query_id: str,
        sql: str,
        *,
        workgroup: str,
        database: str | None,
        catalog: str | None,
        output_location: str | None,
        parameters: list[str] | None = None,
        request_token: str | None = None,
    ) -> QueryRecord:
        """Record the query and queue it; a query that cannot be translated is recorded
        FAILED with the reason, as Athena does."""
        if request_token:
            found = self.store.by_token(request_token)
            if found is not None:
                return found  # Athena's idempotent retry: the same query, not another
        folder = (output_location or "").rstrip("/")
        db = (database or "default").lower()
        names = dialect.Names(db, self._is_iceberg, ICEBERG_CATALOG if self.reads_iceberg else None)
        try:
            plan = dialect.plan(sql, db, parameters, f"{folder}/tables/{query_id}", names)
            order: dict[str, Any] | None = self.order(plan, query_id, folder, database)
            state, reason, kind = QUEUED, None, plan.statement_type
        except dialect.AthenaSqlError as exc:
            order, state, reason, kind = None, FAILED, str(exc), _statement_type(sql)
        record = self.store.add_query(
            {
                "id": query_id,
                "query": sql,
                "statement_type": kind,
                "workgroup": workgroup,
                "database": database,
                "catalog": catalog,
                "output_location": f"{folder}/{query_id}" if folder else None,
                "state": state,
                "reason": reason,
                "error_category": USER if state == FAILED else None,
                "owner": self.owner,
                "outcome": {"order": order} if order else None,
                "request_token": request_token,
                "completed": utcnow() if state == FAILED else None,
            }
        )
        if state == QUEUED:
            self._ensure_thread()
            self._wake.set()
        return record

    @property
    def reads_iceberg(self) -> bool:
        """Whether the engine's Spark reads Iceberg tables: when this process serves the
        Glue API, whose Iceberg REST endpoint its Iceberg catalog is."""
        return bool(self.app.glue_url)

    def _is_iceberg(self, database: str, name: str) -> bool:
        from ..errors import NotFound

        try:
            table = self.app.catalog.table(database, name)
        except NotFound:
            return False
        return str(table.parameters.get("table_type", "")).upper() == "ICEBERG"

    @staticmethod
    def order(plan: dialect.Plan, query_id: str, folder: str, database: str | None) -> dict[str, Any]:
        return {
            "kind": plan.kind,
            "sql": plan.sql,
            "show": plan.show,
            "database": (database or "default").lower(),
            "output": f"{folder}/{query_id}",
            "write": plan.write.__dict__ if plan.write is not None else None,
            "created": plan.created,
            "partitions": plan.partitions,
            "needs_database": plan.needs_database,
        }

    def stop(self, query_id: str) -> None:
        """StopQueryExecution: a queued query is cancelled at once, a running one has its
        Spark jobs cancelled; an ended one is left as it is."""
        record = self.store.query(query_id)
        if record.state in ENDED:
            return
        if self.store.set_query(query_id, only_from=frozenset({QUEUED}), state=CANCELLED):
            return
        if record.statement is not None:
            try:
                self.app.sessions.cancel(SESSION_ID, record.statement)
            except SparkmarkError as exc:
                log.info("athena: cancelling %s: %s", query_id, exc)
        self.store.set_query(query_id, only_from=frozenset({RUNNING}), state=CANCELLED)

    # ------------------------------------------------------------------ running
    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="sparkmark-athena", daemon=True)
                self._thread.start()

    def _serve(self) -> None:
        while not self._closed.is_set():
            queued = [q for q in self.store.queries(states=frozenset({QUEUED})) if q.owner == self.owner]
            if not queued:
                self._wake.wait(1.0)
                self._wake.clear()
                continue
            for record in sorted(queued, key=lambda q: q.submitted):
                if self._closed.is_set():
                    return
                try:
                    self._run(record)
                except Exception as exc:
                    log.exception("athena: query %s failed", record.id)
                    self.store.set_query(
                        record.id,
                        only_from=frozenset({QUEUED, RUNNING}),
                        state=FAILED,
                        reason=f"GENERIC_INTERNAL_ERROR: {str(exc).splitlines()[0] if str(exc) else exc!r}",
                        error_category=SYSTEM,
                    )

    def _session(self) -> None:
        """The engine's session, READY (created, or created again, when it is not)."""
        owned.ready(
            self.app.sessions,
            SESSION_ID,
            {
                "Description": "the Athena API's Spark (sparkmark)",
                "Role": "sparkmark",
                "Command": {"Name": "glueetl", "PythonVersion": "3"},
                "DefaultArguments": {
                    "--enable-glue-datacatalog": "true",
                    **(
                        {"--datalake-formats": "iceberg", "--conf": ICEBERG_CONF}
                        if self.reads_iceberg
                        else {}
                    ),
                },
                "IdleTimeout": IDLE_MINUTES,
            },
            "the Athena engine",
        )

    def _run(self, record: QueryRecord) -> None:
        order = record.outcome.get("order") or {}
        self._session()
        code = (
            f"import sparkmark.athena.execute as _athena\n_athena.run(spark, {json.dumps(json.dumps(order))})"
        )
        if not self.store.set_query(record.id, only_from=frozenset({QUEUED}), state=RUNNING):
            return  # cancelled while queued

        def started(number: int) -> None:
            self.store.set_query(record.id, statement=number)
            if self.store.query(record.id).state == CANCELLED:  # stopped before its number was known
                self.app.sessions.cancel(SESSION_ID, number)

        statement = owned.run(self.app.sessions, SESSION_ID, code, started)
        text = owned.text_of(statement)
        outcome = outcome_of(text)
        running = frozenset({RUNNING})
        if statement.state == "CANCELLED":
            self.store.set_query(record.id, only_from=running, state=CANCELLED)
        elif outcome is None:
            reason = owned.error_of(statement)
            self.store.set_query(
                record.id,
                only_from=running,
                state=FAILED,
                reason=f"GENERIC_INTERNAL_ERROR: {reason}",
                error_category=SYSTEM,
            )
        elif not outcome.get("ok"):
            self.store.set_query(
                record.id, only_from=running, state=FAILED, reason=outcome.get("error"), error_category=USER
            )
        else:
            # The files' names come from the order, never the printed line: a session's
            # output is masked, and a path may hold a word that a secret also is.
            base = order["output"]
            files = {
                "file": (base + (".txt" if outcome.get("text") else ".csv")) if outcome.get("file") else None,
                "manifest": base + "-manifest.csv" if outcome.get("manifest") else None,
            }
            self.store.set_query(
                record.id, only_from=running, state=SUCCEEDED, outcome={**outcome, **files, "order": order}
            )

    @staticmethod
    def result_rows(record: QueryRecord, start: int, size: int) -> tuple[list[list[str | None]], bool]:
        """Rows ``start`` … of a query's result file (a CSV's header is its first row, as
        the first page of Athena's results shows it), and whether more follow.
        FileNotFoundError when the file is gone."""
        import fsspec

        from .results import read_csv

        url = record.outcome["file"]
        fs, path = fsspec.core.url_to_fs(url)
        out: list[list[str | None]] = []
        with fs.open(path, "r", encoding="utf-8") as stream:
            lines = (
                ([line.rstrip("\n")] for line in stream) if record.outcome.get("text") else read_csv(stream)
            )
            for i, row in enumerate(lines):
                if i < start:
                    continue
                if len(out) == size:
                    return out, True
                out.append(list(row))
        return out, False

    def close(self) -> None:
        self._closed.set()
        self._wake.set()


def _statement_type(sql: str) -> str:
    words = [w.upper() for w in dialect._words(sql, 1)]
    return dialect.DML if not words or words[0] in ("SELECT", "WITH", "VALUES", "INSERT") else dialect.DDL


def millis(start: datetime | None, end: datetime | None) -> int:
    if start is None or end is None:
        return 0
    return max(0, int((end - start).total_seconds() * 1000))

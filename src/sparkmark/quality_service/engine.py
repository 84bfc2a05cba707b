"""The data quality engine: ruleset evaluation runs and rule recommendation runs, queued
by the API and run one after another in a session of the server's own
(``sparkmark-quality``), whose Spark SQL shares the Glue catalog. The session is created
on the first run and ends when idle for its IdleTimeout.

A run is STARTING until the session takes it, RUNNING while its statement runs, then
SUCCEEDED, FAILED with the reason, or STOPPED (a cancelled run's Spark jobs are
cancelled). An evaluation run keeps one result per ruleset, in the same store as the
results jobs keep; a recommendation run keeps the ruleset it proposes, and creates it
as a ruleset when asked to.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from typing import Any

from ..engine.owner import is_dead, this_process
from ..errors import ArgumentError, SparkmarkError
from ..quality.ruleset import DQDLError, parse_ruleset
from ..sessions import owned
from .execute import outcome_of
from .records import (
    ENDED,
    EVALUATION,
    FAILED,
    RECOMMENDATION,
    RUNNING,
    STARTING,
    STOPPED,
    STOPPING,
    SUCCEEDED,
    QualityServiceStore,
    TaskRun,
)

log = logging.getLogger("sparkmark.quality")

SESSION_ID = "sparkmark-quality"
IDLE_MINUTES = 30
_CODE = {
    EVALUATION: "import sparkmark.quality_service.execute as _dq\n_dq.evaluate(spark, {order})",
    RECOMMENDATION: "import sparkmark.quality_service.execute as _dq\n_dq.recommend(spark, {order})",
}


def check_ruleset(text: str) -> None:
    """A ruleset as the API takes it: DQDL its parser reads, or InvalidInput's reason."""
    try:
        parse_ruleset(text)
    except DQDLError as exc:
        raise ArgumentError(f"the ruleset is not valid DQDL: {str(exc).splitlines()[0]}") from None


class QualityEngine:
    def __init__(self, app: Any):
        self.app = app
        self.store = QualityServiceStore(app.state)
        self.owner = this_process()
        self._wake = threading.Event()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        for run in self.store.runs(EVALUATION) + self.store.runs(RECOMMENDATION):
            if run.state not in ENDED and run.owner != self.owner and run.owner and is_dead(run.owner):
                self.store.set_run(run.id, state=FAILED, error="the server that ran this run ended")

    # ------------------------------------------------------------------ starting
    def _table(self, source: dict[str, Any], what: str) -> dict[str, Any]:
        glue = (source or {}).get("GlueTable")
        if not glue:
            raise ArgumentError(
                f"{what} must name a GlueTable (DatabaseName, TableName); only catalog tables are read"
            )
        self.app.catalog.table(glue["DatabaseName"], glue["TableName"])  # NotFound when it is not there
        return {"GlueTable": {k: v for k, v in glue.items() if v is not None}}

    def start_evaluation(self, p: dict[str, Any]) -> TaskRun:
        source = self._table(p["DataSource"], "DataSource")
        additional = {
            alias: self._table(s, f"AdditionalDataSources[{alias}]")
            for alias, s in (p.get("AdditionalDataSources") or {}).items()
        }
        names = list(p["RulesetNames"])
        if not names:
            raise ArgumentError("RulesetNames names no ruleset")
        rulesets = [(name, self.store.ruleset(name).ruleset) for name in names]
        request = {**p, "DataSource": source, "AdditionalDataSources": additional}
        run_id = f"dqrun-{uuid.uuid4().hex}"
        options = p.get("AdditionalRunOptions") or {}
        order = {
            "run_id": run_id,
            "data_source": source,
            "additional": additional,
            "rulesets": rulesets,
            "cloudwatch": options.get("CloudWatchMetricsEnabled", True) is not False,
        }
        run = self.store.add_run(run_id, EVALUATION, request, self.owner, p.get("ClientToken"), order)
        self._wake_up()
        return run

    def start_recommendation(self, p: dict[str, Any]) -> TaskRun:
        source = self._table(p["DataSource"], "DataSource")
        created = p.get("CreatedRulesetName")
        if created and self.store.find_ruleset(created) is not None:
            raise ArgumentError(f"ruleset {created} already exists; CreatedRulesetName names a new one")
        request = {**p, "DataSource": source}
        run_id = f"dqrun-{uuid.uuid4().hex}"
        order = {"run_id": run_id, "data_source": source}
        run = self.store.add_run(run_id, RECOMMENDATION, request, self.owner, p.get("ClientToken"), order)
        self._wake_up()
        return run

    def cancel(self, run_id: str, kind: str) -> None:
        """A run not yet taken is STOPPED at once; a running one has its Spark jobs
        cancelled; an ended one is refused, as Glue refuses it."""
        run = self.store.run(run_id, kind)
        if run.state in ENDED:
            raise ArgumentError(f"run {run_id} has ended ({run.state}); there is nothing to cancel")
        if self.store.set_run(run_id, only_from=frozenset({STARTING}), state=STOPPED):
            return
        self.store.set_run(run_id, only_from=frozenset({RUNNING}), state=STOPPING)
        statement = self.store.run(run_id, kind).statement
        if statement is not None:
            try:
                self.app.sessions.cancel(SESSION_ID, int(statement))
            except SparkmarkError as exc:
                log.info("data quality: cancelling %s: %s", run_id, exc)

    # ------------------------------------------------------------------ running
    def _wake_up(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="sparkmark-quality", daemon=True)
                self._thread.start()
        self._wake.set()

    def _serve(self) -> None:
        while not self._closed.is_set():
            waiting = [
                r
                for kind in (EVALUATION, RECOMMENDATION)
                for r in self.store.runs(kind, frozenset({STARTING}))
                if r.owner == self.owner
            ]
            if not waiting:
                self._wake.wait(1.0)
                self._wake.clear()
                continue
            for run in sorted(waiting, key=lambda r: r.started):
                if self._closed.is_set():
                    return
                try:
                    self._run(run)
                except Exception as exc:
                    log.exception("data quality: run %s failed", run.id)
                    self.store.set_run(
                        run.id,
                        only_from=frozenset({STARTING, RUNNING, STOPPING}),
                        state=FAILED,
                        error=str(exc).splitlines()[0] if str(exc) else repr(exc),
                    )

    def _session(self) -> None:
        owned.ready(
            self.app.sessions,
            SESSION_ID,
            {
                "Description": "data quality's evaluation and recommendation runs (sparkmark)",
                "Role": "sparkmark",
                "Command": {"Name": "glueetl", "PythonVersion": "3"},
                "DefaultArguments": {"--enable-glue-datacatalog": "true"},
                "IdleTimeout": IDLE_MINUTES,
            },
            "the data quality engine",
        )

    def _run(self, run: TaskRun) -> None:
        order = run.outcome.get("order") or {}
        self._session()
        if not self.store.set_run(run.id, only_from=frozenset({STARTING}), state=RUNNING):
            return  # stopped while it waited
        code = _CODE[run.kind].format(order=json.dumps(json.dumps(order)))

        def started(number: int) -> None:
            self.store.set_run(run.id, statement=str(number))
            if self.store.run(run.id, run.kind).state == STOPPING:
                self.app.sessions.cancel(SESSION_ID, number)

        statement = owned.run(self.app.sessions, SESSION_ID, code, started)
        outcome = outcome_of(owned.text_of(statement))
        live = frozenset({RUNNING, STOPPING})
        if statement.state == "CANCELLED" or self.store.run(run.id, run.kind).state == STOPPING:
            self.store.set_run(run.id, only_from=live, state=STOPPED)
        elif outcome is None:
            self.store.set_run(run.id, only_from=live, state=FAILED, error=owned.error_of(statement))
        elif not outcome.get("ok"):
            self.store.set_run(run.id, only_from=live, state=FAILED, error=outcome.get("error"))
        elif run.kind == EVALUATION:
            self.store.set_run(run.id, only_from=live, state=SUCCEEDED, outcome={**outcome, "order": order})
        else:
            self._recommended(run, order, outcome)

    def _recommended(self, run: TaskRun, order: dict[str, Any], outcome: dict[str, Any]) -> None:
        created = run.request.get("CreatedRulesetName")
        if created:
            glue = order["data_source"]["GlueTable"]
            target = {"TableName": glue["TableName"], "DatabaseName": glue["DatabaseName"]}
            self.store.add_ruleset(
                created,
                outcome["ruleset"],
                description=f"recommended by run {run.id}",
                target_table=target,
                recommendation_run_id=run.id,
            )
        self.store.set_run(
            run.id,
            only_from=frozenset({RUNNING, STOPPING}),
            state=SUCCEEDED,
            outcome={**outcome, "order": order},
        )

    def close(self) -> None:
        self._closed.set()
        self._wake.set()

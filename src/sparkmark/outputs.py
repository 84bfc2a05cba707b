"""The writes of exactly-once sinks after their run: publish what was committed,
discard what never will be. Used by a job at its commit and when it starts (to
finish what a crashed run left), and by ``sparkmark outputs``."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from .connections import Connections
from .engine import jdbc as jdbc_keys
from .engine import publish
from .engine.models import OutputKind, OutputRecord, OutputState, RunState
from .engine.store import StateStore
from .sinks import jdbc as jdbc_sink
from .sinks import registry as sink_registry
from .sinks import tables as table_sink

log = logging.getLogger("sparkmark.outputs")

UNFINISHED = (OutputState.STAGING, OutputState.STAGED, OutputState.COMMITTED)


def _database(
    record: OutputRecord, known: Mapping[str, jdbc_keys.Database], connections: Connections | None
) -> jdbc_keys.Database:
    plan = record.plan
    if plan["jdbc_url"] in known:
        return known[plan["jdbc_url"]]
    if plan.get("connection") and connections is not None:
        resolved = connections.resolve(plan["connection"])
        return jdbc_keys.parse_database(resolved.url, resolved.user, resolved.password)
    return jdbc_keys.parse_database(plan["jdbc_url"], plan.get("user"))


def _spark():
    """The session a table write is published with: the run's, when Spark runs here."""
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def publish_output(
    store: StateStore,
    record: OutputRecord,
    known: Mapping[str, jdbc_keys.Database] | None = None,
    connections: Connections | None = None,
) -> dict:
    """Make a COMMITTED write visible and mark it PUBLISHED. Repeatable."""
    if record.kind is OutputKind.FILES:
        plan = publish.FileOutputPlan.from_json(record.plan)
        publish.publish(plan)
        result = {
            "ctx": record.ctx,
            "path": plan.root,
            "files_written": len(plan.files),
            "files_replaced": len(plan.remove),
        }
    elif record.kind is OutputKind.KEYED:
        module = sink_registry.of_plan(record.plan).module
        result = {"ctx": record.ctx, **module.apply(record.plan, record.key)}
        store.set_output(record.run_id, record.seq, OutputState.PUBLISHED)
        module.finish(record.plan)
        return result
    elif record.kind is OutputKind.TABLE:
        result = {"ctx": record.ctx, **table_sink.apply(_spark(), record.plan, record.key)}
        store.set_output(record.run_id, record.seq, OutputState.PUBLISHED)
        table_sink.finish(record.plan)
        return result
    else:
        result = jdbc_sink.apply(_database(record, known or {}, connections), record.plan, key=record.key)
        result = {"ctx": record.ctx, **result}
    store.set_output(record.run_id, record.seq, OutputState.PUBLISHED)
    return result


def gone(
    record: OutputRecord,
    known: Mapping[str, jdbc_keys.Database] | None = None,
    connections: Connections | None = None,
) -> str | None:
    """What of a staged write is no longer there, in a few words; None when all of it is."""
    if record.kind is OutputKind.FILES:
        missing = publish.missing_staged(publish.FileOutputPlan.from_json(record.plan))
        if not missing:
            return None
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        return f"its staged file {missing[0]}{more} no longer exists"
    if record.kind is OutputKind.TABLE:
        return table_sink.missing(record.plan)
    if record.kind is OutputKind.KEYED:
        return sink_registry.of_plan(record.plan).module.missing(record.plan)
    plan = record.plan
    stage = plan.get("stage") or jdbc_sink.stage_name_for(record.key)
    if jdbc_sink.stage_exists(_database(record, known or {}, connections), {**plan, "stage": stage}):
        return None
    return f"its staging table {stage} no longer exists"


def discard_output(
    store: StateStore,
    record: OutputRecord,
    known: Mapping[str, jdbc_keys.Database] | None = None,
    connections: Connections | None = None,
) -> bool:
    """Mark a write whose run will never commit DISCARDED, then drop its staged data.

    The mark comes first and only from STAGING or STAGED: a write that a commit
    reached in the meantime is never dropped."""
    if record.kind is OutputKind.TABLE:
        return table_sink.discard(store, record)
    if record.kind is OutputKind.KEYED:
        return sink_registry.of_plan(record.plan).module.discard(store, record)
    if not store.set_output(
        record.run_id, record.seq, OutputState.DISCARDED, expect=(OutputState.STAGING, OutputState.STAGED)
    ):
        return False
    if record.kind is OutputKind.FILES:
        publish.discard(record.plan["root"], record.key)
    else:
        stage = record.plan.get("stage") or jdbc_sink.stage_name_for(record.key)
        jdbc_sink.drop_stage(_database(record, known or {}, connections), {**record.plan, "stage": stage})
    return True


def recover(
    store: StateStore,
    job_name: str,
    *,
    running_run: str | None = None,
    known: Mapping[str, jdbc_keys.Database] | None = None,
    only_url: str | None = None,
    connections: Connections | None = None,
) -> list[OutputRecord]:
    """Finish the writes earlier runs of ``job_name`` left: publish the committed ones,
    discard those of runs that ended without committing them. ``running_run`` (the
    caller's own run) is left alone. Returns the writes still unfinished, each
    logged with the reason."""
    left = []
    for record in store.outputs(job_name, states=UNFINISHED):
        if record.run_id == running_run:
            continue
        if only_url is not None and record.plan.get("jdbc_url") != only_url:
            continue
        if record.state is not OutputState.COMMITTED and record.run_state is RunState.RUNNING:
            left.append(record)  # its run is alive (another process): not ours to touch
            continue
        try:
            if record.state is OutputState.COMMITTED:
                log.warning(
                    "job %s: publishing write %s (%s -> %s) of committed run %s, which "
                    "ended before publishing it",
                    job_name,
                    record.key,
                    record.ctx,
                    record.target,
                    record.run_id,
                )
                publish_output(store, record, known, connections)
            else:
                log.warning(
                    "job %s: discarding write %s (%s -> %s) of run %s, which ended "
                    "(%s) without committing it",
                    job_name,
                    record.key,
                    record.ctx,
                    record.target,
                    record.run_id,
                    record.run_state,
                )
                discard_output(store, record, known, connections)
        except Exception as exc:  # noqa: BLE001 - keep the rest going; the error is in the log line
            log.error(
                "job %s: write %s (%s -> %s) is still unfinished: %s",
                job_name,
                record.key,
                record.ctx,
                record.target,
                exc,
            )
            left.append(record)
    return left

"""A job run's logs as CloudWatch Logs serves them to Glue's tools (Airflow's Glue
operator with ``verbose=True``, ``aws logs``): the log group ``/aws-glue/jobs/output``
holds each run's stdout and ``/aws-glue/jobs/error`` its stderr, a stream per run named
by the run's id, as on Glue. What is served is what the scheduler's launcher kept for
the runs it started; every line is masked as the console masks it.

Tokens are positions (line numbers) in the streams. A read that returned lines gives a
token for what follows them; one that returned none gives no token, so a paginator
stops at the end, and a client holding the last token reads only the lines written
after it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..engine.masking import mask_text
from ..engine.run_logs import error_path, log_path
from ..errors import NotFound
from .protocol import GlueApiError, invalid
from .service import CATALOG_ID, Service, handler

JOBS_LOG_GROUP = "/aws-glue/jobs"  # JobRun.LogGroupName: its streams are under /output and /error
GROUPS = {f"{JOBS_LOG_GROUP}/output": "output", f"{JOBS_LOG_GROUP}/error": "error"}


def _no_group(name: str) -> GlueApiError:
    return GlueApiError("ResourceNotFoundException", f"The specified log group does not exist: {name}")


def _no_stream(name: str) -> GlueApiError:
    return GlueApiError("ResourceNotFoundException", f"The specified log stream does not exist: {name}")


def _group(name: str | None) -> str:
    if name not in GROUPS:
        raise _no_group(str(name))
    return GROUPS[name]


def _file(svc: Service, which: str, stream: str) -> Path | None:
    """The file holding ``stream`` (a run id) of the group ``which``, or None: the
    scheduler's log of a run it started, else the copy a run from a terminal kept."""
    try:
        action = svc.workflows.action(stream)
    except NotFound:
        action = None
    if action is not None:
        if action.kind != "JOB" or not action.log_path:
            return None
        path = Path(action.log_path)
    else:
        try:
            record = svc.state.get_run(stream)
        except NotFound:
            return None
        path = log_path(svc.settings.home, "JOB", record.job_name, stream)
    return path if which == "output" else error_path(path)


class _Stream:
    """One stream's lines, read once per request."""

    def __init__(self, name: str, path: Path):
        self.name = name
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
            stamp = int(path.stat().st_mtime * 1000)
        except OSError:
            text, stamp = "", 0
        self.lines = mask_text(text).splitlines()
        self.timestamp = stamp  # lines carry no time of their own: the file's last write

    def event(self, number: int) -> dict[str, Any]:
        return {"timestamp": self.timestamp, "message": self.lines[number], "ingestionTime": self.timestamp}


def _streams(svc: Service, which: str, names: list[str] | None, prefix: str | None) -> list[_Stream]:
    if names is None:
        actions = svc.workflows.actions_of(kind="JOB")
        names = sorted(a.action_id for a in actions if a.log_path)
        folder = svc.settings.home / "logs" / "jobs"
        kept = {p.stem for p in folder.glob("*/*.log")} if folder.exists() else set()
        names = sorted(set(names) | kept)
    found = []
    for name in names:
        if prefix and not name.startswith(prefix):
            continue
        path = _file(svc, which, name)
        if path is not None and path.exists():
            found.append(_Stream(name, path))
    return found


TOKEN_MARK = "sm1"


def _decode(token: str | None) -> dict[str, int]:
    """Positions from a token: ``sm1|<stream>|<line>|…``. Plain text on purpose: botocore's
    paginators take a token that decodes as base64 JSON for one of their own."""
    if not token:
        return {}
    parts = token.split("|")
    if parts[0] != TOKEN_MARK or len(parts) % 2 != 1:
        raise invalid("The specified nextToken is invalid.")
    try:
        return {parts[i]: int(parts[i + 1]) for i in range(1, len(parts), 2)}
    except ValueError:
        raise invalid("The specified nextToken is invalid.") from None


def _encode(positions: dict[str, int]) -> str:
    return "|".join([TOKEN_MARK, *(f"{name}|{line}" for name, line in sorted(positions.items()))])


def _within(stream: _Stream, p: dict[str, Any]) -> bool:
    start, end = p.get("startTime"), p.get("endTime")
    return (start is None or stream.timestamp >= start) and (end is None or stream.timestamp <= end)


_TERM = re.compile(r'"([^"]*)"|(\S+)')


def _matcher(pattern: str | None):
    """CloudWatch's text filter patterns: every term must be in the message (a quoted
    phrase as it is), a term after ``-`` must not, and of the terms after ``?`` one must."""
    if not pattern or not pattern.strip():
        return lambda message: True
    if pattern.strip().startswith(("{", "[")):
        raise invalid(
            "JSON and space-delimited filter patterns are not supported; use terms or quoted phrases"
        )
    required, excluded, any_of = [], [], []
    for quoted, bare in _TERM.findall(pattern):
        term = quoted if quoted or not bare else bare
        if bare.startswith("-") and len(bare) > 1:
            excluded.append(bare[1:].strip('"'))
        elif bare.startswith("?") and len(bare) > 1:
            any_of.append(bare[1:].strip('"'))
        else:
            required.append(term)

    def matches(message: str) -> bool:
        return (
            all(t in message for t in required)
            and not any(t in message for t in excluded)
            and (not any_of or any(t in message for t in any_of))
        )

    return matches


@handler("GetLogEvents", service="logs")
def get_log_events(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    which = _group(p.get("logGroupName"))
    name = p["logStreamName"]
    path = _file(svc, which, name)
    if path is None or not path.exists():
        raise _no_stream(name)
    stream = _Stream(name, path)
    limit = int(p.get("limit") or 10000)
    total = len(stream.lines)
    token = p.get("nextToken")
    if token and token.startswith("b/"):
        end = _decode(token[2:]).get(name, total)
        start = max(0, end - limit)
    elif token:
        start = _decode(token.removeprefix("f/")).get(name, 0)
        end = min(total, start + limit)
    elif p.get("startFromHead"):
        start, end = 0, min(total, limit)
    else:
        start, end = max(0, total - limit), total
    events = [stream.event(i) for i in range(start, end)] if _within(stream, p) else []
    return {
        "events": events,
        "nextForwardToken": "f/" + _encode({name: end}),
        "nextBackwardToken": "b/" + _encode({name: start}),
    }


@handler("FilterLogEvents", service="logs")
def filter_log_events(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    which = _group(p.get("logGroupName") or p.get("logGroupIdentifier"))
    names = p.get("logStreamNames")
    streams = _streams(svc, which, list(names) if names else None, p.get("logStreamNamePrefix"))
    positions = _decode(p.get("nextToken"))
    limit = int(p.get("limit") or 10000)
    matches = _matcher(p.get("filterPattern"))
    events: list[dict[str, Any]] = []
    after = dict(positions)
    for stream in streams:
        start = positions.get(stream.name, 0)
        number = start
        while number < len(stream.lines) and len(events) < limit:
            if _within(stream, p) and matches(stream.lines[number]):
                events.append(
                    {
                        **stream.event(number),
                        "logStreamName": stream.name,
                        "eventId": f"{stream.name}-{number}",
                    }
                )
            number += 1
        after[stream.name] = number
    return {
        "events": events,
        "searchedLogStreams": [{"logStreamName": s.name, "searchedCompletely": True} for s in streams],
        # A read that returned lines says where to go on from; one that returned none ends.
        "nextToken": _encode(after) if events else None,
    }


@handler("DescribeLogStreams", service="logs")
def describe_log_streams(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    group = p.get("logGroupName") or p.get("logGroupIdentifier")
    which = _group(group)
    streams = _streams(svc, which, None, p.get("logStreamNamePrefix"))
    if p.get("orderBy") == "LastEventTime":
        streams.sort(key=lambda s: s.timestamp)
    if p.get("descending"):
        streams.reverse()
    start = int(p.get("nextToken") or 0) if str(p.get("nextToken") or "0").isdigit() else 0
    limit = int(p.get("limit") or 50)
    chunk = streams[start : start + limit]
    return {
        "logStreams": [
            {
                "logStreamName": s.name,
                "creationTime": s.timestamp,
                "firstEventTimestamp": s.timestamp if s.lines else None,
                "lastEventTimestamp": s.timestamp if s.lines else None,
                "lastIngestionTime": s.timestamp,
                "arn": f"arn:aws:logs:us-east-1:{CATALOG_ID}:log-group:{group}:log-stream:{s.name}",
            }
            for s in chunk
        ],
        "nextToken": str(start + limit) if start + limit < len(streams) else None,
    }


@handler("DescribeLogGroups", service="logs")
def describe_log_groups(svc: Service, p: dict[str, Any]) -> dict[str, Any]:
    prefix = p.get("logGroupNamePrefix") or ""
    return {
        "logGroups": [
            {"logGroupName": name, "arn": f"arn:aws:logs:us-east-1:{CATALOG_ID}:log-group:{name}:*"}
            for name in sorted(GROUPS)
            if name.startswith(prefix)
        ]
    }

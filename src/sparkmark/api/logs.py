"""A job run's logs as CloudWatch Logs serves them to Glue's tools (Airflow's Glue
operator with ``verbose=True``, ``aws logs``): the log group ``/aws-glue/jobs/output``
holds each run's stdout and ``/aws-glue/jobs/error`` its stderr, a stream per run named
by the run's id, as on Glue. What is served is what the scheduler's launcher kept for
the runs it started; every line is masked as the console masks it, connections'
passwords included (a job that prints one writes it to its log in clear).

Tokens are positions (byte offsets) in the streams, so a read costs what it returns and
never the size of the log: ``limit=1`` on a 100 MB log reads one chunk from its end,
and only the lines returned are masked. A read that returned lines gives a token for
what follows them; one that returned none gives no token, so a paginator stops at the
end, and a client holding the last token reads only the lines written after it. An
answer holds at most 1 MB of events, as CloudWatch's; a filter reads at most
:data:`SCAN_BYTES` of a stream per call and then answers with a token to go on from."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..engine.masking import mask_text
from ..engine.run_logs import error_path, log_path
from ..errors import NotFound
from .protocol import GlueApiError, invalid
from .service import CATALOG_ID, Service, handler

JOBS_LOG_GROUP = "/aws-glue/jobs"  # JobRun.LogGroupName: its streams are under /output and /error
PYTHON_JOBS_LOG_GROUP = "/aws-glue/python-jobs"  # the same, for Python shell jobs' runs
# A group: which of a run's two logs it holds, and whether it holds Python shell jobs' runs.
Group = tuple[str, bool]
GROUPS: dict[str, Group] = {
    f"{base}/{which}": (which, base == PYTHON_JOBS_LOG_GROUP)
    for base in (JOBS_LOG_GROUP, PYTHON_JOBS_LOG_GROUP)
    for which in ("output", "error")
}


def _no_group(name: str) -> GlueApiError:
    return GlueApiError("ResourceNotFoundException", f"The specified log group does not exist: {name}")


def _no_stream(name: str) -> GlueApiError:
    return GlueApiError("ResourceNotFoundException", f"The specified log stream does not exist: {name}")


def _group(name: str | None) -> Group:
    if name not in GROUPS:
        raise _no_group(str(name))
    return GROUPS[name]


def _file(svc: Service, group: Group, stream: str) -> Path | None:
    """The file holding ``stream`` (a run id) of ``group``, or None: the scheduler's log
    of a run it started, else the copy a run from a terminal kept. A Python shell job's
    runs are in the python-jobs groups only, a Spark job's in the jobs groups only."""
    which, shell = group
    try:
        action = svc.workflows.action(stream)
    except NotFound:
        action = None
    if action is not None:
        if action.kind != "JOB" or not action.log_path:
            return None
        path, job = Path(action.log_path), action.name
    else:
        try:
            record = svc.state.get_run(stream)
        except NotFound:
            return None
        path, job = log_path(svc.settings.home, "JOB", record.job_name, stream), record.job_name
    definition = svc.project.jobs.get(job)
    if (definition is not None and definition.python_shell) != shell:
        return None
    return path if which == "output" else error_path(path)


# What one answer carries at most, as CloudWatch's GetLogEvents and FilterLogEvents: 1 MB
# of events; an event longer than CloudWatch's largest (256 KB) is served in pieces.
MAX_ANSWER_BYTES = 1_048_576
MAX_EVENT_BYTES = 262_144
# What one FilterLogEvents call reads of one stream at most before it answers with what
# it found and a token to go on from (CloudWatch too may answer a page with no events).
SCAN_BYTES = 8 * 1_048_576
_BACK_STEP = 65_536

Line = tuple[int, str]  # (the byte offset where the line starts, the line)


class _Stream:
    """One stream: its file, read by byte position. A read costs what it returns, never
    the size of the file: a forward read starts at an offset, a backward read steps back
    from one a chunk at a time, and only the lines returned are decoded and masked."""

    def __init__(self, name: str, path: Path):
        self.name = name
        self.path = path
        try:
            found = path.stat()
            self.size, stamp = found.st_size, int(found.st_mtime * 1000)
        except OSError:
            self.size, stamp = 0, 0
        self.timestamp = stamp  # lines carry no time of their own: the file's last write

    @staticmethod
    def _text(raw: bytes) -> str:
        return mask_text(raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", errors="replace"))

    def forward(
        self,
        start: int,
        limit: int,
        budget: int = MAX_ANSWER_BYTES,
        could_match: Callable[[str], bool] | None = None,
    ) -> tuple[list[Line], int]:
        """Up to ``limit`` lines from byte ``start`` on, within ``budget`` bytes read;
        with the offset after the last one read. ``could_match``, given the line before
        masking, passes over lines that cannot match a filter without masking them."""
        lines: list[Line] = []
        position = min(max(start, 0), self.size)
        try:
            with open(self.path, "rb") as f:
                f.seek(position)
                while len(lines) < limit and position < self.size and position - start < budget:
                    raw = f.readline(MAX_EVENT_BYTES)
                    if not raw:
                        break
                    if could_match is None or could_match(raw.decode("utf-8", errors="replace")):
                        lines.append((position, self._text(raw)))
                    position += len(raw)
        except OSError:
            return [], start
        return lines, position

    def backward(self, end: int, limit: int) -> list[Line]:
        """The last ``limit`` lines (1 MB at most) that end at or before byte ``end``."""
        end = min(max(end, 0), self.size)
        data, position, breaks = b"", end, 0
        try:
            with open(self.path, "rb") as f:
                while position > 0 and breaks <= limit and len(data) < MAX_ANSWER_BYTES:
                    step = min(_BACK_STEP, position)
                    position -= step
                    f.seek(position)
                    chunk = f.read(step)
                    breaks += chunk.count(b"\n")
                    data = chunk + data
        except OSError:
            return []
        pieces = data.split(b"\n")
        if pieces and pieces[-1] == b"":
            pieces.pop()  # the text ended with a line break
        offsets, at = [], position
        for piece in pieces:
            offsets.append(at)
            at += len(piece) + 1
        lines = list(zip(offsets, pieces, strict=True))
        if position > 0:
            lines = lines[1:]  # the first piece began before what was read
        return [(offset, self._text(raw)) for offset, raw in lines[-limit:]] if limit > 0 else []

    def event(self, line: Line) -> dict[str, Any]:
        return {"timestamp": self.timestamp, "message": line[1], "ingestionTime": self.timestamp}


def _streams(svc: Service, which: Group, names: list[str] | None, prefix: str | None) -> list[_Stream]:
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


TOKEN_MARK = "sm2"


def _decode(token: str | None) -> dict[str, int]:
    """Positions from a token: ``sm2|<stream>|<byte offset>|…``. Plain text on purpose: botocore's
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


def _prefilter(pattern: str | None) -> Callable[[str], bool] | None:
    """What a line must hold *before* masking to match ``pattern`` once masked: each
    required term without ``*`` (masking only puts ``****`` in place of a secret, so a
    term without ``*`` found in the masked line is in the line as written). None when
    every line may match."""
    if not pattern or not pattern.strip() or pattern.strip().startswith(("{", "[")):
        return None
    required = [
        quoted if quoted or not bare else bare
        for quoted, bare in _TERM.findall(pattern)
        if not (bare.startswith(("-", "?")) and len(bare) > 1)
    ]
    plain = [t for t in required if t and "*" not in t]
    if not plain:
        return None
    return lambda raw: all(t in raw for t in plain)


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
    svc.register_connection_secrets()
    stream = _Stream(name, path)
    limit = min(int(p.get("limit") or 10000), 10000)
    token = p.get("nextToken")
    if token and token.startswith("b/"):
        end = _decode(token[2:]).get(name, stream.size)
        lines = stream.backward(end, limit)
        start = lines[0][0] if lines else end
    elif token or p.get("startFromHead"):
        start = _decode(token.removeprefix("f/")).get(name, 0) if token else 0
        lines, end = stream.forward(start, limit)
    else:
        lines, end = stream.backward(stream.size, limit), stream.size
        start = lines[0][0] if lines else end
    events = [stream.event(line) for line in lines] if _within(stream, p) else []
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
    svc.register_connection_secrets()
    positions = _decode(p.get("nextToken"))
    limit = min(int(p.get("limit") or 10000), 10000)
    matches = _matcher(p.get("filterPattern"))
    could_match = _prefilter(p.get("filterPattern"))
    events: list[dict[str, Any]] = []
    after = dict(positions)
    unfinished = False
    for stream in streams:
        start = positions.get(stream.name, 0)
        if len(events) >= limit or start >= stream.size:
            after.setdefault(stream.name, start)
            continue
        if not _within(stream, p):
            after[stream.name] = stream.size
            continue
        # Read a page at a time until the answer is full or the scan budget is spent.
        position = start
        while len(events) < limit and position < stream.size and position - start < SCAN_BYTES:
            lines, position = stream.forward(position, 10000, SCAN_BYTES, could_match)
            for offset, text in lines:
                if len(events) < limit and matches(text):
                    events.append(
                        {
                            **stream.event((offset, text)),
                            "logStreamName": stream.name,
                            "eventId": f"{stream.name}-{offset}",
                        }
                    )
                elif len(events) >= limit:
                    position = offset  # the next call starts at the first line not taken
                    break
        after[stream.name] = position
        unfinished = unfinished or position < stream.size
    return {
        "events": events,
        "searchedLogStreams": [
            {"logStreamName": s.name, "searchedCompletely": after.get(s.name, 0) >= s.size} for s in streams
        ],
        # A read that returned lines, or stopped before the end, says where to go on from;
        # one that reached the end of every stream with nothing ends.
        "nextToken": _encode(after) if events or unfinished else None,
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
                "firstEventTimestamp": s.timestamp if s.size else None,
                "lastEventTimestamp": s.timestamp if s.size else None,
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

"""What a list page is narrowed to: a search text, states, a time range, a tag and a
job type, read from the URL's query (so a filtered list can be bookmarked and shared)
and written back into its links."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from ..errors import ArgumentError

# The ranges a list offers; "" is all time.
LAST = {
    "1h": timedelta(hours=1),
    "24h": timedelta(days=1),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
}
JOB_TYPES = ("glueetl", "gluestreaming", "pythonshell")


def _moment(name: str, raw: str) -> datetime:
    for shape in ("%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return datetime.strptime(raw.strip(), shape).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ArgumentError(f"{name} {raw!r} is not a date (YYYY-MM-DD) or a time (YYYY-MM-DDTHH:MM, UTC)")


@dataclass(frozen=True)
class ListFilter:
    q: str = ""  # the name contains this, ignoring case
    states: tuple[str, ...] = ()
    last: str = ""  # one of LAST, or ""
    since: datetime | None = None
    until: datetime | None = None
    tag: str = ""  # KEY or KEY=VALUE
    kind: str = ""  # a job type (JOB_TYPES)

    @classmethod
    def of(cls, params: Mapping[str, str], states: Iterable[str] = (), *, getlist=None) -> ListFilter:
        """Read from a page's query; a value that cannot be read is an ArgumentError
        naming it. ``states`` are those the list knows."""
        known = {s.upper() for s in states}
        wanted = [s.upper() for s in (getlist("state") if getlist else [params.get("state", "")]) if s]
        for state in wanted:
            if state not in known:
                raise ArgumentError(f"state {state!r} is not one of {', '.join(sorted(known))}")
        last = params.get("last", "")
        if last and last not in LAST:
            raise ArgumentError(f"last {last!r} is not one of {', '.join(LAST)}")
        since = _moment("since", params["since"]) if params.get("since") else None
        until = _moment("until", params["until"]) if params.get("until") else None
        if until is not None and len(params["until"].strip()) == 10:
            until += timedelta(days=1)  # a date means the whole day
        if since and until and since >= until:
            raise ArgumentError("since must be before until")
        kind = params.get("type", "")
        if kind and kind not in JOB_TYPES:
            raise ArgumentError(f"type {kind!r} is not one of {', '.join(JOB_TYPES)}")
        return cls(
            q=params.get("q", "").strip()[:200],
            states=tuple(dict.fromkeys(wanted)),
            last=last,
            since=since,
            until=until,
            tag=params.get("tag", "").strip()[:200],
            kind=kind,
        )

    def window(self, now: datetime) -> tuple[datetime | None, datetime | None]:
        """The time range asked for: ``last`` counts back from ``now``."""
        if self.last:
            return now - LAST[self.last], None
        return self.since, self.until

    @property
    def active(self) -> bool:
        return bool(self.q or self.states or self.last or self.since or self.until or self.tag or self.kind)

    def name_matches(self, name: str) -> bool:
        return self.q.lower() in name.lower()

    def tag_matches(self, tags: Mapping[str, str]) -> bool:
        if not self.tag:
            return True
        key, sep, value = self.tag.partition("=")
        return key in tags and (not sep or tags[key] == value)

    def params(self) -> list[tuple[str, str]]:
        """The filter as query parameters, the empty ones left out."""
        pairs = [("q", self.q)] + [("state", s) for s in self.states] + [("last", self.last)]
        if self.since:
            pairs.append(("since", self.since.strftime("%Y-%m-%dT%H:%M")))
        if self.until:
            pairs.append(("until", self.until.strftime("%Y-%m-%dT%H:%M")))
        pairs += [("tag", self.tag), ("type", self.kind)]
        return [(k, v) for k, v in pairs if v]

    def url(self, base: str, **extra: object) -> str:
        """``base`` with this filter and ``extra`` (a page number, …) in its query."""
        pairs = self.params() + [(k, str(v)) for k, v in extra.items() if v not in (None, "")]
        return base + ("?" + urlencode(pairs) if pairs else "")

    def without(self, **fields: object) -> ListFilter:
        return replace(self, **fields)  # type: ignore[arg-type]

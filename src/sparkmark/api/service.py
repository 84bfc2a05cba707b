"""What the Glue API endpoint answers from: the application (:class:`sparkmark.app.App`:
the state store, the definitions, a scheduler that starts what the API asks to run).
Operations register here by their Glue name; :meth:`Service.call` runs one."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..app import App
from ..errors import AlreadyExists, NotFound, SparkmarkError, UndeclaredReference
from .protocol import GlueApiError, exists, invalid, not_found

log = logging.getLogger("sparkmark.api")

Handler = Callable[["Service", dict[str, Any]], dict[str, Any]]
HANDLERS: dict[str, Handler] = {}  # Glue's operations
LOGS_HANDLERS: dict[str, Handler] = {}  # CloudWatch Logs' operations (a run's logs)
METRICS_HANDLERS: dict[str, Handler] = {}  # CloudWatch's metric operations (PutMetricData …)
ATHENA_HANDLERS: dict[str, Handler] = {}  # Athena's operations (queries on the Glue catalog)
BY_SERVICE = {
    "glue": HANDLERS,
    "logs": LOGS_HANDLERS,
    "cloudwatch": METRICS_HANDLERS,
    "athena": ATHENA_HANDLERS,
}
# Run after an operation succeeds, with its name and parameters (tags given on create).
AFTER: list[Callable[[Service, str, dict[str, Any]], None]] = []
# Glue resources that have no local meaning, refused in one line that says why.
REFUSED = {
    "MLTransform": "ML transforms (FindMatches) are a model AWS trains and hosts; sparkmark has none to run",
    "MLTaskRun": "ML transforms (FindMatches) are a model AWS trains and hosts; sparkmark has none to run",
    "DevEndpoint": "development endpoints are retired by AWS; use interactive sessions (CreateSession) instead",
}
CATALOG_ID = "000000000000"  # Glue's catalog id is the account's; sparkmark has one catalog


def handler(name: str, service: str = "glue") -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        BY_SERVICE[service][name] = fn
        return fn

    return register


class Service(App):
    """The application, answering Glue's operations: :meth:`call` runs one and turns
    sparkmark's errors into Glue's."""

    def call(self, operation: str, params: dict[str, Any], service: str = "glue") -> dict[str, Any]:
        fn = BY_SERVICE[service].get(operation)
        refused = next((why for part, why in REFUSED.items() if part in operation), None)
        if fn is None and service == "glue" and refused is not None:
            raise GlueApiError("UnsupportedOperationException", f"{operation}: {refused}")
        if fn is None:
            what = "a Glue" if service == "glue" else f"a {service}"
            raise GlueApiError(
                "UnsupportedOperationException",
                f"{operation} is {what} operation sparkmark's endpoint does not serve; see docs/glue-api.md",
            )
        try:
            answer = fn(self, params)
            for after in AFTER:
                after(self, operation, params)
            return answer
        except GlueApiError:
            raise
        except NotFound as exc:
            raise not_found(str(exc)) from None
        except AlreadyExists as exc:
            raise exists(str(exc)) from None
        except UndeclaredReference as exc:  # advice in the API's terms, not the project file's
            create = {"job": "CreateJob", "crawler": "CreateCrawler", "workflow": "CreateWorkflow"}[exc.kind]
            raise invalid(
                f"{exc.where} names {exc.kind} {exc.name!r}, which does not exist: create it first "
                f"({create}) or fix the name"
            ) from None
        except SparkmarkError as exc:
            raise invalid(str(exc)) from None


def refuse_named_by_triggers(svc: Service, kind: str, name: str) -> None:
    """A job or crawler a trigger names is not deleted: the trigger would name nothing,
    and every definition is checked with the others. Glue leaves such a trigger
    dangling; here the caller is told which triggers to change first."""
    naming = sorted(
        t.Name
        for t in svc.project.triggers.values()
        if (kind.upper(), name) in [a.node for a in t.Actions]
        or (t.Predicate is not None and (kind.upper(), name) in [c.node for c in t.Predicate.Conditions])
    )
    if naming:
        raise invalid(
            f"{kind} {name!r} is named by trigger(s) {', '.join(naming)}: delete them or change their "
            "actions and conditions first (DeleteTrigger, UpdateTrigger)"
        )


def page(
    items: list[Any], params: dict[str, Any], default: int = 100, most: int | None = None
) -> tuple[list[Any], str | None]:
    """Glue's NextToken/MaxResults paging over a list already in order (at most ``most``
    a page, when the service caps it: Athena's lists)."""
    try:
        start = int(params.get("NextToken") or 0)
    except ValueError:
        raise invalid("NextToken is not one this endpoint gave") from None
    size = int(params.get("MaxResults") or default)
    if most is not None:
        size = min(size, most)
    chunk = items[start : start + size]
    more = start + size < len(items)
    return chunk, (str(start + size) if more else None)

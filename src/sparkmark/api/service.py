"""What the Glue API endpoint answers from: the state store, the definitions of
``sparkmark.toml`` and of the registry, and a scheduler that starts what the API asks
to run. Operations register here by their Glue name; :meth:`Service.call` runs one."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cached_property
from typing import Any

from ..engine.store import StateStore
from ..errors import AlreadyExists, NotFound, SparkmarkError
from ..settings import Settings
from .protocol import GlueApiError, exists, invalid, not_found

log = logging.getLogger("sparkmark.api")

Handler = Callable[["Service", dict[str, Any]], dict[str, Any]]
HANDLERS: dict[str, Handler] = {}
CATALOG_ID = "000000000000"  # Glue's catalog id is the account's; sparkmark has one catalog


def handler(name: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        HANDLERS[name] = fn
        return fn

    return register


class Service:
    def __init__(self, settings: Settings, state: StateStore | None = None):
        from ..workflow.registry import ProjectSource

        self.settings = settings
        self.state = state or StateStore.from_settings(settings)
        self.source = ProjectSource(settings.config, self.state)

    @cached_property
    def catalog(self):
        from ..catalog.store import CatalogStore

        return CatalogStore(self.state)

    @cached_property
    def crawlers(self):
        from ..crawler.store import CrawlerStore

        return CrawlerStore(self.state)

    @cached_property
    def workflows(self):
        from ..workflow.store import WorkflowStore

        return WorkflowStore(self.state)

    @cached_property
    def registry(self):
        from ..workflow.registry import Registry

        return Registry(self.state)

    @cached_property
    def quality(self):
        from ..quality.store import QualityStore

        return QualityStore(self.state)

    @property
    def project(self):
        return self.source.current()

    def scheduler(self):
        """A scheduler over the current definitions, to queue runs with. The runs are
        started by whichever scheduler leads (the endpoint's own, when none other runs)."""
        from ..workflow.scheduler import Scheduler

        return Scheduler(self.project, self.state, settings=self.settings, leading=False)

    def file_names(self, kind: str) -> set[str]:
        """The jobs, triggers, workflows or crawlers ``sparkmark.toml`` declares (the API
        leaves those to the file)."""
        from ..workflow.definition import read_project_file

        path = self.settings.config
        if not path.exists():
            return set()
        jobs, triggers, workflows, crawlers = read_project_file(path)
        return set({"job": jobs, "trigger": triggers, "workflow": workflows, "crawler": crawlers}[kind])

    def stored(self, kind: str, name: str, missing: str):
        """The registry entry of a job or trigger the API may change: refused when the
        file declares it, EntityNotFoundException (``missing``) when there is none."""
        self.refuse_file_owned(kind, name)
        entry = self.registry.get(kind, name)
        if entry is None:
            raise not_found(missing)
        return entry

    def refuse_file_owned(self, kind: str, name: str) -> None:
        if name in self.file_names(kind):
            raise invalid(
                f"{kind} {name!r} is declared in {self.settings.config}; change it there, not through the API"
            )

    def call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        fn = HANDLERS.get(operation)
        if fn is None:
            raise GlueApiError(
                "UnsupportedOperationException",
                f"{operation} is a Glue operation sparkmark's endpoint does not serve; see docs/glue-api.md",
            )
        try:
            return fn(self, params)
        except GlueApiError:
            raise
        except NotFound as exc:
            raise not_found(str(exc)) from None
        except AlreadyExists as exc:
            raise exists(str(exc)) from None
        except SparkmarkError as exc:
            raise invalid(str(exc)) from None


def page(items: list[Any], params: dict[str, Any], default: int = 100) -> tuple[list[Any], str | None]:
    """Glue's NextToken/MaxResults paging over a list already in order."""
    try:
        start = int(params.get("NextToken") or 0)
    except ValueError:
        raise invalid("NextToken is not one this endpoint gave") from None
    size = int(params.get("MaxResults") or default)
    chunk = items[start : start + size]
    more = start + size < len(items)
    return chunk, (str(start + size) if more else None)

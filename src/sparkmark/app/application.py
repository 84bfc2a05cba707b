"""``App``: the state store, the definitions of ``sparkmark.toml`` and of the registry,
the services' stores, and a scheduler to queue runs with, for one project."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cached_property
from typing import Any

from ..engine.store import StateStore
from ..errors import ArgumentError, NotFound
from ..settings import Settings


class App:
    def __init__(self, settings: Settings, state: StateStore | None = None):
        from ..workflow.registry import ProjectSource

        self.settings = settings
        self.state = state or StateStore.from_settings(settings)
        self.source = ProjectSource(settings.config, self.state)
        # The URL this process serves the Glue API on and the token it takes, once a
        # server here knows them: a session's boto3 Glue client and Iceberg GlueCatalog
        # talk to it.
        self.glue_url: str | None = None
        self.glue_token: str | None = None
        self._stop_services: threading.Event | None = None
        self._wake_scheduler = threading.Event()  # set when a door queues something
        self._scheduler_thread: threading.Thread | None = None
        self._runs_endpoint: Any = None

    def start_services(
        self, *, scheduler: bool = True, endpoint: Callable[[], dict[str, str]] | None = None
    ) -> None:
        """What a serving process runs beside its door, started once: the scheduler
        thread that starts what is queued whenever no other scheduler leads, its job
        runs hosted on the pool's warm processes told ``endpoint``'s Glue endpoint."""
        if self._stop_services is not None:
            return
        self._stop_services = threading.Event()
        self._runs_endpoint = endpoint
        if scheduler:
            from ..workflow.scheduler import lead_in_background

            self._scheduler_thread = lead_in_background(
                self.state, self.settings, self.source, self._stop_services, endpoint, self._wake_scheduler
            )

    @staticmethod
    def unmigrated_handle(settings: Settings):
        """The state store's handle opened without migrating anything (``sparkmark store
        check`` and ``backup``: what a user runs before an upgrade)."""
        from pathlib import Path

        from ..errors import StateStoreError
        from ..state.handle import StoreHandle

        url = settings.state_url
        if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
            raise StateStoreError(f"there is no state store at {url} yet (the first run makes it)")
        return StoreHandle(url)

    def close(self) -> None:
        """End what this App holds: its scheduler thread, the sessions it runs, the warm
        processes of its home, the endpoint its hosted runs talked to, then the store's
        connections."""
        if self._stop_services is not None:
            self._stop_services.set()
            self._wake_scheduler.set()
            if self._scheduler_thread is not None:
                self._scheduler_thread.join(timeout=10)
            from ..pool.pool import close_home

            close_home(self.settings)
            stop = getattr(self._runs_endpoint, "stop", None)
            if stop is not None:
                stop()
        if "athena" in self.__dict__:
            self.athena.close()
        if "quality_runs" in self.__dict__:
            self.quality_runs.close()
        if "sessions" in self.__dict__:
            self.sessions.close()
        self.state.close()

    def session_environment(self) -> dict[str, str]:
        """What a session's process gets, as a script under ``sparkmark run`` does: this
        process's endpoint, as :meth:`endpoint_environment` gives it; nothing when this
        process serves none."""
        if not self.glue_url:
            return {}
        return self.endpoint_environment(self.glue_url, self.glue_token)

    def endpoint_environment(self, url: str, token: str | None) -> dict[str, str]:
        """The variables that point a run's or a session's boto3 at the Glue endpoint
        ``url``: for its Glue, CloudWatch and CloudWatch Logs clients, a region, and, when this process
        has no AWS credentials of its own, ``token`` to sign with (with credentials of
        its own, the run keeps them, for S3, and the endpoint accepts a signature made
        with them). Nothing points at AWS by default."""
        import botocore.session

        env = {"AWS_ENDPOINT_URL_GLUE": url}
        # put_metric_data lands with the run's metrics; get_log_events reads the runs' logs.
        for service in ("AWS_ENDPOINT_URL_CLOUDWATCH", "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS"):
            if not self.settings.environ.get(service):
                env[service] = url
        session = botocore.session.get_session()
        if session.get_config_variable("region") is None:
            env["AWS_DEFAULT_REGION"] = self.settings.aws_region or "us-east-1"
        if session.get_credentials() is None and token:
            env["AWS_ACCESS_KEY_ID"] = "sparkmark"
            env["AWS_SECRET_ACCESS_KEY"] = token
        return env

    @cached_property
    def catalog(self):
        from ..catalog.store import CatalogStore

        return CatalogStore(self.state)

    @cached_property
    def connections(self):
        """The connections made through the API (the file's are ``Connections``)."""
        from ..connections.records import ConnectionStore

        return ConnectionStore(self.state)

    def register_connection_secrets(self) -> None:
        """Every connection's password, registered for masking in this process: a job
        that prints one writes it to its log in clear, and every door that serves a log
        or a page (the log API, the console) masks it there. Those made through the API
        are unsealed; those of ``sparkmark.toml`` are resolved as a job resolves them."""
        from ..connections import Connections
        from ..engine.masking import register_secret
        from ..engine.sealing import Sealer
        from ..errors import SparkmarkError

        sealer = None
        for found in self.connections.all():
            if found.sealed_password:
                sealer = sealer or Sealer.from_settings(self.settings)
                try:
                    register_secret(sealer.open(found.sealed_password).get("password"))
                except SparkmarkError:
                    continue  # a password sealed under another key: nothing to mask with
        declared = Connections.from_settings(self.settings)
        for name in declared.declared():
            try:
                register_secret(declared.resolve(name).password)
            except SparkmarkError:
                continue  # a connection that cannot be resolved here has no password to mask

    @cached_property
    def tags(self):
        from .tags import TagStore

        return TagStore(self.state)

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

    @cached_property
    def pool(self):
        """This process's warm Spark processes (``[pool]`` of the project file), started on
        first use and shared by every door of the process."""
        from ..pool.pool import shared_pool

        return shared_pool(self.settings)

    @cached_property
    def session_records(self):
        """The interactive sessions' records, for doors that show them (any process)."""
        from ..sessions.records import SessionStore

        return SessionStore(self.state)

    @cached_property
    def sessions(self):
        """The interactive sessions this process runs (and the others' records)."""
        from ..sessions.manager import SessionManager

        return SessionManager(self.state, self.settings, self.pool, environment=self.session_environment)

    @cached_property
    def athena(self):
        """Athena's queries, workgroups and named queries; the queries this process runs."""
        from ..athena.engine import AthenaEngine

        return AthenaEngine(self)

    @cached_property
    def quality_runs(self):
        """Data quality's rulesets, and the evaluation and recommendation runs this process runs."""
        from ..quality_service.engine import QualityEngine

        return QualityEngine(self)

    @property
    def project(self):
        return self.source.current()

    def scheduler(self):
        """A scheduler over the current definitions, to queue runs with. The runs are
        started by whichever scheduler leads (a server's own, when none other runs)."""
        from ..workflow.scheduler import Scheduler

        return Scheduler(self.project, self.state, settings=self.settings, leading=False)

    # ------------------------------------------------------------------ runs
    # What every door asks for (the API, the console, the Studio, the CLI): each is
    # queued here, and started by the scheduler that leads.

    def start_job_run(
        self,
        job: str,
        arguments: dict[str, str] | None = None,
        *,
        timeout_minutes: float | None = None,
        execution_class: str | None = None,
    ) -> str:
        """Queue one run of ``job``, outside any workflow; its run id."""
        run_id = self.scheduler().start_job_run(
            job, arguments, timeout_minutes=timeout_minutes, execution_class=execution_class
        )
        self._wake_scheduler.set()
        return run_id

    def start_workflow_run(self, workflow: str, properties: dict[str, str] | None = None) -> str | None:
        """Start a run of ``workflow`` through its start trigger; its run id."""
        run_id = self.scheduler().start_workflow_run(workflow, supervisor=None, properties=properties)
        self._wake_scheduler.set()
        return run_id

    def stop_workflow_run(self, workflow: str, run_id: str):
        """Ask a running workflow run to stop."""
        return self.scheduler().stop_workflow_run(workflow, run_id)

    def fire_trigger(self, trigger) -> str:
        """Fire an on-demand trigger now."""
        return self.scheduler().fire_now(trigger)

    def crawl_pending(self, name: str) -> bool:
        """Whether a crawl of ``name`` is queued or running."""
        from ..workflow.records import ActionState

        return any(
            a.state in (ActionState.WAITING, ActionState.RUNNING)
            for a in self.workflows.actions_of(kind="CRAWLER", name=name)[-5:]
        )

    def start_crawl(self, name: str) -> None:
        """Queue a crawl of crawler ``name``."""
        from ..engine.schema import utcnow

        with self.workflows.begin() as conn:
            self.workflows.add_action(conn, kind="CRAWLER", name=name, now=utcnow(), supervisor=None)

    def file_names(self, kind: str) -> set[str]:
        """The jobs, triggers, workflows or crawlers ``sparkmark.toml`` declares (the
        doors that change definitions leave those to the file)."""
        from ..workflow.definition import read_project_file

        path = self.settings.config
        if not path.exists():
            return set()
        jobs, triggers, workflows, crawlers = read_project_file(path)
        return set({"job": jobs, "trigger": triggers, "workflow": workflows, "crawler": crawlers}[kind])

    def stored(self, kind: str, name: str, missing: str):
        """The registry entry of a job or trigger a door may change: refused when the
        file declares it, :class:`NotFound` (``missing``) when there is none."""
        self.refuse_file_owned(kind, name)
        entry = self.registry.get(kind, name)
        if entry is None:
            raise NotFound(missing)
        return entry

    def refuse_file_owned(self, kind: str, name: str) -> None:
        if name in self.file_names(kind):
            raise ArgumentError(
                f"{kind} {name!r} is declared in {self.settings.config}; change it there, not through the API"
            )

    def put_crawler(self, definition, glue: dict[str, Any]) -> None:
        """Store a crawler made or changed through a door: its definition, which crawls
        read, and the fields as given, which the API shows back, in one transaction."""
        created = self.registry.get("crawler", definition.Name) is None
        with self.state.begin() as conn:
            self.crawlers.save(definition, conn)
            self.registry.put("crawler", definition.Name, {}, glue, create=created, transaction=conn)

    def delete_crawler(self, name: str) -> None:
        """Forget a crawler and its stored fields, in one transaction (refused while it crawls)."""
        with self.state.begin() as conn:
            self.crawlers.delete(name, conn)
            self.registry.delete("crawler", name, conn)

    def put_job(self, name: str, glue: dict[str, Any], *, create: bool) -> None:
        """Store a job given in Glue's fields (CreateJob, UpdateJob, a Studio save): its
        definition is derived and validated as a run would need it, and the fields are
        kept as given."""
        from .jobs import job_definition

        self.registry.put("job", name, job_definition(name, glue), glue, create=create)

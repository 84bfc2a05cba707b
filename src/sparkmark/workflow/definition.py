"""Jobs, triggers and workflows declared in ``sparkmark.toml``, with Glue's field names.

    [jobs.transform]
    Script = "jobs/transform.py"            # relative to the file
    DefaultArguments = { "--job-bookmark-option" = "job-bookmark-enable" }
    MaxRetries = 1
    Timeout = 60                            # minutes
    MaxConcurrentRuns = 1
    Spark = { master = "local[2]", conf = { "spark.sql.shuffle.partitions" = "4" } }

    [triggers.after_crawl]
    Type = "CONDITIONAL"                    # SCHEDULED | ON_DEMAND | CONDITIONAL
    WorkflowName = "nightly"
    StartOnCreation = true
    Predicate = { Logical = "AND", Conditions = [
        { LogicalOperator = "EQUALS", CrawlerName = "lake", CrawlState = "SUCCEEDED" } ] }
    Actions = [{ JobName = "transform", Arguments = { "--day" = "today" } }]

    [workflows.nightly]
    Description = "crawl, transform, check"
    DefaultRunProperties = { env = "dev" }

Crawlers are the ``[crawlers.NAME]`` tables the crawler service already reads.
Everything is checked when the file is loaded: unknown keys, schedules, references
to jobs, crawlers and workflows that are not declared, and cycles.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .. import glue_versions
from ..crawler.definition import CrawlerDefinition, load_definition
from ..engine.names import check_name
from ..errors import ArgumentError, ConfigError, UndeclaredReference, first_problem
from ..tomlfile import read_toml
from . import capacity, cron

SECTIONS = ("jobs", "triggers", "workflows", "crawlers", "connections", "pool")


class TriggerType(StrEnum):
    SCHEDULED = "SCHEDULED"
    ON_DEMAND = "ON_DEMAND"
    CONDITIONAL = "CONDITIONAL"


class LogicalKind(StrEnum):
    AND = "AND"
    ANY = "ANY"


class JobStateKind(StrEnum):
    """The job run states a condition can wait for."""

    SUCCEEDED = "SUCCEEDED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"


class CrawlStateKind(StrEnum):
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SparkSettings(_Model):
    master: str | None = None
    conf: dict[str, str] = Field(default_factory=dict)

    @field_validator("conf", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}
        return value


class StreamingBounds(_Model):
    """How a scheduled streaming job ends (``sparkmark run --until-caught-up`` /
    ``--max-batches``); without them a streaming job runs until it is stopped."""

    UntilCaughtUp: bool = False
    MaxBatches: int | None = Field(default=None, ge=1)

    def request_options(self) -> dict[str, Any]:
        """How a run of the job is bounded, as its ``host.RunRequest`` says it."""
        return {"until_caught_up": self.UntilCaughtUp, "max_batches": self.MaxBatches}


class JobDefinition(_Model):
    Name: str
    Script: str  # a local path (relative to the file that declares it) or a URL such as s3://…
    Description: str = ""
    DefaultArguments: dict[str, str] = Field(default_factory=dict)
    MaxRetries: int = Field(default=0, ge=0, le=10)
    Timeout: float = Field(default=2880, gt=0)  # minutes, Glue's default of 48 hours
    MaxConcurrentRuns: int = Field(default=1, ge=1)
    Spark: SparkSettings = Field(default_factory=SparkSettings)
    Streaming: StreamingBounds = Field(default_factory=StreamingBounds)
    # Glue's Command.Name and capacity fields (``capacity.py`` says what each does here).
    Command: str = "glueetl"
    PythonVersion: str | None = None
    MaxCapacity: float | None = None
    WorkerType: str | None = None
    NumberOfWorkers: int | None = None
    ExecutionClass: str | None = None
    # The Glue version whose Spark its runs use (``runtimes.for_version``); none: sparkmark's own.
    GlueVersion: str | None = None

    @field_validator("GlueVersion")
    @classmethod
    def _glue_version(cls, value: str | None) -> str | None:
        try:
            return glue_versions.check(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("DefaultArguments")
    @classmethod
    def _dashed(cls, value: dict[str, str]) -> dict[str, str]:
        return _check_arguments(value)

    @model_validator(mode="after")
    def _capacity(self) -> JobDefinition:
        capacity.check(
            self.Command,
            max_capacity=self.MaxCapacity,
            worker_type=self.WorkerType,
            workers=self.NumberOfWorkers,
            execution_class=self.ExecutionClass,
            python_version=self.PythonVersion,
        )
        if self.Command == capacity.PYTHON_SHELL:
            capacity.library_set(self.DefaultArguments.get("--library-set"))
        return self

    @property
    def python_shell(self) -> bool:
        return self.Command == capacity.PYTHON_SHELL

    def arguments(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """DefaultArguments overlaid with a run's own, and --JOB_NAME set to the job."""
        merged = {**self.DefaultArguments, **(extra or {})}
        merged["--JOB_NAME"] = self.Name
        return merged


def _check_arguments(value: dict[str, str]) -> dict[str, str]:
    for key in value:
        if not key.startswith("--") or len(key) < 3:
            raise ValueError(f"argument names start with '--' as on Glue: {key!r}")
    return {k: str(v) for k, v in value.items()}


class Condition(_Model):
    LogicalOperator: str = "EQUALS"
    JobName: str | None = None
    State: JobStateKind | None = None
    CrawlerName: str | None = None
    CrawlState: CrawlStateKind | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Condition:
        if self.LogicalOperator != "EQUALS":
            raise ValueError("LogicalOperator must be EQUALS, the only operator Glue has")
        if (self.JobName is None) == (self.CrawlerName is None):
            raise ValueError("a condition names exactly one of JobName and CrawlerName")
        if self.JobName is not None and (self.State is None or self.CrawlState is not None):
            raise ValueError(f"the condition on job {self.JobName!r} needs State (and no CrawlState)")
        if self.CrawlerName is not None and (self.CrawlState is None or self.State is not None):
            raise ValueError(f"the condition on crawler {self.CrawlerName!r} needs CrawlState (and no State)")
        return self

    @property
    def node(self) -> tuple[str, str]:
        return ("JOB", self.JobName) if self.JobName else ("CRAWLER", self.CrawlerName or "")

    @property
    def wanted(self) -> str:
        return (self.State or self.CrawlState).value  # type: ignore[union-attr]


class PredicateSpec(_Model):
    Logical: LogicalKind = LogicalKind.AND
    Conditions: list[Condition] = Field(min_length=1)


class Action(_Model):
    JobName: str | None = None
    CrawlerName: str | None = None
    Arguments: dict[str, str] = Field(default_factory=dict)
    Timeout: float | None = Field(default=None, gt=0)  # minutes; overrides the job's

    @model_validator(mode="after")
    def _one_kind(self) -> Action:
        if (self.JobName is None) == (self.CrawlerName is None):
            raise ValueError("an action names exactly one of JobName and CrawlerName")
        if self.CrawlerName and (self.Arguments or self.Timeout):
            raise ValueError(f"the action on crawler {self.CrawlerName!r} takes no Arguments or Timeout")
        _check_arguments(self.Arguments)
        return self

    @property
    def node(self) -> tuple[str, str]:
        return ("JOB", self.JobName) if self.JobName else ("CRAWLER", self.CrawlerName or "")


class TriggerDefinition(_Model):
    Name: str
    Type: TriggerType
    Description: str = ""
    Schedule: str | None = None
    Predicate: PredicateSpec | None = None
    Actions: list[Action] = Field(min_length=1)
    WorkflowName: str | None = None
    StartOnCreation: bool = False

    @model_validator(mode="after")
    def _by_type(self) -> TriggerDefinition:
        if self.Type is TriggerType.SCHEDULED:
            if not self.Schedule:
                raise ValueError('a SCHEDULED trigger needs Schedule = "cron(...)"')
            cron.parse(self.Schedule)
        elif self.Schedule:
            raise ValueError(f"only SCHEDULED triggers take a Schedule, not {self.Type.value}")
        if self.Type is TriggerType.CONDITIONAL and self.Predicate is None:
            raise ValueError("a CONDITIONAL trigger needs a Predicate with Conditions")
        if self.Type is not TriggerType.CONDITIONAL and self.Predicate is not None:
            raise ValueError(f"only CONDITIONAL triggers take a Predicate, not {self.Type.value}")
        if self.Type is TriggerType.ON_DEMAND and self.StartOnCreation:
            raise ValueError("StartOnCreation is not allowed on an ON_DEMAND trigger (as on Glue)")
        return self

    @property
    def schedule(self) -> cron.Schedule | None:
        return cron.parse(self.Schedule) if self.Schedule else None

    @property
    def is_start(self) -> bool:
        """A trigger that starts a workflow run (not one that continues it)."""
        return self.Type is not TriggerType.CONDITIONAL


class WorkflowDefinition(_Model):
    Name: str
    Description: str = ""
    DefaultRunProperties: dict[str, str] = Field(default_factory=dict)

    @field_validator("DefaultRunProperties", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else value


class Project:
    """Everything one ``sparkmark.toml`` declares, checked as a whole."""

    def __init__(
        self,
        path: Path,
        jobs: dict[str, JobDefinition],
        triggers: dict[str, TriggerDefinition],
        workflows: dict[str, WorkflowDefinition],
        crawlers: dict[str, CrawlerDefinition],
    ):
        self.path = path
        self.jobs, self.triggers, self.workflows, self.crawlers = jobs, triggers, workflows, crawlers
        self._check_references()
        self._check_cycles()

    def job(self, name: str) -> JobDefinition:
        if name not in self.jobs:
            raise ConfigError(
                f"no job {name!r} is declared in {self.path} "
                f"(declared: {', '.join(sorted(self.jobs)) or 'none'})"
            )
        return self.jobs[name]

    def workflow(self, name: str) -> WorkflowDefinition:
        if name not in self.workflows:
            raise ConfigError(
                f"no workflow {name!r} is declared in {self.path} "
                f"(declared: {', '.join(sorted(self.workflows)) or 'none'})"
            )
        return self.workflows[name]

    def trigger(self, name: str) -> TriggerDefinition:
        if name not in self.triggers:
            raise ConfigError(
                f"no trigger {name!r} is declared in {self.path} "
                f"(declared: {', '.join(sorted(self.triggers)) or 'none'})"
            )
        return self.triggers[name]

    def workflow_triggers(self, workflow: str) -> list[TriggerDefinition]:
        return [t for t in self.triggers.values() if t.WorkflowName == workflow]

    def start_trigger(self, workflow: str) -> TriggerDefinition:
        starts = [t for t in self.workflow_triggers(workflow) if t.is_start]
        if not starts:
            raise ConfigError(
                f"workflow {workflow!r} has no start trigger (an ON_DEMAND or "
                f'SCHEDULED trigger with WorkflowName = "{workflow}")'
            )
        return starts[0]

    def graph(self, workflow: str) -> dict[str, Any]:
        """The workflow's nodes (triggers, jobs, crawlers) and edges, as Glue draws them:
        a trigger points at what it starts, and a job or crawler at the triggers that
        watch it."""
        nodes: dict[str, dict[str, str]] = {}
        edges: list[dict[str, str]] = []

        def node(kind: str, name: str) -> str:
            uid = f"{kind.lower()}:{name}"
            nodes.setdefault(uid, {"Type": kind, "Name": name, "UniqueId": uid})
            return uid

        for t in self.workflow_triggers(workflow):
            tid = node("TRIGGER", t.Name)
            for a in t.Actions:
                edges.append({"SourceId": tid, "DestinationId": node(*a.node)})
            for c in t.Predicate.Conditions if t.Predicate else []:
                edges.append({"SourceId": node(*c.node), "DestinationId": tid})
        return {"Nodes": list(nodes.values()), "Edges": edges}

    def _exists(self, kind: str, name: str) -> bool:
        return name in (self.jobs if kind == "JOB" else self.crawlers)

    def _check_references(self) -> None:
        for trigger in self.triggers.values():
            where = f"trigger {trigger.Name!r}"
            if trigger.WorkflowName and trigger.WorkflowName not in self.workflows:
                raise UndeclaredReference(where, "workflow", trigger.WorkflowName)
            named = [a.node for a in trigger.Actions]
            if trigger.Predicate:
                named += [c.node for c in trigger.Predicate.Conditions]
            for kind, name in named:
                if not self._exists(kind, name):
                    raise UndeclaredReference(where, kind.lower(), name)
        for workflow in self.workflows:
            members = self.workflow_triggers(workflow)
            starts = [t.Name for t in members if t.is_start]
            if len(starts) > 1:
                raise ConfigError(
                    f"workflow {workflow!r} has {len(starts)} start triggers "
                    f"({', '.join(starts)}); a workflow has exactly one"
                )
            started = {a.node for t in members for a in t.Actions}
            for t in members:
                for c in t.Predicate.Conditions if t.Predicate else []:
                    if c.node not in started:
                        raise ConfigError(
                            f"trigger {t.Name!r} in workflow {workflow!r} watches "
                            f"{c.node[0].lower()} {c.node[1]!r}, which no trigger of the workflow starts"
                        )

    def _check_cycles(self) -> None:
        """A cycle of conditional triggers would run jobs forever: refuse it."""
        edges: dict[tuple[str, str], list[tuple[tuple[str, str], str]]] = {}
        for t in self.triggers.values():
            for c in t.Predicate.Conditions if t.Predicate else []:
                for a in t.Actions:
                    edges.setdefault(c.node, []).append((a.node, t.Name))
        state: dict[tuple[str, str], int] = {}
        path: list[str] = []

        def visit(node: tuple[str, str]) -> None:
            state[node] = 1
            path.append(f"{node[0].lower()} {node[1]}")
            for nxt, via in edges.get(node, []):
                if state.get(nxt) == 1:
                    start = path.index(f"{nxt[0].lower()} {nxt[1]}")
                    loop = " -> ".join(path[start:] + [f"{nxt[0].lower()} {nxt[1]}"])
                    raise ConfigError(
                        f"the triggers form a cycle ({loop}, closed by trigger "
                        f"{via!r}); conditional triggers must not lead back to "
                        "what they watch"
                    )
                if nxt not in state:
                    visit(nxt)
            path.pop()
            state[node] = 2

        for node in list(edges):
            if node not in state:
                visit(node)


def _validate(model: type[BaseModel], section: str, name: str, body: Any):
    if not isinstance(body, dict):
        raise ConfigError(f"[{section}.{name}] must be a table")
    try:
        check_name(section[:-1] + " name", name)
    except ArgumentError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return model.model_validate({"Name": name, **body})
    except ValidationError as exc:
        where, message = first_problem(exc)
        raise ConfigError(
            f"invalid [{section}.{name}]" + (f" at {where}" if where else "") + f": {message}"
        ) from None
    except cron.CronError as exc:
        raise ConfigError(f"invalid [{section}.{name}]: {exc}") from None


def is_url(script: str) -> bool:
    return "://" in script


def load_project(path: Path | str) -> Project:
    """Read and check ``sparkmark.toml`` (or another file of the same shape)."""
    path = Path(path)
    return Project(path.resolve(), *read_project_file(path))


def read_project_file(path: Path) -> tuple[dict, dict, dict, dict]:
    """The jobs, triggers, workflows and crawlers a file declares, each checked alone."""
    try:
        document = read_toml(path)
    except FileNotFoundError:
        raise ConfigError(
            f"{path} does not exist: declare jobs, triggers and workflows there "
            "(or point SPARKMARK_CONFIG at the file)"
        ) from None
    unknown = sorted(set(document) - set(SECTIONS))
    if unknown:
        raise ConfigError(f"{path}: unknown section {unknown[0]!r}; the sections are " + ", ".join(SECTIONS))
    base = path.resolve().parent
    jobs = {}
    for name, body in (document.get("jobs") or {}).items():
        job = _validate(JobDefinition, "jobs", name, body)
        if not is_url(job.Script) and not Path(job.Script).is_absolute():
            job = job.model_copy(update={"Script": str(base / job.Script)})
        jobs[name] = job
    triggers = {
        n: _validate(TriggerDefinition, "triggers", n, b) for n, b in (document.get("triggers") or {}).items()
    }
    workflows = {
        n: _validate(WorkflowDefinition, "workflows", n, b)
        for n, b in (document.get("workflows") or {}).items()
    }
    crawlers = {}
    for name, body in (document.get("crawlers") or {}).items():
        crawlers[name] = load_definition({"Name": name, **body})
    return jobs, triggers, workflows, crawlers

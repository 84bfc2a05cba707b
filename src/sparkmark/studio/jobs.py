"""Visual jobs kept as Glue keeps them: a job in the definitions registry (the one the
Glue API's CreateJob writes) whose fields hold ``CodeGenConfigurationNodes`` as given,
so ``get-job`` returns the graph and it can be sent back to Glue. Saving one writes its
generated script under ``$SPARKMARK_HOME/studio/`` and points ``Command.ScriptLocation``
at it; running one queues a run of that job for the scheduler that leads."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine.names import check_name
from ..errors import ArgumentError, GraphError, SparkmarkError
from .codegen import generate
from .graph import JobGraph, graph_from_job

if TYPE_CHECKING:
    from ..app import App

NODES = "CodeGenConfigurationNodes"


def script_path(home: Path, name: str) -> Path:
    return home / "studio" / f"{name}.py"


def visual_jobs(service: App) -> dict[str, dict[str, Any]]:
    """Every registry job that holds a graph: its Glue fields, by name."""
    return {
        n: e.glue for n, e in service.registry.entries("job").items() if isinstance(e.glue.get(NODES), dict)
    }


def load_visual_job(service: App, name: str) -> JobGraph | None:
    entry = service.registry.get("job", name)
    if entry is None or not isinstance(entry.glue.get(NODES), dict):
        return None
    return graph_from_job({**entry.glue, "Name": name}, name)


def save_visual_job(service: App, name: str, nodes: dict[str, Any], *, create: bool) -> Path:
    """Check and generate the graph, write its script, and store the job; raises
    :class:`GraphError` with every problem, and stores nothing then."""
    try:
        check_name("job name", name)
    except ArgumentError as exc:
        raise GraphError([str(exc)]) from None
    if name in service.file_names("job"):
        raise GraphError([f"job {name!r} is declared in {service.settings.config}; choose another name"])
    graph = graph_from_job({"Name": name, NODES: nodes}, name)
    text = generate(graph)
    target = script_path(service.settings.home, name)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    entry = service.registry.get("job", name)
    glue = dict(entry.glue) if entry else {}
    glue.update(
        {
            "Command": {**(glue.get("Command") or {}), "Name": "glueetl", "ScriptLocation": str(target)},
            NODES: nodes,
        }
    )
    glue.setdefault("DefaultArguments", {"--job-bookmark-option": "job-bookmark-enable"})
    try:  # the job's other fields (MaxRetries, Timeout, …) stay as CreateJob set them
        service.put_job(name, glue, create=create and entry is None)
    except SparkmarkError as exc:
        raise GraphError([str(exc)]) from None
    return target


def start_visual_job(service: App, name: str) -> str:
    """Queue a run; the scheduler that leads starts it. Returns the run id."""
    return service.start_job_run(name, {})

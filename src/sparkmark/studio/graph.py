"""A visual job's graph as Glue keeps it: ``CodeGenConfigurationNodes``, a map from node
id to a one-key object naming the node type (``{"node-2": {"ApplyMapping": {...}}}``).

Accepted as ``aws glue get-job`` prints it (``{"Job": {...}}``), as ``get-jobs`` /
``batch-get-jobs`` print several (``{"Jobs": [...]}``), as a list of jobs, as one job
object, or as the bare node map. :func:`check` gives every problem at once, one line
each, naming the node: an unknown or unsupported node type, a field the model refuses,
an input that does not exist, a cycle.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from ..errors import GraphError
from .model import node_problems, node_shapes

# Node types the code generator writes (see codegen.WRITERS); others are refused by name.
SOURCES = {
    "S3CsvSource",
    "S3JsonSource",
    "S3ParquetSource",
    "CatalogSource",
    "S3CatalogSource",
    "DirectJDBCSource",
    "JDBCConnectorSource",
    "DirectKafkaSource",
    "DirectKinesisSource",
    "CatalogIcebergSource",
    "S3CatalogIcebergSource",
    "CatalogDeltaSource",
    "S3CatalogDeltaSource",
    "S3DeltaSource",
}
_NO_HUDI = "no Apache Hudi bundle for Spark 4.1 resolves from Maven Central; see docs/table-formats.md"
# Why a node type of Glue's model is not generated, where there is more to say than "not yet".
_HUDI_NODES = (
    "S3CatalogHudiSource",
    "CatalogHudiSource",
    "S3HudiSource",
    "S3HudiCatalogTarget",
    "S3HudiDirectTarget",
)
NOT_GENERATED = {
    **dict.fromkeys(_HUDI_NODES, _NO_HUDI),
    "S3IcebergDirectTarget": "Iceberg tables are written through their catalog: use S3IcebergCatalogTarget "
    "on a table that exists, as with write_data_frame.from_catalog",
}


@dataclass(frozen=True)
class Node:
    id: str
    type: str
    spec: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.spec.get("Name") or self.id)

    @property
    def inputs(self) -> list[str]:
        found = self.spec.get("Inputs")
        return [str(i) for i in found] if isinstance(found, list) else []

    def label(self) -> str:
        return f"node {self.id} ({self.type} {self.name!r})"


@dataclass
class JobGraph:
    name: str
    nodes: dict[str, Node]
    job: dict[str, Any] = field(default_factory=dict)  # the rest of the job object, kept as given

    def to_document(self) -> dict[str, Any]:
        """The job as ``get-job`` shapes it, with its nodes back in Glue's form."""
        nodes = {n.id: {n.type: n.spec} for n in self.nodes.values()}
        return {"Job": {**self.job, "Name": self.name, "CodeGenConfigurationNodes": nodes}}

    def order(self) -> list[Node]:
        """Nodes in topological order (sources first); ties keep the document's order."""
        position = {nid: i for i, nid in enumerate(self.nodes)}
        graph = nx.DiGraph()
        graph.add_nodes_from(self.nodes)
        graph.add_edges_from((i, n.id) for n in self.nodes.values() for i in n.inputs if i in self.nodes)
        ordered = nx.lexicographical_topological_sort(graph, key=lambda nid: position[nid])
        return [self.nodes[nid] for nid in ordered]


def _node(node_id: str, wrapped: Any) -> tuple[Node | None, str | None]:
    if not isinstance(wrapped, dict) or len(wrapped) != 1:
        keys = ", ".join(wrapped) if isinstance(wrapped, dict) else type(wrapped).__name__
        return (
            None,
            f'node {node_id}: must hold exactly one node type, as {{"ApplyMapping": {{...}}}}; found {keys or "nothing"}',
        )
    ((node_type, spec),) = wrapped.items()
    if not isinstance(spec, dict):
        return None, f"node {node_id} ({node_type}): its fields must be an object"
    return Node(str(node_id), str(node_type), spec), None


def graph_from_job(job: dict[str, Any], default_name: str) -> JobGraph:
    nodes_doc = job.get("CodeGenConfigurationNodes")
    if not isinstance(nodes_doc, dict) or not nodes_doc:
        raise GraphError([f"job {job.get('Name') or default_name!r} has no CodeGenConfigurationNodes"])
    problems, nodes = [], {}
    for node_id, wrapped in nodes_doc.items():
        node, problem = _node(node_id, wrapped)
        if problem:
            problems.append(problem)
        elif node:
            nodes[node.id] = node
    if problems:
        raise GraphError(problems)
    rest = {k: v for k, v in job.items() if k not in ("Name", "CodeGenConfigurationNodes")}
    return JobGraph(str(job.get("Name") or default_name), nodes, rest)


def parse_document(document: Any, default_name: str = "visual_job") -> list[JobGraph]:
    """Every job in ``document`` (see the module's docstring for the shapes taken)."""
    if isinstance(document, dict) and isinstance(document.get("Job"), dict):
        jobs = [document["Job"]]
    elif isinstance(document, dict) and isinstance(document.get("Jobs"), list):
        jobs = document["Jobs"]
    elif isinstance(document, list):
        jobs = document
    elif isinstance(document, dict) and "CodeGenConfigurationNodes" in document:
        jobs = [document]
    elif (
        isinstance(document, dict)
        and document
        and all(isinstance(v, dict) and len(v) == 1 for v in document.values())
    ):
        jobs = [{"Name": default_name, "CodeGenConfigurationNodes": document}]
    else:
        raise GraphError(
            [
                'not a visual job: expected get-job\'s {"Job": …}, {"Jobs": […]}, a job, or CodeGenConfigurationNodes'
            ]
        )
    if not all(isinstance(j, dict) for j in jobs):
        raise GraphError(["every job in the document must be an object"])
    return [
        graph_from_job(j, default_name if len(jobs) == 1 else f"{default_name}_{i}")
        for i, j in enumerate(jobs)
    ]


def load(path: Path | str) -> list[JobGraph]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise GraphError([f"cannot read {path}: {exc.strerror}"]) from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise GraphError([f"{path} is not JSON: {exc}"]) from None
    return parse_document(document, default_name=path.stem)


def check(graph: JobGraph, supported: set[str] | frozenset[str]) -> None:
    """Raise :class:`GraphError` with every problem of ``graph``; return when there is none."""
    known = node_shapes()
    problems = []
    for node in graph.nodes.values():
        if node.type not in known:
            problems.append(f"{node.label()}: {node.type} is not a Glue node type")
            continue
        problems += [f"{node.label()} {p}" for p in node_problems(node.type, node.spec)]
        if node.type not in supported:
            why = NOT_GENERATED.get(node.type, "see docs/studio.md")
            problems.append(f"{node.label()}: sparkmark does not generate {node.type} nodes ({why})")
        for given in node.inputs:
            if given not in graph.nodes:
                problems.append(f"{node.label()}: its input {given!r} is not a node of this job")
    graph_edges = nx.DiGraph((i, n.id) for n in graph.nodes.values() for i in n.inputs if i in graph.nodes)
    try:
        cycle = nx.find_cycle(graph_edges)
    except nx.NetworkXNoCycle:
        cycle = []
    if cycle:
        path = " -> ".join([graph.nodes[a].name for a, _ in cycle] + [graph.nodes[cycle[0][0]].name])
        problems.append(f"{graph.nodes[cycle[0][0]].label()}: the inputs form a cycle ({path})")
    if problems:
        raise GraphError([f"job {graph.name!r}: {p}" for p in problems])

"""A workflow's graph laid out for drawing: triggers, jobs and crawlers in columns by
their depth from the start trigger, edges between them, each node with its state.

The server's layering is networkx's (topological generations of the directed graph);
within a column, nodes keep the order the definitions give them. The console draws the
result as SVG on the server, so a page shows the graph without any script, and a live
page swaps in the new drawing as the run moves. In the browser, static/graph.js lays
the same nodes out again with dagre (left to right, or top to bottom when that fits
the screen better), fits the drawing to its box, and lets the user pan and zoom.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import networkx as nx

NODE_W, NODE_H = 186, 54
GAP_X, GAP_Y, MARGIN = 48, 22, 16

# Fill colours by state: one table for jobs, crawls and triggers.
COLOURS = {
    "SUCCEEDED": "#2e7d32",
    "COMPLETED": "#2e7d32",
    "FIRED": "#2e7d32",
    "RUNNING": "#1565c0",
    "WAITING": "#6a1b9a",
    "STARTING": "#6a1b9a",
    "FAILED": "#c62828",
    "ERROR": "#c62828",
    "TIMEOUT": "#ef6c00",
    "STOPPED": "#757575",
    "CANCELLED": "#757575",
    "NOT RUN": "#b0bec5",
    "NOT FIRED": "#b0bec5",
}


@dataclass(frozen=True)
class PlacedNode:
    uid: str
    kind: str
    name: str
    state: str
    detail: str
    x: int
    y: int
    href: str = ""  # the node's run, or its job's, crawler's or workflow's page

    @property
    def colour(self) -> str:
        return COLOURS.get(self.state, "#90a4ae")

    @property
    def cx(self) -> int:
        return self.x + NODE_W // 2


@dataclass(frozen=True)
class PlacedEdge:
    source: str
    target: str
    path: str  # an SVG path from the source's right side to the target's left side


@dataclass(frozen=True)
class Layout:
    nodes: list[PlacedNode]
    edges: list[PlacedEdge]
    width: int
    height: int
    node_w: int = NODE_W
    node_h: int = NODE_H


def node_href(node: dict[str, Any], workflow: str | None = None) -> str:
    """Where a node of a workflow's graph links: a job's last run in this workflow run
    (its page, else the job's), a crawler's page, a trigger's workflow."""
    kind, name = node.get("Type"), str(node.get("Name", ""))
    if kind == "JOB":
        runs = (node.get("JobDetails") or {}).get("JobRuns") or []
        last = runs[-1].get("Id") if runs else None
        return f"/runs/{last}" if last else f"/jobs/{quote(name, safe='')}"
    if kind == "CRAWLER":
        return f"/crawlers/{quote(name, safe='')}"
    return f"/workflows/{quote(workflow, safe='')}" if workflow else ""


def layout(
    graph: dict[str, Any], states: dict[str, tuple[str, str]] | None = None, workflow: str | None = None
) -> Layout:
    """Place ``graph`` (Glue's ``{"Nodes": [...], "Edges": [...]}``); ``states`` gives
    each node's (state, detail) by UniqueId, a node without one is drawn NOT RUN."""
    states = states or {}
    nodes = graph.get("Nodes") or []
    edges = [
        (e["SourceId"], e["DestinationId"])
        for e in graph.get("Edges") or []
        if e.get("SourceId") and e.get("DestinationId")
    ]
    order = {n["UniqueId"]: i for i, n in enumerate(nodes)}
    g = nx.DiGraph()
    g.add_nodes_from(order)
    g.add_edges_from((s, d) for s, d in edges if s in order and d in order)
    try:
        columns = [sorted(c, key=order.__getitem__) for c in nx.topological_generations(g)]
    except nx.NetworkXUnfeasible:  # definitions refuse cycles; a stored graph is drawn anyway
        columns = [sorted(order, key=order.__getitem__)]
    placed: dict[str, PlacedNode] = {}
    by_id = {n["UniqueId"]: n for n in nodes}
    tallest = max((len(c) for c in columns), default=0)
    for col, members in enumerate(columns):
        top = MARGIN + (tallest - len(members)) * (NODE_H + GAP_Y) // 2
        for row, uid in enumerate(members):
            node = by_id[uid]
            default = "NOT FIRED" if node.get("Type") == "TRIGGER" else "NOT RUN"
            state, detail = states.get(uid, (default, ""))
            placed[uid] = PlacedNode(
                uid,
                str(node.get("Type", "")),
                str(node.get("Name", uid)),
                state,
                detail,
                MARGIN + col * (NODE_W + GAP_X),
                top + row * (NODE_H + GAP_Y),
                node_href(node, workflow),
            )
    drawn = []
    for s, d in edges:
        if s in placed and d in placed:
            a, b = placed[s], placed[d]
            x1, y1 = a.x + NODE_W, a.y + NODE_H // 2
            x2, y2 = b.x, b.y + NODE_H // 2
            mid = (x1 + x2) // 2
            drawn.append(PlacedEdge(s, d, f"M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}"))
    width = MARGIN * 2 + max(len(columns), 1) * (NODE_W + GAP_X) - GAP_X
    height = MARGIN * 2 + max(tallest, 1) * (NODE_H + GAP_Y) - GAP_Y
    return Layout(list(placed.values()), drawn, width, height)

"""Data preview, as Studio has it: the first rows and the schema at one node, computed
from a sample of each source (no run, no bookmark, nothing written)."""

from __future__ import annotations

from typing import Any

from ..errors import GraphError
from .codegen import generate_preview
from .graph import JobGraph

ROWS = 20


def preview(graph: JobGraph, node_id: str, sample: int = 200) -> dict[str, Any]:
    """Run the preview script in this process (its Spark session is created on first
    use) and return ``{"columns": [[name, type], ...], "rows": [[...], ...]}``."""
    script, variable = generate_preview(graph, node_id, sample)
    namespace: dict[str, Any] = {"__name__": "sparkmark_preview"}
    try:
        exec(compile(script, f"<preview of {graph.name}>", "exec"), namespace)  # the user's own job, sampled
    except GraphError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's graph failed on the sample: one line, as a run's error
        text = str(exc).strip().splitlines()
        raise GraphError([f"preview of {node_id}: {type(exc).__name__}: {text[0] if text else ''}"]) from None
    frame = namespace[variable]
    if hasattr(frame, "keys") and not hasattr(frame, "toDF"):  # a collection: its first frame
        frame = frame.select(next(iter(frame.keys())))
    df = frame.toDF()
    rows = [[_plain(v) for v in r] for r in df.limit(ROWS).collect()]
    return {"columns": [[f.name, f.dataType.simpleString()] for f in df.schema.fields], "rows": rows}


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)

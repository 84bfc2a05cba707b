"""Data preview, as Studio has it: the first rows and the schema at one node, computed
from a sample of each source (no run, no bookmark, nothing written).

A SparkSQL node's query sees its inputs' views, and cannot name files itself
(``SELECT * FROM text.`/path```): Spark's ``spark.sql.runSQLOnFiles`` is off while a
preview runs, so a preview shows data of the graph's own sources only. (A CustomCode
node is the user's own Python: preview, like a run, needs the console's token.)"""

from __future__ import annotations

from typing import Any

from ..errors import GraphError
from .codegen import generate_preview
from .graph import JobGraph

ROWS = 20
SQL_ON_FILES = "spark.sql.runSQLOnFiles"


def preview(graph: JobGraph, node_id: str, sample: int = 200) -> dict[str, Any]:
    """Run the preview script in this process (its Spark session is created on first
    use) and return ``{"columns": [[name, type], ...], "rows": [[...], ...]}``."""
    from pyspark.sql import SparkSession

    script, variable = generate_preview(graph, node_id, sample)
    namespace: dict[str, Any] = {"__name__": "sparkmark_preview"}
    spark = SparkSession.getActiveSession()
    before = spark.conf.get(SQL_ON_FILES, "true") if spark is not None else None
    if spark is not None:
        spark.conf.set(SQL_ON_FILES, "false")
    try:
        exec(compile(script, f"<preview of {graph.name}>", "exec"), namespace)  # the user's own job, sampled
    except GraphError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's graph failed on the sample: one line, as a run's error
        text = str(exc).strip().splitlines()
        raise GraphError([f"preview of {node_id}: {type(exc).__name__}: {text[0] if text else ''}"]) from None
    finally:
        if spark is not None:
            spark.conf.set(SQL_ON_FILES, before or "true")
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

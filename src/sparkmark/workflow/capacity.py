"""What a job runs on: its command (a Spark job or a Python shell job), Glue's capacity
fields (``MaxCapacity``, ``WorkerType`` with ``NumberOfWorkers``, ``ExecutionClass``,
``--enable-auto-scaling``), the rules Glue checks them by, and what they mean here.

- A Python shell job gets 0.0625 or 1 DPU, 0.0625 by default. A DPU is 16 GB of memory,
  so its process may use 1 GB or 16 GB (:func:`shell_memory_bytes`).
- A Spark job's worker type is an executor size (:data:`WORKER_TYPES`), applied when its
  master is a cluster; on ``local[*]`` it is only shown back.
- ``--enable-auto-scaling true`` is Spark's dynamic allocation, with the workers beyond
  the driver's as the most executors (Glue counts the driver among ``NumberOfWorkers``).
- A FLEX run waits while standard runs hold its cluster (``WAITING``, as on Glue), and is
  started anyway after :data:`FLEX_FORCED_START_MINUTES`.

Pure logic: the definitions, the API and the scheduler call it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SPARK_COMMANDS = ("glueetl", "gluestreaming")
PYTHON_SHELL = "pythonshell"
COMMANDS = (*SPARK_COMMANDS, PYTHON_SHELL)
RAY = "glueray"
RAY_REFUSED = (
    "Command.Name 'glueray': AWS Glue for Ray is no longer open to new customers (AWS's own status "
    "for it), and sparkmark does not run Ray jobs; run the work as a glueetl or pythonshell job"
)

SHELL_CAPACITIES = (0.0625, 1.0)  # Glue's only two for a Python shell job
SHELL_DEFAULT_CAPACITY = 0.0625
GB_PER_DPU = 16
SHELL_PYTHON_VERSIONS = ("3", "3.9")
LIBRARY_SETS = ("analytics", "none")
# What Glue's library-set "analytics" provides, as the modules a script imports.
ANALYTICS_MODULES = {
    "pandas": "pandas",
    "numpy": "numpy",
    "scikit-learn": "sklearn",
    "awswrangler": "awswrangler",
}

EXECUTION_CLASSES = ("STANDARD", "FLEX")
# Glue keeps a Flex run WAITING for at most 20 minutes and tries a forced start after 15.
FLEX_FORCED_START_MINUTES = 15.0


@dataclass(frozen=True)
class WorkerType:
    name: str
    dpu: float  # what one worker counts for in DPU-seconds
    cores: int  # vCPUs: spark.executor.cores
    memory_gb: int  # spark.executor.memory
    streaming_only: bool = False


# Glue's worker types (AWS's "worker types" page): each worker is one executor of this
# size. R types are memory-optimised DPUs (twice a DPU's memory).
WORKER_TYPES: dict[str, WorkerType] = {
    w.name: w
    for w in (
        WorkerType("G.025X", 0.25, 2, 4, streaming_only=True),
        WorkerType("G.1X", 1, 4, 16),
        WorkerType("G.2X", 2, 8, 32),
        WorkerType("G.4X", 4, 16, 64),
        WorkerType("G.8X", 8, 32, 128),
        WorkerType("G.12X", 12, 48, 192),
        WorkerType("G.16X", 16, 64, 256),
        WorkerType("R.1X", 1, 4, 32),
        WorkerType("R.2X", 2, 8, 64),
        WorkerType("R.4X", 4, 16, 128),
        WorkerType("R.8X", 8, 32, 256),
        WorkerType("Z.2X", 2, 8, 64),
    )
}
DEFAULT_WORKER_TYPE = "G.1X"
DEFAULT_WORKERS = 10  # Glue's default NumberOfWorkers for a Spark job given none


def check(
    command: str,
    *,
    max_capacity: float | None = None,
    worker_type: str | None = None,
    workers: int | None = None,
    execution_class: str | None = None,
    python_version: str | None = None,
) -> None:
    """Raise ValueError (one line) for what Glue refuses in a job's or a run's capacity."""
    if command == RAY:
        raise ValueError(RAY_REFUSED)
    if command not in COMMANDS:
        raise ValueError(f"Command.Name {command!r} is not a Glue job command ({', '.join(COMMANDS)})")
    if execution_class is not None and execution_class not in EXECUTION_CLASSES:
        raise ValueError(f"ExecutionClass {execution_class!r} is not one of {', '.join(EXECUTION_CLASSES)}")
    if command == PYTHON_SHELL:
        if max_capacity is not None and float(max_capacity) not in SHELL_CAPACITIES:
            raise ValueError(
                f"MaxCapacity {max_capacity:g} for a pythonshell job: Glue allows 0.0625 or 1 DPU"
            )
        if worker_type is not None or workers is not None:
            raise ValueError(
                "a pythonshell job takes MaxCapacity (0.0625 or 1), not WorkerType or NumberOfWorkers"
            )
        if execution_class == "FLEX":
            raise ValueError("ExecutionClass FLEX is for glueetl jobs only, as on Glue, not pythonshell")
        if python_version is not None and python_version not in SHELL_PYTHON_VERSIONS:
            raise ValueError(
                f"PythonVersion {python_version!r} for a pythonshell job: Glue runs 3.9 ('3.9', or '3'); "
                "its Python 3.6 support ended on 2026-03-01"
            )
        return
    if worker_type is not None and worker_type not in WORKER_TYPES:
        raise ValueError(f"WorkerType {worker_type!r} is not one of {', '.join(WORKER_TYPES)}")
    if worker_type is not None and WORKER_TYPES[worker_type].streaming_only and command != "gluestreaming":
        raise ValueError(f"WorkerType {worker_type} is for streaming jobs (gluestreaming) only, as on Glue")
    if (worker_type is None) != (workers is None) and max_capacity is None:
        raise ValueError("WorkerType and NumberOfWorkers are given together, as on Glue")
    if max_capacity is not None and worker_type is not None:
        raise ValueError("MaxCapacity cannot be given with WorkerType and NumberOfWorkers, as on Glue")
    if workers is not None and workers < 2 and worker_type is not None:
        raise ValueError(
            f"NumberOfWorkers {workers}: a Spark job has at least 2 workers (a driver and an executor)"
        )
    if execution_class == "FLEX" and command != "glueetl":
        raise ValueError(f"ExecutionClass FLEX is for glueetl jobs only, as on Glue, not {command}")


def shell_memory_bytes(max_capacity: float | None) -> int:
    """The memory a Python shell job's process may use: its DPU share of 16 GB per DPU."""
    capacity = SHELL_DEFAULT_CAPACITY if max_capacity is None else float(max_capacity)
    return int(capacity * GB_PER_DPU * 1024**3)


def library_set(value: str | None) -> str | None:
    """``--library-set``, checked: ``analytics`` or ``none`` (or not given)."""
    if value is None or value == "":
        return None
    if value not in LIBRARY_SETS:
        raise ValueError(f"--library-set {value!r}: Glue's library sets are {' and '.join(LIBRARY_SETS)}")
    return value


def truthy(value: str | None) -> bool:
    return str(value or "").strip().lower() == "true"


def spark_conf(
    master: str | None,
    arguments: dict[str, str],
    worker_type: str | None,
    workers: int | None,
) -> dict[str, str]:
    """The Spark settings a Spark job's capacity gives when its master is a cluster (a
    ``spark://``, ``yarn`` or ``k8s://`` master): each worker an executor of its type's
    size, at most ``NumberOfWorkers - 1`` of them (one worker is the driver), and with
    ``--enable-auto-scaling true`` dynamic allocation between 0 and that many. On a local
    master, or for a job that names no worker type and does not scale, nothing: the
    capacity is only shown back. Settings the job gives itself win (the caller lays these
    under them)."""
    scaling = truthy(arguments.get("--enable-auto-scaling"))
    if not master or master.startswith("local") or (worker_type is None and not scaling):
        return {}  # a job that names neither keeps the executors its Spark settings give
    executors = max(1, (workers or DEFAULT_WORKERS) - 1)
    conf = {}
    if worker_type is not None:
        kind = WORKER_TYPES[worker_type]
        conf = {
            "spark.executor.cores": str(kind.cores),
            "spark.executor.memory": f"{kind.memory_gb}g",
            "spark.cores.max": str(kind.cores * executors),
        }
    if scaling:
        conf.update(
            {
                "spark.dynamicAllocation.enabled": "true",
                "spark.dynamicAllocation.shuffleTracking.enabled": "true",
                "spark.dynamicAllocation.minExecutors": "0",
                "spark.dynamicAllocation.initialExecutors": "1",
                "spark.dynamicAllocation.maxExecutors": str(executors),
            }
        )
        conf.pop("spark.cores.max", None)  # the executors' count is dynamic allocation's to say
    return conf


def dpu_of(worker_type: str | None) -> float:
    return WORKER_TYPES[worker_type or DEFAULT_WORKER_TYPE].dpu


def run_fields(definition: Any, command: str) -> dict[str, Any]:
    """The capacity fields a job run shows (GetJobRun): a Python shell run's MaxCapacity,
    or a Spark run's worker type, workers and execution class."""
    if command == PYTHON_SHELL:
        return {"MaxCapacity": definition.get("MaxCapacity") or SHELL_DEFAULT_CAPACITY}
    return {
        "WorkerType": definition.get("WorkerType") or DEFAULT_WORKER_TYPE,
        "NumberOfWorkers": definition.get("NumberOfWorkers") or DEFAULT_WORKERS,
        "ExecutionClass": definition.get("ExecutionClass") or "STANDARD",
    }

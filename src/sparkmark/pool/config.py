"""``[pool]`` in ``sparkmark.toml``: how many warm Spark processes a server keeps
started, how big each may be, and when one is replaced or let go.

    [pool]
    size = 1              # warm processes kept ready (0: none; every session and job starts cold)
    memory = "2g"         # each process's driver memory (spark.driver.memory)
    idle_minutes = 30     # a warm process unused this long is stopped; the next need starts one
    max_runs = 20         # a process that hosted this many job runs is replaced
    max_memory = "6g"     # a process whose resident memory (Python and JVM) grew past this is replaced
    jobs = true           # the scheduler runs jobs on warm processes when their Spark settings allow
    prestart = false      # true: `sparkmark api` starts the pool at once; false: on the first session or job
    max_sessions = 4      # interactive sessions a server runs at once (each a Spark of its own);
                          # CreateSession past it: ResourceNumberLimitExceededException

A pool starts on first need unless ``prestart`` says otherwise, so a server nobody
opens a session on (or a test's) starts no JVM.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import ConfigError, first_problem
from ..tomlfile import read_toml

SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)b?\s*$", re.IGNORECASE)
UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def size_bytes(text: str) -> int:
    """``2g`` → bytes; a one-line error for what is not a size."""
    found = SIZE.match(str(text))
    if not found:
        raise ValueError(f"{text!r} is not a size such as 512m or 2g")
    return int(float(found.group(1)) * UNITS[found.group(2).lower()])


class PoolConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    size: int = Field(1, ge=0, le=16)
    memory: str = "2g"
    idle_minutes: float = Field(30, gt=0)
    max_runs: int = Field(20, ge=1)
    max_memory: str = "6g"
    jobs: bool = True
    prestart: bool = False
    max_sessions: int = Field(4, ge=1, le=256)

    @field_validator("memory", "max_memory")
    @classmethod
    def _size(cls, value: str) -> str:
        size_bytes(value)
        return value

    @property
    def max_memory_bytes(self) -> int:
        return size_bytes(self.max_memory)


def load_pool_config(path: Path | str) -> PoolConfig:
    """``[pool]`` of the project file; the defaults when the file or the table is absent."""
    path = Path(path)
    try:
        document = read_toml(path)
    except FileNotFoundError:
        return PoolConfig()
    section = document.get("pool") or {}
    try:
        return PoolConfig.model_validate(section)
    except ValidationError as exc:
        where, message = first_problem(exc)
        raise ConfigError(f"{path}: [pool]{' ' + where if where else ''}: {message}") from None

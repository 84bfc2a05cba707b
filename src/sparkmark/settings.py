"""Where sparkmark keeps its state, read from the environment.

``SPARKMARK_HOME``       folder for the embedded defaults (default ``./.sparkmark``)
``SPARKMARK_STATE_URL``  SQLAlchemy URL of the state store (default SQLite in the home)
``SPARKMARK_TEMP_DIR``   default ``--TempDir`` (default ``$SPARKMARK_HOME/tmp``)
``SPARKMARK_LEASE_SECONDS`` how long a run's lease lasts between heartbeats (default 300)
``SPARKMARK_SPARK_MASTER``  master for sessions sparkmark creates (default ``local[*]``)
``SPARKMARK_JARS_DIR``   where ``make jars`` writes its classpath files (default
                         ``$XDG_CACHE_HOME/sparkmark/jars``, else ``~/.cache/sparkmark/jars``)
``SPARKMARK_CONNECTORS`` which connectors go on Spark's classpath: ``auto`` (every one
                         whose jars are resolved, the default), ``none``, or a comma
                         list of ``s3``, ``kafka``, ``avro``, ``jdbc``
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from .errors import ConfigError


class Settings(BaseModel):
    home: Path
    state_url: str
    temp_dir: str
    lease_seconds: float = Field(gt=0)
    spark_master: str
    jars_dir: Path
    connectors: str = "auto"

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        home = Path(env.get("SPARKMARK_HOME") or ".sparkmark").expanduser().absolute()
        state_url = env.get("SPARKMARK_STATE_URL") or f"sqlite:///{home / 'state.db'}"
        temp_dir = env.get("SPARKMARK_TEMP_DIR") or str(home / "tmp")
        try:
            return cls(
                home=home,
                state_url=state_url,
                temp_dir=temp_dir,
                lease_seconds=env.get("SPARKMARK_LEASE_SECONDS") or 300,
                spark_master=env.get("SPARKMARK_SPARK_MASTER") or "local[*]",
                jars_dir=_jars_dir(env),
                connectors=env.get("SPARKMARK_CONNECTORS") or "auto",
            )
        except ValidationError as exc:
            first = exc.errors()[0]
            field = first["loc"][0] if first["loc"] else "setting"
            raise ConfigError(
                f"invalid sparkmark setting {field}: {first['msg']} (check SPARKMARK_* variables)"
            ) from None


def _jars_dir(env) -> Path:
    if env.get("SPARKMARK_JARS_DIR"):
        return Path(env["SPARKMARK_JARS_DIR"]).expanduser().absolute()
    cache = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache.expanduser().absolute() / "sparkmark" / "jars"

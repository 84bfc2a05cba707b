"""Named database connections: ``[connections.NAME]`` in sparkmark.toml, or the environment.

    [connections.warehouse]
    url = "jdbc:postgresql://db.internal:5432/analytics"
    user = "etl"
    password_env = "WAREHOUSE_PASSWORD"     # or password_file = "/run/secrets/warehouse"

Environment variables override the file: ``SPARKMARK_CONNECTION_<NAME>_URL``,
``…_USER``, ``…_PASSWORD`` and ``…_PASSWORD_FILE``. A password is never read from
sparkmark.toml itself, and never stored in state, logs, manifests or run arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import ConfigError
from .settings import Settings
from .tomlfile import read_toml


class ConnectionEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str | None = None
    user: str | None = None
    password_env: str | None = None
    password_file: str | None = None


@dataclass(frozen=True)
class ResolvedConnection:
    url: str
    user: str | None
    password: str | None

    def __repr__(self) -> str:  # keep the password out of any log or traceback
        return f"ResolvedConnection(url={self.url!r}, user={self.user!r}, password=***)"


def _file_entries(path: Path) -> dict[str, dict]:
    if not path.exists():
        return {}
    try:
        document = read_toml(path)
    except FileNotFoundError:
        return {}
    return document.get("connections") or {}


def _read_secret_file(path: str, name: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"cannot read the password file of connection {name!r}: {exc.strerror}") from None


class Connections:
    """The named connections of one configuration file and one environment (both from
    ``Settings``, resolved at an entry point)."""

    def __init__(self, config: Path, environ: Mapping[str, str]):
        self.config = config
        self._environ = environ

    @classmethod
    def from_settings(cls, settings: Settings) -> Connections:
        return cls(settings.config, settings.environ)

    def __repr__(self) -> str:  # the environment may hold passwords: never shown
        return f"Connections(config={str(self.config)!r})"

    def resolve(self, name: str) -> ResolvedConnection:
        env = self._environ
        raw = _file_entries(self.config).get(name, {})
        if "password" in raw:
            raise ConfigError(
                f"connection {name!r} in {self.config} holds a password; put it in an environment "
                "variable (password_env) or a file (password_file) instead"
            )
        try:
            entry = ConnectionEntry(**raw)
        except ValidationError as exc:
            raise ConfigError(f"connection {name!r} in {self.config}: {exc.errors()[0]['msg']}") from None
        prefix = "SPARKMARK_CONNECTION_" + name.upper().replace("-", "_") + "_"
        url = env.get(prefix + "URL") or entry.url
        if not url:
            raise ConfigError(
                f"unknown connection {name!r}: add [connections.{name}] with a url to "
                f"{self.config}, or set {prefix}URL"
            )
        user = env.get(prefix + "USER") or entry.user
        password = env.get(prefix + "PASSWORD")
        if password is None and env.get(prefix + "PASSWORD_FILE"):
            password = _read_secret_file(env[prefix + "PASSWORD_FILE"], name)
        if password is None and entry.password_env:
            password = env.get(entry.password_env)
            if password is None:
                raise ConfigError(
                    f"connection {name!r} reads its password from ${entry.password_env}, which is not set"
                )
        if password is None and entry.password_file:
            password = _read_secret_file(entry.password_file, name)
        return ResolvedConnection(url, user, password)

"""Named database connections: ``[connections.NAME]`` in sparkmark.toml, the environment,
or a connection created through the Glue API (kept in the state store, its password
sealed; ``connections/records.py``).

    [connections.warehouse]
    url = "jdbc:postgresql://db.internal:5432/analytics"
    user = "etl"
    password_env = "WAREHOUSE_PASSWORD"     # or password_file = "/run/secrets/warehouse"

Environment variables override the file: ``SPARKMARK_CONNECTION_<NAME>_URL``,
``…_USER``, ``…_PASSWORD`` and ``…_PASSWORD_FILE``. A password is never read from
sparkmark.toml itself, and never stored in state in clear, nor in logs, manifests or
run arguments. A name neither declares is looked up among the API's connections; one of
those whose credentials are in a secret (Glue's ``SECRET_ID``) reads them from the
Secrets Manager endpoint AWS's variables name (``AWS_ENDPOINT_URL_SECRETS_MANAGER``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import ConfigError
from ..settings import Settings
from ..tomlfile import read_toml


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

    def __init__(
        self,
        config: Path,
        environ: Mapping[str, str],
        stored: Callable[[str], ResolvedConnection | None] | None = None,
    ):
        self.config = config
        self._environ = environ
        self._stored = stored  # the API's connections, looked up by name

    @classmethod
    def from_settings(cls, settings: Settings) -> Connections:
        return cls(settings.config, settings.environ, partial(_stored_connection, settings))

    def declared(self) -> list[str]:
        """The names ``sparkmark.toml`` declares."""
        return sorted(_file_entries(self.config))

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
        if not url and not raw and self._stored is not None:
            found = self._stored(name)
            if found is not None:
                return found
        if not url:
            raise ConfigError(
                f"unknown connection {name!r}: add [connections.{name}] with a url to "
                f"{self.config}, set {prefix}URL, or create it (aws glue create-connection)"
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


def _stored_connection(settings: Settings, name: str) -> ResolvedConnection | None:
    """A connection created through the Glue API, its password unsealed (or read from the
    secret it names), or None when there is none of that name."""
    from ..engine.sealing import Sealer
    from ..engine.store import StateStore
    from .records import ConnectionStore

    found = ConnectionStore(StateStore.from_settings(settings)).get(name)
    if found is None:
        return None
    user, password = found.user, None
    if found.sealed_password:
        password = Sealer.from_settings(settings).open(found.sealed_password).get("password")
    elif found.secret_id:
        user, password = _from_secret(name, found.secret_id, user)
    return ResolvedConnection(found.url, user, password)


def _from_secret(name: str, secret_id: str, user: str | None) -> tuple[str | None, str | None]:
    """(username, password) of the secret a connection names, as Glue reads it: a JSON
    secret string with ``username`` and ``password``."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        answer = boto3.client("secretsmanager").get_secret_value(SecretId=secret_id)
    except (BotoCoreError, ClientError) as exc:
        raise ConfigError(
            f"connection {name!r} keeps its credentials in secret {secret_id!r}, which could not be read "
            f"({type(exc).__name__}): point AWS_ENDPOINT_URL_SECRETS_MANAGER at a Secrets Manager endpoint"
        ) from None
    try:
        document = json.loads(answer.get("SecretString") or "{}")
    except ValueError:
        raise ConfigError(f"secret {secret_id!r} of connection {name!r} is not JSON") from None
    if not isinstance(document, dict):
        raise ConfigError(f"secret {secret_id!r} of connection {name!r} is not a JSON object")
    return document.get("username", user), document.get("password")

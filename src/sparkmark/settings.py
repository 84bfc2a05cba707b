"""Every setting sparkmark reads from the environment, declared once: its variable, type,
default and meaning. The entry points (the CLI, ``Job``, the Glue façade's context,
the scheduler, the awsglue import hook) resolve ``Settings.from_env()`` and pass it
down; nothing below them reads the environment.

| variable | field | default |
|---|---|---|
| ``SPARKMARK_HOME`` | home | ``./.sparkmark`` |
| ``SPARKMARK_STATE_URL`` | state_url | SQLite in the home |
| ``SPARKMARK_TEMP_DIR`` | temp_dir | ``$SPARKMARK_HOME/tmp`` |
| ``SPARKMARK_LEASE_SECONDS`` | lease_seconds | 300 |
| ``SPARKMARK_SPARK_MASTER`` | spark_master | ``local[*]`` |
| ``SPARKMARK_JARS_DIR`` | jars_dir | ``$XDG_CACHE_HOME/sparkmark/jars`` or ``~/.cache/sparkmark/jars`` |
| ``SPARKMARK_RUNTIMES_DIR`` | runtimes_dir | ``$SPARKMARK_HOME/runtimes``: the runtimes ``sparkmark runtime add`` makes, one per Glue version (share one folder between homes by naming it) |
| ``SPARKMARK_CLASS_ARCHIVE`` | class_archive | on: a driver JVM maps an archive of the classes Spark loads (made by the first driver of its JDK and class path, beside the jars: ``class_archive.py``); ``off``: never |
| ``SPARKMARK_CONNECTORS`` | connectors | ``auto``: every resolved connector, and those a job needs fetched on demand (or ``none``, or a list of s3, kafka, avro, jdbc: those, fetched when missing) |
| ``SPARKMARK_CONNECTOR_NEEDS`` | connector_needs | unset; set by ``sparkmark run`` for its script: the connectors its script and arguments show it uses (``connectors.needed_by``) |
| ``SPARKMARK_CONNECTOR_RESOLUTION`` | connector_resolution | ``on-demand``: a needed connector that is not resolved is fetched through Spark's package resolution; ``off``: never (offline machines) |
| ``SPARKMARK_JDBC_JARS`` | jdbc_jars | unset: resolved or Debian drivers; a comma list replaces them |
| ``SPARKMARK_SPARK_CONF`` | spark_conf | a JSON object of Spark settings (a declared job's ``Spark.conf``) |
| ``SPARKMARK_DATALAKE_FORMATS`` | datalake_formats | unset; ``iceberg``, ``delta`` (comma list): their jars on Spark's class path (a job's ``--datalake-formats`` sets it for its run) |
| ``SPARKMARK_CATALOG`` | catalog | ``hive`` (``none``: sessions without Hive support) |
| ``SPARKMARK_METASTORE_URL`` | metastore_url | embedded Derby in the home |
| ``SPARKMARK_METASTORE_USER`` / ``_PASSWORD`` | metastore_user / metastore_password | unset |
| ``SPARKMARK_CONFIG`` | config | ``sparkmark.toml`` |
| ``SPARKMARK_LOG_LEVEL`` | log_level | ``INFO`` |
| ``SPARKMARK_DEBUG`` | debug | off; on (or ``sparkmark --debug``): a failure prints its traceback after its ``error:`` line |
| ``SPARKMARK_AWSGLUE`` | awsglue | ``on`` (``off`` leaves ``import awsglue`` alone) |
| ``SPARKMARK_STREAM_UNTIL_CAUGHT_UP`` | stream_until_caught_up | off; on (or ``sparkmark run --until-caught-up``): a streaming job processes what its sources hold now, then returns |
| ``SPARKMARK_STREAM_MAX_BATCHES`` | stream_max_batches | unset; N (or ``sparkmark run --max-batches N``): a streaming job returns after N micro-batches |
| ``SPARKMARK_CRASH_AT`` | crash_at | unset (tests: die at that crash point) |
| ``SPARKMARK_S3_LOCAL_ROOT`` | s3_local_root | unset; a folder: ``s3://bucket/key`` is read and written as ``FOLDER/bucket/key`` |
| ``SPARKMARK_API_HOST`` / ``SPARKMARK_API_PORT`` | api_host / api_port | ``127.0.0.1`` / ``4599`` (``sparkmark api``) |
| ``SPARKMARK_API_TOKEN`` | api_token | unset: the home's own token (``$SPARKMARK_HOME/token``, made on first use); Glue API requests are signed with it as the secret key |
| ``SPARKMARK_CONSOLE_HOST`` / ``SPARKMARK_CONSOLE_PORT`` | console_host / console_port | ``127.0.0.1`` / ``8080`` (``sparkmark console``) |
| ``SPARKMARK_CONSOLE_TOKEN`` | console_token | unset: the home's own token; every console request carries it (a sign-in cookie) |
| ``SPARKMARK_ALLOWED_HOSTS`` | allowed_hosts | unset: localhost, 127.0.0.1, [::1] and the bound address; a comma list adds names the servers answer to in ``Host`` and ``Origin`` (``*``: any, behind a proxy that checks them) |
| ``SPARKMARK_TLS_CERTFILE`` / ``SPARKMARK_TLS_KEYFILE`` | tls_certfile / tls_keyfile | unset; both set: the servers speak HTTPS and the console's cookies are ``Secure`` |
| ``SPARKMARK_SECRETS_KEY`` | secrets_key | unset: ``$SPARKMARK_HOME/secrets.key`` (made on first use); the key that seals a queued run's secret arguments in the state store (share it between schedulers of one store) |
| ``SPARKMARK_MAX_REQUEST_BYTES`` | max_request_bytes | 10485760: a larger request body is refused (413) before it is read |
| ``SPARKMARK_REQUEST_BODY_SECONDS`` | request_body_seconds | 30: a body that takes longer to arrive is refused (408) |
| ``SPARKMARK_MAX_INFLIGHT_BYTES`` | max_inflight_bytes | 67108864: the request bodies a server holds at once, all requests together; past it a request is answered 503 and may retry |
| ``SPARKMARK_METRICS_INTERVAL`` | metrics_interval | 30: seconds between a run's metric reports while it runs (0: only as it ends) |
| ``SPARKMARK_METRICS_RETENTION_DAYS`` | metrics_retention_days | 15: datapoints older than this are forgotten (0: kept) |
| ``SPARKMARK_SPARK_UI_URL`` | spark_ui_url | unset: the session's own UI; for Spark Connect, the server's UI (``http://host:4040``), where a run's Spark metrics are read |
| ``SPARKMARK_ICEBERG_WAREHOUSE`` | iceberg_warehouse | unset: an Iceberg table made over the REST endpoint with no location, in a database with no LocationUri, is refused (as Glue refuses it); set, it goes under ``WAREHOUSE/database/table`` |
| ``SPARKMARK_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT``, ``OTEL_EXPORTER_OTLP_ENDPOINT``) | otlp_endpoint | unset; an OpenTelemetry collector's OTLP/HTTP URL: each run's metrics are pushed there too |
| ``SPARKMARK_OTLP_HEADERS`` (or ``OTEL_EXPORTER_OTLP_HEADERS``) | otlp_headers | unset; ``key=value,…`` headers sent with each push (a collector's token) |

S3 access is configured the way AWS's own tools take it, from the standard variables
(no ``SPARKMARK_`` prefix); sparkmark hands them to its S3 client and to Spark's S3A:

| variable | field |
|---|---|
| ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN`` | aws_access_key_id / aws_secret_access_key / aws_session_token |
| ``AWS_PROFILE`` | aws_profile |
| ``AWS_REGION`` (or ``AWS_DEFAULT_REGION``) | aws_region |
| ``AWS_ENDPOINT_URL_S3`` (or ``AWS_ENDPOINT_URL``) | aws_endpoint_url_s3 |
| ``AWS_CONFIG_FILE`` / ``AWS_SHARED_CREDENTIALS_FILE`` | aws_config_file / aws_shared_credentials_file (where ``sparkmark aws-profile`` writes) |

Spark Connect is chosen as PySpark chooses it: ``SPARK_REMOTE=sc://host:port`` (field
spark_remote; ``sparkmark run --remote URL`` sets it for the script) makes the sessions
sparkmark creates remote ones; the listing, state store, commit and publishing stay in
this process.

Connections (``[connections.NAME]`` in the config file) may also be given, or have
their password, in variables whose names the connection declares
(``SPARKMARK_CONNECTION_<NAME>_URL``, ``password_env``); those are looked up in the
same snapshot of the environment, ``Settings.environ``, never in ``os.environ``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from .errors import ConfigError

PREFIX = "SPARKMARK_"
# AWS's standard variables, read without the prefix; the first one set wins.
AWS_VARIABLES = {
    "aws_access_key_id": ("AWS_ACCESS_KEY_ID",),
    "aws_secret_access_key": ("AWS_SECRET_ACCESS_KEY",),
    "aws_session_token": ("AWS_SESSION_TOKEN",),
    "aws_profile": ("AWS_PROFILE",),
    "aws_region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
    "aws_endpoint_url_s3": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
    "aws_config_file": ("AWS_CONFIG_FILE",),
    "aws_shared_credentials_file": ("AWS_SHARED_CREDENTIALS_FILE",),
    "spark_remote": ("SPARK_REMOTE",),  # PySpark's own variable for Spark Connect
    # OpenTelemetry's own variables, when sparkmark's is not set
    "otlp_endpoint": (
        "SPARKMARK_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ),
    "otlp_headers": ("SPARKMARK_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"),
}


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    home: Path
    state_url: str
    temp_dir: str
    lease_seconds: float = Field(300, gt=0)
    spark_master: str = "local[*]"
    jars_dir: Path
    runtimes_dir: Path
    class_archive: bool = True
    connectors: str = "auto"
    connector_needs: str | None = None
    connector_resolution: Literal["on-demand", "off"] = "on-demand"
    jdbc_jars: str | None = None
    spark_conf: str | None = None
    datalake_formats: str | None = None
    catalog: str = "hive"
    metastore_url: str | None = None
    metastore_user: str | None = None
    metastore_password: SecretStr | None = None
    config: Path = Path("sparkmark.toml")
    log_level: str = "INFO"
    debug: bool = False
    awsglue: str = "on"
    stream_until_caught_up: bool = False
    stream_max_batches: int | None = Field(None, gt=0)
    crash_at: str | None = None
    s3_local_root: Path | None = None
    api_host: str = "127.0.0.1"
    api_port: int = Field(4599, ge=0, le=65535)
    api_token: SecretStr | None = None
    console_host: str = "127.0.0.1"
    console_port: int = Field(8080, ge=0, le=65535)
    console_token: SecretStr | None = None
    allowed_hosts: str | None = None
    secrets_key: SecretStr | None = None
    tls_certfile: Path | None = None
    tls_keyfile: Path | None = None
    max_request_bytes: int = Field(10 * 1024 * 1024, gt=0)
    request_body_seconds: float = Field(30, gt=0)
    max_inflight_bytes: int = Field(64 * 1024 * 1024, gt=0)
    metrics_interval: float = Field(30, ge=0)
    metrics_retention_days: float = Field(15, ge=0)
    spark_ui_url: str | None = None
    iceberg_warehouse: str | None = None
    otlp_endpoint: str | None = None
    otlp_headers: SecretStr | None = None
    aws_access_key_id: str | None = Field(None, repr=False)
    aws_secret_access_key: SecretStr | None = None
    aws_session_token: SecretStr | None = None
    aws_profile: str | None = None
    aws_region: str | None = None
    aws_endpoint_url_s3: str | None = None
    aws_config_file: Path | None = None
    aws_shared_credentials_file: Path | None = None
    spark_remote: str | None = None
    # The environment as it was resolved: for the variables a connection names. Never
    # printed or serialised (it may hold passwords).
    environ: dict[str, str] = Field(default_factory=dict, repr=False, exclude=True)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = dict(os.environ if environ is None else environ)
        values: dict[str, Any] = {
            name: env[PREFIX + name.upper()]
            for name in cls.model_fields
            if name != "environ" and name not in AWS_VARIABLES and env.get(PREFIX + name.upper())
        }
        for name, variables in AWS_VARIABLES.items():
            found = next((env[v] for v in variables if env.get(v)), None)
            if found is not None:
                values[name] = found
        if "s3_local_root" in values:
            values["s3_local_root"] = Path(values["s3_local_root"]).expanduser().absolute()
        if PREFIX + "JDBC_JARS" in env:  # set but empty: no JDBC jars at all
            values["jdbc_jars"] = env[PREFIX + "JDBC_JARS"]
        home = Path(values.pop("home", ".sparkmark")).expanduser().absolute()
        values["home"] = home
        values.setdefault("state_url", f"sqlite:///{home / 'state.db'}")
        values.setdefault("temp_dir", str(home / "tmp"))
        runtimes = values.get("runtimes_dir")
        values["runtimes_dir"] = Path(runtimes).expanduser().absolute() if runtimes else home / "runtimes"
        if "jars_dir" in values:
            values["jars_dir"] = Path(values["jars_dir"]).expanduser().absolute()
        else:
            cache = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
            values["jars_dir"] = cache.expanduser().absolute() / "sparkmark" / "jars"
        try:
            settings = cls(**values, environ=env)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = first["loc"][0] if first["loc"] else "setting"
            raise ConfigError(
                f"invalid sparkmark setting {PREFIX}{str(field).upper()}: {first['msg']}"
            ) from None
        from .engine.masking import register_secret  # no import cycle: masking imports nothing of ours

        for value in settings.__dict__.values():
            if isinstance(value, SecretStr):
                register_secret(value.get_secret_value())
        return settings

    @property
    def api_token_value(self) -> str | None:
        return self.api_token.get_secret_value() if self.api_token else None

    @property
    def console_token_value(self) -> str | None:
        return self.console_token.get_secret_value() if self.console_token else None

    def with_tls(self, certfile: str | None, keyfile: str | None) -> Settings:
        """These settings with the certificate and key a command line gave, when it gave them."""
        update = {
            name: Path(value).expanduser().absolute()
            for name, value in (("tls_certfile", certfile), ("tls_keyfile", keyfile))
            if value
        }
        return self.model_copy(update=update) if update else self

    @property
    def allowed_host_names(self) -> list[str]:
        return [h.strip() for h in (self.allowed_hosts or "").split(",") if h.strip()]

    @property
    def hive_enabled(self) -> bool:
        return self.catalog.lower() != "none"

    def spark_conf_map(self) -> dict[str, str]:
        """``SPARKMARK_SPARK_CONF`` as Spark settings."""
        if not self.spark_conf:
            return {}
        try:
            confs = json.loads(self.spark_conf)
        except ValueError:
            confs = None
        if not isinstance(confs, dict):
            raise ConfigError("SPARKMARK_SPARK_CONF is not a JSON object of Spark settings")
        return {str(k): str(v) for k, v in confs.items()}

    def env(self, name: str) -> str | None:
        """A variable a connection names (its URL or password), from the resolved environment."""
        return self.environ.get(name)

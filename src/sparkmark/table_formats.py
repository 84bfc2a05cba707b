"""Open table formats as Glue enables them: the job parameter ``--datalake-formats``
(``iceberg``, ``delta``, ``hudi``, comma-separated) puts the format's jars on Spark's
class path, and ``--conf`` (Glue's one parameter holding ``k=v --conf k=v …``) gives the
Spark settings AWS's pages tell users to set (the SQL extensions, the catalogs).

Each format loads the version the job's Glue release ships (``glue_versions``), built for
its Spark line and Scala. For Glue 6.0 the jars come from ``make jars`` (``jars/iceberg``:
Iceberg's Spark 4.1 runtime and its AWS bundle; ``jars/delta``: Delta Lake for Spark 4.1);
a Glue 5.x runtime resolves its own on first use. No Hudi bundle for Spark 4.1 resolves
from Maven Central, so ``hudi`` is refused in one line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .connectors import Connector
from .errors import ConfigError

FORMATS: dict[str, Connector] = {
    "iceberg": Connector(
        "iceberg",
        "iceberg",
        "Apache Iceberg tables (Iceberg's Spark runtime and its AWS bundle: GlueCatalog, S3FileIO)",
        "org.apache.iceberg:iceberg-spark-runtime-{line}_{scala}:{iceberg},org.apache.iceberg:iceberg-aws-bundle:{iceberg}",
        ("Cannot find catalog plugin class", "org.apache.iceberg"),
    ),
    "delta": Connector(
        "delta",
        "delta",
        "Delta Lake tables (delta-spark)",
        "io.delta:delta-spark_{scala}:{delta}",
        ("Failed to find the data source: delta", "io.delta"),
    ),
}
GLUE_CATALOG = "org.apache.iceberg.aws.glue.GlueCatalog"  # Iceberg's catalog over the Glue catalog
UNAVAILABLE = {
    "hudi": (
        "no Apache Hudi bundle for Spark 4.1 resolves from Maven Central "
        "(hudi-spark4.1-bundle_2.13 and hudi-spark4.0-bundle_2.13 were tried); use iceberg or delta"
    ),
}


# Glue job parameters that shape the JVM itself: a run or session given one of them needs
# a Spark started for it (a warm process's cannot take them).
JVM_PARAMETERS = ("--datalake-formats", "--conf", "--extra-jars", "--user-jars-first")


def parse_formats(text: str | None) -> tuple[str, ...]:
    """The formats ``--datalake-formats`` names (``iceberg,delta``), each once, or one
    ConfigError line naming the value."""
    names = [n.strip().lower() for n in (text or "").split(",") if n.strip()]
    for name in names:
        if name in UNAVAILABLE:
            raise ConfigError(f"--datalake-formats {name}: {UNAVAILABLE[name]}")
        if name not in FORMATS:
            raise ConfigError(
                f"--datalake-formats names {name!r}; Glue's formats here are {', '.join(FORMATS)}"
            )
    return tuple(dict.fromkeys(names))


def glue_conf(text: str | None) -> dict[str, str]:
    """Glue's ``--conf`` job parameter, one value that holds several settings:
    ``spark.a=1 --conf spark.b=2``. Each must be ``key=value``."""
    found: dict[str, str] = {}
    if not text or not text.strip():
        return found
    for given in text.split("--conf"):
        part = given.strip()
        if not part:
            continue
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"--conf {part!r} is not key=value (Glue's form: k=v --conf k2=v2)")
        found[key.strip()] = value.strip()
    return found


def point_glue_catalogs(
    confs: dict[str, str], glue_url: str | None, region: str, s3_endpoint: str | None
) -> list[str]:
    """Point every Iceberg catalog over the Glue catalog that the Spark settings ``confs``
    declare at sparkmark: a GlueCatalog at the Glue endpoint (``glue.endpoint``,
    ``client.region``), a REST catalog on Glue's Iceberg REST endpoint at the endpoint's
    ``/iceberg`` (its ``uri``, when that is AWS's or unset, and its signing region); each
    at the S3 endpoint (``s3.endpoint``, path-style). What the settings already say is
    kept; ``confs`` is changed in place. Returns the catalogs' names."""
    rest = set(glue_rest_catalogs(confs.items()))
    catalogs = glue_catalogs(confs.items())
    for name in catalogs:
        prefix = f"spark.sql.catalog.{name}."
        wanted = {"client.region": region}
        if glue_url and name in rest:
            local = f"{glue_url.rstrip('/')}/iceberg"
            if GLUE_REST_URI.match(confs.get(prefix + "uri", "")):  # AWS's endpoint: this one instead
                confs[prefix + "uri"] = local
            wanted.update({"uri": local, "rest.signing-region": region})
        elif glue_url:
            wanted["glue.endpoint"] = glue_url
        if s3_endpoint:
            wanted.update({"s3.endpoint": s3_endpoint, "s3.path-style-access": "true"})
        for key, value in wanted.items():
            confs.setdefault(prefix + key, value)
    return catalogs


# Glue's Iceberg REST endpoint, as AWS's pages give it: https://glue.REGION.amazonaws.com/iceberg
GLUE_REST_URI = re.compile(r"^https://glue[.-][a-z0-9-]+\.amazonaws\.com(\.cn)?/iceberg/?$")


def glue_rest_catalogs(confs: Iterable[tuple[str, str]]) -> list[str]:
    """The Spark catalogs declared as Iceberg REST catalogs on Glue's Iceberg REST
    endpoint: ``type=rest`` with AWS's Glue URI, or signed for Glue (``rest.signing-name=glue``)."""
    found = dict(confs)
    names = [
        key.removeprefix("spark.sql.catalog.").removesuffix(".type")
        for key, value in found.items()
        if key.startswith("spark.sql.catalog.") and key.endswith(".type") and value.lower() == "rest"
    ]
    return sorted(
        n
        for n in names
        if GLUE_REST_URI.match(found.get(f"spark.sql.catalog.{n}.uri", ""))
        or found.get(f"spark.sql.catalog.{n}.rest.signing-name", "").lower() == "glue"
    )


def glue_catalogs(confs: Iterable[tuple[str, str]]) -> list[str]:
    """The Spark catalogs that Spark settings declare over the Glue catalog (their
    ``spark.sql.catalog.NAME.catalog-impl`` is Iceberg's GlueCatalog, or they are REST
    catalogs on Glue's Iceberg REST endpoint), sorted."""
    given = list(confs)
    return sorted(
        {
            key.removeprefix("spark.sql.catalog.").removesuffix(".catalog-impl")
            for key, value in given
            if key.startswith("spark.sql.catalog.")
            and key.endswith(".catalog-impl")
            and value == GLUE_CATALOG
        }
        | set(glue_rest_catalogs(given))
    )

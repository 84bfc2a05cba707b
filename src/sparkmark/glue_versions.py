"""Glue's releases, and the Spark each runs: which PySpark a runtime for a Glue version
installs, and which Iceberg, Delta and Scala builds its connectors resolve to.

Pure data and arithmetic on version strings; nothing here imports PySpark. The figures
are AWS's release notes for each Glue version. A *Spark line* is a Spark release's
``major.minor`` (``3.5``, ``4.1``): connectors are built per line and per Scala version.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ConfigError


@dataclass(frozen=True)
class GlueRelease:
    version: str  # Glue's GlueVersion: "5.0"
    spark: str  # the Spark it runs: "3.5.4" (a runtime here installs this PySpark)
    python: str  # its Python
    iceberg: str  # the Iceberg its --datalake-formats iceberg loads
    delta: str  # the Delta Lake its --datalake-formats delta loads

    @property
    def spark_line(self) -> str:
        return spark_line(self.spark)

    @property
    def scala(self) -> str:
        return scala_version(self.spark)


# The Glue versions sparkmark runs. Glue 6.0's Delta is 4.2.0; sparkmark loads 4.1.0, the
# newest delta-spark for Spark 4.1 that `make jars` resolves from Maven Central.
RELEASES: dict[str, GlueRelease] = {
    r.version: r
    for r in (
        GlueRelease("5.0", "3.5.4", "3.11", "1.7.1", "3.3.0"),
        GlueRelease("5.1", "3.5.6", "3.11", "1.10.0", "3.3.2"),
        GlueRelease("6.0", "4.1.1", "3.13", "1.11.0", "4.1.0"),
    )
}
# Glue versions a job may name that no runtime here serves, each with why.
NOT_SERVED = {
    "0.9": "Glue 0.9 reached its end of life on 2026-04-01",
    "1.0": "Glue 1.0 reached its end of life on 2026-04-01",
    "2.0": "Glue 2.0 reached its end of life on 2026-04-01",
    "3.0": "Glue 3.0 runs Spark 3.1 on Python 3.7, which sparkmark (Python 3.11 or later) cannot host",
    "4.0": (
        "Glue 4.0 runs Spark 3.3 on Python 3.10; PySpark 3.3 does not support the Python 3.11 "
        "sparkmark needs, so there is no runtime for it"
    ),
}
# The Spark line ``make jars`` pre-fetches connectors for (the one sparkmark's own
# environment installs); other lines resolve theirs on demand, into a folder of their own.
PRIMARY_LINE = "4.1"


def spark_line(version: str) -> str:
    """``3.5.4`` → ``3.5``; ``4.1.1.dev0`` → ``4.1``."""
    parts = version.split(".")
    return ".".join(parts[:2])


def scala_version(spark_version: str) -> str:
    """The Scala build PySpark's jars carry: 2.12 for Spark 3, 2.13 for Spark 4."""
    return "2.12" if spark_version.split(".", maxsplit=1)[0] == "3" else "2.13"


def release(version: str) -> GlueRelease:
    """The release a ``GlueVersion`` names, or one ConfigError line saying why it is not
    served here."""
    text = str(version).strip()
    if text in RELEASES:
        return RELEASES[text]
    if text in NOT_SERVED:
        raise ConfigError(f"GlueVersion {text}: {NOT_SERVED[text]}; use {', '.join(RELEASES)}")
    raise ConfigError(
        f"GlueVersion {text!r} is not a Glue version; Glue's versions are "
        f"{', '.join([*NOT_SERVED, *RELEASES])} (sparkmark runs {', '.join(RELEASES)})"
    )


def check(version: str | None) -> str | None:
    """A ``GlueVersion`` as a definition keeps it: one Glue knows (a version no runtime
    here serves is refused when a run needs it, not when the job is defined)."""
    if version is None:
        return None
    text = str(version).strip()
    if text not in RELEASES and text not in NOT_SERVED:
        release(text)  # raises its one line
    return text


def release_for_spark(spark_version: str) -> GlueRelease:
    """The Glue release an installed PySpark serves: the one running exactly that Spark,
    else the newest on its line; a Spark no Glue release runs is named in one line."""
    exact = [r for r in RELEASES.values() if r.spark == spark_version]
    if exact:
        return exact[-1]
    line = [r for r in RELEASES.values() if r.spark_line == spark_line(spark_version)]
    if line:
        return line[-1]
    raise ConfigError(
        f"PySpark {spark_version} is not the Spark of any Glue version sparkmark runs "
        f"({', '.join(f'{r.version}: Spark {r.spark}' for r in RELEASES.values())})"
    )

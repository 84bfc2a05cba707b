"""What differs between the Spark lines sparkmark runs on: Spark 4.1 (Glue 6.0) and
Spark 3.5 (Glue 5.0 and 5.1). Every version test on the installed PySpark is here.

The one difference that shapes behaviour is VARIANT (Spark 4.0 and later). sparkmark
holds a DynamicFrame's *choice* fields (records that disagree on a field's type) as
VARIANT columns. Spark 3.5 has no VARIANT, so under it a field whose records disagree
is read as Spark's JSON reader reads it, as a string holding each value's text, and
frames that would join two types in one field hold that field as text too
(docs/glue-versions.md lists what that changes).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pyspark
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StringType, StructType

from .glue_versions import GlueRelease, release_for_spark, spark_line

SPARK_VERSION: str = pyspark.__version__
LINE: str = spark_line(SPARK_VERSION)
HAS_VARIANT: bool = int(SPARK_VERSION.split(".", maxsplit=1)[0]) >= 4
# Python data sources (pyspark.sql.datasource): Spark 4.0 and later. sparkmark reads Avro
# with one where no spark-avro jar is needed, and Kinesis streams with one.
PYTHON_DATA_SOURCES: bool = HAS_VARIANT
# Spark's own XML source (format "xml"): Spark 4.0 and later.
XML_SOURCE: bool = HAS_VARIANT

# What a failed Spark query raises: PySpark 4 converts a task's failure into a
# PySparkException subclass; PySpark 3.5 raises some (an action's) as py4j's error.
QUERY_ERRORS: tuple[type[BaseException], ...] = (PySparkException, Py4JJavaError)

try:
    from pyspark.sql.types import VariantType
except ImportError:  # Spark 3.5: a type no column ever has, so isinstance tests are False

    class VariantType(DataType):  # type: ignore[no-redef]
        """Stands for Spark 4's VARIANT on a Spark without it; never instantiated."""


def struct_from_ddl(ddl: str) -> DataType:
    """A type given as DDL (``"id BIGINT, name STRING"`` is a struct). Spark 3.5 has no
    ``StructType.fromDDL``; its parser needs a running Spark, as every caller here has."""
    if HAS_VARIANT:
        return StructType.fromDDL(ddl)
    from pyspark.sql.types import _parse_datatype_string

    return _parse_datatype_string(ddl)


def try_cast(col: Column, data_type: str) -> Column:
    """``col`` cast to ``data_type``, null where a value does not convert, whatever Spark's
    ANSI setting. Spark 3.5's Column has no ``try_cast``: its SQL function is used on the
    column's SQL text."""
    if HAS_VARIANT:
        return col.try_cast(data_type)
    return F.expr(f"try_cast({col._jc.expr().sql()} AS {data_type})")  # type: ignore[operator]


def jdbc_column_refused(columns: list[str]) -> str | None:
    """Why Spark cannot read these JDBC columns safely, or None. Spark 3.5 quotes a column
    name in the SQL it sends without escaping a quote inside it (a ``"`` or a backtick), so
    such a name breaks the query or writes into it; Spark 4 escapes it."""
    if HAS_VARIANT:
        return None
    bad = next((c for c in columns if '"' in c or "`" in c), None)
    if bad is None:
        return None
    return (
        f"column {bad!r} holds a quote character, which Spark {SPARK_VERSION} puts into its SQL "
        "unescaped: rename or alias it (a query source), or set the job's GlueVersion to 6.0"
    )


@contextlib.contextmanager
def ansi_mode(session: Any) -> Iterator[None]:
    """Spark 4's default ANSI mode for what runs inside, on Spark 3.5 too (whose default is
    off): a cast that does not convert raises rather than giving null. A session whose
    user set the mode keeps it."""
    if HAS_VARIANT or session.conf.get("spark.sql.ansi.enabled", "false") == "true":
        yield
        return
    explicit = session.sparkContext.getConf().contains("spark.sql.ansi.enabled")
    if explicit:  # the user's own choice for their job
        yield
        return
    session.conf.set("spark.sql.ansi.enabled", "true")
    try:
        yield
    finally:
        session.conf.set("spark.sql.ansi.enabled", "false")


def needs_spark4(what: str) -> str:
    """The one line refusing a feature this Spark lacks."""
    return (
        f"{what} needs Spark 4 (Glue 6.0); this run is on Spark {SPARK_VERSION} (Glue "
        f"{glue_release().version}): set the job's GlueVersion to 6.0"
    )


def glue_release() -> GlueRelease:
    """The Glue release the installed PySpark is."""
    return release_for_spark(SPARK_VERSION)


def also_spark_defaults() -> list[str]:
    """``spark-submit`` options that read ``spark-defaults.conf`` beside a
    ``--properties-file``: Spark 4 takes ``--load-spark-defaults``; Spark 3.5 has no such
    option (and reads only the properties file)."""
    return ["--load-spark-defaults"] if HAS_VARIANT else []


def progress_document(progress: Any) -> dict[str, Any]:
    """A streaming query's progress as its JSON document: PySpark 4 gives progress
    objects (their ``json``; they are dicts too, of objects), PySpark 3.5 the parsed
    documents themselves."""
    text = getattr(progress, "json", None)
    if isinstance(text, str):
        return json.loads(text)
    return dict(progress)


def runtime_shown() -> dict[str, str]:
    """What a run keeps of the runtime it ran on: its Spark, and the Glue version that is."""
    return {"spark": SPARK_VERSION, "glue_version": glue_release().version}


def json_array_elements(name: str) -> Column:
    """Each element of the JSON array document in column ``name`` as its own JSON text;
    null for text that is not a JSON array."""
    if HAS_VARIANT:
        return F.expr(f"transform(cast(try_parse_json(`{name}`) as array<variant>), e -> to_json(e))")
    return F.from_json(F.col(name), "array<string>")  # a non-string element is kept as its JSON text


def is_json_object(text: Column) -> Column:
    """Whether JSON text is one object (a record): True, False, or null for no text."""
    if HAS_VARIANT:
        return F.try_parse_json(text).isNotNull() & F.schema_of_variant(F.try_parse_json(text)).startswith(
            "OBJECT"
        )
    return F.ltrim(text).startswith("{") & F.from_json(text, "map<string,string>").isNotNull()


def inferred_json_type(df: DataFrame, column: str) -> StructType | None:
    """The record type Spark's JSON reader infers for the JSON objects in ``column`` (its
    rule: a field whose records disagree becomes a string), or None when there are none.
    Spark 3.5's way to type JSON records; on Spark 4 records are typed through VARIANT."""
    session = df.sparkSession
    jvm = session._jvm
    assert jvm is not None
    texts = getattr(df.select(F.col(column).cast("string"))._jdf, "as")(
        jvm.org.apache.spark.sql.Encoders.STRING()
    )
    found = StructType.fromJson(json.loads(session._jsparkSession.read().json(texts).schema().json()))
    fields = [f for f in found.fields if f.name != "_corrupt_record"]
    return StructType(fields) if fields else None


def with_json_objects(df: DataFrame, text: Column, name: str) -> DataFrame | None:
    """``df`` with column ``name``: the JSON object in ``text`` as a struct, typed as Spark's
    JSON reader types all of them (Spark 3.5's unbox); None when none holds an object."""
    texts = df.select(text.alias(name))
    found = inferred_json_type(texts.where(is_json_object(F.col(name))), name)
    return None if found is None else df.withColumn(name, F.from_json(text, found))


def as_choice(col: Column, data_type: DataType) -> Column:
    """A column joined with one of another type, as the choice field they make: VARIANT
    on Spark 4; on Spark 3.5 the values' text (a struct or array as its JSON)."""
    if HAS_VARIANT:
        return col if isinstance(data_type, VariantType) else col.cast("variant")
    if isinstance(data_type, StringType):
        return col
    if data_type.typeName() in ("struct", "array", "map"):
        return F.to_json(col)
    return col.cast("string")

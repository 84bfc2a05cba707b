"""Choice types on Spark's VARIANT.

A field whose records disagree on its type (an int here, a string there) is kept
as a VARIANT column: nothing is coerced to text. Its *choice* is the set of
types its values hold, read with ``schema_of_variant``. Resolving a choice casts
(``try_variant_get``), projects one type, or splits the types into a struct or
into columns.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, StructType

from .. import spark_lines
from ..errors import TransformError
from ..sources.json_records import parse_records, to_ddl
from ..spark_lines import VariantType
from . import paths

__all__ = ["parse_records", "to_ddl"]  # JSON records as typed columns live with the sources

# Glue's type names → the families of VARIANT type names that hold such a value.
_FAMILIES = {
    "int": r"^(BIGINT|INT|SMALLINT|TINYINT)$",
    "long": r"^(BIGINT|INT|SMALLINT|TINYINT)$",
    "short": r"^(BIGINT|INT|SMALLINT|TINYINT)$",
    "byte": r"^(BIGINT|INT|SMALLINT|TINYINT)$",
    "double": r"^(DOUBLE|FLOAT|DECIMAL.*)$",
    "float": r"^(DOUBLE|FLOAT|DECIMAL.*)$",
    "decimal": r"^(DECIMAL.*)$",
    "string": r"^STRING$",
    "boolean": r"^BOOLEAN$",
    "date": r"^DATE$",
    "timestamp": r"^TIMESTAMP.*$",
    "struct": r"^OBJECT.*$",
    "array": r"^ARRAY.*$",
    "null": r"^NULL$",
}
_SPARK_TYPES = {
    "int": "int",
    "integer": "int",
    "long": "bigint",
    "bigint": "bigint",
    "short": "smallint",
    "byte": "tinyint",
    "double": "double",
    "float": "float",
    "decimal": "decimal(38,18)",
    "string": "string",
    "boolean": "boolean",
    "date": "date",
    "timestamp": "timestamp",
    "binary": "binary",
}


def glue_name(variant_type: str) -> str:
    """The Glue type name for a VARIANT type name: BIGINT → int, DECIMAL(3,1) → double…"""
    for name in ("int", "double", "string", "boolean", "date", "timestamp", "struct", "array", "null"):
        if re.match(_FAMILIES[name], variant_type):
            return name
    return variant_type.lower()


# Field metadata on a choice column: the Glue name of the integers it holds. A CSV
# field's integers are Glue's ``long`` (AWS's resolveChoice sample: ``provider id``
# is a choice of long and string); a JSON field's are ``int``.
INT_NAME = "sparkmark.choice.int"


def _int_name(df: DataFrame, parts: list[str]) -> str:
    if len(parts) == 1 and parts[0] in df.columns:
        return str(df.schema[parts[0]].metadata.get(INT_NAME, "int"))
    return "int"


def choice_names(df: DataFrame, parts: list[str], types: list[str]) -> list[str]:
    """The Glue names of the VARIANT types a choice field holds."""
    int_name = _int_name(df, parts)
    return sorted({int_name if glue_name(t) == "int" else glue_name(t) for t in types})


def text_fields(df: DataFrame, columns: list[str]) -> DataFrame:
    """A CSV's fields as a Glue DynamicFrame reads them from files, with no catalog to
    type them: text, an empty field kept as ``""`` (Spark's reader makes it null). Glue's
    output for such a read has ``"HP":"45"`` and ``"name":""``, never numbers."""
    return df.withColumns({c: F.coalesce(F.col(paths.quote([c])), F.lit("")) for c in columns})


# A catalog type's integers, by their Glue name (``bigint`` is Glue's ``long``).
_GLUE_INTS = {"bigint": "long", "int": "int", "integer": "int", "smallint": "short", "tinyint": "byte"}


def type_by_catalog(df: DataFrame, columns: dict[str, str]) -> DataFrame:
    """A CSV table's text fields typed as the catalog says (``columns``: name → Hive type),
    as a Glue DynamicFrame reads a catalog table: a column whose every value converts
    gets the catalog's type; one holding values that do not (text in a ``bigint``
    column) is a choice of the catalog's type and string, as in AWS's resolveChoice
    sample, where ``provider id`` is ``choice(long, string)``. An empty field of a typed
    column is missing; of a string column, ``""``. One Spark job counts the values."""
    text = [c for c, t in columns.items() if t.lower() == "string"]
    typed = {c: t for c, t in columns.items() if t.lower() != "string"}
    df = text_fields(df, text)
    if not typed:
        return df

    def value(name: str) -> Column:
        return F.nullif(F.trim(F.col(paths.quote([name]))), F.lit(""))

    aggs = []
    for i, (name, hive_type) in enumerate(typed.items()):
        aggs += [
            F.count(value(name)).alias(f"p{i}"),
            F.count(spark_lines.try_cast(value(name), hive_type)).alias(f"c{i}"),
        ]
    counts = df.agg(*aggs).head(1)[0]
    for i, (name, hive_type) in enumerate(typed.items()):
        converted = spark_lines.try_cast(value(name), hive_type)
        if counts[f"c{i}"] == counts[f"p{i}"]:
            df = df.withColumn(name, converted)
            continue
        column = F.col(paths.quote([name]))
        mixed = (  # Spark 3.5 has no VARIANT: such a column stays its text
            F.when(converted.isNotNull(), converted.cast("variant")).when(
                value(name).isNotNull(), column.cast("variant")
            )
            if spark_lines.HAS_VARIANT
            else column
        )
        int_name = _GLUE_INTS.get(hive_type.lower(), "int")
        df = df.withColumn(name, mixed).withMetadata(name, {INT_NAME: int_name})
    return df


def spark_type(glue_type: str) -> str:
    return _SPARK_TYPES.get(glue_type.lower(), glue_type)


def is_choice(data_type: DataType) -> bool:
    return isinstance(data_type, VariantType)


def choice_paths(schema: StructType, prefix: list[str] | None = None) -> list[list[str]]:
    out = []
    for f in schema.fields:
        path = (prefix or []) + [f.name]
        if isinstance(f.dataType, VariantType):
            out.append(path)
        elif isinstance(f.dataType, StructType):
            out.extend(choice_paths(f.dataType, path))
    return out


def observed_types(df: DataFrame, parts_list: list[list[str]]) -> dict[str, list[str]]:
    """The VARIANT type names each choice field holds (one Spark job for all fields)."""
    if not parts_list:
        return {}
    aggs = [
        F.collect_set(F.expr(f"schema_of_variant({paths.quote(p)})")).alias(f"t{i}")
        for i, p in enumerate(parts_list)
    ]
    row = df.agg(*aggs).head(1)[0]
    return {
        paths.quote(p): sorted(t for t in row[f"t{i}"] if t not in ("NULL", "VOID"))
        for i, p in enumerate(parts_list)
    }


def cast(col: Column, glue_type: str) -> Column:
    return F.try_variant_get(col, "$", spark_type(glue_type))


def project(col: Column, glue_type: str) -> Column:
    family = _FAMILIES.get(glue_type.lower())
    if family is None:
        raise TransformError(f"cannot project a choice onto type {glue_type!r}")
    return F.when(F.schema_of_variant(col).rlike(family), F.try_variant_get(col, "$", spark_type(glue_type)))


def resolve(df: DataFrame, path: str, action: str, types: list[str] | None = None) -> DataFrame:
    """Apply one ResolveChoice action to the choice field at ``path``. A path that no
    record has (an empty frame: a run with nothing new) is left alone, as on Glue."""
    parts = paths.split_path(path)
    found = paths.field_type(df.schema, parts)
    if found is None:
        return df
    if isinstance(found, ArrayType) and isinstance(found.elementType, VariantType):
        raise TransformError(f"field {path!r} is an array of choices; resolve its elements with Map")
    if not is_choice(found):
        # Glue allows resolving a field that is not a choice: cast still converts it, and a
        # value that does not convert becomes null (under Spark's ANSI mode too).
        if action.startswith("cast:"):
            return paths.replace(df, parts, lambda c: spark_lines.try_cast(c, spark_type(action[5:])))
        return df
    kind, _, target = action.partition(":")
    if kind == "cast":
        return paths.replace(df, parts, lambda c: cast(c, target))
    if kind == "project":
        return paths.replace(df, parts, lambda c: project(c, target))
    names = choice_names(
        df, parts, types if types is not None else observed_types(df, [parts])[paths.quote(parts)]
    )
    if kind == "make_struct":
        return paths.replace(df, parts, lambda c: F.struct(*[project(c, n).alias(n) for n in names]))
    if kind == "make_cols":
        if len(parts) != 1:
            base = df

            def add_field(name: str) -> Callable[[Column], Column]:
                return lambda c: c.withField(f"{parts[-1]}_{name}", project(paths.column(parts), name))

            for n in names:
                base = paths.replace(base, parts[:-1], add_field(n))
            return paths.drop(base, parts)
        out = df
        for n in names:
            out = out.withColumn(f"{parts[0]}_{n}", project(F.col(paths.quote(parts)), n))
        return out.drop(parts[0])
    raise TransformError(
        f"unsupported ResolveChoice action {action!r}: use cast:TYPE, project:TYPE, make_struct "
        "or make_cols (match_catalog needs the Data Catalog)"
    )


def catalog_casts(
    glue_ctx, targets: list[tuple[str, str]], database: str | None, table_name: str | None
) -> list[tuple[str, str]]:
    """match_catalog → cast:<the catalog column's type>, field by field."""
    if not database or not table_name:
        raise TransformError("ResolveChoice match_catalog needs database= and table_name=")
    from ..catalog.store import CatalogStore
    from ..engine.store import StateStore
    from ..settings import Settings

    if glue_ctx is not None:
        state = glue_ctx.state_store()
    else:  # a frame made without a GlueContext
        state = StateStore.from_settings(Settings.from_env())
    table = CatalogStore(state).table(database, table_name)
    types = {c.name.lower(): c.type for c in table.columns + table.partition_keys}
    resolved = []
    for path, action in targets:
        if action != "match_catalog":
            resolved.append((path, action))
            continue
        top = paths.split_path(path)[0].lower()
        if top not in types:
            raise TransformError(f"match_catalog: {database}.{table_name} has no column {top!r}")
        resolved.append((path, f"cast:{types[top]}"))
    return resolved

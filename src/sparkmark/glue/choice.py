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
from pyspark.sql.types import ArrayType, DataType, StructType, VariantType

from ..errors import TransformError
from . import paths

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
_INT_TEXT = r"^[+-]?[0-9]{1,18}$"
_NUMBER_TEXT = r"^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$"


def _int_name(df: DataFrame, parts: list[str]) -> str:
    if len(parts) == 1 and parts[0] in df.columns:
        return str(df.schema[parts[0]].metadata.get(INT_NAME, "int"))
    return "int"


def choice_names(df: DataFrame, parts: list[str], types: list[str]) -> list[str]:
    """The Glue names of the VARIANT types a choice field holds."""
    int_name = _int_name(df, parts)
    return sorted({int_name if glue_name(t) == "int" else glue_name(t) for t in types})


def type_text_columns(df: DataFrame, columns: list[str]) -> DataFrame:
    """Text columns (a CSV's) typed by their values, as a Glue DynamicFrame types them: a
    column of whole numbers is long, of numbers double, of text string; one holding
    numbers and text is a choice of them (``long`` and ``string``). Empty values count
    as missing. One Spark job reads what each column holds."""
    if not columns:
        return df
    aggs = []
    for i, name in enumerate(columns):
        value = F.nullif(F.trim(F.col(paths.quote([name]))), F.lit(""))
        aggs += [
            F.count(value).alias(f"p{i}"),
            F.count(F.when(value.rlike(_INT_TEXT), 1)).alias(f"i{i}"),
            F.count(F.when(value.rlike(_NUMBER_TEXT), 1)).alias(f"n{i}"),
        ]
    counts = df.agg(*aggs).head(1)[0]
    for i, name in enumerate(columns):
        present, ints, numbers = counts[f"p{i}"], counts[f"i{i}"], counts[f"n{i}"]
        if present == 0 or numbers == 0:
            continue  # text (or nothing): a string, as read
        column = F.col(paths.quote([name]))
        value = F.nullif(F.trim(column), F.lit(""))
        if ints == present:
            df = df.withColumn(name, value.cast("bigint"))
        elif numbers == present:
            df = df.withColumn(name, value.cast("double"))
        else:
            text = F.expr(
                f"try_variant_get(parse_json(to_json(named_struct('v', {paths.quote([name])}))), '$.v', 'variant')"
            )
            mixed = F.when(value.rlike(_NUMBER_TEXT), F.parse_json(value)).when(column.isNotNull(), text)
            df = df.withColumn(name, mixed).withMetadata(name, {INT_NAME: "long"})
    return df


def spark_type(glue_type: str) -> str:
    return _SPARK_TYPES.get(glue_type.lower(), glue_type)


def parse_records(df: DataFrame, text_column: str, keep: list[str]) -> tuple[DataFrame, DataFrame]:
    """JSON text, one record per row, → typed columns; conflicting fields stay VARIANT.

    Returns the records and the rows that are not JSON objects (malformed text, or a
    bare value): those become error records rather than being dropped silently.
    """
    parsed = df.select(
        F.col(text_column).alias("__sm_text"), F.try_parse_json(F.col(text_column)).alias("__sm_v"), *keep
    )
    is_record = F.col("__sm_v").isNotNull() & F.schema_of_variant("__sm_v").startswith("OBJECT")
    bad = parsed.where(~is_record | is_record.isNull()).select(
        F.lit("not a JSON record").alias("error"),
        F.col("__sm_text").alias("record"),
        F.lit("read").alias("transformation"),
    )
    good = parsed.where(is_record)
    agg = good.agg(F.schema_of_variant_agg("__sm_v")).head(1)[0][0]
    if agg is None or not agg.startswith("OBJECT<"):  # no records at all
        return good.select(*keep), bad
    ddl = to_ddl(agg)
    typed = good.select(F.expr(f"variant_get(__sm_v, '$', '{ddl}')").alias("__sm_r"), *keep)
    return typed.select("__sm_r.*", *keep), bad


def to_ddl(variant_schema: str) -> str:
    """``schema_of_variant_agg`` output as a Spark DDL type: OBJECT → STRUCT, a field that
    was null in every record (VOID) → STRING, since Spark has no null-typed column, and a
    fractional JSON number (which VARIANT holds as DECIMAL) → DOUBLE, as Glue types it."""
    ddl = re.sub(r"\bVOID\b", "STRING", re.sub(r"\bOBJECT<", "STRUCT<", variant_schema))
    return re.sub(r"\bDECIMAL\(\d+,\s*\d+\)", "DOUBLE", ddl)


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
            return paths.replace(df, parts, lambda c: c.try_cast(spark_type(action[5:])))
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

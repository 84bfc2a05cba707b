"""A query's results as Athena gives them: its columns' types in Athena's names
(``varchar``, ``integer``, ``row`` …) with their precision and scale, each value as the
text Athena writes (``2024-01-02 03:04:05.000``, ``[1, 2]``, ``{a=1}``, ``1.0E10``),
and the CSV file Athena writes to the result location: a header, every field quoted,
a null as an empty field with no quotes.
"""

from __future__ import annotations

import binascii
import io
import math
from collections.abc import Iterable, Iterator
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

# Spark's simple type names as Athena names them, with ColumnInfo's precision.
_SCALARS = {
    "boolean": ("boolean", 0),
    "tinyint": ("tinyint", 3),
    "smallint": ("smallint", 5),
    "int": ("integer", 10),
    "bigint": ("bigint", 19),
    "float": ("float", 7),
    "double": ("double", 17),
    "string": ("varchar", 2147483647),
    "binary": ("varbinary", 1073741824),
    "date": ("date", 0),
    "timestamp": ("timestamp", 3),
    "timestamp_ntz": ("timestamp", 3),
    "void": ("unknown", 0),
}


def athena_type(simple: str) -> tuple[str, int, int]:
    """(type, precision, scale) of a column of Spark's simple type name."""
    base = simple.split("<", 1)[0].split("(", 1)[0].lower()
    if base == "decimal":
        inside = simple[simple.index("(") + 1 : simple.index(")")] if "(" in simple else "10,0"
        precision, scale = (int(p) for p in inside.split(","))
        return "decimal", precision, scale
    if base in ("char", "varchar"):
        return "varchar", 2147483647, 0
    if base == "array":
        return "array", 0, 0
    if base == "map":
        return "map", 0, 0
    if base == "struct":
        return "row", 0, 0
    name, precision = _SCALARS.get(base, ("varchar", 2147483647))
    return name, precision, 0


def column_info(name: str, simple: str, nullable: bool = True) -> dict[str, Any]:
    """Athena's ColumnInfo of one result column."""
    kind, precision, scale = athena_type(simple)
    return {
        "CatalogName": "hive",
        "SchemaName": "",
        "TableName": "",
        "Name": name,
        "Label": name,
        "Type": kind,
        "Precision": precision,
        "Scale": scale,
        "Nullable": "NULLABLE" if nullable else "NOT_NULL",
        "CaseSensitive": kind == "varchar",
    }


def java_double(value: float) -> str:
    """A double as Java's (and so Trino's) ``Double.toString`` writes it: plain between
    10^-3 and 10^7, else ``d.dddE±n``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        return repr(value)  # plain in this range, with a fraction, as Java's
    digits = Decimal(repr(magnitude)).normalize().as_tuple()
    figures = "".join(str(d) for d in digits.digits)
    power = len(figures) - 1 + int(digits.exponent)
    sign = "-" if value < 0 else ""
    return f"{sign}{figures[0]}.{figures[1:] or '0'}E{power}"


def text(value: Any, nested: bool = False) -> str | None:
    """One value as Athena writes it in results (None for a null)."""
    if value is None:
        return None if not nested else "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, time):
        return value.strftime("%H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return " ".join(binascii.hexlify(bytes(value)[i : i + 1]).decode() for i in range(len(bytes(value))))
    if hasattr(value, "asDict"):  # a Spark Row: Athena's row {name=value, …}
        fields = value.asDict(recursive=False)
        return "{" + ", ".join(f"{k}={text(v, True)}" for k, v in fields.items()) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{text(k, True)}={text(v, True)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(text(v, True)) for v in value) + "]"
    return str(value)


def csv_line(values: Iterable[str | None]) -> str:
    """One line of Athena's result CSV: each field quoted, a null empty and unquoted."""
    return ",".join("" if v is None else '"' + v.replace('"', '""') + '"' for v in values) + "\n"


def read_csv(stream: Iterable[str]) -> Iterator[list[str | None]]:
    """The rows of an Athena result CSV, with nulls (empty unquoted fields) as None and
    empty strings (``""``) as ''."""
    for line in stream:
        yield _fields(line.rstrip("\n").rstrip("\r"))


def _fields(line: str) -> list[str | None]:
    out: list[str | None] = []
    i, n = 0, len(line)
    while True:
        if i < n and line[i] == '"':
            j = i + 1
            buf = io.StringIO()
            while j < n:
                if line[j] == '"':
                    if j + 1 < n and line[j + 1] == '"':
                        buf.write('"')
                        j += 2
                        continue
                    break
                buf.write(line[j])
                j += 1
            out.append(buf.getvalue())
            i = j + 1
        else:
            j = line.find(",", i)
            j = n if j < 0 else j
            out.append(line[i:j] or None)
            i = j
        if i >= n:
            return out
        i += 1  # the comma
        if i == n:
            out.append(None)
            return out


def metadata_document(columns: list[dict[str, Any]]) -> bytes:
    """The ``.metadata`` file beside a result: the columns' ColumnInfo as JSON (Athena's
    own is an undocumented binary encoding of the same information)."""
    import json

    return json.dumps({"ColumnInfo": columns}).encode()


def manifest(paths: Iterable[str]) -> str:
    """A CTAS's, INSERT's or UNLOAD's ``-manifest.csv``: the files it wrote, one a line."""
    return "".join(f"{p}\n" for p in paths)

"""Athena's SQL on Spark: what kind of statement a query is, and the Spark SQL that runs
it.

Athena's engine speaks Trino's dialect for queries and Hive's for most DDL. Queries
(``SELECT``, ``WITH``, ``VALUES``, ``INSERT INTO``, a view's body, ``EXPLAIN``'s) are
translated by sqlglot's Trino-to-Spark translation; Hive DDL (``CREATE EXTERNAL TABLE``,
``MSCK REPAIR TABLE``, ``ALTER TABLE … ADD PARTITION``, ``DROP``, ``SHOW``,
``DESCRIBE``) is what Spark's own parser reads, and runs as written. ``CREATE TABLE …
WITH (…) AS`` (CTAS) and ``UNLOAD`` are Athena's own; their properties are read here
and the write is planned from them.

What cannot be translated is refused in one line that names the construct, in
Athena's error style (``SYNTAX_ERROR: line 1:8: …``, ``NOT_SUPPORTED: …``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ..errors import SparkmarkError


class AthenaSqlError(SparkmarkError):
    """A query Athena's API here cannot run, in one line naming the construct."""


@dataclass(frozen=True)
class Names:
    """How a statement's table names resolve: its database, and which tables are Iceberg
    tables (read through ``iceberg_catalog``, the engine's Iceberg catalog over the Glue
    catalog, or refused when the engine has none)."""

    database: str = "default"
    is_iceberg: Callable[[str, str], bool] | None = None
    iceberg_catalog: str | None = None


_NAMES: ContextVar[Names | None] = ContextVar("athena_names", default=None)


# Athena's StatementType of each kind of statement.
DML, DDL, UTILITY = "DML", "DDL", "UTILITY"

# What a statement is, by its first words (comments and parentheses before them skipped).
_QUERY = ("SELECT", "WITH", "VALUES", "TABLE")
_PASSED = {  # Hive DDL and utility statements Spark's parser reads as Athena's users write them
    "MSCK": DDL,
    "ALTER": DDL,
    "DROP": DDL,
    "SHOW": UTILITY,
    "DESCRIBE": UTILITY,
    "DESC": UTILITY,
}
FORMATS = {"PARQUET": "parquet", "ORC": "orc", "JSON": "json", "TEXTFILE": "csv", "AVRO": "avro"}
COMPRESSIONS = {"SNAPPY": "snappy", "GZIP": "gzip", "ZSTD": "zstd", "NONE": "none", "LZ4": "lz4"}
_COMMENTS = re.compile(r"(--[^\n]*(\n|$)|/\*.*?\*/|\s+)", re.S)


@dataclass(frozen=True)
class Write:
    """Where and how a CTAS, ``INSERT INTO`` or ``UNLOAD`` writes."""

    location: str
    format: str = "parquet"
    partitioned_by: tuple[str, ...] = ()
    compression: str | None = None
    delimiter: str | None = None
    table: tuple[str, str] | None = None  # CTAS's new table (database, name)
    with_data: bool = True


@dataclass(frozen=True)
class Plan:
    """A statement as it runs here: its kind, its Spark SQL, and what it writes."""

    statement_type: str  # Athena's DML, DDL or UTILITY
    sql: str  # the Spark SQL that runs (for CTAS and UNLOAD, the query that is written)
    kind: str = "query"  # query | ddl | ctas | insert | unload | show
    write: Write | None = None
    show: str | None = None  # SHOW's subject (tables, databases, partitions, columns, create)
    created: tuple[str, str] | None = None  # the table a CREATE EXTERNAL TABLE makes
    partitions: tuple[str, str] | None = None  # the table whose partitions a statement changes
    # Statements about databases run whether or not the query's database exists.
    needs_database: bool = True
    notes: tuple[str, ...] = field(default=())


def _head(sql: str) -> str:
    """The statement without leading comments and parentheses."""
    text = sql
    while True:
        stripped = _COMMENTS.match(text)
        if stripped and stripped.end() > 0:
            text = text[stripped.end() :]
            continue
        if text.startswith("("):
            text = text[1:]
            continue
        return text


def _statement(sql: str) -> str:
    """A statement that runs as written: its leading comments, trailing semicolon and
    Athena's catalog name left out."""
    return without_catalog(_head(sql).rstrip().rstrip(";"))


def _words(sql: str, n: int = 3) -> list[str]:
    return re.findall(r"[A-Za-z_]+", _head(sql))[:n]


def _sqlglot():
    import sqlglot

    return sqlglot


def _parse_error(exc: Any) -> AthenaSqlError:
    errors = getattr(exc, "errors", None) or []
    if errors:
        first = errors[0]
        text = re.sub(r"<Token [^>]*text: ([^,]*),[^>]*>", r"'\1'", str(first.get("description", "")))
        return AthenaSqlError(f"SYNTAX_ERROR: line {first.get('line')}:{first.get('col')}: {text}")
    return AthenaSqlError(f"SYNTAX_ERROR: {str(exc).splitlines()[0]}")


def _tree(sql: str, parameters: list[str] | None = None) -> Any:
    """One Trino statement's tree, its ``?`` filled with ``parameters`` (Athena's
    ExecutionParameters, each a SQL literal as written, in order), its names resolved."""
    sqlglot = _sqlglot()
    from sqlglot import exp
    from sqlglot.errors import ParseError

    try:
        trees = [t for t in sqlglot.parse(sql, read="trino") if t is not None]
    except ParseError as exc:
        raise _parse_error(exc) from None
    if len(trees) != 1:
        raise AthenaSqlError(
            f"NOT_SUPPORTED: a query holds one statement; this one holds {len(trees)}"
            if trees
            else "SYNTAX_ERROR: the query is empty"
        )
    tree = trees[0]
    if isinstance(tree, exp.Command):
        raise AthenaSqlError(f"NOT_SUPPORTED: {tree.this} … is not Athena SQL that sparkmark translates")
    places = list(tree.find_all(exp.Placeholder))
    given = parameters or []
    if len(places) != len(given):
        raise AthenaSqlError(
            f"INVALID_PARAMETER: the query has {len(places)} parameter(s) (?) and "
            f"{len(given)} ExecutionParameters were given"
        )
    for place, value in zip(places, given, strict=True):
        try:
            literal = sqlglot.parse_one(value, read="trino")
        except ParseError:
            literal = None
        if not _is_literal(literal):
            raise AthenaSqlError(f"INVALID_PARAMETER: {value!r} is not a SQL literal")
        place.replace(literal)
    _refuse_unordered(tree)
    _one_catalog(tree)
    _iceberg_names(tree)
    return tree


def _spark(tree: Any) -> str:
    sqlglot = _sqlglot()
    from sqlglot.errors import UnsupportedError

    try:
        return str(tree.sql(dialect="spark", unsupported_level=sqlglot.ErrorLevel.RAISE))
    except UnsupportedError as exc:
        raise AthenaSqlError(f"NOT_SUPPORTED: {str(exc).splitlines()[0]}") from None


def translate(sql: str, parameters: list[str] | None = None) -> str:
    """One Trino statement as Spark SQL."""
    return _spark(_tree(sql, parameters))


CATALOG = "awsdatacatalog"  # Athena's name for the Glue catalog, the one catalog here
_CATALOG_PREFIX = re.compile(r"""(?i)(?<![\w.])[`"]?awsdatacatalog[`"]?\s*\.\s*""")


def _one_catalog(tree: Any) -> None:
    """Names qualified with Athena's catalog (``awsdatacatalog.db.t``) as Spark names them
    (``db.t``); another catalog is refused."""
    from sqlglot import exp

    for table in tree.find_all(exp.Table):
        catalog = table.args.get("catalog")
        if catalog is None:
            continue
        if catalog.name.lower() != CATALOG:
            raise AthenaSqlError(
                f"NOT_SUPPORTED: catalog {catalog.name}: the one catalog here is AwsDataCatalog, the Glue catalog"
            )
        table.set("catalog", None)


def _iceberg_names(tree: Any) -> None:
    """Iceberg tables named through the engine's Iceberg catalog (Spark's session catalog
    reads Glue's Hive tables only)."""
    from sqlglot import exp

    names = _NAMES.get() or Names()
    if names.is_iceberg is None:
        return
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if not table.name or (not table.db and table.name.lower() in ctes) or table.args.get("catalog"):
            continue
        database = (table.db or names.database).lower()
        if not names.is_iceberg(database, table.name.lower()):
            continue
        if names.iceberg_catalog is None:
            raise AthenaSqlError(
                f"NOT_SUPPORTED: Iceberg table {database}.{table.name.lower()}: the Athena engine reads "
                "Iceberg tables when it runs in `sparkmark api` (whose Iceberg REST endpoint it reads them through)"
            )
        table.set("db", exp.to_identifier(database))
        table.set("catalog", exp.to_identifier(names.iceberg_catalog))


def without_catalog(text: str) -> str:
    """Hive DDL with Athena's catalog left out of its names."""
    return _CATALOG_PREFIX.sub("", text)


def _is_literal(node: Any) -> bool:
    """A value a parameter may be: a literal, a signed number, NULL, a boolean, or a
    typed literal (DATE '…', TIMESTAMP '…'); never an expression or a name."""
    from sqlglot import exp

    if isinstance(node, (exp.Literal, exp.Null, exp.Boolean)):
        return True
    if isinstance(node, exp.Neg):
        return isinstance(node.this, exp.Literal) and not node.this.is_string
    if isinstance(node, exp.Cast):
        return isinstance(node.this, exp.Literal) and node.this.is_string
    return False


def _refuse_unordered(tree: Any) -> None:
    """Constructs whose Spark translation would give other rows, refused rather than
    answered differently: ``array_agg(x ORDER BY y)`` loses its order in Spark's
    ``collect_list``."""
    from sqlglot import exp

    for agg in tree.find_all(exp.ArrayAgg):
        if agg.find(exp.Order) is not None:
            raise AthenaSqlError(
                "NOT_SUPPORTED: array_agg(… ORDER BY …): Spark's collect_list keeps no order; "
                "sort the array (array_sort) instead"
            )


def _literal(value: Any) -> Any:
    from sqlglot import exp

    if isinstance(value, exp.Literal):
        return value.this
    if isinstance(value, exp.Array):
        return [_literal(v) for v in value.expressions]
    if isinstance(value, (exp.Boolean,)):
        return value.this
    return value.sql(dialect="trino")


def _properties(create: Any) -> dict[str, Any]:
    from sqlglot import exp

    found: dict[str, Any] = {}
    props = create.args.get("properties")
    for prop in props.expressions if props is not None else []:
        if isinstance(prop, exp.FileFormatProperty):
            found["format"] = _literal(prop.this)
        elif isinstance(prop, exp.PartitionedByProperty):
            found["partitioned_by"] = _literal(prop.this)
        elif isinstance(prop, exp.WithDataProperty):
            found["with_data"] = not prop.args.get("no")
        elif isinstance(prop, exp.LocationProperty):
            found["external_location"] = _literal(prop.this)
        elif isinstance(prop, exp.Property):
            found[str(prop.name).lower()] = _literal(prop.args["value"])
        else:
            raise AthenaSqlError(f"NOT_SUPPORTED: the table property {prop.sql(dialect='trino')}")
    return found


def _format(value: Any) -> str:
    name = str(value or "PARQUET").upper()
    if name not in FORMATS:
        raise AthenaSqlError(
            f"NOT_SUPPORTED: format '{value}'; Athena's CTAS formats here are {', '.join(FORMATS)}"
        )
    return FORMATS[name]


def _table_name(table: Any, database: str) -> tuple[str, str]:
    return (table.db or database).lower(), table.name.lower()


def _ctas(sql: str, database: str, default_location: str) -> Plan:
    sqlglot = _sqlglot()
    from sqlglot import exp
    from sqlglot.errors import ParseError

    try:
        tree = sqlglot.parse_one(sql, read="trino")
    except ParseError as exc:
        raise _parse_error(exc) from None
    if not isinstance(tree, exp.Create) or tree.expression is None:
        raise AthenaSqlError("SYNTAX_ERROR: CREATE TABLE … AS needs a query after AS")
    _one_catalog(tree)
    props = _properties(tree)
    if str(props.get("table_type", "HIVE")).upper() != "HIVE":
        raise AthenaSqlError(
            f"NOT_SUPPORTED: CTAS with table_type '{props['table_type']}': sparkmark's Athena API "
            "makes Hive tables; create Iceberg tables with Spark, PyIceberg or the REST catalog"
        )
    if str(props.get("is_external", "true")).lower() != "true":
        raise AthenaSqlError("NOT_SUPPORTED: is_external = false: Athena allows it for Iceberg tables only")
    if props.get("bucketed_by"):
        raise AthenaSqlError("NOT_SUPPORTED: bucketed_by: sparkmark's CTAS does not bucket")
    table = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    name = _table_name(table, database)
    compression = props.get("write_compression") or props.get("parquet_compression")
    if compression is not None and str(compression).upper() not in COMPRESSIONS:
        raise AthenaSqlError(f"NOT_SUPPORTED: write_compression '{compression}'")
    partitioned = props.get("partitioned_by") or []
    location = props.get("external_location") or default_location
    query = translate(tree.expression.sql(dialect="trino"))
    unknown = set(props) - {
        "format",
        "external_location",
        "partitioned_by",
        "write_compression",
        "parquet_compression",
        "with_data",
        "table_type",
        "field_delimiter",
        "bucket_count",
        "is_external",
    }
    if unknown:
        raise AthenaSqlError(f"NOT_SUPPORTED: the CTAS property {sorted(unknown)[0]}")
    return Plan(
        DDL,
        query,
        kind="ctas",
        write=Write(
            location=location,
            format=_format(props.get("format")),
            partitioned_by=tuple(str(p).lower() for p in partitioned),
            compression=COMPRESSIONS[str(compression).upper()] if compression else None,
            delimiter=props.get("field_delimiter"),
            table=name,
            with_data=props.get("with_data", True),
        ),
    )


_UNLOAD = re.compile(
    r"^UNLOAD\s*\((?P<query>.*)\)\s*TO\s*'(?P<to>[^']+)'\s*(WITH\s*\((?P<with>.*)\))?\s*;?\s*$", re.S | re.I
)


def _unload(sql: str) -> Plan:
    found = _UNLOAD.match(_head(sql) if not sql.lstrip().startswith("(") else sql.strip())
    if found is None:
        raise AthenaSqlError("SYNTAX_ERROR: UNLOAD is UNLOAD (query) TO 's3://…' WITH (format = …)")
    props: dict[str, Any] = {}
    if found.group("with"):
        sqlglot = _sqlglot()
        from sqlglot import exp

        fake = sqlglot.parse_one(f"CREATE TABLE x WITH ({found.group('with')}) AS SELECT 1", read="trino")
        assert isinstance(fake, exp.Create)
        props = _properties(fake)
    return Plan(
        UTILITY,
        translate(found.group("query")),
        kind="unload",
        write=Write(
            location=found.group("to"),
            format=_format(props.get("format", "TEXTFILE")),
            partitioned_by=tuple(str(p).lower() for p in props.get("partitioned_by") or []),
            compression=COMPRESSIONS.get(str(props.get("compression", "")).upper()),
            delimiter=props.get("field_delimiter"),
        ),
    )


def _insert(sql: str, database: str, parameters: list[str] | None) -> Plan:
    sqlglot = _sqlglot()
    from sqlglot import exp

    spark_sql = translate(sql, parameters)
    tree = sqlglot.parse_one(spark_sql, read="spark")
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    name = _table_name(target, database)
    return Plan(DML, spark_sql, kind="insert", write=Write(location="", table=name))


def plan(
    sql: str,
    database: str = "default",
    parameters: list[str] | None = None,
    ctas_location: str = "",
    names: Names | None = None,
) -> Plan:
    """How the statement ``sql`` runs here (``ctas_location``: where a CTAS with no
    ``external_location`` writes, as Athena's ``tables/<query id>/`` under the result
    location; ``names``: how its tables resolve)."""
    token = _NAMES.set(names or Names(database))
    try:
        return _plan(sql, database, parameters, ctas_location)
    finally:
        _NAMES.reset(token)


def _plan(sql: str, database: str, parameters: list[str] | None, ctas_location: str) -> Plan:
    words = [w.upper() for w in _words(sql, 4)]
    if not words:
        raise AthenaSqlError("SYNTAX_ERROR: the query is empty")
    first = words[0]
    if first in _QUERY:
        return Plan(DML, translate(sql, parameters))
    if first == "EXPLAIN":
        rest = re.sub(r"^\s*EXPLAIN(\s+ANALYZE)?", "", _head(sql), flags=re.I)
        return Plan(UTILITY, "EXPLAIN " + translate(rest, parameters), kind="show", show="explain")
    if first == "INSERT":
        return _insert(sql, database, parameters)
    if first == "UNLOAD":
        return _unload(sql)
    if first in ("MERGE", "UPDATE", "DELETE"):
        return _modify(sql, first, parameters)
    if first in ("OPTIMIZE", "VACUUM"):
        return _maintain(sql, first, database)
    if first in ("CREATE", "REPLACE"):
        return _create(sql, words, database, parameters, ctas_location)
    if first in ("MSCK", "ALTER"):
        found = re.search(r"(?is)\bTABLE\s+([`\"\w.]+)\s*(.*)$", _statement(sql))
        name = found.group(1).replace("`", "").replace('"', "").lower().split(".") if found else []
        table = (name[0], name[1]) if len(name) == 2 else (database, name[0]) if name else None
        touches = first == "MSCK" or (found is not None and re.search(r"(?i)\bPARTITION\b", found.group(2)))
        return Plan(DDL, _statement(sql), kind="ddl", partitions=table if touches else None)
    if first in ("DROP", "SHOW") and words[1:2] in (["DATABASE"], ["SCHEMA"], ["DATABASES"], ["SCHEMAS"]):
        shown = words[1].lower() if first == "SHOW" else None
        return Plan(
            _PASSED[first], _statement(sql), kind="show" if shown else "ddl", show=shown, needs_database=False
        )
    if first in _PASSED:
        subject = words[1].lower() if first == "SHOW" and len(words) > 1 else None
        return Plan(
            _PASSED[first],
            _statement(sql),
            kind="show" if subject or first.startswith("DESC") else "ddl",
            show=subject or ("describe" if first.startswith("DESC") else None),
        )
    raise AthenaSqlError(
        f"NOT_SUPPORTED: statements beginning {first} are not Athena SQL that sparkmark runs"
    )


def _iceberg_target(table: Any, verb: str) -> None:
    names = _NAMES.get() or Names()
    catalog = table.args.get("catalog")
    if names.iceberg_catalog is None or catalog is None or catalog.name != names.iceberg_catalog:
        where = f"{(table.db or names.database).lower()}.{table.name.lower()}"
        raise AthenaSqlError(
            f"NOT_SUPPORTED: {verb} on {where}: Athena changes rows of Iceberg tables only"
            + ("" if names.iceberg_catalog else ", which the engine reads when it runs in `sparkmark api`")
        )


def _modify(sql: str, verb: str, parameters: list[str] | None) -> Plan:
    """MERGE, UPDATE and DELETE on an Iceberg table, through the engine's Iceberg catalog."""
    from sqlglot import exp

    tree = _tree(sql, parameters)
    target = tree.this
    if isinstance(target, exp.Alias):
        target = target.this
    if not isinstance(target, exp.Table):
        raise AthenaSqlError(f"SYNTAX_ERROR: {verb} names no table")
    _iceberg_target(target, verb)
    using = tree.args.get("using")
    if isinstance(using, exp.Values) and using.args.get("alias") is not None:
        # Spark reads a VALUES source only as a subquery: USING (SELECT * FROM VALUES … AS s(…)) s
        name = using.args["alias"].name
        tree.set("using", exp.select("*").from_(using.copy()).subquery(alias=name))
    return Plan(DML, _spark(tree), kind="ddl")


_MAINTAIN = re.compile(
    r"(?is)^(OPTIMIZE|VACUUM)\s+([`\"\w.]+)"
    r"(\s+REWRITE\s+DATA\s+USING\s+BIN_PACK(\s+WHERE\s+(?P<where>.*))?)?\s*;?\s*$"
)


def _maintain(sql: str, verb: str, database: str) -> Plan:
    """OPTIMIZE … REWRITE DATA USING BIN_PACK [WHERE …] and VACUUM, as Iceberg's Spark
    procedures (rewrite_data_files, expire_snapshots) on the table."""
    from sqlglot import exp

    found = _MAINTAIN.match(_statement(sql))
    if found is None or (verb == "OPTIMIZE" and found.group(3) is None):
        raise AthenaSqlError(
            "SYNTAX_ERROR: OPTIMIZE table REWRITE DATA USING BIN_PACK [WHERE predicate], or VACUUM table"
        )
    name = found.group(2).replace("`", "").replace('"', "").lower().split(".")
    table = exp.to_table(".".join(name[-2:]) if len(name) > 1 else f"{database}.{name[0]}")
    _iceberg_names(exp.select("*").from_(table))
    _iceberg_target(table, verb)
    catalog = table.args["catalog"].name
    qualified = f"{table.db}.{table.name}"
    if verb == "VACUUM":
        return Plan(UTILITY, f"CALL {catalog}.system.expire_snapshots(table => '{qualified}')", kind="ddl")
    where = found.group("where")
    extra = ""
    if where:
        predicate = _spark(_tree(f"SELECT 1 FROM t WHERE {where}").args["where"].this)
        extra = ", where => '" + predicate.replace("'", "''") + "'"
    # Athena compacts any small files; Iceberg's bin-pack waits for five by default.
    extra += ", options => map('min-input-files', '2')"
    return Plan(
        UTILITY, f"CALL {catalog}.system.rewrite_data_files(table => '{qualified}'{extra})", kind="ddl"
    )


def _create(
    sql: str, words: list[str], database: str, parameters: list[str] | None, ctas_location: str
) -> Plan:
    text = _statement(sql)
    if "VIEW" in words[:4]:  # its query is Trino's: the whole statement is translated
        return Plan(DDL, translate(text, parameters), kind="ddl")
    if words[1:2] in (["DATABASE"], ["SCHEMA"]):
        return Plan(DDL, text, kind="ddl", needs_database=False)
    if "EXTERNAL" in words[:3]:
        found = re.match(r"(?is)^CREATE\s+EXTERNAL\s+TABLE\s+(IF\s+NOT\s+EXISTS\s+)?([`\"\w.]+)", text)
        name = found.group(2).replace("`", "").replace('"', "").lower().split(".") if found else []
        created = (name[0], name[1]) if len(name) == 2 else (database, name[0]) if name else None
        return Plan(DDL, text, kind="ddl", created=created)
    if re.search(
        r"(?is)\)\s*AS\s*(\(?\s*(SELECT|WITH|VALUES|TABLE)\b)|\bAS\s+(SELECT|WITH|VALUES|TABLE)\b", text
    ) and not re.search(r"(?is)^CREATE\s+TABLE\s+\S+\s*\(", text):
        return _ctas(text, database, ctas_location)
    if re.search(r"(?i)'table_type'\s*=\s*'ICEBERG'", text):
        raise AthenaSqlError(
            "NOT_SUPPORTED: CREATE TABLE … TBLPROPERTIES ('table_type'='ICEBERG'): create Iceberg "
            "tables with Spark, PyIceberg or the Iceberg REST endpoint"
        )
    return Plan(DDL, text, kind="ddl")

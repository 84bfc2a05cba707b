"""DynamicFrame: Glue's self-describing frame, as a wrapper over a Spark DataFrame.

Fields whose records disagree on their type are *choice* fields, held as VARIANT
columns (see ``choice``). Transforms return new frames; records a transform
could not handle become error records that travel with the frame.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, NullType, StructType

if TYPE_CHECKING:
    from .context import GlueContext

from ..engine import jdbc as jdbc_keys
from ..errors import SourceError, SparkmarkError, TransformError
from ..spark_lines import HAS_VARIANT, VariantType, try_cast, with_json_objects
from . import choice as choices
from . import gluetypes, reading, records, writing
from . import paths as fieldpaths
from .combining import Combining
from .dynamodb_frames import DynamoDBJson
from .relationalizing import relationalize_into
from .visual import VisualTransforms

log = logging.getLogger("sparkmark.glue")


class GlueError(SparkmarkError):
    """A DynamicFrame operation failed the way Glue fails it (e.g. an error threshold)."""


@dataclass(frozen=True)
class ErrorStage:
    transformation: str
    frame: DataFrame  # columns: error, record, transformation


def _error_frame(out: DataFrame, name: str) -> DataFrame:
    return out.where(F.col("__sm_error").isNotNull()).select(
        F.col("__sm_error").alias("error"),
        F.col("__sm_input").alias("record"),
        F.lit(name).alias("transformation"),
    )


class DynamicFrame(Combining, VisualTransforms, DynamoDBJson):
    """A frame of records. ``DynamicFrame(df, glue_ctx, name)`` wraps a DataFrame."""

    def __init__(self, df: DataFrame, glue_ctx=None, name: str = "", *, errors: tuple[ErrorStage, ...] = ()):
        if not isinstance(df, DataFrame):
            raise TypeError("DynamicFrame wraps a pyspark DataFrame; use DynamicFrame.fromDF")
        self._df = df
        self.glue_ctx = glue_ctx
        self.name = name
        self._errors = errors

    # ------------------------------------------------------------ conversion

    @classmethod
    def fromDF(cls, dataframe: DataFrame, glue_ctx, name: str) -> DynamicFrame:
        return cls(dataframe, glue_ctx, name)

    def toDF(self, options: Any = None) -> DataFrame:
        return self._df

    def _with(
        self,
        df: DataFrame,
        *,
        stage: ErrorStage | None = None,
        name: str | None = None,
        stageThreshold: int = 0,
        totalThreshold: int = 0,
    ) -> DynamicFrame:
        errors = self._errors + ((stage,) if stage else ())
        frame = DynamicFrame(df, self.glue_ctx, name if name is not None else self.name, errors=errors)
        if stage is not None and (stageThreshold or totalThreshold):
            frame._check_thresholds(stageThreshold, totalThreshold)
        return frame

    def _check_thresholds(self, stage_threshold: int, total_threshold: int) -> None:
        stage = self.stageErrorsCount()
        if stage_threshold and stage > stage_threshold:
            raise GlueError(
                f"{stage} error records in {self._errors[-1].transformation}, more than "
                f"stageThreshold {stage_threshold}; the run fails and commits nothing"
            )
        total = self.errorsCount()
        if total_threshold and total > total_threshold:
            raise GlueError(
                f"{total} error records in all, more than totalThreshold {total_threshold}; "
                "the run fails and commits nothing"
            )

    # ------------------------------------------------------------ inspection

    def count(self) -> int:
        return self._df.count()

    def schema(self) -> gluetypes.StructType:
        """The frame's schema in Glue's types (``awsglue.gluetypes``): a field whose
        records hold several types is a ChoiceType of them (one Spark job finds them)."""
        paths = choices.choice_paths(self._df.schema)
        held = choices.observed_types(self._df, paths)
        named = {
            fieldpaths.quote(p): choices.choice_names(self._df, p, held[fieldpaths.quote(p)]) for p in paths
        }
        schema = gluetypes.from_spark(self._df.schema, named)
        assert isinstance(schema, gluetypes.StructType)
        return schema

    def printSchema(self) -> None:
        print("\n".join(gluetypes.tree_lines(self.schema())))

    def show(self, num_rows: int = 20) -> None:
        for row in self._df.limit(num_rows).toJSON().collect():
            print(row)

    def getNumPartitions(self) -> int:
        return self._df.rdd.getNumPartitions()

    def repartition(self, num_partitions: int, **_ignored) -> DynamicFrame:
        return self._with(self._df.repartition(num_partitions))

    def coalesce(self, num_partitions: int, shuffle: bool = False, **_ignored) -> DynamicFrame:
        df = self._df.repartition(num_partitions) if shuffle else self._df.coalesce(num_partitions)
        return self._with(df)

    # ------------------------------------------------------------ errors

    def errorsCount(self) -> int:
        return sum(stage.frame.count() for stage in self._errors)

    def stageErrorsCount(self) -> int:
        return self._errors[-1].frame.count() if self._errors else 0

    def errorsAsDynamicFrame(self) -> DynamicFrame:
        spark = self._df.sparkSession
        if not self._errors:
            return DynamicFrame(
                spark.createDataFrame([], "error string, record string, transformation string"),
                self.glue_ctx,
                f"{self.name}_errors",
            )
        frames = [stage.frame for stage in self._errors]
        return DynamicFrame(reduce(DataFrame.unionByName, frames), self.glue_ctx, f"{self.name}_errors")

    def assertErrorThreshold(self) -> None:
        """Fail when the frame carries any error record (Glue's default threshold)."""
        count = self.errorsCount()
        if count:
            sample = self.errorsAsDynamicFrame().toDF().select("error").head(1)[0][0]
            raise GlueError(f"{count} error record(s), e.g. {sample}; the run fails and commits nothing")

    # ------------------------------------------------------------ field transforms

    def select_fields(
        self,
        paths: list[str],
        transformation_ctx: str = "",
        info: str = "",
        stageThreshold: int = 0,
        totalThreshold: int = 0,
    ) -> DynamicFrame:
        leaves = []
        for path in paths:
            parts = fieldpaths.split_path(path)
            if fieldpaths.field_type(self._df.schema, parts) is not None:
                leaves.append((parts, fieldpaths.column(parts)))
        return self._with(self._df.select(*fieldpaths.build(leaves)))

    def drop_fields(
        self,
        paths: list[str],
        transformation_ctx: str = "",
        info: str = "",
        stageThreshold: int = 0,
        totalThreshold: int = 0,
    ) -> DynamicFrame:
        df = self._df
        for path in paths:
            parts = fieldpaths.split_path(path)
            if fieldpaths.field_type(df.schema, parts) is not None:
                df = fieldpaths.drop(df, parts)
        return self._with(df)

    def rename_field(
        self,
        oldName: str,
        newName: str,
        transformation_ctx: str = "",
        info: str = "",
        stageThreshold: int = 0,
        totalThreshold: int = 0,
    ) -> DynamicFrame:
        old = fieldpaths.split_path(oldName)
        if fieldpaths.field_type(self._df.schema, old) is None:
            return self._with(self._df)  # no record has the field: nothing to rename, as on Glue
        new = fieldpaths.split_path(newName)
        if len(old) == 1 and len(new) == 1:
            return self._with(self._df.withColumnRenamed(old[0], new[0]))
        value = fieldpaths.column(old)
        if len(new) == 1:  # add the new field first, while the old one can still be read
            df = self._df.withColumn(new[0], value)
        else:
            df = self._df.withColumn(
                new[0], F.col(fieldpaths.quote(new[:1])).withField(fieldpaths.quote(new[1:]), value)
            )
        return self._with(fieldpaths.drop(df, old))

    def apply_mapping(
        self,
        mappings: Iterable[tuple],
        case_sensitive: bool = False,
        transformation_ctx: str = "",
        info: str = "",
        stageThreshold: int = 0,
        totalThreshold: int = 0,
    ) -> DynamicFrame:
        """Keep only the mapped fields: (source path, source type, target path, target type)."""
        leaves = []
        for mapping in mappings:
            if len(mapping) != 4:
                raise TransformError(
                    f"ApplyMapping takes (source, source type, target, target type), got {mapping!r}"
                )
            source, _stype, target, ttype = mapping
            parts = fieldpaths.split_path(source)
            found = fieldpaths.field_type(self._df.schema, parts)
            spark_t = choices.spark_type(ttype)
            if found is None:
                value = F.lit(None).cast(spark_t)
            elif isinstance(found, VariantType):
                value = choices.cast(fieldpaths.column(parts), ttype)
            elif isinstance(found, (StructType, ArrayType)) and ttype.lower() in ("struct", "array"):
                value = fieldpaths.column(parts)
            else:  # no conversion: null, as on Glue
                value = try_cast(fieldpaths.column(parts), spark_t)
            leaves.append((fieldpaths.split_path(target), value))
        return self._with(self._df.select(*fieldpaths.build(leaves)))

    def resolveChoice(
        self,
        specs: list[tuple[str, str]] | None = None,
        choice: str = "",
        database: str | None = None,
        table_name: str | None = None,
        transformation_ctx: str = "",
        info: str = "",
        stageThreshold: int = 0,
        totalThreshold: int = 0,
        catalog_id: str | None = None,
    ) -> DynamicFrame:
        action_all = choice
        if specs and action_all:
            raise TransformError("ResolveChoice takes specs or choice, not both")
        if not specs and not action_all:
            raise TransformError("ResolveChoice needs specs=[(path, action)] or choice=ACTION")
        df = self._df
        if action_all:
            targets = [(fieldpaths.quote(p), action_all) for p in choices.choice_paths(df.schema)]
        else:
            targets = list(specs or [])
        if any(a == "match_catalog" for _, a in targets):
            targets = choices.catalog_casts(self.glue_ctx, targets, database, table_name)
        needs_types = [
            fieldpaths.split_path(p)
            for p, a in targets
            if a in ("make_struct", "make_cols")
            and isinstance(fieldpaths.field_type(df.schema, fieldpaths.split_path(p)), VariantType)
        ]
        known = choices.observed_types(df, needs_types)
        for path, action in targets:
            parts = fieldpaths.split_path(path)
            df = choices.resolve(df, path, action, known.get(fieldpaths.quote(parts)))
        return self._with(df)

    def unbox(
        self,
        path: str,
        format: str,
        transformation_ctx: str = "",
        info: str = "",
        stageThreshold: int = 0,
        totalThreshold: int = 0,
        **options,
    ) -> DynamicFrame:
        """Parse a string field holding JSON into a struct (choice fields where records disagree)."""
        if format.lower() != "json":
            raise TransformError(f"unbox supports format 'json', not {format!r}")
        parts, _ = fieldpaths.require(self._df.schema, path)
        if HAS_VARIANT:
            parsed = self._df.withColumn("__sm_unbox", F.try_parse_json(fieldpaths.column(parts)))
            ddl = parsed.agg(F.schema_of_variant_agg("__sm_unbox")).head(1)[0][0] or ""
            typed = None
            if ddl.startswith("OBJECT<"):
                got = F.expr(f"variant_get(__sm_unbox, '$', '{choices.to_ddl(ddl)}')")
                typed = parsed.withColumn("__sm_unbox", got)
        else:  # Spark 3.5: the objects typed as its JSON reader types them
            typed = with_json_objects(self._df, fieldpaths.column(parts), "__sm_unbox")
        if typed is None:
            raise TransformError(f"field {path!r} holds no JSON objects to unbox")
        out = fieldpaths.replace(typed, parts, lambda _c: F.col("__sm_unbox")).drop("__sm_unbox")
        return self._with(out)

    def unnest(
        self, transformation_ctx: str = "", info: str = "", stageThreshold: int = 0, totalThreshold: int = 0
    ) -> DynamicFrame:
        """Flatten nested structs into top-level fields named ``a.b``."""
        cols = [fieldpaths.column(p).alias(".".join(p)) for p in fieldpaths.leaf_paths(self._df.schema)]
        return self._with(self._df.select(*cols))

    def drop_null_fields(
        self, transformation_ctx: str = "", info: str = "", stageThreshold: int = 0, totalThreshold: int = 0
    ) -> DynamicFrame:
        """Drop fields that are null (or missing) in every record."""
        leaves = fieldpaths.leaf_paths(self._df.schema)
        if not leaves:
            return self._with(self._df)
        counts = self._df.agg(
            *[F.count(fieldpaths.column(p)).alias(f"c{i}") for i, p in enumerate(leaves)]
        ).head(1)[0]
        df = self._df
        for i, p in enumerate(leaves):
            dtype = fieldpaths.field_type(df.schema, p)
            if counts[f"c{i}"] == 0 or isinstance(dtype, NullType):
                df = fieldpaths.drop(df, p)
        return self._with(df)

    # ------------------------------------------------------------ record functions

    def _run(
        self, f: Callable, keep_input: bool, name: str, stageThreshold: int, totalThreshold: int
    ) -> DynamicFrame:
        if keep_input:
            kept, failed = records.filtered(self._df, f, name)
            stage = ErrorStage(name, failed)
            return self._with(kept, stage=stage, stageThreshold=stageThreshold, totalThreshold=totalThreshold)
        out = records.apply(self._df, f)
        good = out.where(F.col("__sm_error").isNull() & F.col("__sm_json").isNotNull())
        parsed, _ = choices.parse_records(good, "__sm_json", [])  # map output is always JSON
        stage = ErrorStage(name, _error_frame(out, name))
        return self._with(parsed, stage=stage, stageThreshold=stageThreshold, totalThreshold=totalThreshold)

    def filter(
        self,
        f: Callable[[dict], bool],
        transformation_ctx: str = "",
        info: str = "",
        stageThreshold: int = 0,
        totalThreshold: int = 0,
    ) -> DynamicFrame:
        return self._run(f, True, transformation_ctx or "Filter", stageThreshold, totalThreshold)

    def map(
        self,
        f: Callable[[dict], dict],
        transformation_ctx: str = "",
        info: str = "",
        stageThreshold: int = 0,
        totalThreshold: int = 0,
    ) -> DynamicFrame:
        return self._run(f, False, transformation_ctx or "Map", stageThreshold, totalThreshold)

    # ------------------------------------------------------------ combining

    def split_fields(
        self,
        paths: list[str],
        name1: str,
        name2: str,
        transformation_ctx: str = "",
        info: str = "",
        stageThreshold: int = 0,
        totalThreshold: int = 0,
    ) -> DynamicFrameCollection:
        first = self.select_fields(paths)
        second = self.drop_fields(paths)
        first.name, second.name = name1, name2
        return DynamicFrameCollection({name1: first, name2: second}, self.glue_ctx)

    def split_rows(
        self,
        comparison_dict: Mapping[str, Mapping[str, Any]],
        name1: str,
        name2: str,
        transformation_ctx: str = "",
        info: str = "",
        stageThreshold: int = 0,
        totalThreshold: int = 0,
    ) -> DynamicFrameCollection:
        ops = {
            "<": lambda c, v: c < v,
            ">": lambda c, v: c > v,
            "=": lambda c, v: c == v,
            "==": lambda c, v: c == v,
            "!=": lambda c, v: c != v,
            "<=": lambda c, v: c <= v,
            ">=": lambda c, v: c >= v,
        }
        terms: list[Column] = []
        for path, tests in comparison_dict.items():
            parts, _ = fieldpaths.require(self._df.schema, path)
            for op, value in tests.items():
                if op not in ops:
                    raise TransformError(f"split_rows comparison {op!r} is not one of {', '.join(ops)}")
                terms.append(ops[op](fieldpaths.column(parts), F.lit(value)))
        cond = reduce(lambda a, b: a & b, terms) if terms else F.lit(True)
        first = DynamicFrame(self._df.where(cond), self.glue_ctx, name1, errors=self._errors)
        second = DynamicFrame(
            self._df.where(~cond | cond.isNull()), self.glue_ctx, name2, errors=self._errors
        )
        return DynamicFrameCollection({name1: first, name2: second}, self.glue_ctx)

    def relationalize(
        self,
        root_table_name: str,
        staging_path: str,
        options: Mapping | None = None,
        transformation_ctx: str = "",
        info: str = "",
        stageThreshold: int = 0,
        totalThreshold: int = 0,
    ) -> DynamicFrameCollection:
        """Flatten into a root table and one child table per array, joined by ``id``.

        Nested struct fields become columns named ``a.b``. An array field in a table
        is replaced by a key; its child table ``<table>_<field>`` has ``id`` (that key),
        ``index`` (the position) and ``<field>.val`` (or ``<field>.val.<x>`` for
        structs), and is relationalized in turn.
        """
        tables: dict[str, DataFrame] = {}
        relationalize_into(self._df, root_table_name, tables)
        frames = {name: DynamicFrame(df, self.glue_ctx, name) for name, df in tables.items()}
        return DynamicFrameCollection(frames, self.glue_ctx)

    def __repr__(self) -> str:
        return f"DynamicFrame(name={self.name!r}, fields={self._df.columns})"


class ResolveOption:
    """Glue's description of how to resolve a choice: the choice's ``path``, the
    ``action`` ("Project", "KeepAsStruct" or "Cast") and the ``target`` type."""

    def __init__(self, path: str, action: str, target: Any = None):
        self.path, self.action, self.target = path, action, target


class DynamicFrameCollection:
    """Named DynamicFrames, as transforms that split a frame return them: a mapping of
    names to frames, or a list of frames named by their own names."""

    def __init__(self, dynamic_frames: Mapping[str, DynamicFrame] | Iterable[DynamicFrame], glue_ctx=None):
        if isinstance(dynamic_frames, Mapping):
            self._frames = dict(dynamic_frames)
        elif isinstance(dynamic_frames, (list, tuple)):
            self._frames = {f.name: f for f in dynamic_frames}
        else:
            raise TypeError("dynamic_frames must be a dict or a list of DynamicFrames")
        self.glue_ctx = glue_ctx

    def keys(self):
        return self._frames.keys()

    def values(self):
        return self._frames.values()

    def __iter__(self):
        return iter(self._frames)

    def __len__(self) -> int:
        return len(self._frames)

    def __getitem__(self, key: str) -> DynamicFrame:
        return self.select(key)

    def select(self, key: str, transformation_ctx: str = "") -> DynamicFrame:
        """The frame named ``key``; as on Glue, an empty frame of that name when the
        collection has none."""
        if key in self._frames:
            return self._frames[key]
        if self.glue_ctx is None:
            raise TransformError(f"no frame {key!r} in the collection (frames: {', '.join(self._frames)})")
        log.warning(
            "no frame %r in the collection (frames: %s): an empty frame", key, ", ".join(self._frames)
        )
        empty = self.glue_ctx.spark_session.createDataFrame([], StructType([]))
        return DynamicFrame(empty, self.glue_ctx, key)

    def map(
        self, callable_: Callable[[DynamicFrame, str], DynamicFrame], transformation_ctx: str = ""
    ) -> DynamicFrameCollection:
        """``callable_(frame, "<ctx>:<name>")`` for each frame, which must give a frame."""
        mapped = {}
        for key, frame in self._frames.items():
            result = callable_(frame, f"{transformation_ctx}:{key}")
            if not isinstance(result, DynamicFrame):
                raise TypeError(
                    f"the function given to map must return a DynamicFrame, not {type(result).__name__}"
                )
            mapped[key] = result
        return DynamicFrameCollection(mapped, self.glue_ctx)

    def flatmap(
        self, f: Callable[[DynamicFrame, str], Any], transformation_ctx: str = ""
    ) -> DynamicFrameCollection:
        """``f(frame, "<ctx>:<name>")`` for each frame: a frame it returns is kept under
        its own name, the frames of a collection it returns under theirs."""
        merged: dict[str, DynamicFrame] = {}
        for frame in self._frames.values():
            result = f(frame, f"{transformation_ctx}:{frame.name}")
            if isinstance(result, DynamicFrame):
                merged[result.name] = result
            elif isinstance(result, DynamicFrameCollection):
                merged.update(result._frames)
            else:
                raise TypeError(
                    "the function given to flatmap must return a DynamicFrame or a "
                    f"DynamicFrameCollection, not {type(result).__name__}"
                )
        return DynamicFrameCollection(merged, self.glue_ctx)


def frames(frame_or_dfc) -> list:
    """The frames of a DynamicFrame or of a DynamicFrameCollection."""
    if isinstance(frame_or_dfc, DynamicFrameCollection):
        return list(frame_or_dfc.values())
    return [frame_or_dfc]


class DynamicFrameReader:
    """``glueContext.create_dynamic_frame``."""

    def __init__(self, gc: GlueContext):
        self._gc = gc

    def from_options(
        self,
        connection_type: str,
        connection_options: dict | None = None,
        format: str | None = None,
        format_options: dict | None = None,
        transformation_ctx: str = "",
        push_down_predicate: str | None = None,
        **kwargs,
    ) -> DynamicFrame:
        df, json_records = reading.from_options(
            self._gc,
            connection_type,
            connection_options or {},
            format,
            format_options,
            transformation_ctx,
            push_down_predicate,
            text_csv=True,
        )
        records, bad = reading.to_records(df, json_records)
        stages = (ErrorStage(transformation_ctx or "from_options", bad),) if bad is not None else ()
        return DynamicFrame(records, self._gc, transformation_ctx, errors=stages)

    def from_rdd(
        self,
        data,
        name: str,
        schema: StructType | None = None,
        sample_ratio: float | None = None,
        transformation_ctx: str = "",
    ) -> DynamicFrame:
        df = self._gc.spark_session.createDataFrame(data, schema, sample_ratio)  # type: ignore[call-overload]
        return DynamicFrame(df, self._gc, name)

    def from_catalog(
        self,
        database: str,
        table_name: str,
        redshift_tmp_dir: str = "",
        transformation_ctx: str = "",
        push_down_predicate: str = "",
        additional_options: dict | None = None,
        catalog_id: str | None = None,
        **kwargs,
    ) -> DynamicFrame:
        df, json_records = reading.from_catalog(
            self._gc,
            database,
            table_name,
            push_down_predicate,
            dict(additional_options or {}),
            transformation_ctx,
            text_csv=True,
        )
        records, bad = reading.to_records(df, json_records)
        stages = (ErrorStage(transformation_ctx or "from_catalog", bad),) if bad is not None else ()
        return DynamicFrame(records, self._gc, transformation_ctx or table_name, errors=stages)


class DynamicFrameWriter:
    """``glueContext.write_dynamic_frame`` (and ``write_data_frame``)."""

    def __init__(self, gc: GlueContext):
        self._gc = gc

    def from_options(
        self,
        frame,
        connection_type: str,
        connection_options: dict | None = None,
        format: str | None = None,
        format_options: dict | None = None,
        transformation_ctx: str = "",
        **kwargs,
    ) -> DynamicFrame:
        """With a transformation_ctx, in a job run, the write is exactly-once: its output
        appears when ``job.commit()`` commits the bookmark, never before, never twice."""
        writing.write(
            self._gc,
            frame,
            connection_type,
            dict(connection_options or {}),
            format,
            format_options,
            ctx=transformation_ctx,
        )
        return frame

    def from_jdbc_conf(
        self,
        frame,
        catalog_connection: str,
        connection_options: dict | None = None,
        redshift_tmp_dir: str = "",
        transformation_ctx: str = "",
        **kwargs,
    ) -> DynamicFrame:
        """Write through a named connection (``[connections.NAME]`` in sparkmark.toml)."""
        options = dict(connection_options or {})
        if redshift_tmp_dir:
            log.info(reading.REDSHIFT_NOTE)
        resolved = self._gc.connections.resolve(catalog_connection)
        target = jdbc_keys.parse_database(resolved.url, resolved.user, resolved.password)
        table = options.get("dbtable")
        if not table:
            raise SourceError("from_jdbc_conf needs connection_options['dbtable']")
        writing.append_jdbc(
            self._gc,
            frame if isinstance(frame, DataFrame) else frame.toDF(),
            target,
            table,
            transformation_ctx,
            connection=catalog_connection,
            options=options,
        )
        return frame

    def from_catalog(
        self,
        frame,
        database: str,
        table_name: str,
        redshift_tmp_dir: str = "",
        transformation_ctx: str = "",
        additional_options: dict | None = None,
        catalog_id: str | None = None,
        **kwargs,
    ) -> DynamicFrame:
        """Append to a catalog table's location, in its format and partitioning; with
        ``enableUpdateCatalog`` the new partitions (and, with ``updateBehavior``
        UPDATE_IN_DATABASE, the new schema) are registered."""
        options = dict(additional_options or {})
        database, table_name = database.lower(), table_name.lower()
        df = frame if isinstance(frame, DataFrame) else frame.toDF()
        if writing.write_table(self._gc, df, database, table_name, options, transformation_ctx):
            return frame  # an Iceberg or Delta table (beyond Glue for a DynamicFrame)
        table = self._gc.catalog_store().table(database, table_name)
        keys = options.get("partitionKeys") or [c.name for c in table.partition_keys]
        writing.write(
            self._gc,
            frame,
            "s3",
            {
                **options,
                "path": table.location,
                "partitionKeys": keys,
                "enableUpdateCatalog": options.get("enableUpdateCatalog", False),
            },
            table.classification,
            {},
            catalog_target=(database, table_name),
            ctx=transformation_ctx,
        )
        return frame

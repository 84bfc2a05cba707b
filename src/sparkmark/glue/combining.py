"""Glue's transforms that take a second frame (``join``, ``union``) and ``spigot``'s
sample: part of :class:`glue.dynamicframe.DynamicFrame`, with the rules for join keys
that the records of one side may lack."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import reduce
from typing import TYPE_CHECKING, Any, Self

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from .. import spark_lines
from ..errors import TransformError
from . import paths as fieldpaths

if TYPE_CHECKING:
    from .dynamicframe import DynamicFrame

log = logging.getLogger("sparkmark.glue")


class Combining:
    """Transforms over two frames, and the sample that passes a frame on unchanged."""

    _df: DataFrame
    _errors: tuple[Any, ...]
    name: str
    glue_ctx: Any

    def _with(self, df: DataFrame, *, name: str | None = None) -> DynamicFrame:
        raise NotImplementedError  # the frame's own

    def join(
        self,
        paths1: list[str] | str,
        paths2: list[str] | str,
        frame2: DynamicFrame,
        transformation_ctx: str = "",
        info: str = "",
        stageThreshold: int = 0,
        totalThreshold: int = 0,
    ) -> DynamicFrame:
        """Equality join on paths1 = paths2. Keys of both sides are kept; when both sides
        use the same key name it appears once; other fields of frame2 whose names clash
        with this frame's are prefixed with '.'."""
        keys1 = [paths1] if isinstance(paths1, str) else list(paths1)
        keys2 = [paths2] if isinstance(paths2, str) else list(paths2)
        if len(keys1) != len(keys2) or not keys1:
            raise TransformError("join needs the same number of key paths on both sides")
        keys1, keys2 = _join_keys(self._df, keys1, self.name), _join_keys(frame2._df, keys2, frame2.name)
        left, right = (
            _with_keys(self._df, keys1, frame2._df, keys2),
            _with_keys(frame2._df, keys2, self._df, keys1),
        )
        left = left.alias("__l")
        shared = [k for k1, k in zip(keys1, keys2, strict=False) if k1 == k]
        renames = {c: "." + c for c in right.columns if c in left.columns and c not in shared}
        for old, new in renames.items():
            right = right.withColumnRenamed(old, new)
        right = right.alias("__r")
        condition = reduce(
            lambda a, b: a & b,
            [
                F.col("__l." + fieldpaths.quote(fieldpaths.split_path(k1)))
                == F.col("__r." + fieldpaths.quote(fieldpaths.split_path(renames.get(k2, k2))))
                for k1, k2 in zip(keys1, keys2, strict=False)
            ],
        )
        joined = left.join(right, condition, "inner")
        keep = [F.col("__l." + fieldpaths.quote([c])) for c in left.columns]
        keep += [F.col("__r." + fieldpaths.quote([c])) for c in right.columns if c not in shared]
        return self._with(joined.select(*keep), name=f"{self.name}_{frame2.name}".strip("_"))

    def union(
        self,
        other_frame: DynamicFrame,
        transformation_ctx: str = "",
        info: str = "",
        stageThreshold: int = 0,
        totalThreshold: int = 0,
    ) -> DynamicFrame:
        """Rows of both frames; a field whose types differ becomes a choice."""
        left, right = self._df, other_frame._df
        for f in left.schema.fields:
            if f.name in right.columns and right.schema[f.name].dataType != f.dataType:
                left = left.withColumn(f.name, to_variant(F.col(fieldpaths.quote([f.name])), f.dataType))
                right = right.withColumn(
                    f.name, to_variant(F.col(fieldpaths.quote([f.name])), right.schema[f.name].dataType)
                )
        merged = left.unionByName(right, allowMissingColumns=True)
        frame = self._with(merged)
        frame._errors = self._errors + other_frame._errors
        return frame

    def spigot(
        self, path: str, options: Mapping[str, Any] | None = None, transformation_ctx: str = ""
    ) -> Self:
        """Write a sample (``topk`` records, default 100, or a ``prob`` fraction) as JSON
        to ``path`` and pass the frame on unchanged."""
        opts = dict(options or {})
        sample = (
            self._df.sample(fraction=float(opts["prob"]))
            if "prob" in opts
            else self._df.limit(int(opts.get("topk", 100)))
        )
        sample.select(
            F.to_json(F.struct(*[F.col(fieldpaths.quote([c])) for c in sample.columns]))
        ).write.mode("overwrite").text(path)
        return self


def _join_keys(df: DataFrame, keys: list[str], name: str) -> list[str]:
    """Each join key as the frame names it: the field itself, or the one field whose name
    differs from it only in case (Spark resolves names so; several such fields are an
    error). A key no field has joins no record, as on Glue, whose records need not share
    fields; on a frame that has fields that is said in a warning naming them."""
    resolved = []
    for key in keys:
        parts = fieldpaths.split_path(key)
        if not df.columns or len(parts) != 1 or fieldpaths.field_type(df.schema, parts) is not None:
            resolved.append(key)
            continue
        matches = [c for c in df.columns if c.lower() == parts[0].lower()]
        if len(matches) > 1:
            raise TransformError(
                f"join key {key!r} of frame {name or '(unnamed)'} matches fields {', '.join(matches)}, "
                "which differ only in case: name one exactly"
            )
        if not matches:
            log.warning(
                "join key %r is not a field of frame %s (fields: %s): no record of it joins",
                key,
                name or "(unnamed)",
                ", ".join(df.columns),
            )
            resolved.append(key)
            continue
        plain = "." not in matches[0] and "`" not in matches[0]
        resolved.append(matches[0] if plain else fieldpaths.quote([matches[0]]))
    return resolved


def _with_keys(df: DataFrame, keys: list[str], other: DataFrame, other_keys: list[str]) -> DataFrame:
    """A join key that no record of ``df`` has (an empty frame of a run with nothing new)
    becomes a null column of the other side's key type: no record matches, as on Glue,
    where a record without the key joins nothing."""
    for key, other_key in zip(keys, other_keys, strict=False):
        parts = fieldpaths.split_path(key)
        if fieldpaths.field_type(df.schema, parts) is not None or len(parts) != 1:
            continue
        other_type = fieldpaths.field_type(other.schema, fieldpaths.split_path(other_key))
        df = df.withColumn(parts[0], F.lit(None).cast(other_type or StringType()))
    return df


def to_variant(col: Column, data_type) -> Column:
    return spark_lines.as_choice(col, data_type)

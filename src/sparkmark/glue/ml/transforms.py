"""``awsglueml.transforms``: FillMissingValues; FindMatches, FindIncrementalMatches and
EntityDetector importable but refused when applied (they need AWS Glue's own models).

Glue fills a column's missing values (nulls and empty strings) into a new column,
``<column>_filled`` unless named, copying the present values; its estimates come from a
model it trains on the frame. sparkmark estimates with the frame's own statistics
instead: the mean for a numeric column, the most frequent value for any other. The
contract is Glue's (the new column, present values copied, every missing one filled
when the column has any value at all); the estimates are simpler than Glue's.
"""

from __future__ import annotations

from pyspark.sql import functions as F
from pyspark.sql.types import NumericType

from ...errors import TransformError
from ..dynamicframe import DynamicFrame


class FillMissingValues:
    @classmethod
    def apply(
        cls,
        frame: DynamicFrame,
        missing_values_column: str,
        output_column: str = "",
        transformation_ctx: str = "",
        info: str = "",
        stageThreshold: int = 0,
        totalThreshold: int = 0,
    ) -> DynamicFrame:
        df = frame.toDF()
        if missing_values_column not in df.columns:
            raise TransformError(
                f"FillMissingValues: column {missing_values_column!r} is not in the frame "
                f"(columns: {', '.join(df.columns) or 'none'})"
            )
        target = output_column or f"{missing_values_column}_filled"
        column = F.col(missing_values_column)
        numeric = isinstance(df.schema[missing_values_column].dataType, NumericType)
        missing = column.isNull() if numeric else (column.isNull() | (column.cast("string") == ""))
        present = df.where(~missing)
        if numeric:
            row = present.agg(F.avg(column)).first()
            estimate = row[0] if row else None
            if estimate is not None:
                estimate = F.lit(estimate).cast(df.schema[missing_values_column].dataType)
        else:
            top = present.groupBy(column).count().orderBy(F.desc("count"), column).first()
            estimate = F.lit(top[0]) if top else None
        filled = F.when(missing, estimate if estimate is not None else F.lit(None)).otherwise(column)
        out = df.withColumn(target, filled.cast(df.schema[missing_values_column].dataType))
        return DynamicFrame(out, frame.glue_ctx, transformation_ctx or target)


class _TrainedTransform:
    """Glue's ML transforms that apply a model trained and kept in AWS Glue (named by
    its ``transformId``) or a managed detection service: importable, as scripts import
    them, and refused in one line when applied, since no such model exists here."""

    needs = ""

    @classmethod
    def apply(cls, *args, **kwargs):
        raise TransformError(
            f"{cls.__name__} applies {cls.needs}, which only AWS Glue has; sparkmark cannot run it "
            "(docs/glue-compatibility.md): remove the step, or run this job on AWS Glue"
        )

    def __call__(self, *args, **kwargs):
        return self.apply(*args, **kwargs)


class FindMatches(_TrainedTransform):
    needs = "a matching model trained in AWS Glue (its transformId)"


class FindIncrementalMatches(_TrainedTransform):
    needs = "a matching model trained in AWS Glue (its transformId)"


class EntityDetector(_TrainedTransform):
    needs = "AWS Glue's managed sensitive-data detection"

    def detect(self, *args, **kwargs):
        return self.apply(*args, **kwargs)

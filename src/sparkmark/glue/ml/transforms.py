"""``awsglueml.transforms``: FillMissingValues.

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

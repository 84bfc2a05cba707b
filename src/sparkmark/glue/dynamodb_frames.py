"""Glue's transforms of DynamoDB JSON (an export's ``Item``, a stream image's
attributes): part of :class:`glue.dynamicframe.DynamicFrame`; the work is
``sources/dynamodb_json.py``'s, which the export connector uses too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import DataFrame

from ..sources import dynamodb_json

if TYPE_CHECKING:
    from .dynamicframe import DynamicFrame


class DynamoDBJson:
    _df: DataFrame

    if TYPE_CHECKING:

        def _with(self, df: DataFrame) -> DynamicFrame: ...

    def unnest_ddb_json(
        self, transformation_ctx: str = "", info: str = "", stageThreshold: int = 0, totalThreshold: int = 0
    ) -> DynamicFrame:
        """Without the top-level type descriptors."""
        return self._with(dynamodb_json.unnest(self._df))

    def simplify_ddb_json(self) -> DynamicFrame:
        """Without the type descriptors at any level."""
        return self._with(dynamodb_json.simplify(self._df))

"""``from awsgluedq.transforms import EvaluateDataQuality``.

``process_rows`` returns a DynamicFrameCollection with ``ruleOutcomes`` and
``rowLevelOutcomes``; ``apply`` returns the rule outcomes. Results are kept with the
job's run under ``publishing_options["dataQualityEvaluationContext"]``.
"""

from __future__ import annotations

from typing import Any

from ...errors import ArgumentError
from ...quality import evaluate
from ...quality.runs import evaluate_in_run
from ..dynamicframe import DynamicFrame, DynamicFrameCollection

CONTEXT = "dataQualityEvaluationContext"
FILTERED_ROWS = "rowLevelConfiguration.filteredRowLabel"  # PASS (default) or SKIP
COMPOSITE_METHOD = "compositeRuleEvaluation.method"  # COLUMN (default); ROW is refused


def _frame_df(frame) -> Any:
    return frame.toDF() if isinstance(frame, DynamicFrame) else frame


def _evaluate(
    frame,
    ruleset: str,
    publishing_options: dict | None,
    additional_options: dict | None,
    additional_data_sources: dict | None,
    row_level: bool,
):
    options = dict(publishing_options or {})
    extra = dict(additional_options or {})
    name = str(options.get(CONTEXT) or "default")
    method = str(extra.get(COMPOSITE_METHOD, "COLUMN")).upper()
    if method != "COLUMN":
        raise ArgumentError(
            f"{COMPOSITE_METHOD} {method!r} is not supported: composite rules are judged from their "
            "parts' dataset outcomes (Glue's default, COLUMN); the row-level outcomes already combine "
            "their parts row by row"
        )
    label = str(extra.get(FILTERED_ROWS, "PASS")).upper()
    if label not in ("PASS", "SKIP"):
        raise ArgumentError(f"{FILTERED_ROWS} must be PASS or SKIP, got {label!r}")
    df = _frame_df(frame)
    references = {k: _frame_df(v) for k, v in (additional_data_sources or {}).items()}
    glue_ctx = getattr(frame, "glue_ctx", None)
    run = getattr(glue_ctx, "run", None) if glue_ctx is not None else None
    filtered = label.lower()
    if run is not None and options.get("enableDataQualityResultsPublishing", True):
        result = evaluate_in_run(
            run,
            df,
            ruleset,
            name=name,
            reference=references,
            row_level=row_level,
            filtered_rows=filtered,
            cloudwatch_metrics=bool(options.get("enableDataQualityCloudWatchMetrics", False)),
        )
    else:
        result = evaluate(
            df, ruleset, reference=references, name=name, row_level=row_level, filtered_rows=filtered
        )
    return result, glue_ctx, df


class EvaluateDataQuality:
    """Glue's EvaluateDataQuality transform."""

    def process_rows(
        self,
        frame,
        ruleset: str,
        publishing_options: dict | None = None,
        additional_options: dict | None = None,
        additional_data_sources: dict | None = None,
    ) -> DynamicFrameCollection:
        result, glue_ctx, df = _evaluate(
            frame, ruleset, publishing_options, additional_options, additional_data_sources, True
        )
        outcomes = DynamicFrame(result.outcomes_frame(df.sparkSession), glue_ctx, "ruleOutcomes")
        rows = DynamicFrame(result.rows, glue_ctx, "rowLevelOutcomes")
        return DynamicFrameCollection({"ruleOutcomes": outcomes, "rowLevelOutcomes": rows}, glue_ctx)

    @classmethod
    def apply(
        cls,
        frame,
        ruleset: str,
        publishing_options: dict | None = None,
        additional_options: dict | None = None,
        additional_data_sources: dict | None = None,
    ) -> DynamicFrame:
        result, glue_ctx, df = _evaluate(
            frame, ruleset, publishing_options, additional_options, additional_data_sources, False
        )
        return DynamicFrame(result.outcomes_frame(df.sparkSession), glue_ctx, "ruleOutcomes")

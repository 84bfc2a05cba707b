"""Data quality: DQDL rulesets evaluated on Spark, with row-level outcomes.

from sparkmark import quality
result = quality.evaluate(df, 'Rules = [ IsComplete "id", ColumnValues "qty" > 0 ]')
result.passed, result.outcomes, result.rows   # rows: df + DataQualityRules* columns
"""

from .evaluate import (
    FAIL_COLUMN,
    PASS_COLUMN,
    RESULT_COLUMN,
    ROW_COLUMNS,
    SKIP_COLUMN,
    QualityResult,
    RuleOutcome,
    evaluate,
)
from .ruleset import DQDLError, Ruleset, parse_ruleset

__all__ = [
    "FAIL_COLUMN",
    "PASS_COLUMN",
    "RESULT_COLUMN",
    "ROW_COLUMNS",
    "SKIP_COLUMN",
    "DQDLError",
    "QualityResult",
    "RuleOutcome",
    "Ruleset",
    "evaluate",
    "parse_ruleset",
]

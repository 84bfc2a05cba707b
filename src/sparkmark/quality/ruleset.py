"""A DQDL ruleset parsed into typed values: rules, composite rules, conditions.

``parse_ruleset(text)`` reads a DQDL document with the lark grammar in ``dqdl.lark``,
resolves ``$variables`` and reports syntax errors with their line and column and what
was expected there. Whether a rule type exists and takes the parameters it was given
is checked by ``quality.rules``.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from ..errors import SparkmarkError
from . import dynamic


class DQDLError(SparkmarkError):
    """A ruleset that cannot be read or evaluated as written."""


class Keyword(StrEnum):
    NULL = "NULL"
    EMPTY = "EMPTY"
    WHITESPACES_ONLY = "WHITESPACES_ONLY"


UNIT_SECONDS = {"minutes": 60, "hours": 3600, "days": 86400}


@dataclass(frozen=True)
class Duration:
    amount: float
    unit: str

    @property
    def seconds(self) -> float:
        return self.amount * UNIT_SECONDS[self.unit]


@dataclass(frozen=True)
class Now:
    """``now()``, or ``(now() - 3 days)``: resolved when the rules are evaluated."""

    offset_seconds: float = 0.0


Operand = float | int | str | Keyword | Duration | Now | dynamic.Dynamic


@dataclass(frozen=True)
class Condition:
    """What a rule's value is held to: ``op`` is one of = != > < >= <= between,
    not between, in, not in, matches, not matches."""

    op: str
    operands: tuple[Operand, ...]


@dataclass(frozen=True)
class Rule:
    rule_type: str
    params: tuple[str, ...] = ()
    condition: Condition | None = None
    where: str | None = None
    threshold: Condition | None = None
    labels: dict[str, Any] = field(default_factory=dict)
    text: str = ""  # as written, whitespace folded: the rule's name in every outcome


@dataclass(frozen=True)
class Composite:
    op: str  # "and" | "or"
    parts: tuple[Rule | Composite, ...]
    text: str = ""
    labels: dict[str, Any] = field(default_factory=dict)

    def leaves(self) -> list[Rule]:
        return leaves(self.parts)


Entry = Rule | Composite


def leaves(entries) -> list[Rule]:
    """The plain rules inside ``entries``, composites opened, in order."""
    found: list[Rule] = []
    for entry in entries:
        found.extend(entry.leaves() if isinstance(entry, Composite) else [entry])
    return found


@dataclass(frozen=True)
class Ruleset:
    rules: tuple[Entry, ...]
    analyzers: tuple[Rule, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, Any] = field(default_factory=dict)
    text: str = ""

    def leaves(self) -> list[Rule]:
        return leaves(self.rules)


# ------------------------------------------------------------------ rule shapes
# Each rule type's shape, as AWS's DQDL parser checks it (the rule types of
# awslabs/dqdl's rules-config.json that sparkmark evaluates): how many quoted parameters,
# whether it is held to a condition (a number or a string: required; a pass/fail rule:
# none), and whether it takes "with threshold" and "where". A ruleset whose rules do not
# fit is refused when it is read, before any data is looked at.


@dataclass(frozen=True)
class RuleType:
    name: str
    params: tuple[int, int]  # fewest and most parameters
    condition: str  # "required", "none", or "optional" (then a threshold or a condition)
    threshold: bool = False  # takes "with threshold"
    where: bool = True  # takes "where"


MANY = 64  # a rule over "any number" of columns
RULE_TYPES = {
    t.name: t
    for t in (
        RuleType("RowCount", (0, 0), "required"),
        RuleType("ColumnCount", (0, 0), "required", where=False),
        RuleType("Completeness", (1, 1), "required"),
        RuleType("IsComplete", (1, 1), "none"),
        RuleType("Uniqueness", (1, MANY), "required"),
        RuleType("IsUnique", (1, MANY), "none"),
        RuleType("IsPrimaryKey", (1, MANY), "none"),
        RuleType("ColumnValues", (1, 1), "required", threshold=True),
        RuleType("ColumnLength", (1, 1), "required", threshold=True),
        RuleType("ColumnExists", (1, 1), "none", where=False),
        RuleType("ColumnNamesMatchPattern", (1, 1), "none", where=False),
        RuleType("ColumnDataType", (1, 1), "required", threshold=True),
        RuleType("ColumnCorrelation", (2, 2), "required"),
        RuleType("DistinctValuesCount", (1, 1), "required"),
        RuleType("Entropy", (1, 1), "required"),
        RuleType("Mean", (1, 1), "required"),
        RuleType("StandardDeviation", (1, 1), "required"),
        RuleType("Sum", (1, 1), "required"),
        RuleType("UniqueValueRatio", (1, 1), "required"),
        RuleType("DataFreshness", (1, 1), "required", threshold=True),
        RuleType(
            "CustomSql", (1, 1), "optional", threshold=True, where=False
        ),  # a value, or the rows that pass
        RuleType("ReferentialIntegrity", (2, 2), "required", where=False),
        RuleType("RowCountMatch", (1, 1), "required", where=False),
        RuleType("SchemaMatch", (1, 1), "required", where=False),
        RuleType("DatasetMatch", (2, 3), "required", where=False),
        RuleType("AggregateMatch", (2, 2), "required", where=False),
        RuleType("DetectAnomalies", (1, MANY), "none", where=False),
    )
}

ANALYZABLE = {
    "RowCount",
    "ColumnCount",
    "Completeness",
    "Uniqueness",
    "DistinctValuesCount",
    "Entropy",
    "Mean",
    "StandardDeviation",
    "Sum",
    "UniqueValueRatio",
    "ColumnCorrelation",
}


# The rule types whose condition is held to one number of the dataset (rules-config.json's
# NUMBER return type, less ColumnLength, whose condition is on each row's length): their
# conditions may be dynamic. Any rule's "with threshold" may be, on its share of rows.
DYNAMIC_TYPES = {
    "RowCount",
    "RowCountMatch",
    "ColumnCount",
    "Completeness",
    "ColumnCorrelation",
    "Uniqueness",
    "Mean",
    "Sum",
    "StandardDeviation",
    "Entropy",
    "DistinctValuesCount",
    "UniqueValueRatio",
    "ReferentialIntegrity",
    "DatasetMatch",
    "SchemaMatch",
    "AggregateMatch",
    "CustomSql",
}


def _is_dynamic(condition: Condition | None) -> bool:
    return condition is not None and any(isinstance(o, dynamic.Dynamic) for o in condition.operands)


def is_dynamic(rule: Rule) -> bool:
    """Whether the rule's condition or threshold needs the metric's earlier values."""
    return _is_dynamic(rule.condition) or _is_dynamic(rule.threshold)


def settle(rule: Rule, earlier: list[float]) -> tuple[Rule, str]:
    """The rule with its dynamic numbers worked out on ``earlier`` (the metric's values,
    oldest first), and what they came to. Raises dynamic.DynamicError."""
    notes: list[str] = []

    def fixed(condition: Condition | None) -> Condition | None:
        if condition is None:
            return None
        operands: list[Operand] = []
        for operand in condition.operands:
            if isinstance(operand, dynamic.Dynamic):
                value = dynamic.evaluate(operand.expr, earlier)
                notes.append(f"{operand} = {value:g}")
                operands.append(value)
            else:
                operands.append(operand)
        return Condition(condition.op, tuple(operands))

    settled = replace(rule, condition=fixed(rule.condition), threshold=fixed(rule.threshold))
    shown = "; ".join(notes) + f" from {len(earlier)} earlier value(s)"
    return settled, shown


def check_rule(rule: Rule, *, analyzer: bool = False) -> None:
    """Raise DQDLError when a rule names an unknown type or has the wrong shape."""
    spec = RULE_TYPES.get(rule.rule_type)
    if spec is None:
        raise DQDLError(
            f"unknown rule type {rule.rule_type!r} in {rule.text!r}; known types: "
            + ", ".join(sorted(RULE_TYPES))
        )
    low, high = spec.params
    if analyzer:
        if rule.rule_type not in ANALYZABLE:
            raise DQDLError(
                f"{rule.rule_type} cannot be an analyzer; analyzers: " + ", ".join(sorted(ANALYZABLE))
            )
        if rule.condition is not None or rule.threshold is not None:
            raise DQDLError(f"an analyzer takes no condition: {rule.text!r}")
    elif spec.condition == "required" and rule.condition is None:
        raise DQDLError(f"{rule.rule_type} needs a condition (e.g. > 0.9) in {rule.text!r}")
    elif spec.condition == "none" and rule.condition is not None:
        raise DQDLError(f"{rule.rule_type} takes no condition in {rule.text!r}")
    if not low <= len(rule.params) <= high:
        wanted = str(low) if low == high else f"{low} to {high}" if high < MANY else f"{low} or more"
        raise DQDLError(
            f"{rule.rule_type} takes {wanted} quoted parameter(s), got {len(rule.params)} in {rule.text!r}"
        )
    if rule.threshold is not None and not spec.threshold:
        raise DQDLError(f"{rule.rule_type} does not take 'with threshold' in {rule.text!r}")
    if rule.where is not None and not spec.where:
        raise DQDLError(f"{rule.rule_type} does not take 'where' in {rule.text!r}")
    for condition in (rule.condition, rule.threshold):
        if condition is not None and condition.op in ("in", "not in"):
            kinds = {
                "a number" if isinstance(v, (int, float)) else "text"
                for v in condition.operands
                if isinstance(v, (int, float, str)) and not isinstance(v, Keyword)
            }
            if len(kinds) > 1:
                raise DQDLError(f"the list in {rule.text!r} mixes numbers and text; use one kind")
    if _is_dynamic(rule.condition) and rule.rule_type not in DYNAMIC_TYPES:
        raise DQDLError(
            f"{rule.rule_type} compares each row's value, which has no history; a dynamic "
            f"condition (last(...)) fits a rule on one number, or its 'with threshold': {rule.text!r}"
        )
    durations = rule.condition is None or all(isinstance(v, Duration) for v in rule.condition.operands)
    if rule.rule_type == "DataFreshness" and not durations:
        raise DQDLError(f"DataFreshness compares with a duration (e.g. <= 24 hours) in {rule.text!r}")


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = (Path(__file__).parent / "dqdl.lark").read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=False)


def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _string(token: Token | Tree | Any) -> str:
    if not isinstance(token, Token):
        raise DQDLError(f"expected a quoted string, got {token!r}")
    # DQDL's only escapes are \" and \\; any other backslash is the character itself,
    # as a regular expression such as "\d{3}" needs it.
    return re.sub(r'\\(["\\])', r"\1", str(token)[1:-1])


class _Variable:
    def __init__(self, name: str, line: int, column: int):
        self.name, self.line, self.column = name, line, column


@v_args(inline=True)
class _Build(Transformer):
    def __init__(self, source: str):
        super().__init__()
        self.source = source
        self.variables: dict[str, Any] = {}

    # values
    def number(self, token):
        return int(token) if re.fullmatch(r"-?\d+", token) else float(token)

    def string(self, token):
        return _string(token)

    def null(self):
        return Keyword.NULL

    def empty(self):
        return Keyword.EMPTY

    def whitespaces_only(self):
        return Keyword.WHITESPACES_ONLY

    def duration(self, amount, unit):
        return Duration(float(amount), str(unit))

    def now(self, _token):
        return Now()

    def now_shifted(self, _token, sign, duration):
        return Now(duration.seconds if sign == "+" else -duration.seconds)

    def list(self, *items):
        return tuple(items)

    # dynamic rules' numbers: folded to a number unless they need the history
    def chain(self, *items):
        if len(items) == 1:
            return items[0]
        terms = [_expr(t) for t in items[0::2]]
        return dynamic.Chain(terms[0], tuple(zip((str(op) for op in items[1::2]), terms[1:], strict=True)))

    def call(self, name, *args):
        return dynamic.Call(str(name), tuple(_expr(a) for a in args))

    def paren(self, inner):
        return _expr(inner)

    def calc(self, expr):
        return expr

    def VARIABLE(self, token):
        return _Variable(str(token), token.line, token.column)

    def STRING(self, token):
        return token  # kept raw: params and clauses decode it

    def dict(self, *pairs):
        return dict(pairs)

    def label(self, key, value):  # AWS's labels = ["key" = "value", ...]
        return (_string(key), _string(value))

    def label_list(self, *pairs):
        return dict(pairs)

    def pair(self, key, value):
        return (_string(key), _string(value) if isinstance(value, Token) else list(value))

    # document
    def variable(self, var, value):
        if isinstance(value, _Variable):
            value = self._resolve(value)
        if isinstance(var, Token):  # AWS's form, name = "text" or ["text", ...]: text only
            held = value if isinstance(value, tuple) else (value,)
            if not all(isinstance(v, str) for v in held):
                raise DQDLError(
                    f"line {var.line}, column {var.column}: variable {var} holds a quoted string or a "
                    f'list of them, e.g. {var} = ["a", "b"]'
                )
            var = _Variable("$" + str(var), var.line or 0, var.column or 0)
        if var.name in self.variables:
            raise DQDLError(f"line {var.line}, column {var.column}: variable {var.name} is declared twice")
        self.variables[var.name] = value

    def _resolve(self, value):
        if isinstance(value, _Variable):
            if value.name not in self.variables:
                raise DQDLError(
                    f"line {value.line}, column {value.column}: variable {value.name} is not "
                    f'defined; define it before the rules, e.g. {value.name[1:]} = "text" or {value.name[1:]} = ["a", "b"]'
                )
            return self.variables[value.name]
        return value


def _expr(value: Any) -> dynamic.Expr:
    return float(value) if isinstance(value, int) else value


def _operand(value: Any) -> Any:
    """A computed number folded, or kept as Dynamic when it needs the metric's history."""
    if not isinstance(value, (dynamic.Call, dynamic.Chain)):
        return value
    try:
        dynamic.check(value)
        if dynamic.uses_history(value):
            return dynamic.Dynamic(value)
        return dynamic.evaluate(value, [])
    except dynamic.DynamicError as exc:
        raise DQDLError(str(exc)) from None


def _condition(node: Tree, build: _Build) -> Condition:
    kids = [_operand(build._resolve(k)) for k in node.children]
    negated = bool(kids) and isinstance(kids[0], Token) and kids[0].type == "NOT"
    if negated:
        kids = kids[1:]
    kind = node.data
    if kind == "compare":
        return Condition(str(kids[0]), (kids[1],))
    if kind == "between":
        return Condition("not between" if negated else "between", (kids[0], kids[1]))
    if kind == "in_list":
        values = kids[0]
        if not isinstance(values, tuple):
            values = tuple(values) if isinstance(values, list) else (values,)
        return Condition("not in" if negated else "in", values)
    if kind == "matches":
        pattern = kids[0]
        return Condition(
            "not matches" if negated else "matches",
            (_string(pattern) if isinstance(pattern, Token) else str(pattern),),
        )
    raise DQDLError(f"unknown condition {kind}")


def _rule(node: Tree, build: _Build) -> Rule:
    rule_type, params, condition, where, threshold, labels = None, [], None, None, None, {}
    clauses = [
        k.data for k in node.children if isinstance(k, Tree) and k.data in ("where", "threshold", "labels")
    ]
    twice = sorted({c for c in clauses if clauses.count(c) > 1})
    if twice:
        text = _fold(build.source[node.meta.start_pos : node.meta.end_pos])
        shown = " and ".join("'with threshold'" if c == "threshold" else repr(c) for c in twice)
        raise DQDLError(f"a rule takes {shown} once: {text!r}")
    for kid in node.children:
        if isinstance(kid, Token) and kid.type == "RULE_TYPE":
            rule_type = str(kid)
        elif isinstance(kid, Tree) and kid.data == "param":
            given = kid.children[0]
            if isinstance(given, _Variable):
                given = build._resolve(given)
                if not isinstance(given, str):
                    raise DQDLError(f"a parameter's variable holds a quoted string, not {given!r}")
                params.append(given)
            else:
                params.append(_string(given))
        elif isinstance(kid, Tree) and kid.data in ("compare", "between", "in_list", "matches"):
            condition = _condition(kid, build)
        elif isinstance(kid, Tree) and kid.data == "where":
            where = _string(kid.children[0])
        elif isinstance(kid, Tree) and kid.data == "threshold":
            threshold = _condition(kid.children[0], build)
        elif isinstance(kid, Tree) and kid.data == "labels":
            labels = kid.children[0] if isinstance(kid.children[0], dict) else {}
    text = _fold(build.source[node.meta.start_pos : node.meta.end_pos])
    if rule_type is None:  # the grammar gives every rule a type
        raise DQDLError(f"a rule without a rule type: {text}")
    return Rule(rule_type, tuple(params), condition, where, threshold, labels, text)


def _entry(node: Tree, build: _Build) -> Entry:
    if node.data == "rule":
        return _rule(node, build)
    if node.data in ("all_of", "any_of"):
        parts = tuple(_entry(k, build) for k in node.children)
        text = _fold(build.source[node.meta.start_pos : node.meta.end_pos])
        return Composite("and" if node.data == "all_of" else "or", parts, text)
    if node.data == "entry":
        return _entry(node.children[0], build)
    if node.data == "labelled":  # (rule or rules) labels = [...]
        inner = _entry(node.children[0], build)
        given = node.children[1].children[0] if isinstance(node.children[1], Tree) else {}
        return replace(inner, labels={**inner.labels, **(given if isinstance(given, dict) else {})})
    raise DQDLError(f"unexpected {node.data} in a rule list")


def _tokens(expected: set[str]) -> str:
    names = {
        "COMPARE": "a comparison (= != > < >= <=)",
        "STRING": "a quoted string",
        "NUMBER": "a number",
        "RULE_TYPE": "a rule type",
        "LSQB": "'['",
        "RSQB": "']'",
        "COMMA": "','",
        "LPAR": "'('",
        "RPAR": "')'",
        "EQUAL": "'='",
        "VARIABLE": "a $variable",
        "_AND": "'and'",
        "_OR": "'or'",
        "TIME_UNIT": "days or hours",
        "LBRACE": "'{'",
        "RBRACE": "'}'",
        "COLON": "':'",
        "$END": "the end of the ruleset",
        "NOW": "now()",
        "NOT": "not",
        "SIGN": "+ or -",
        "MULDIV": "* or /",
        "NAME": "a function such as avg(last(3))",
    }
    shown = sorted({names.get(e, e.strip('"').lower()) for e in expected})
    return ", ".join(shown[:12])


def parse_ruleset(text: str) -> Ruleset:
    """Read a DQDL document. Raises DQDLError naming the line and column of a mistake."""
    if not text or not text.strip():
        raise DQDLError("the ruleset is empty; write Rules = [ ... ]")
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as exc:
        raise DQDLError(_syntax_message(text, exc)) from None
    build = _Build(text)
    try:
        tree = build.transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, DQDLError):
            raise exc.orig_exc from None
        raise
    rules: list[Entry] = []
    analyzers: list[Rule] = []
    metadata: dict[str, Any] = {}
    sources: dict[str, Any] = {}
    seen_rules = False
    order = [s.data for s in tree.children if isinstance(s, Tree)]
    _check_order(order)
    for section in tree.children:
        if not isinstance(section, Tree):
            continue
        if section.data == "rules":
            if seen_rules:
                raise DQDLError("the ruleset has two Rules sections; merge them into one")
            seen_rules = True
            rules = [_entry(e, build) for e in section.children if isinstance(e, Tree)]
        elif section.data == "analyzers":
            for node in section.children:
                if isinstance(node, Tree):
                    rule = _rule(node, build)
                    analyzers.append(rule)
        elif section.data == "metadata" and isinstance(section.children[0], dict):
            metadata = section.children[0]
        elif section.data == "sources" and isinstance(section.children[0], dict):
            sources = section.children[0]
    if not seen_rules and not analyzers:
        raise DQDLError("the ruleset has no Rules = [ ... ] (nor Analyzers = [ ... ])")
    if seen_rules and not rules and not analyzers:
        raise DQDLError("Rules = [ ] holds no rule; write at least one, or leave the section out")
    if "analyzers" in order and not analyzers:
        raise DQDLError("Analyzers = [ ] holds no analyzer; write at least one, or leave the section out")
    for rule in leaves(rules):
        check_rule(rule)
    for analyzer in analyzers:
        check_rule(analyzer, analyzer=True)
    return Ruleset(tuple(rules), tuple(analyzers), metadata, sources, text)


# AWS's document: Metadata?, DataSources?, variables, then Rules and/or Analyzers.
_SECTION_RANK = {"metadata": 0, "sources": 1, "variable": 2, "rules": 3, "analyzers": 3}
_SECTION_NAME = {
    "metadata": "Metadata",
    "sources": "DataSources",
    "variable": "a variable",
    "rules": "Rules",
    "analyzers": "Analyzers",
}


def _check_order(order: list[str]) -> None:
    for name in ("metadata", "sources", "analyzers"):
        if order.count(name) > 1:
            raise DQDLError(f"the ruleset has two {_SECTION_NAME[name]} sections; keep one")
    for before, after in itertools.pairwise(order):
        if _SECTION_RANK[after] < _SECTION_RANK[before]:
            raise DQDLError(
                f"{_SECTION_NAME[after]} comes after {_SECTION_NAME[before]}; DQDL's order is "
                "Metadata, DataSources, variables, then Rules and Analyzers"
            )


def _syntax_message(text: str, exc: UnexpectedInput) -> str:
    line, column = getattr(exc, "line", None), getattr(exc, "column", None)
    where = f"line {line}, column {column}" if line and line > 0 else "at the end"
    if isinstance(exc, UnexpectedToken):
        got = "the end of the ruleset" if exc.token.type == "$END" else repr(str(exc.token))
        what = f"unexpected {got}; expected {_tokens(set(exc.expected))}"
    elif isinstance(exc, UnexpectedCharacters):
        what = f"unexpected character {text[exc.pos_in_stream or 0]!r}"
        if exc.allowed:
            what += f"; expected {_tokens(set(exc.allowed))}"
    elif isinstance(exc, UnexpectedEOF):
        where = "at the end"
        what = f"the ruleset ends early; expected {_tokens(set(exc.expected))}"
    else:
        what = str(exc)
    context = exc.get_context(text, span=30).rstrip() if line and line > 0 else ""
    return f"DQDL syntax error, {where}: {what}" + (f"\n{context}" if context else "")

"""A DQDL ruleset parsed into typed values: rules, composite rules, conditions.

``parse_ruleset(text)`` reads a DQDL document with the lark grammar in ``dqdl.lark``,
resolves ``$variables`` and reports syntax errors with their line and column and what
was expected there. Whether a rule type exists and takes the parameters it was given
is checked by ``quality.rules``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from ..errors import SparkmarkError


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


Operand = float | int | str | Keyword | Duration | Now


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


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = (Path(__file__).parent / "dqdl.lark").read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=False)


def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _string(token: Token | Tree | Any) -> str:
    if not isinstance(token, Token):
        raise DQDLError(f"expected a quoted string, got {token!r}")
    return json.loads(token) if "\\" in token else str(token)[1:-1]


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

    def VARIABLE(self, token):
        return _Variable(str(token), token.line, token.column)

    def STRING(self, token):
        return token  # kept raw: params and clauses decode it

    def dict(self, *pairs):
        return dict(pairs)

    def pair(self, key, value):
        return (_string(key), _string(value) if isinstance(value, Token) else list(value))

    # document
    def variable(self, var, value):
        if isinstance(value, _Variable):
            value = self._resolve(value)
        self.variables[var.name] = value

    def _resolve(self, value):
        if isinstance(value, _Variable):
            if value.name not in self.variables:
                raise DQDLError(
                    f"line {value.line}, column {value.column}: variable {value.name} is not "
                    f"defined; define it before the rules, e.g. {value.name} = 10"
                )
            return self.variables[value.name]
        return value


def _condition(node: Tree, build: _Build) -> Condition:
    kids = [build._resolve(k) for k in node.children]
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
    for kid in node.children:
        if isinstance(kid, Token) and kid.type == "RULE_TYPE":
            rule_type = str(kid)
        elif isinstance(kid, Tree) and kid.data == "param":
            params.append(_string(kid.children[0]))
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
    return Ruleset(tuple(rules), tuple(analyzers), metadata, sources, text)


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

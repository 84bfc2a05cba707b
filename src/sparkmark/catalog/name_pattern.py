"""Glue's (and Hive's) pattern over table names, as ``GetTables``' ``Expression`` takes it,
matched in time linear in the name whatever the pattern.

The pattern is alternatives separated by ``|``; in each, ``*`` stands for any run of
characters (``.*`` too, so a regular-expression habit such as ``ord.*`` keeps working),
``.`` for any one character, and every other character for itself. A name matches when
one alternative matches the whole of it, ignoring case. This is the Hive metastore's
meaning, which clients rely on: awswrangler's ``name_contains="sal"`` sends ``*sal*``.

No regular-expression engine is involved: a pattern compiles to a small automaton whose
states are the bits of an integer, and a name is run through it one character at a time
(bit-parallel "shift-and"). A pattern such as ``(a|a)+`` is not special here: its
parentheses and ``+`` are characters like any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ANY_RUN = "*"
ANY_ONE = "."


@dataclass
class _Alternative:
    """One alternative: bit i is token i; ``accepts[c]`` holds the tokens that consume c."""

    length: int
    any_one: int
    runs: int
    literals: dict[str, int] = field(default_factory=dict)

    def closure(self, states: int) -> int:
        # A run may match nothing: from a run's token, step over it. Runs never stand
        # next to each other (they are merged when parsed), so one step is enough.
        return states | ((states & self.runs) << 1)

    def matches(self, name: str) -> bool:
        states = self.closure(1)
        for char in name:
            consumed = self.literals.get(char, 0) | self.any_one
            states = self.closure(((states & consumed) << 1) | (states & self.runs))
            if not states:
                return False
        return bool(states >> self.length & 1)


def _alternative(text: str) -> _Alternative:
    tokens: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == ANY_RUN or (char == ANY_ONE and text[i + 1 : i + 2] == ANY_RUN):
            i += 2 if char == ANY_ONE else 1
            if not tokens or tokens[-1] != ANY_RUN:
                tokens.append(ANY_RUN)
            continue
        tokens.append(char)
        i += 1
    alt = _Alternative(length=len(tokens), any_one=0, runs=0)
    for position, token in enumerate(tokens):
        bit = 1 << position
        if token == ANY_RUN:
            alt.runs |= bit
        elif token == ANY_ONE:
            alt.any_one |= bit
        else:
            alt.literals[token] = alt.literals.get(token, 0) | bit
    return alt


class NamePattern:
    """A compiled pattern; ``NamePattern("sal*|*_raw").matches("sales")``."""

    def __init__(self, pattern: str):
        self.pattern = pattern
        self._alternatives = [_alternative(part.strip().lower()) for part in pattern.split("|")]

    def matches(self, name: str) -> bool:
        lowered = name.lower()
        return any(alt.matches(lowered) for alt in self._alternatives)

"""Custom classifiers, declared as Glue's CreateClassifier declares them, in the config
file (``sparkmark.toml``)::

    [classifiers.pipes.CsvClassifier]
    Delimiter = "|"
    QuoteSymbol = "'"
    ContainsHeader = "PRESENT"          # PRESENT | ABSENT | UNKNOWN
    Header = ["id", "name"]             # optional: the column names
    AllowSingleColumn = false

A crawler names the ones it uses in ``Classifiers = ["pipes"]``; as on Glue, they are
tried before the built-in ones. Only CSV classifiers are supported.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import ConfigError
from ..tomlfile import read_toml
from .csv_dialect import CsvRules


class CsvClassifierSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    Delimiter: str | None = None
    QuoteSymbol: str = '"'
    ContainsHeader: Literal["PRESENT", "ABSENT", "UNKNOWN"] = "UNKNOWN"
    Header: list[str] = Field(default_factory=list)
    AllowSingleColumn: bool = False
    DisableValueTrimming: bool = True

    @field_validator("Delimiter", "QuoteSymbol")
    @classmethod
    def _one_character(cls, value: str | None) -> str | None:
        if value is not None and len(value) != 1:
            raise ValueError("must be one character")
        return value

    def rules(self) -> CsvRules:
        if self.Delimiter is not None and self.Delimiter == self.QuoteSymbol:
            raise ValueError("QuoteSymbol must differ from Delimiter")
        return CsvRules(
            delimiter=self.Delimiter,
            quote=self.QuoteSymbol,
            contains_header=self.ContainsHeader,
            header=tuple(self.Header),
            allow_single_column=self.AllowSingleColumn,
        )


def load_classifiers(path: Path) -> dict[str, CsvRules]:
    """The CSV classifiers the config file declares, by name."""
    if not path.exists():
        return {}
    try:
        document = read_toml(path)
    except FileNotFoundError:
        return {}
    found: dict[str, CsvRules] = {}
    for name, body in (document.get("classifiers") or {}).items():
        kinds = set(body) - {"CsvClassifier"}
        if kinds:
            raise ConfigError(
                f"classifier {name!r} in {path}: only CsvClassifier is supported, not {', '.join(sorted(kinds))}"
            )
        try:
            found[name] = CsvClassifierSpec.model_validate(body.get("CsvClassifier") or {}).rules()
        except (ValidationError, ValueError) as exc:
            reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            raise ConfigError(f"classifier {name!r} in {path}: {reason}") from None
    return found


def csv_rules(names: list[str], declared: Mapping[str, CsvRules]) -> CsvRules | None:
    """The CSV rules of the first classifier a crawler names (None: the built-in ones)."""
    for name in names:
        if name not in declared:
            raise ConfigError(
                f"the crawler names classifier {name!r}, which is not declared "
                "([classifiers.NAME.CsvClassifier] in the config file)"
            )
    return declared[names[0]] if names else None

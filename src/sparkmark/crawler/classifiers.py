"""Custom classifiers, as Glue's CreateClassifier makes them: CSV, grok, JSON and XML.
They come from two homes. The config file (``sparkmark.toml``) declares them with
Glue's fields::

    [classifiers.pipes.CsvClassifier]
    Delimiter = "|"
    QuoteSymbol = "'"
    ContainsHeader = "PRESENT"          # PRESENT | ABSENT | UNKNOWN
    Header = ["id", "name"]             # optional: the column names

    [classifiers.access.GrokClassifier]
    Classification = "apache"
    GrokPattern = "%{COMMONAPACHELOG}"

and the API's CreateClassifier keeps them in the state store (:class:`ClassifierStore`).
A name has one home: the file's cannot be changed through the API.

A crawler names the ones it uses (``Classifiers = ["pipes"]``); as on Glue they are
tried in that order before the built-in ones, and the first that recognises a file
decides its classification and schema:

- **CSV**: a CSV file the classifier's delimiter, quote and header policy split evenly;
- **grok**: a text file whose first lines each match the whole pattern; the table's
  classification is the classifier's, its columns the pattern's fields;
- **JSON**: a JSON document in which ``JsonPath`` finds objects: those are the records;
- **XML**: an XML file holding an element ``RowTag``: each one is a record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy import BigInteger, Column, MetaData, String, Table, Text, delete, insert, select, update

from ..engine.schema import UTCDateTime, utcnow
from ..engine.store import StateStore
from ..errors import AlreadyExists, ConfigError, NotFound, SparkmarkError
from ..state import components
from ..tomlfile import read_toml
from .csv_dialect import CsvRules


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CsvClassifierSpec(_Spec):
    Delimiter: str | None = None
    QuoteSymbol: str = '"'
    ContainsHeader: Literal["PRESENT", "ABSENT", "UNKNOWN"] = "UNKNOWN"
    Header: list[str] = Field(default_factory=list)
    AllowSingleColumn: bool = False
    DisableValueTrimming: bool = True
    CustomDatatypeConfigured: bool | None = None
    CustomDatatypes: list[str] = Field(default_factory=list)
    Serde: Literal["OpenCSVSerDe", "LazySimpleSerDe", "None"] | None = None

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


class GrokClassifierSpec(_Spec):
    Classification: str
    GrokPattern: str = Field(min_length=1, max_length=2048)
    CustomPatterns: str | None = Field(default=None, max_length=16000)


class JsonClassifierSpec(_Spec):
    JsonPath: str = Field(min_length=1)


class XMLClassifierSpec(_Spec):
    Classification: str
    RowTag: str = Field(min_length=1)

    @field_validator("RowTag")
    @classmethod
    def _a_tag(cls, value: str) -> str:
        if any(c in value for c in "<>/ "):
            raise ValueError("RowTag is an element's name, without <, >, / or spaces")
        return value


KINDS: dict[str, type[_Spec]] = {
    "CsvClassifier": CsvClassifierSpec,
    "GrokClassifier": GrokClassifierSpec,
    "JsonClassifier": JsonClassifierSpec,
    "XMLClassifier": XMLClassifierSpec,
}


@dataclass(frozen=True, eq=False)  # one per definition: compared (and hashed) by identity
class Classifier:
    name: str
    kind: str  # a key of KINDS
    spec: Any  # the kind's spec
    home: str  # "file" or "api"
    version: int = 1
    created_at: datetime | None = None
    updated_at: datetime | None = None

    def csv_rules(self) -> CsvRules | None:
        return self.spec.rules() if isinstance(self.spec, CsvClassifierSpec) else None


def parse_spec(name: str, kind: str, body: Mapping[str, Any], where: str) -> Any:
    """One classifier's fields, checked as Glue checks them; one line naming the
    classifier and the field otherwise."""
    if kind not in KINDS:
        raise ConfigError(
            f"classifier {name!r} in {where}: {kind} is not a classifier kind ({', '.join(KINDS)})"
        )
    try:
        spec = KINDS[kind].model_validate({k: v for k, v in body.items() if k != "Name"})
        if isinstance(spec, CsvClassifierSpec):
            spec.rules()
        if isinstance(spec, GrokClassifierSpec):
            from ..sources.grok import GrokPattern

            GrokPattern.compile(spec.GrokPattern, spec.CustomPatterns)
        if isinstance(spec, JsonClassifierSpec):
            from ..sources.json_path import parse_path

            parse_path(spec.JsonPath)
        return spec
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"classifier {name!r} in {where}: {field}: {first['msg']}") from None
    except (ValueError, SparkmarkError) as exc:
        raise ConfigError(f"classifier {name!r} in {where}: {exc}") from None


def load_classifiers(path: Path) -> dict[str, Classifier]:
    """The classifiers the config file declares, by name."""
    if not path.exists():
        return {}
    try:
        document = read_toml(path)
    except FileNotFoundError:
        return {}
    found: dict[str, Classifier] = {}
    for name, body in (document.get("classifiers") or {}).items():
        kinds = list(body)
        if len(kinds) != 1:
            raise ConfigError(
                f"classifier {name!r} in {path}: give exactly one of {', '.join(KINDS)}, not "
                f"{', '.join(kinds) or 'none'}"
            )
        kind = kinds[0]
        found[name] = Classifier(name, kind, parse_spec(name, kind, body[kind] or {}, str(path)), "file")
    return found


def resolve(names: list[str], declared: Mapping[str, Classifier]) -> list[Classifier]:
    """The classifiers a crawler names, in its order."""
    for name in names:
        if name not in declared:
            raise ConfigError(
                f"the crawler names classifier {name!r}, which is not declared "
                "(CreateClassifier, or [classifiers.NAME] in the config file)"
            )
    return [declared[name] for name in names]


metadata = MetaData()
classifiers_table = Table(
    "sm_classifiers",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("definition", Text, nullable=False),
    Column("version", BigInteger, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)
COMPONENT = components.declare("classifiers", "classifier_schema_version", metadata, [classifiers_table])


class ClassifierStore:
    """The classifiers CreateClassifier made, in the state store."""

    def __init__(self, state: StateStore):
        self.state = state
        state.open_component(COMPONENT)

    def create(self, name: str, kind: str, spec: Any) -> None:
        now = utcnow()
        with self.state.begin() as conn:
            if conn.execute(select(classifiers_table.c.name).where(classifiers_table.c.name == name)).first():
                raise AlreadyExists(f"classifier {name!r} already exists")
            conn.execute(
                insert(classifiers_table).values(
                    name=name,
                    kind=kind,
                    definition=spec.model_dump_json(exclude_none=True),
                    version=1,
                    created_at=now,
                    updated_at=now,
                )
            )

    def update(self, name: str, kind: str, spec: Any) -> None:
        """Glue's UpdateClassifier: same kind, new fields, the version moves on."""
        with self.state.begin() as conn:
            row = conn.execute(select(classifiers_table).where(classifiers_table.c.name == name)).first()
            if row is None:
                raise NotFound(f"classifier {name!r} does not exist")
            if row.kind != kind:
                raise SparkmarkError(
                    f"classifier {name!r} is a {row.kind}; an update cannot make it a {kind} "
                    "(delete it and create it again)"
                )
            conn.execute(
                update(classifiers_table)
                .where(classifiers_table.c.name == name)
                .values(
                    definition=spec.model_dump_json(exclude_none=True),
                    version=row.version + 1,
                    updated_at=utcnow(),
                )
            )

    def delete(self, name: str) -> None:
        with self.state.begin() as conn:
            gone = conn.execute(delete(classifiers_table).where(classifiers_table.c.name == name)).rowcount
        if not gone:
            raise NotFound(f"classifier {name!r} does not exist")

    def all(self) -> dict[str, Classifier]:
        with self.state.connect() as conn:
            rows = conn.execute(select(classifiers_table).order_by(classifiers_table.c.name)).all()
        return {
            row.name: Classifier(
                row.name,
                row.kind,
                KINDS[row.kind].model_validate(json.loads(row.definition)),
                "api",
                row.version,
                row.created_at,
                row.updated_at,
            )
            for row in rows
        }


def declared_classifiers(state: StateStore, config: Path) -> dict[str, Classifier]:
    """Every classifier a crawler may name: the API's, then the file's (a name the file
    declares is the file's)."""
    return {**ClassifierStore(state).all(), **load_classifiers(config)}

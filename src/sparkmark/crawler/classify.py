"""Which format a file holds: by its name first, then by its first bytes."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import fsspec

from . import csv_dialect

if TYPE_CHECKING:
    from .classifiers import Classifier

BINARY = ("parquet", "orc", "avro")

BY_SUFFIX = {
    ".csv": "csv",
    ".tsv": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".parquet": "parquet",
    ".orc": "orc",
    ".avro": "avro",
    ".xml": "xml",
}


def classify(url: str) -> str | None:
    name = url.rsplit("/", 1)[-1].lower()
    for suffix, kind in BY_SUFFIX.items():
        if name.endswith(suffix) or name.endswith(suffix + ".gz"):
            return kind
    with fsspec.open(url, "rb") as fh:
        head = fh.read(512)
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"ORC"):
        return "orc"
    if head.startswith(b"Obj\x01"):
        return "avro"
    text = head.lstrip()
    if text.startswith((b"{", b"[")):
        return "json"
    if text.startswith(b"<"):
        return "xml"
    if b"," in head or b"\t" in head:
        return "csv"
    return None


RECOGNISE_LINES = 50  # the first lines a grok or CSV classifier is tried on
RECOGNISE_BYTES = 1 << 20
JSON_DOCUMENT_BYTES = 64 << 20  # a JSON classifier parses whole documents: this much of each


def recognise(url: str, classifiers: list[Classifier]) -> tuple[str | None, Classifier | None]:
    """A file's classification and the custom classifier that recognised it: the
    crawler's custom classifiers first, in its order, then the built-in ones."""
    built_in = classify(url)
    head = functools.cache(functools.partial(_head, url))  # read once, whichever classifiers ask
    for by in classifiers:
        kind = _recognised_by(url, built_in, by, head)
        if kind is not None:
            return kind, by
    return built_in, None


def _head(url: str) -> str:
    with fsspec.open(url, "rt", encoding="utf-8", errors="replace", compression="infer") as fh:
        return fh.read(RECOGNISE_BYTES)


def _recognised_by(url: str, built_in: str | None, by: Classifier, head: Callable[[], str]) -> str | None:
    if built_in in BINARY:
        return None
    if by.kind == "GrokClassifier":
        from ..sources.grok import GrokPattern

        pattern = GrokPattern.compile(by.spec.GrokPattern, by.spec.CustomPatterns)
        lines = [line for line in head().splitlines()[:RECOGNISE_LINES] if line.strip()]
        if lines and all(pattern.match(line) is not None for line in lines):
            return str(by.spec.Classification).lower()
        return None
    if by.kind == "XMLClassifier":
        if built_in != "xml":
            return None
        return "xml" if re.search(f"<{re.escape(by.spec.RowTag)}[\\s>]", head()) else None
    if by.kind == "JsonClassifier":
        if built_in != "json":
            return None
        from ..sources.json_path import parse_path

        try:
            with fsspec.open(url, "rt", encoding="utf-8", errors="replace", compression="infer") as fh:
                document = json.loads(fh.read(JSON_DOCUMENT_BYTES))
        except ValueError:
            return None  # not one document (JSON lines), or too big: the built-in classifier's
        records = parse_path(by.spec.JsonPath).records(document)
        return "json" if any(isinstance(r, dict) for r in records) else None
    rules = by.csv_rules()
    if rules is None or built_in not in ("csv", None):
        return None
    lines = [line.rstrip("\r") for line in head().splitlines()[:RECOGNISE_LINES]]
    return "csv" if csv_dialect.detect(lines, rules) is not None else None

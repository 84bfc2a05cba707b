"""Which format a file holds: by its name first, then by its first bytes."""

from __future__ import annotations

import fsspec

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

"""DynamoDB's export connector, as Glue reads it: ``dynamodb.export`` ``ddb`` asks
DynamoDB for a point-in-time export (``ExportTableToPointInTime``, into
``dynamodb.s3.bucket``/``dynamodb.s3.prefix``, or the job's TempDir), waits for it and
reads it; ``s3`` reads a past export at that place. The frame is the export's DynamoDB
JSON (``Item`` and its type descriptors), or, with ``dynamodb.unnestDDBJson`` or
``dynamodb.simplifyDDBJson``, that JSON made plain (``sources/dynamodb_json.py``).

An export is found as DynamoDB documents its layout: ``AWSDynamoDB/<export id>/`` under
the prefix, ``manifest-summary.json`` naming ``manifest-files.json``, which names each
data file. moto writes only the data files, under a folder of its own naming and without
manifests; an export with no manifest is found as the data files it added under the
prefix (docs/design/dynamodb.md).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..engine.options import parse_bool
from ..engine.storage import spark_base_path
from ..errors import SourceError, aws_error
from . import dynamodb_access as ddb
from . import dynamodb_json
from .base import ReadContext, SourceOutcome

log = logging.getLogger("sparkmark.sources")

EXPORT = "dynamodb.export"
TABLE_ARN = "dynamodb.tableArn"
BUCKET = "dynamodb.s3.bucket"
PREFIX = "dynamodb.s3.prefix"
OWNER = "dynamodb.s3.bucketOwner"
EXPORT_TIME = "dynamodb.exportTime"
UNNEST = "dynamodb.unnestDDBJson"
SIMPLIFY = "dynamodb.simplifyDDBJson"
OPTIONS = (EXPORT, TABLE_ARN, BUCKET, PREFIX, OWNER, EXPORT_TIME, UNNEST, SIMPLIFY)
WAIT_S = (0.1, 5.0)  # the first and the longest pause between asking whether an export is done
LAYOUT = "AWSDynamoDB"


def s3_place(url: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix`` as (bucket, prefix)."""
    if not url.startswith(("s3://", "s3a://")):
        raise SourceError(
            f"the DynamoDB export connector needs an S3 place: set {BUCKET} (and {PREFIX}), or the "
            f"job's --TempDir to an s3:// folder; TempDir is {url!r}"
        )
    bucket, _, prefix = url.split("://", 1)[1].partition("/")
    return bucket, prefix.strip("/")


def _key(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


def data_files(s3: Any, bucket: str, prefix: str) -> dict[str, float]:
    """Every export data file under ``prefix/AWSDynamoDB/``, with when it was written."""
    found: dict[str, float] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=_key(prefix, LAYOUT) + "/"
    ):
        for entry in page.get("Contents") or []:
            key = entry["Key"]
            if "/data/" in key and key.endswith(".gz"):
                found[key] = entry["LastModified"].timestamp()
    return found


def manifests(s3: Any, bucket: str, prefix: str) -> list[dict[str, Any]]:
    """The summaries of the exports under ``prefix`` (AWS's layout), newest first; the
    prefix may also be one export's own folder."""
    found = []
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=_key(prefix) + "/" if prefix else ""
    ):
        for entry in page.get("Contents") or []:
            if entry["Key"].endswith("/manifest-summary.json") or entry["Key"] == "manifest-summary.json":
                body = s3.get_object(Bucket=bucket, Key=entry["Key"])["Body"].read()
                found.append(json.loads(body))
    return sorted(found, key=lambda m: str(m.get("exportTime") or m.get("endTime") or ""), reverse=True)


def files_of(s3: Any, bucket: str, summary: Mapping[str, Any]) -> list[str]:
    """The data files a summary's ``manifest-files.json`` names."""
    listing = s3.get_object(Bucket=bucket, Key=summary["manifestFilesS3Key"])["Body"].read().decode()
    return [json.loads(line)["dataFileS3Key"] for line in listing.splitlines() if line.strip()]


@dataclass
class DynamoDBExportSource:
    """A DynamoDB table read through an export in S3."""

    options: dict[str, Any]
    ctx: str | None = None

    def __post_init__(self) -> None:
        how = str(self.options.get(EXPORT) or "").lower()
        if how not in ("ddb", "s3"):
            raise SourceError(f"{EXPORT} must be 'ddb' (export now) or 's3' (a past export), not {how!r}")
        self.how = how
        arn = self.options.get(TABLE_ARN) or self.options.get("location") or self.options.get(ddb.INPUT_TABLE)
        if not arn:
            raise SourceError(f"the DynamoDB export connector needs connection option {TABLE_ARN!r}")
        self.table, region = ddb.table_name(str(arn), TABLE_ARN)
        self.arn = str(arn)
        self.region = str(self.options.get(ddb.STS_REGION) or region or "") or None
        self.unnest = parse_bool(UNNEST, self.options.get(UNNEST, False))
        self.simplify = parse_bool(SIMPLIFY, self.options.get(SIMPLIFY, False))
        if self.unnest and self.simplify:
            raise SourceError(f"{UNNEST} and {SIMPLIFY} cannot both be true")

    def describe(self) -> str:
        return f"DynamoDB table {self.table} (export)"

    def _place(self, context: ReadContext) -> tuple[str, str]:
        bucket, prefix = self.options.get(BUCKET), self.options.get(PREFIX)
        if bucket:
            return str(bucket), str(prefix or "").strip("/")
        if context.temp_dir is None:
            raise SourceError(f"the DynamoDB export connector needs {BUCKET}, or the job's --TempDir")
        return s3_place(context.temp_dir)

    def read(self, context: ReadContext) -> SourceOutcome:
        import boto3

        access = ddb.resolve_access(self.region, self.options.get(ddb.ENDPOINT), self.options.get(ddb.ROLE_ARN),
                                    self.options.get(ddb.ROLE_SESSION))  # fmt: skip
        s3 = boto3.client(
            "s3", **({"region_name": access.region} if access.region else {}), **access.credentials
        )
        bucket, prefix = self._place(context)
        if self.how == "ddb":
            keys = self._export(access, s3, bucket, prefix)
        else:
            keys = self._past(s3, bucket, prefix)
        frame = self._frame(context, s3, bucket, keys)
        metrics = {
            "type": "dynamodb",
            "table": self.table,
            "whole": True,
            "export": self.how,
            "files": len(keys),
        }
        return SourceOutcome(frame, None, metrics)

    def _export(self, access: ddb.Access, s3: Any, bucket: str, prefix: str) -> list[str]:
        client = access.client()
        arn = self.arn if self.arn.startswith("arn:") else ddb.describe(access, self.table)["TableArn"]
        before = data_files(s3, bucket, prefix)
        request: dict[str, Any] = {"TableArn": arn, "S3Bucket": bucket, "ExportFormat": "DYNAMODB_JSON"}
        if prefix:
            request["S3Prefix"] = prefix
        if self.options.get(OWNER):
            request["S3BucketOwner"] = str(self.options[OWNER])
        if self.options.get(EXPORT_TIME):
            request["ExportTime"] = _instant(str(self.options[EXPORT_TIME]))
        try:
            described = client.export_table_to_point_in_time(**request)["ExportDescription"]
        except Exception as exc:  # noqa: BLE001 - one line naming the table
            raise SourceError(f"DynamoDB table {self.table!r} cannot be exported: {aws_error(exc)}") from None
        wait = WAIT_S[0]
        while described.get("ExportStatus") == "IN_PROGRESS":
            time.sleep(wait)
            wait = min(wait * 2, WAIT_S[1])
            described = client.describe_export(ExportArn=described["ExportArn"])["ExportDescription"]
        if described.get("ExportStatus") != "COMPLETED":
            raise SourceError(
                f"the export of DynamoDB table {self.table!r} ended {described.get('ExportStatus')}: "
                f"{described.get('FailureCode')}: {described.get('FailureMessage')}"
            )
        log.info(
            "exported DynamoDB table %s to s3://%s/%s (%s)",
            self.table,
            bucket,
            prefix,
            described["ExportArn"],
        )
        manifest = described.get("ExportManifest")
        if manifest:  # AWS's layout: the summary names the files
            summary = json.loads(s3.get_object(Bucket=bucket, Key=manifest)["Body"].read())
            return files_of(s3, bucket, summary)
        return sorted(set(data_files(s3, bucket, prefix)) - set(before))  # moto: the files it added

    def _past(self, s3: Any, bucket: str, prefix: str) -> list[str]:
        """The newest export of this table under the place (AWS's layout), or, with no
        manifest there (moto's), the data files of the newest export folder."""
        for summary in manifests(s3, bucket, prefix):
            if summary.get("tableArn") in (None, self.arn) or str(summary.get("tableArn", "")).endswith(
                f"table/{self.table}"
            ):
                return files_of(s3, bucket, summary)
        files = data_files(s3, bucket, prefix)
        if not files:
            raise SourceError(
                f"no DynamoDB export of table {self.table!r} at s3://{bucket}/{_key(prefix, LAYOUT)}/"
            )
        folder_of = {k: k.split("/data/", 1)[0] for k in files}
        newest = max(folder_of.values(), key=lambda f: max(t for k, t in files.items() if folder_of[k] == f))
        return sorted(k for k, f in folder_of.items() if f == newest)

    def _frame(self, context: ReadContext, s3: Any, bucket: str, keys: list[str]) -> Any:
        spark = context.spark
        if not keys:  # an empty table's export: no records, no fields
            from pyspark.sql.types import StructType

            return spark.createDataFrame([], StructType([]))
        frame = _in_item_order(
            spark.read.json([spark_base_path(f"s3://{bucket}/{k}") for k in keys]), s3, bucket, keys[0]
        )
        if self.unnest:
            return dynamodb_json.unnest(frame)
        if self.simplify:
            return dynamodb_json.simplify(frame)
        return frame


def _in_item_order(frame: Any, s3: Any, bucket: str, first_file: str) -> Any:
    """The export's attributes in the first item's order, then the others (Spark's JSON
    reader sorts them; a DynamicFrame keeps the file's order)."""
    import gzip

    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    if "Item" not in frame.columns or not isinstance(frame.schema["Item"].dataType, StructType):
        return frame
    with gzip.open(s3.get_object(Bucket=bucket, Key=first_file)["Body"], "rt", encoding="utf-8") as lines:
        first: dict[str, Any] = next((json.loads(line) for line in lines if line.strip()), {})
    known = frame.schema["Item"].dataType.fieldNames()
    order = [k for k in (first.get("Item") or {}) if k in known]
    order += [k for k in known if k not in order]
    return frame.select(F.struct(*[F.col("Item").getField(k).alias(k) for k in order]).alias("Item"))


def _instant(text: str) -> Any:
    from datetime import datetime

    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise SourceError(f"{EXPORT_TIME} {text!r} is not an ISO-8601 instant") from None

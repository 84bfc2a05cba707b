"""Secrets are hidden by name and by shape: the corpus of forms a secret takes in job
arguments, connection strings, command lines and messages."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkmark.engine.masking import (
    MASK,
    MaskingFilter,
    looks_secret,
    mask_arguments,
    mask_argv,
    mask_document,
    mask_text,
)

# (text holding a secret, the secret). Each form was missed by some masking once, or is
# one a data engineer writes every day.
CORPUS = [
    ("postgresql://etl:s3cretPW@db.internal:5432/sales", "s3cretPW"),
    ("postgresql+psycopg://etl:pa/ss@w0rd@db.internal/sales", "pa/ss@w0rd"),
    ("mysql://root:p@ss:w/rd@127.0.0.1:3306/shop", "p@ss:w/rd"),
    ("jdbc:mysql://app:Jdbc-Secret-1@mariadb:3306/shop?useSSL=false", "Jdbc-Secret-1"),
    ("jdbc:postgresql://db:5432/sales?user=etl&password=QueryPw42&ssl=true", "QueryPw42"),
    ("jdbc:sqlserver://sql:1433;databaseName=dw;user=sa;password=Sql$erverPw", "Sql$erverPw"),
    ("jdbc:oracle:thin:scott/tiger9@//orahost:1521/ORCLPDB1", "tiger9"),
    ("jdbc:oracle:thin:scott/ti/ger@orahost:1521:ORCL", "ti/ger"),
    ("scott/OraclePw1@orahost:1521/svc", "OraclePw1"),
    ("host=db port=5432 user=etl password=LibpqPw dbname=sales", "LibpqPw"),
    ("host=db user=etl password='two words pw' dbname=sales", "two words pw"),
    ("dbname=sales PASSWORD=UpperCasePw host=db", "UpperCasePw"),
    ("Server=sql;Database=dw;User Id=sa;Pwd=OdbcPw77;", "OdbcPw77"),
    ("spark-submit job.py --password CliPw123 --input s3://b/in", "CliPw123"),
    ("spark-submit job.py --db-token=TokenValue99", "TokenValue99"),
    ('{"user": "etl", "password": "JsonPw!"}', "JsonPw!"),
    ("https://user:HttpsPw@example.com/path?x=1", "HttpsPw"),
    ("https://storage.example.com/c/b?sv=2020&sig=SasSignature%3D&se=2030", "SasSignature%3D"),
    (
        "https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA/x&X-Amz-Signature=abcdef0123456789",
        "abcdef0123456789",
    ),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "eyJhbGciOiJIUzI1NiJ9.payload.sig"),
    (
        "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("redis://:OnlyPassword@cache:6379/0", "OnlyPassword"),
    ("mongodb://app:M0ngo%40Pw@m1:27017,m2:27017/db?replicaSet=rs", "M0ngo%40Pw"),
    ("failed to connect to amqp://guest:RabbitPw@mq:5672/ (timeout)", "RabbitPw"),
]


@pytest.mark.parametrize(("text", "secret"), CORPUS, ids=[f"form{n:02d}" for n in range(len(CORPUS))])
def test_secret_is_hidden_in_text(text, secret):
    masked = mask_text(text)
    assert secret not in masked
    assert MASK in masked


def test_corpus_has_at_least_twenty_forms():
    assert len(CORPUS) >= 20


@pytest.mark.parametrize(
    "text",
    [
        "s3://bucket/data/dt=2026-11-01/part-0000.parquet",
        "s3://bucket/path/with@sign/file.json",
        "jdbc:postgresql://db:5432/sales",
        "Select * from orders where id = 3",
        "partitionKeys=dt,region",
        "file:///tmp/in/a.json",
    ],
)
def test_text_without_secrets_is_left_alone(text):
    assert mask_text(text) == text


@pytest.mark.parametrize(
    "name",
    [
        "password",
        "--pwd",
        "db_password",
        "DBPASS",
        "secret",
        "client-secret",
        "api_key",
        "apiKey",
        "access-key",
        "sessionToken",
        "token",
        "auth",
        "aws_secret_access_key",
        "private_key",
        "passphrase",
        "sig",
    ],
)
def test_secret_names(name):
    assert looks_secret(name)


@pytest.mark.parametrize(
    "name",
    [
        "input",
        "output",
        "partitionKeys",
        "partition_key",
        "sort-key",
        "keys",
        "monkey",
        "JOB_NAME",
        "TempDir",
        "passed",
        "null_key_rows",
        "bypassed_rows",
    ],
)
def test_names_that_are_not_secrets(name):
    assert not looks_secret(name)


def test_arguments_by_name_and_shape():
    masked = mask_arguments(
        {
            "--pwd": "PlainPw-7",
            "url": "postgresql://u:p%2Fw@h/db",
            "input": "s3://b/in",
            "--partition-key": "dt",
        }
    )
    assert masked == {
        "--pwd": MASK,
        "url": f"postgresql://u:{MASK}@h/db",
        "input": "s3://b/in",
        "--partition-key": "dt",
    }


def test_argv_hides_the_value_after_a_secret_option():
    argv = ["run", "job.py", "--pwd", "x1", "--input", "in", "--api-key=k2", "--dsn", "host=h password=p3"]
    masked = mask_argv(argv)
    assert not {"x1", "k2", "p3"} & set(" ".join(masked).split("=")) and "x1" not in masked
    assert masked[:6] == ["run", "job.py", "--pwd", MASK, "--input", "in"]
    assert masked[6] == f"--api-key={MASK}" and "p3" not in masked[8]


def test_documents_by_field_name_and_value():
    doc = {
        "sources": {"src": {"path": "postgresql://a:b@h/d", "password": "pw", "rows": 3, "null_key_rows": 1}},
        "token": "tok-value-1",
        "quality": {"checks": {"passed": True}},
        "sinks": [{"key": "jr_1-1", "partition_key": "dt"}],
    }
    assert mask_document(doc) == {
        "sources": {
            "src": {"path": f"postgresql://a:{MASK}@h/d", "password": MASK, "rows": 3, "null_key_rows": 1}
        },
        "token": MASK,
        "quality": {"checks": {"passed": True}},  # counts and flags are not secrets
        "sinks": [{"key": MASK, "partition_key": "dt"}],
    }


def test_log_filter_masks_formatted_messages_and_tracebacks():
    record = logging.LogRecord(
        "x", logging.ERROR, __file__, 1, "connecting to %s", ("mysql://u:LogPw@h/d",), None
    )
    try:
        raise RuntimeError("password=TracebackPw")
    except RuntimeError as exc:
        record.exc_info = (type(exc), exc, exc.__traceback__)
    MaskingFilter().filter(record)
    assert "LogPw" not in record.getMessage() and "TracebackPw" not in (record.exc_text or "")


_PASSWORD = st.text(
    st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="\"'`<>"), min_size=4, max_size=24
)


@given(password=_PASSWORD)
def test_any_url_password_is_hidden(password):
    masked = mask_text(f"postgresql://etl:{password}@db.example.com:5432/sales")
    assert masked.endswith("@db.example.com:5432/sales")
    assert masked == f"postgresql://etl:{MASK}@db.example.com:5432/sales"

"""Pure parts of the Glue API endpoint: partition expressions, signatures, the wire
format. No server, no Spark."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from hypothesis import given
from hypothesis import strategies as st

from sparkmark.api import auth, protocol
from sparkmark.catalog.expression import ExpressionError, select_partitions
from sparkmark.catalog.models import Column, Partition
from sparkmark.catalog.name_pattern import NamePattern

KEYS = (Column("year", "int"), Column("region", "string"))


def parts(*values: tuple[str, str]) -> list[Partition]:
    return [Partition(v, f"/data/year={v[0]}/region={v[1]}") for v in values]


@given(st.lists(st.integers(-500, 5000), unique=True, max_size=30), st.integers(-500, 5000))
def test_int_keys_compare_as_numbers(years, bound):
    found = select_partitions(KEYS, parts(*[(str(y), "eu") for y in years]), f"year >= {bound}")
    assert sorted(int(p.values[0]) for p in found) == sorted(y for y in years if y >= bound)


@given(
    st.lists(st.text("abcxyz", min_size=1, max_size=4), unique=True, max_size=20),
    st.text("abcxyz", max_size=3),
)
def test_string_keys_compare_as_text(regions, bound):
    found = select_partitions(KEYS, parts(*[("1", r) for r in regions]), f"region < '{bound}'")
    assert sorted(p.values[1] for p in found) == sorted(r for r in regions if r < bound)


def test_an_empty_expression_selects_everything_in_order():
    given_parts = parts(("2", "b"), ("1", "a"))
    assert select_partitions(KEYS, given_parts, "") == given_parts
    assert select_partitions(KEYS, given_parts, "  ") == given_parts


@pytest.mark.parametrize(
    "expression",
    [
        "year >",
        "nope = 1",
        "year = 1; DROP TABLE partitions",
        "year IN (SELECT 1 FROM sqlite_master)",
        "load_extension('x') = 1",
        "year = (SELECT count(*) FROM pragma_table_info('partitions'))",
    ],
)
def test_bad_or_reaching_expressions_are_refused(expression):
    with pytest.raises(ExpressionError):
        select_partitions(KEYS, parts(("1", "a")), expression)


def test_a_self_join_of_the_partitions_is_refused_at_once():
    """The probe: four self-joins over 101 partitions took 25 s of CPU. Glue's syntax
    has no sub-query, so any second SELECT is refused before anything runs."""
    many = parts(*[(str(y), "eu") for y in range(101)])
    for expression in (
        "EXISTS (SELECT 1 FROM partitions a, partitions b, partitions c, partitions d)",
        "year IN (WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT x FROM n)",
    ):
        with pytest.raises(ExpressionError, match="sub-query"):
            select_partitions(KEYS, many, expression)


def test_an_expression_past_its_budget_is_one_error():
    many = parts(*[(str(y), f"r{y}") for y in range(2000)])
    heavy = " OR ".join(["lower(upper(trim(region))) = 'zz'"] * 20)
    assert select_partitions(KEYS, many, heavy) == []  # within the default budget
    with pytest.raises(ExpressionError, match="more work than one request may take"):
        select_partitions(KEYS, many, heavy, budget=50_000)


# Glue's GetTables Expression, as the Hive metastore reads it and clients send it
# (awswrangler's catalog.get_tables sends name_contains as *X*, a prefix as X*, a
# suffix as *X): `*` any run, `.` any one character, `|` alternatives, whole names.
@pytest.mark.parametrize(
    ("pattern", "name", "matches"),
    [
        ("sal*", "sales", True),
        ("*ale*", "sales", True),
        ("*ale*", "ale", True),
        ("*les", "sales", True),
        ("sal*", "resales", False),
        ("sales", "sales", True),
        ("sales", "sales_2026", False),  # the whole name, not a part of it
        ("SALES", "sales", True),  # case is ignored, as Hive ignores it
        ("orders|sal*", "sales", True),
        ("orders | sal*", "orders", True),
        ("orders|sal*", "returns", False),
        ("ord.*", "orders", True),  # a regular-expression habit still works
        ("s.les", "sales", True),
        ("s.les", "sles", False),
        ("*", "anything", True),
        ("", "", True),
        ("", "orders", False),
        ("(a|a)+", "a", False),  # parentheses and + are characters, not a regex
        ("a+", "a+", True),
    ],
)
def test_table_name_patterns_mean_what_glue_documents(pattern, name, matches):
    assert NamePattern(pattern).matches(name) is matches


def test_table_name_patterns_take_time_linear_in_the_name():
    """(a|a)+ against a 27-character name froze the endpoint for 20 s; a pattern of
    many runs against a long name is where a backtracking matcher explodes."""
    # Exponential work would not end within the test run; linear work is microseconds.
    assert not NamePattern("(a|a)+").matches("a" * 26 + "b")
    assert not NamePattern("*a" * 1000 + "b").matches("a" * 255)
    assert NamePattern("*a" * 1000).matches("a" * 1000)


@given(st.text("ab*.|", max_size=12), st.text("ab", max_size=12))
def test_table_name_patterns_agree_with_a_reference_translation(pattern, name):
    import re

    def reference(alternative: str) -> str:
        out, i = [], 0
        while i < len(alternative):
            if alternative[i] == "*" or alternative[i : i + 2] == ".*":
                i += 1 if alternative[i] == "*" else 2
                out.append(".*")
            else:
                out.append("." if alternative[i] == "." else re.escape(alternative[i]))
                i += 1
        return "".join(out)

    expected = any(re.fullmatch(reference(a.strip()), name) for a in pattern.split("|"))
    assert NamePattern(pattern).matches(name) is expected


def sign(
    request: AWSRequest, signer: SigV4Auth, when: datetime, payload_line: str | None = None
) -> dict[str, str]:
    """The request's headers with a SigV4 Authorization made by ``signer`` at ``when``;
    ``payload_line`` replaces the canonical request's last line (a client that hashes
    the body itself)."""
    request.context["timestamp"] = when.strftime("%Y%m%dT%H%M%SZ")
    request.headers["X-Amz-Date"] = request.context["timestamp"]
    request.headers["host"] = "127.0.0.1:4599"
    canonical = signer.canonical_request(request)
    if payload_line is not None:
        canonical = canonical.rpartition("\n")[0] + "\n" + payload_line
    signature = signer.signature(signer.string_to_sign(request, canonical), request)
    headers = dict(request.headers.items())
    headers["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={signer.scope(request)}, "
        f"SignedHeaders={signer.signed_headers(signer.headers_to_sign(request))}, Signature={signature}"
    )
    return headers


def signed(secret: str, when: datetime, body: bytes = b"{}") -> tuple[dict[str, str], bytes]:
    request = AWSRequest(
        method="POST",
        url="http://127.0.0.1:4599/",
        data=body,
        headers={"X-Amz-Target": "AWSGlue.GetDatabases", "Content-Type": protocol.CONTENT_TYPE},
    )
    return sign(request, SigV4Auth(Credentials("AKIDEXAMPLE", secret), "glue", "us-east-1"), when), body


def check(token, headers, body, now):
    auth.check_signature(
        [token], method="POST", url="http://127.0.0.1:4599/", headers=headers, body=body, now=now
    )


def test_a_signature_with_the_token_is_accepted_and_others_are_not():
    now = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
    headers, body = signed("the-token", now)
    check("the-token", headers, body, now)
    with pytest.raises(protocol.GlueApiError, match="no token"):
        check(None, {}, b"anything", now)  # there is no unsigned mode
    auth.check_signature(  # one of several secrets (the in-process endpoint's two)
        ["other", "the-token"],
        method="POST",
        url="http://127.0.0.1:4599/",
        headers=headers,
        body=body,
        now=now,
    )
    with pytest.raises(protocol.GlueApiError, match="does not match") as wrong:
        check("another-token", headers, body, now)
    assert (wrong.value.code, wrong.value.status) == ("AccessDeniedException", 403)
    with pytest.raises(protocol.GlueApiError, match="does not match"):
        check("the-token", headers, b'{"changed": true}', now)  # the body is signed too
    with pytest.raises(protocol.GlueApiError, match="15 minutes"):
        check("the-token", headers, body, now + timedelta(minutes=16))
    with pytest.raises(protocol.GlueApiError, match="signed"):
        check("the-token", {k: v for k, v in headers.items() if k != "Authorization"}, body, now)


def test_responses_are_checked_against_glues_model_and_dated_in_epoch_seconds():
    op = protocol.operation("GetDatabase")
    stamp = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    rendered = json.loads(protocol.render_response(op, {"Database": {"Name": "d", "CreateTime": stamp}}))
    assert rendered == {"Database": {"Name": "d", "CreateTime": stamp.timestamp()}}
    with pytest.raises(protocol.GlueApiError, match="refuses") as refused:
        protocol.render_response(op, {"Database": {"Name": "d", "Unheard": 1}})
    assert refused.value.code == "InternalServiceException"
    with pytest.raises(protocol.GlueApiError) as unknown:
        protocol.operation("MakeCoffee")
    assert unknown.value.code == "InvalidAction"


def test_a_scope_with_the_endpoint_in_it_and_a_declared_body_hash_are_read_as_clients_send_them():
    """DuckDB signs for an endpoint that is not AWS's with ``host:port/path`` as both
    region and service; a client may declare the body's hash (x-amz-content-sha256):
    it must be the body's, and the signature still decides."""
    import base64
    import hashlib

    now = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
    body = b'{"namespace": ["sales"]}'
    request = AWSRequest(
        method="POST",
        url="http://127.0.0.1:4599/iceberg/v1/namespaces",
        data=body,
        headers={
            "Content-Type": "application/json",
            "x-amz-content-sha256": hashlib.sha256(body).hexdigest(),
        },
    )
    scope = "127.0.0.1:4599/iceberg"
    headers = sign(request, SigV4Auth(Credentials("duck", "the-token"), scope, scope), now)
    url = "http://127.0.0.1:4599/iceberg/v1/namespaces"

    def verify(token: str, sent_headers: dict, sent_body: bytes) -> None:
        auth.check_signature([token], method="POST", url=url, headers=sent_headers, body=sent_body, now=now)

    verify("the-token", headers, body)
    with pytest.raises(protocol.GlueApiError, match="does not match"):
        verify("another-token", headers, body)
    with pytest.raises(protocol.GlueApiError, match="not the SHA-256 of its body"):
        verify("the-token", headers, b'{"namespace": ["other"]}')
    lying = {**headers, "x-amz-content-sha256": base64.b64encode(hashlib.sha256(b"x").digest()).decode()}
    with pytest.raises(protocol.GlueApiError, match="not the SHA-256 of its body"):
        verify("the-token", lying, body)
    # Iceberg's Java signer: the header in base64, the canonical payload line in hex.
    java = AWSRequest(method="POST", url=url, data=body, headers={"Content-Type": "application/json"})
    java.headers["x-amz-content-sha256"] = base64.b64encode(hashlib.sha256(body).digest()).decode()
    glue = SigV4Auth(Credentials("java", "the-token"), "glue", "us-east-1")
    java_headers = sign(java, glue, now, payload_line=hashlib.sha256(body).hexdigest())
    verify("the-token", java_headers, body)
    with pytest.raises(protocol.GlueApiError, match="does not match"):
        verify("another-token", java_headers, body)
    unsigned = {**headers, "x-amz-content-sha256": "UNSIGNED-PAYLOAD"}
    with pytest.raises(protocol.GlueApiError, match="not the SHA-256 of its body"):
        verify("the-token", unsigned, body)

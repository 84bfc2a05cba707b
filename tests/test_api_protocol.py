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


def signed(secret: str, when: datetime, body: bytes = b"{}") -> tuple[dict[str, str], bytes]:
    request = AWSRequest(
        method="POST",
        url="http://127.0.0.1:4599/",
        data=body,
        headers={"X-Amz-Target": "AWSGlue.GetDatabases", "Content-Type": protocol.CONTENT_TYPE},
    )
    signer = SigV4Auth(Credentials("AKIDEXAMPLE", secret), "glue", "us-east-1")
    request.context["timestamp"] = when.strftime("%Y%m%dT%H%M%SZ")
    request.headers["X-Amz-Date"] = request.context["timestamp"]
    request.headers["host"] = "127.0.0.1:4599"
    canonical = signer.canonical_request(request)
    signature = signer.signature(signer.string_to_sign(request, canonical), request)
    headers = dict(request.headers.items())
    headers["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={signer.scope(request)}, "
        f"SignedHeaders={signer.signed_headers(signer.headers_to_sign(request))}, Signature={signature}"
    )
    return headers, body


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

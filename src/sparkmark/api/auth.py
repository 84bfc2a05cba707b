"""Request signatures: AWS Signature Version 4, checked with botocore's own signer.

A request must be signed with the endpoint's token as its secret access key (any
access key id): the signature is computed again here, over the headers the client
says it signed, and compared in constant time; a request dated more than 15 minutes
away from this clock is refused, as AWS refuses it. There is no unsigned mode.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from botocore.auth import SigV4Auth

from .protocol import GlueApiError

MAX_SKEW = timedelta(minutes=15)
_AUTH = re.compile(
    r"AWS4-HMAC-SHA256\s+Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<scope>[^,]+?)/aws4_request,"
    r"\s*SignedHeaders=(?P<signed>[^,]+),\s*Signature=(?P<sig>[0-9a-f]{64})"
)


def _scopes(scope: str) -> list[tuple[str, str]]:
    """The (region, service) pairs a credential scope can be read as. Its parts are
    one each for AWS's clients; DuckDB's Iceberg catalog, on an endpoint that is not
    AWS's, signs with its endpoint (``host:port/path``) as both, slashes included, so
    each split is tried (the signature, computed with the secret, decides)."""
    parts = scope.split("/")
    return [("/".join(parts[:i]), "/".join(parts[i:])) for i in range(1, len(parts))]


def access_key(headers: Mapping[str, str]) -> str:
    """The access key id a signed request names (checked by ``check_signature`` first)."""
    found = _AUTH.fullmatch(str(headers.get("authorization", "")).strip())
    return found["key"] if found else ""


def _refused(message: str) -> GlueApiError:
    return GlueApiError("AccessDeniedException", message, status=403)


def _payload_hash(declared: str | None, body: bytes) -> str:
    """The canonical request's payload line: the body's SHA-256 in hex, as SigV4 has it.
    An ``x-amz-content-sha256`` the client sent must be that hash (in hex, or in base64
    as Iceberg's Java REST signer sends it)."""
    digest = hashlib.sha256(body).digest()
    if declared is not None and declared not in (digest.hex(), base64.b64encode(digest).decode()):
        raise _refused("the request's x-amz-content-sha256 is not the SHA-256 of its body")
    return digest.hex()


class _Signer(SigV4Auth):
    """botocore's signer with the canonical request's payload line given: botocore takes
    an ``x-amz-content-sha256`` header's value for it, which is right for S3's hex
    hashes but not for a base64 one (its canonical payload line is still hex)."""

    payload_hash: str | None = None

    def canonical_request(self, request):
        made = super().canonical_request(request)
        if self.payload_hash is None:
            return made
        return f"{made.rpartition(chr(10))[0]}\n{self.payload_hash}"


def check_signature(
    secrets: Sequence[str],
    *,
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    now: datetime | None = None,
) -> None:
    """Raise AccessDeniedException unless the request is signed with one of ``secrets``."""
    secrets = [s for s in secrets if s]
    if not secrets:
        raise _refused("this endpoint has no token to check signatures against")
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    lowered = {k.lower(): v for k, v in headers.items()}
    found = _AUTH.fullmatch(lowered.get("authorization", "").strip())
    if found is None:
        raise _refused("this endpoint needs requests signed (SigV4) with its token as the secret key")
    stamp = lowered.get("x-amz-date", "")
    try:
        when = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise _refused("the signed request has no valid X-Amz-Date header") from None
    if abs((now or datetime.now(UTC)) - when) > MAX_SKEW:
        raise _refused("the request's X-Amz-Date is more than 15 minutes from the endpoint's clock")
    signed = found["signed"].split(";")
    missing = [h for h in signed if h not in lowered]
    if missing or "host" not in signed:
        raise _refused("the request's SignedHeaders name headers it does not carry, or leave out host")
    request = AWSRequest(method=method, url=url, data=body, headers={h: lowered[h] for h in signed})
    request.context["timestamp"] = stamp
    matched = False
    payload = _payload_hash(lowered.get("x-amz-content-sha256"), body)
    for region, service in _scopes(found["scope"])[:8]:
        for secret in secrets:
            signer = _Signer(Credentials(found["key"], secret), service, region)
            signer.payload_hash = payload
            canonical = signer.canonical_request(request)
            expected = signer.signature(signer.string_to_sign(request, canonical), request)
            matched |= hmac.compare_digest(expected, found["sig"])
    if not matched:
        raise _refused(
            "the request signature does not match: sign with the endpoint's token as the secret key"
        )

"""STS's GetCallerIdentity, which some Glue clients call before anything else (Terraform's
provider to learn the account it builds ARNs with, Airflow's crawler operator to tag):
answered, in STS's query protocol, for a caller the endpoint has already authenticated.
The account is the catalog's id; the caller is named by its access key id."""

from __future__ import annotations

import uuid
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

from .protocol import GlueApiError
from .service import CATALOG_ID

NAMESPACE = "https://sts.amazonaws.com/doc/2011-06-15/"


def is_sts(content_type: str | None, body: bytes) -> bool:
    """A query-protocol request (form-encoded, no X-Amz-Target): how STS is called."""
    return (content_type or "").startswith("application/x-www-form-urlencoded") and b"Action=" in body


def answer(body: bytes, access_key: str) -> bytes:
    form = parse_qs(body.decode("utf-8", errors="replace"))
    action = (form.get("Action") or [""])[0]
    if action != "GetCallerIdentity":
        raise GlueApiError("InvalidAction", f"{action or '(none)'} is not an STS action this endpoint serves")
    user = escape(access_key or "sparkmark")
    return (
        f'<GetCallerIdentityResponse xmlns="{NAMESPACE}"><GetCallerIdentityResult>'
        f"<Arn>arn:aws:iam::{CATALOG_ID}:user/{user}</Arn><UserId>{user}</UserId>"
        f"<Account>{CATALOG_ID}</Account></GetCallerIdentityResult>"
        f"<ResponseMetadata><RequestId>{uuid.uuid4()}</RequestId></ResponseMetadata>"
        "</GetCallerIdentityResponse>"
    ).encode()


def error(exc: GlueApiError) -> bytes:
    return (
        f'<ErrorResponse xmlns="{NAMESPACE}"><Error><Type>Sender</Type><Code>{escape(exc.code)}</Code>'
        f"<Message>{escape(exc.message)}</Message></Error><RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>"
    ).encode()

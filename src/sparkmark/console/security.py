"""Who may use the console, and which requests may change state.

- **Token.** With a token configured (required beyond loopback), every request must
  carry it: as ``Authorization: Bearer <token>``, or as the session cookie that the
  sign-in form sets. The cookie holds an HMAC of the token, never the token itself,
  and is ``HttpOnly`` and ``SameSite=Strict``.
- **CSRF.** Requests that change state (reset, rewind, start, stop) are POSTs that
  must carry a form field equal to the ``sm_csrf`` cookie (the double-submit pattern:
  another site can make a browser send the cookie, but cannot read it to put it in the
  form), and whose ``Origin``, when the browser sends one, is the console's own.

Starlette has no CSRF or token middleware of its own; these are a few lines over
:mod:`hmac` and :mod:`secrets`, which is why no extra package is taken for them.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from starlette.requests import Request

CSRF_COOKIE = "sm_csrf"
CSRF_FIELD = "csrf"
SESSION_COOKIE = "sm_session"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class Guard:
    def __init__(self, token: str | None):
        self.token = token
        self._key = secrets.token_bytes(32)  # signs the session cookie for this process's life

    # ----------------------------------------------------------------- the token

    @property
    def required(self) -> bool:
        return bool(self.token)

    def session_value(self) -> str:
        assert self.token
        return hmac.new(self._key, self.token.encode(), hashlib.sha256).hexdigest()

    def token_matches(self, given: str) -> bool:
        return bool(self.token) and hmac.compare_digest(given.encode(), (self.token or "").encode())

    def admitted(self, request: Request) -> bool:
        """Whether the request carries the token (header) or a session made with it."""
        if not self.required:
            return True
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer ") and self.token_matches(header[7:].strip()):
            return True
        cookie = request.cookies.get(SESSION_COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie.encode(), self.session_value().encode())

    # ------------------------------------------------------------------ CSRF

    @staticmethod
    def csrf_token(request: Request) -> str:
        """The request's CSRF value: its cookie's, or a new one the response will set."""
        found = request.cookies.get(CSRF_COOKIE)
        if found and len(found) == 43:
            return found
        made = getattr(request.state, "new_csrf", None)
        if made is None:
            made = secrets.token_urlsafe(32)
            request.state.new_csrf = made
        return made

    @staticmethod
    def same_origin(request: Request) -> bool:
        origin = request.headers.get("origin")
        if not origin or origin == "null":
            return origin is None
        host = request.headers.get("host", "")
        return urlsplit(origin).netloc == host

    @staticmethod
    def csrf_ok(request: Request, form_value: str | None) -> bool:
        cookie = request.cookies.get(CSRF_COOKIE, "")
        if not cookie or not form_value:
            return False
        return hmac.compare_digest(cookie.encode(), form_value.encode()) and Guard.same_origin(request)

"""Who may use the console, and which requests may change state.

- **Token.** The console always has one: the configured ``SPARKMARK_CONSOLE_TOKEN``
  (or ``--token-file``), else the home's own (:func:`sparkmark.access.local_token`).
  Every request carries it, as ``Authorization: Bearer <token>`` or as the session
  cookie that signing in sets: through the form at ``/login``, or by opening the
  sign-in URL the console prints (``/login?token=…``, as Jupyter's). The cookie holds
  an HMAC of the token, never the token itself, and is ``HttpOnly``,
  ``SameSite=Strict``, and ``Secure`` when the console speaks HTTPS. Wrong tokens
  are rate-limited per client address and presented value; a request that presents
  none is never counted, and the right token is never refused for others' guesses.
- **Host and Origin** are checked against the allow-list before anything else
  (:class:`sparkmark.access.RequestGuard`).
- **CSRF.** Requests that change state (reset, rewind, start, stop, Studio save, run
  and preview) must carry a value equal to the ``sm_csrf`` cookie (the double-submit
  pattern: another site can make a browser send the cookie, but cannot read it), and
  an ``Origin``, when the browser sends one, that the allow-list names; never the
  request's own ``Host``, which a rebound page controls.

Starlette has no CSRF or token middleware of its own; these are a few lines over
:mod:`hmac` and :mod:`secrets`, which is why no extra package is taken for them.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from ..access import FailureLimiter, HostPolicy, client_address

CSRF_COOKIE = "sm_csrf"
CSRF_FIELD = "csrf"
SESSION_COOKIE = "sm_session"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
ADMITTED, ABSENT, WRONG, THROTTLED = "admitted", "absent", "wrong", "throttled"


class Guard:
    def __init__(self, token: str, hosts: HostPolicy, *, secure: bool = False):
        if not token:
            raise ValueError("the console needs a token")
        self.token = token
        self.hosts = hosts
        self.secure = secure
        self.limiter = FailureLimiter()
        self._key = secrets.token_bytes(32)  # signs the session cookie for this process's life

    # ----------------------------------------------------------------- the token

    @property
    def required(self) -> bool:
        return True

    def session_value(self) -> str:
        return hmac.new(self._key, self.token.encode(), hashlib.sha256).hexdigest()

    def presented(self, request: Request, given: str) -> str:
        """What presenting ``given`` as the token comes to: ``ADMITTED``, ``WRONG``, or
        ``THROTTLED`` once this address has presented that wrong value too often. The
        token is compared first, so another client's wrong guesses never refuse it."""
        if hmac.compare_digest(given.encode(), self.token.encode()):
            return ADMITTED
        return THROTTLED if self.limiter.failed(client_address(request.scope), given) else WRONG

    def check(self, request: Request) -> str:
        """``ADMITTED`` for the token (a bearer header) or a session made with it;
        ``ABSENT`` when the request presents neither (a stale cookie from an earlier
        console process counts as none, and so does an ``<img>`` on another site);
        else what the wrong bearer token comes to."""
        cookie = request.cookies.get(SESSION_COOKIE, "")
        if cookie and hmac.compare_digest(cookie.encode(), self.session_value().encode()):
            return ADMITTED
        header = request.headers.get("authorization", "")
        given = header[7:].strip() if header[:7].lower() == "bearer " else ""
        return self.presented(request, given) if given else ABSENT

    def sign_in(self, response: Response) -> Response:
        response.set_cookie(
            SESSION_COOKIE, self.session_value(), httponly=True, samesite="strict", secure=self.secure
        )
        return response

    def set_csrf(self, response: Response, value: str) -> None:
        response.set_cookie(CSRF_COOKIE, value, httponly=True, samesite="strict", secure=self.secure)

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

    def csrf_ok(self, request: Request, form_value: str | None) -> bool:
        cookie = request.cookies.get(CSRF_COOKIE, "")
        if not cookie or not form_value:
            return False
        return hmac.compare_digest(cookie.encode(), form_value.encode()) and self.hosts.origin_ok(
            request.headers.get("origin")
        )


def guard_of(request: Request) -> Guard:
    guard: Guard = request.app.state.guard
    return guard


class NoSecrets(Markup):
    """HTML the console built itself only from values that cannot hold a secret
    (checked job names, run ids, states, times): pages print it as it is, without
    masking it again (a timeline of a thousand runs is 300 KB of such HTML)."""

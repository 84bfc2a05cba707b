"""Who may reach sparkmark's servers (the Glue API endpoint and the console), and how
much of a request they may send before anything else looks at it.

Both servers run code on request (a job, a Studio preview), so neither is ever open:

- **A token always.** When none is configured, one is generated on first use and
  kept owner-only in ``$SPARKMARK_HOME/token``; every sparkmark process using the
  same home reads it from there (``sparkmark run``'s endpoint, the scheduler's jobs),
  so nobody types it and it never appears in a command line or a log line. Beyond
  loopback a token must be at least :data:`MIN_REMOTE_TOKEN` characters.
- **Host and Origin allow-list.** A request's ``Host`` must name this machine
  (``localhost``, ``127.0.0.1``, ``[::1]``), the address the server binds, or a name
  the configuration allows; an ``Origin`` must name one of the same hosts. A web page
  that rebinds its own name to 127.0.0.1 sends its own name in both, and is refused
  before the token is even looked at.
- **Limits read before the body.** A body larger than the cap is refused with 413
  from its ``Content-Length`` (or as soon as a chunked body passes the cap); a body
  that does not arrive within the timeout is answered 408 and its connection closed;
  a client that goes away is one log line.
- **A budget for all bodies at once** (:class:`BodyBudget`): bodies in flight together
  stay under ``SPARKMARK_MAX_INFLIGHT_BYTES``; past it a request is answered 503.
- **Wrong tokens are rate-limited** per client address and presented credential
  (:class:`FailureLimiter`): requests without one are never counted.

These are pure ASGI and a few lines over :mod:`secrets` and :mod:`hmac`; Starlette
has no token, Host-and-Origin or body-limit middleware that reads nothing first
(its ``TrustedHostMiddleware`` compares Host only, and answers after routing
middleware has run), which is why no package is taken for them.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import logging
import re
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .errors import ConfigError

log = logging.getLogger("sparkmark.access")

TOKEN_FILE = "token"
MIN_REMOTE_TOKEN = 32
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})


# ------------------------------------------------------------------ the token


def token_path(home: Path) -> Path:
    return home / TOKEN_FILE


def local_token(home: Path) -> str:
    """The token of this home: read from its file, or made and written there owner-only
    (0600 in a 0700 folder) when there is none yet."""
    from .state.handle import private_secret

    return private_secret(token_path(home), lambda: secrets.token_urlsafe(32))  # 43 characters


def resolve_token(configured: str | None, home: Path) -> str:
    """The token a server checks: the configured one, else this home's own."""
    return configured if configured else local_token(home)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_binding(host: str, token: str, *, service: str, how: str) -> None:
    """Beyond loopback a token must be long enough not to be guessed; ``how`` says how
    to give one."""
    if not is_loopback(host) and len(token) < MIN_REMOTE_TOKEN:
        raise ConfigError(
            f"the {service} binds to {host}, beyond this machine, and its token has {len(token)} "
            f"characters: {how} of at least {MIN_REMOTE_TOKEN} characters, or bind to 127.0.0.1"
        )


# ------------------------------------------------------------------ Host and Origin


def _host_name(value: str) -> str:
    """``name``, ``name:port``, ``[v6]`` or ``[v6]:port`` → the name, lower case."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    if value.count(":") > 1:  # a bare IPv6 address
        return value
    return value.rsplit(":", 1)[0] if ":" in value else value


class HostPolicy:
    """The names a request's Host and Origin may carry."""

    def __init__(self, bind: str, extra: Iterable[str] = ()):
        names = set(LOCAL_HOSTS)
        if bind not in WILDCARD_BINDS:
            names.add(_host_name(bind))
        extra = [e.strip().lower() for e in extra if e.strip()]
        self.any = "*" in extra
        names.update(_host_name(e) for e in extra if e != "*")
        self.names = frozenset(names)

    def host_ok(self, host: str | None) -> bool:
        if self.any:
            return True
        return bool(host) and _host_name(host or "") in self.names

    def origin_ok(self, origin: str | None) -> bool:
        """No Origin (not a browser's cross-site request) is fine; ``null`` never is."""
        if origin is None:
            return True
        if origin == "null":
            return False
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return False
        return self.any or parts.hostname.lower() in self.names


# ------------------------------------------------------------------ wrong tokens


class FailureLimiter:
    """At most ``limit`` failures of one presented credential from one client address in
    ``window`` seconds; past that, that credential from that address is answered 429
    until the window has gone by.

    Only a request that *presents* a credential and fails it is counted, and it is
    counted under what it presented (an access key id, a fingerprint of a token), so:

    - a request with no credential at all (an ``<img>`` on any web page aimed at a
      loopback port) is answered 401 or 403 and never counted;
    - a wrong guess never locks out the right token: callers check the credential
      first, and a correct one is served whatever the limiter holds for others.

    The token is 256 random bits, so the limiter is not what keeps guessers out; it
    keeps a noisy client from costing the server a signature check per request, and
    makes a guessing loop visible as 429s in the log."""

    def __init__(self, limit: int = 10, window: float = 60.0, clock: Callable[[], float] = time.monotonic):
        self.limit = limit
        self.window = window
        self._clock = clock
        self._failures: dict[tuple[str, str], list[float]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(client: str, presented: str) -> tuple[str, str]:
        # A fingerprint, so a wrong token's text is never kept in memory.
        return client, hashlib.sha256(presented.encode("utf-8", "replace")).hexdigest()[:16]

    def _recent(self, key: tuple[str, str], now: float) -> list[float]:
        kept = [t for t in self._failures.get(key, []) if now - t < self.window]
        if kept:
            self._failures[key] = kept
        else:
            self._failures.pop(key, None)
        return kept

    def blocked(self, client: str, presented: str) -> bool:
        with self._lock:
            return len(self._recent(self._key(client, presented), self._clock())) >= self.limit

    def failed(self, client: str, presented: str) -> bool:
        """Count one failure of ``presented`` from ``client``; whether that credential
        from that address is now over the limit (answer 429 rather than 401/403)."""
        key = self._key(client, presented)
        with self._lock:
            now = self._clock()
            self._recent(key, now)
            self._failures.setdefault(key, []).append(now)
            if len(self._failures) > 10_000:  # many keys: forget the oldest
                oldest = min(self._failures, key=lambda c: self._failures[c][-1])
                self._failures.pop(oldest, None)
            return len(self._failures.get(key, ())) > self.limit


def client_address(scope: MutableMapping[str, Any]) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "?"


# ------------------------------------------------------------------ the guard

Refusal = Callable[[int, str, str], tuple[bytes, list[tuple[bytes, bytes]]]]
Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [Message, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]


class Limits:
    """What one request may send, and what all requests together may hold at once."""

    def __init__(
        self,
        max_body: int = 10 * 1024 * 1024,
        body_seconds: float = 30.0,
        max_inflight: int = 64 * 1024 * 1024,
    ):
        self.max_body = max_body
        self.body_seconds = body_seconds
        self.max_inflight = max(max_inflight, max_body)


class BodyBudget:
    """The bytes of request bodies a server holds at once, all requests together: a
    request reserves its body's bytes (its ``Content-Length`` at once, or chunk by chunk)
    and gives them back when it has been answered. Many clients each sending a body
    under the per-request cap can then never take more than the budget."""

    def __init__(self, total: int):
        self.total = total
        self.held = 0
        self._lock = threading.Lock()

    def take(self, size: int) -> bool:
        with self._lock:
            if self.held + size > self.total:
                return False
            self.held += size
            return True

    def give_back(self, size: int) -> None:
        with self._lock:
            self.held = max(0, self.held - size)


class RequestGuard:
    """ASGI middleware in front of a server: Host and Origin first, then the body read
    whole under its cap and timeout, then the application, which gets the body replayed.

    ``refuse(status, code, message)`` renders a refusal in the server's own shape (the
    API's Glue error JSON, the console's page)."""

    def __init__(self, app: ASGIApp, *, hosts: HostPolicy, limits: Limits, refuse: Refusal, name: str):
        self.app = app
        self.hosts = hosts
        self.limits = limits
        self.refuse = refuse
        self.name = name
        self.budget = BodyBudget(limits.max_inflight)

    async def _send_refusal(self, send, status: int, code: str, message: str) -> None:
        body, headers = self.refuse(status, code, message)
        headers = [*headers, (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        for header, allowed, refusal in (
            (
                "host",
                self.hosts.host_ok,
                "this server does not answer to that Host name; if it is a name of this machine, "
                "add it to SPARKMARK_ALLOWED_HOSTS",
            ),
            ("origin", self.hosts.origin_ok, "requests from that Origin are refused"),
        ):
            value = headers.get(header)
            if not allowed(value):
                log.warning(
                    "%s: refused a request from %s with %s %r",
                    self.name,
                    client_address(scope),
                    header.title(),
                    (value or "")[:100],
                )
                await self._send_refusal(send, 403, "AccessDeniedException", refusal)
                return
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.isdigit():
                await self._send_refusal(
                    send, 400, "SerializationException", "the Content-Length is not a number"
                )
                return
            if int(declared) > self.limits.max_body:
                await self._send_refusal(send, 413, "RequestEntityTooLarge", self._too_large())
                return
        held = [0]  # the budget this request holds, given back once it is answered
        try:
            body = await self._read_body(scope, receive, send, held, int(declared) if declared else 0)
            if body is None:
                return
            replayed = False

            async def replay() -> Message:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()  # after the body: only a disconnect can come

            await self.app(scope, replay, send)
        finally:
            self.budget.give_back(held[0])

    def _too_large(self) -> str:
        return f"the request body is larger than this server takes ({self.limits.max_body} bytes)"

    async def _busy(self, scope, send) -> None:
        log.warning(
            "%s: refused a body from %s: %d bytes of other requests' bodies are held (SPARKMARK_MAX_INFLIGHT_BYTES)",
            self.name,
            client_address(scope),
            self.budget.held,
        )
        await self._send_refusal(
            send, 503, "ThrottlingException", "the server holds as many request bodies as it takes: retry"
        )

    async def _read_body(self, scope, receive, send, held: list[int], declared: int) -> bytes | None:
        """The whole body, its bytes taken from the budget (``held`` says how many)."""
        if declared:
            if not self.budget.take(declared):
                await self._busy(scope, send)
                return None
            held[0] = declared
        chunks: list[bytes] = []
        size = 0
        deadline = time.monotonic() + self.limits.body_seconds
        while True:
            left = deadline - time.monotonic()
            try:
                message = await asyncio.wait_for(receive(), timeout=max(left, 0.001))
            except TimeoutError:
                log.info(
                    "%s: %s sent its request body too slowly (over %.0f s); answered 408",
                    self.name,
                    client_address(scope),
                    self.limits.body_seconds,
                )
                await self._send_refusal(
                    send, 408, "RequestTimeout", "the request body did not arrive in time"
                )
                return None
            if message["type"] == "http.disconnect":
                log.info("%s: %s went away before its request was read", self.name, client_address(scope))
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limits.max_body:
                await self._send_refusal(send, 413, "RequestEntityTooLarge", self._too_large())
                return None
            if size > held[0]:  # beyond what it declared (or a chunked body): taken as it comes
                if not self.budget.take(size - held[0]):
                    await self._busy(scope, send)
                    return None
                held[0] = size
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


# ------------------------------------------------------------------ JSON depth

MAX_JSON_DEPTH = 64


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKET = re.compile(rb"[\[\]{}]")


def json_depth_ok(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether no array or object in ``body`` nests deeper than ``limit``, found before a
    recursive parser is given the body: strings are removed, then the brackets left
    are counted (both in linear time)."""
    depth = 0
    for found in _BRACKET.finditer(_STRING.sub(b"", body)):
        if found.group() in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return False
        else:
            depth -= 1
    return True

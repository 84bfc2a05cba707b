"""Hiding secrets before anything is stored, logged or shown.

Two rules, applied everywhere text leaves a run (run records, metrics, manifests,
error messages, log lines, workflow records):

- **by name**: a value whose name says it is a secret (``password``, ``--pwd``,
  ``db_secret``, ``api-key``, ``sessionToken``…) is replaced whole;
- **by shape**: inside any text, the secret part of a URL's userinfo
  (``scheme://user:secret@host``, also when the secret holds ``/`` or ``@``), of a
  libpq or JDBC ``key=value`` list (``password=…``, ``pwd=…``), of an Oracle
  ``user/secret@host`` connect string, of ``--password secret`` on a command line,
  of ``"password": "…"`` in JSON and of an ``Authorization`` header is replaced.

URL userinfo is found with ``urllib.parse`` on the authority that ends at the last
``@`` followed by a host, so a password holding ``/`` or ``@`` is still hidden.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

MASK = "****"

# What makes a name a secret's name. The name is split on -, _, ., spaces and
# camelCase. Words that hold a secret anywhere (dbpassword, mytoken); a part that is
# or ends in "pass" (DBPASS, --pass); auth-like parts; and "key" alone or after a
# word that makes it a credential (api_key, accessKey, secret-key), but not a data
# key (partition_key, null_key_rows) or "keys".
_SECRET_ANYWHERE: tuple[str, ...] = ("password", "passwd", "passphrase", "pwd", "secret", "token")
_SECRET_ANYWHERE += ("credential", "apikey", "privatekey", "signature")
_SECRET_PART = {"auth", "authorization", "sig", "cookie", "sas"}
_KEY_OWNERS = {"api", "access", "secret", "private", "master", "encryption", "account", "signing"}
_KEY_OWNERS |= {"client", "ssh", "storage", "shared", "sas", "license", "session", "aws", "auth"}
_NAME_SPLIT = re.compile(r"[-_.\s/:]+|(?<=[a-z0-9])(?=[A-Z])")

_URL_START = re.compile(r"\b[a-z][a-z0-9+.\-]*://", re.IGNORECASE)
_NAME_CHARS = r"[A-Za-z0-9_.\-]*"
_SECRET_WORD = r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[-_]?key|access[-_]?key|secret[-_]?key|sig|signature|credential|sas)"
# key=value lists: libpq DSNs, JDBC properties (;password=…), query strings (&pwd=…).
_KEY_VALUE = re.compile(
    rf"(?P<head>(?<![A-Za-z0-9])(?:{_NAME_CHARS}{_SECRET_WORD}{_NAME_CHARS})\s*=\s*)"
    r"(?P<value>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^\s&;,'\")]+)",
    re.IGNORECASE,
)
# JSON or YAML-ish "password": "value"
_QUOTED_FIELD = re.compile(
    rf"(?P<head>[\"'](?:{_NAME_CHARS}{_SECRET_WORD}{_NAME_CHARS})[\"']\s*:\s*)(?P<value>\"(?:[^\"\\]|\\.)*\"|'[^']*')",
    re.IGNORECASE,
)
# A command line: --password secret, -pwd secret, --db-token=secret (= is the key=value rule)
_OPTION = re.compile(
    rf"(?P<head>(?<!\S)--?(?:{_NAME_CHARS}{_SECRET_WORD}{_NAME_CHARS})\s+)(?P<value>(?!-)\S+)",
    re.IGNORECASE,
)
# Oracle connect strings: scott/tiger@host, jdbc:oracle:thin:scott/tiger@//host:1521/svc
_ORACLE = re.compile(r"(?P<head>(?<![\w/:.@-])(?:[A-Za-z][\w$#]*|\"[^\"]+\")/)(?P<value>[^\s/@]+)(?=@)")
_ORACLE_AFTER_THIN = re.compile(r"(?P<head>:thin:(?:[A-Za-z][\w$#]*|\"[^\"]+\")/)(?P<value>[^\s@]+)(?=@)")
_AUTH_HEADER = re.compile(
    r"(?P<head>\b(?:Bearer|Basic|Token)\s+)(?P<value>[A-Za-z0-9+/=._~-]{8,})", re.IGNORECASE
)


_KNOWN: set[str] = set()  # secret values this process was given, hidden wherever they appear
_MIN_KNOWN = 6  # shorter values would hide ordinary words


def register_secret(value: object) -> None:
    """Hide ``value`` wherever it appears in text from now on (a secret-named argument's
    value, a connection's password, a token from the settings)."""
    text = "" if value is None else str(value)
    if len(text) >= _MIN_KNOWN and text != MASK:
        _KNOWN.add(text)


def known_secrets() -> frozenset[str]:
    """The secret values registered so far in this process (a warm process compares
    them before and after a job, and puts the earlier set back)."""
    return frozenset(_KNOWN)


def restore_known(before: frozenset[str]) -> None:
    """Forget every secret registered since ``before`` was taken: a job's secrets must
    not stay readable in a process that hosts the next job."""
    _KNOWN.intersection_update(before)
    _KNOWN.update(before)


def _mask_known(text: str) -> str:
    for secret in sorted(_KNOWN, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def looks_secret(name: str) -> bool:
    """Whether a value named ``name`` (an argument, an option, a field) is a secret."""
    squashed = name.lower().replace("-", "").replace("_", "")
    if any(word in squashed for word in _SECRET_ANYWHERE):
        return True
    parts = [p.lower() for p in _NAME_SPLIT.split(name.strip("-")) if p]
    for i, part in enumerate(parts):
        if part in _SECRET_PART or part == "pass" or (part.endswith("pass") and len(part) > 4):
            return True
        if part == "key" and (len(parts) == 1 or (i > 0 and parts[i - 1] in _KEY_OWNERS)):
            return True
    return False


def _mask_url_passwords(text: str) -> str:
    """Hide the password of every ``scheme://user:password@host`` in ``text``."""
    out: list[str] = []
    pos = 0
    for match in _URL_START.finditer(text):
        if match.start() < pos:
            continue
        start = match.end()
        end = start
        while end < len(text) and not text[end].isspace() and text[end] not in "\"'<>`":
            end += 1
        rest = text[start:end]
        at = _userinfo_end(rest)
        if at is None or ":" not in rest[:at]:
            continue
        user = rest[: rest.index(":")]
        out.append(text[pos:start] + user + ":" + MASK)
        pos = start + at
    out.append(text[pos:])
    return "".join(out)


def _userinfo_end(rest: str) -> int | None:
    """Where the userinfo of an authority-and-path ``rest`` ends (its last ``@`` that a
    host follows), or None when it has none."""
    for at in sorted((i for i, c in enumerate(rest) if c == "@"), reverse=True):
        host = urlsplit("//" + rest[at + 1 :])  # (multi-host lists such as h1:1,h2:2 too)
        if host.hostname and "@" not in host.netloc:
            return at
    return None


def _sub(pattern: re.Pattern[str], text: str) -> str:
    return pattern.sub(lambda m: m.group("head") + MASK, text)


def mask_text(text: str) -> str:
    """``text`` with every secret it holds, by shape, replaced by ``****``."""
    if not text:
        return text
    text = _mask_known(text)
    text = _mask_url_passwords(text)
    for pattern in (_QUOTED_FIELD, _KEY_VALUE, _OPTION, _ORACLE_AFTER_THIN, _ORACLE, _AUTH_HEADER):
        text = _sub(pattern, text)
    return text


def mask_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments safe to store: secret-named values hidden, secrets inside values hidden."""
    masked: dict[str, Any] = {}
    for name, value in arguments.items():
        if value is None:
            masked[name] = value
        elif looks_secret(str(name)):
            register_secret(value)
            masked[name] = MASK
        else:
            masked[name] = mask_text(str(value))
    return masked


def mask_argv(argv: list[str]) -> list[str]:
    """A command line with the value after a secret-named option hidden."""
    out: list[str] = []
    hide_next = False
    for item in argv:
        if hide_next and not item.startswith("--"):
            register_secret(item)
            out.append(MASK)
        elif item.startswith("-") and "=" in item and looks_secret(item.split("=", 1)[0]):
            register_secret(item.split("=", 1)[1])
            out.append(item.split("=", 1)[0] + "=" + MASK)
        else:
            out.append(mask_text(item))
        hide_next = item.startswith("-") and "=" not in item and looks_secret(item)
    return out


def mask_document(value: Any) -> Any:
    """A JSON-like document (metrics, records) with secrets hidden by name and shape."""
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, Mapping):
        masked = {}
        for k, v in value.items():
            if _secret_field(k, v):
                register_secret(v)
                masked[k] = MASK
            else:
                masked[k] = mask_document(v)
        return masked
    if isinstance(value, (list, tuple)):
        return [mask_document(v) for v in value]
    return value


def _secret_field(name: Any, value: Any) -> bool:
    """A text field named as a secret (counts, flags and lists are not secrets)."""
    return isinstance(name, str) and isinstance(value, str) and looks_secret(name)


class MaskingFilter(logging.Filter):
    """A log handler's filter that hides secrets in every record it passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_text(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and record.exc_info[1] is not None:
            import traceback

            record.exc_text = mask_text("".join(traceback.format_exception(*record.exc_info)).rstrip())
            record.exc_info = None
        return True


def mask_logging() -> None:
    """Put the masking filter on every handler of the root logger (idempotent)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, MaskingFilter) for f in handler.filters):
            handler.addFilter(MaskingFilter())

"""Where a local service may listen: on this machine freely, beyond it only with a token."""

from __future__ import annotations

import ipaddress

from .errors import ConfigError


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_binding(host: str, token: str | None, *, service: str, how: str) -> None:
    """Refuse to serve beyond loopback without a token; ``how`` says how to give one."""
    if not is_loopback(host) and not token:
        raise ConfigError(f"the {service} binds to {host}, beyond this machine: {how}, or bind to 127.0.0.1")

"""Values the state store keeps only sealed: a run's secret arguments.

A run queued now and started later (by a scheduler, perhaps in another process) must
receive its arguments as given, secrets included, while the state store shows them
masked. The secret values travel beside the masked record, encrypted and
authenticated (Fernet, from the ``cryptography`` package: AES in CBC mode with an
HMAC, and a timestamp), under a key that never enters the store: ``SPARKMARK_SECRETS_KEY``,
else the home's own ``$SPARKMARK_HOME/secrets.key`` (owner-only, made on first use).
Schedulers on several hosts that share one state store share that key.
"""

from __future__ import annotations

import json

from ..errors import ConfigError
from ..settings import Settings

KEY_FILE = "secrets.key"


class Sealer:
    def __init__(self, key: str):
        from cryptography.fernet import Fernet

        try:
            self._fernet = Fernet(key.encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            raise ConfigError(
                "SPARKMARK_SECRETS_KEY is not a key sparkmark can use: 32 bytes in URL-safe base64 "
                "(make one with: python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')"
            ) from None

    @classmethod
    def from_settings(cls, settings: Settings) -> Sealer:
        from cryptography.fernet import Fernet

        from ..state.handle import private_secret

        if settings.secrets_key is not None:
            return cls(settings.secrets_key.get_secret_value())
        return cls(private_secret(settings.home / KEY_FILE, lambda: Fernet.generate_key().decode("ascii")))

    def seal(self, values: dict[str, str]) -> str:
        return self._fernet.encrypt(json.dumps(values, sort_keys=True).encode("utf-8")).decode("ascii")

    def open(self, sealed: str) -> dict[str, str]:
        from cryptography.fernet import InvalidToken

        try:
            found = json.loads(self._fernet.decrypt(sealed.encode("ascii")))
        except (InvalidToken, ValueError):
            raise ConfigError(
                "the run's secret arguments were sealed under another key: give this scheduler the "
                "SPARKMARK_SECRETS_KEY of the host that queued the run"
            ) from None
        return {str(k): str(v) for k, v in found.items()}

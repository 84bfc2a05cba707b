"""``sparkmark console``: the web console, served on 127.0.0.1 unless told otherwise,
with a scheduler thread that starts the workflow runs started from it whenever no
other scheduler leads."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from urllib.parse import urlencode

from .. import serving
from ..access import resolve_token
from ..app import App
from ..settings import Settings

HOW_TO_TOKEN = "give it a token (SPARKMARK_CONSOLE_TOKEN or --token-file)"


def check_binding(host: str, token: str) -> None:
    serving.Listen(host=host, port=0, token=token).check("console", HOW_TO_TOKEN)


@dataclass
class Running:
    url: str
    served: serving.Running
    service: App  # the application the console serves

    @property
    def store(self) -> str:
        """The state store's URL, password hidden."""
        return str(self.service.state.display_url)

    @property
    def token(self) -> str:
        return self.served.token

    @property
    def thread(self) -> threading.Thread:
        assert self.served.thread is not None
        return self.served.thread

    @property
    def signin_url(self) -> str:
        """The URL that signs a browser in (Jupyter's way): print it, never log it."""
        return f"{self.url}/login?{urlencode({'token': self.token})}"

    def stop(self) -> None:
        self.served.stop()
        self.service.close()


def start(
    settings: Settings, host: str, port: int, token: str | None = None, *, scheduler: bool = True
) -> Running:
    """Serve in a daemon thread of this process; :meth:`Running.stop` ends it. Without
    ``token`` the console checks the configured one, else the home's own."""
    from .app import create_app

    listen = serving.Listen.of(
        settings, host, port, token or resolve_token(settings.console_token_value, settings.home)
    )
    listen.check("console", HOW_TO_TOKEN)
    service = App(settings)
    served = serving.start_in_thread(create_app(service, listen), listen, "console")
    from ..api.server import RunsEndpoint

    service.start_services(scheduler=scheduler, endpoint=RunsEndpoint(service))
    return Running(served.url, served, service)

"""``TwilioFakeServer``: the fake served over loopback HTTP by uvicorn in a thread, so
the service reaches it as it would reach api.twilio.com (``twilio.api_base``)."""

from __future__ import annotations

import asyncio
import socket
import threading
from types import TracebackType
from typing import Any

from .fake import FakeTwilio

__all__ = ["TwilioFakeServer"]


class TwilioFakeServer:
    def __init__(self, fake: FakeTwilio | None = None, host: str = "127.0.0.1") -> None:
        self.fake = fake or FakeTwilio()
        self.host = host
        self.port = 0
        self._thread: threading.Thread | None = None
        self._server: Any = None
        self._ready = threading.Event()

    @property
    def base_url(self) -> str:
        """What ``twilio.api_base`` should be."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> TwilioFakeServer:
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        sock.listen(128)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.fake.app(), log_level="warning", lifespan="on", access_log=False
        )
        server = uvicorn.Server(config)
        self._server = server

        def run() -> None:
            try:
                asyncio.run(server.serve(sockets=[sock]))
            finally:
                sock.close()
                self._ready.set()

        self._thread = threading.Thread(target=run, name="fake-twilio", daemon=True)
        self._thread.start()
        deadline = 30.0
        while not server.started and self._thread.is_alive() and deadline > 0:
            self._ready.wait(0.01)
            deadline -= 0.01
        if not server.started:
            raise RuntimeError("the fake Twilio did not start")
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(15)
        self._thread = None

    def __enter__(self) -> TwilioFakeServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

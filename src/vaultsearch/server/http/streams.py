"""Ending the page's event streams when the server stops.

An open Index Console tab holds ``/events`` for ever, and uvicorn's orderly shutdown
waits for every response to end: without this a SIGTERM would wait for the tab to
close (or, with a grace timeout, cancel the stream with a traceback). On shutdown each
stream is told its client has gone, which ends it the way a closed tab does, and the
response is closed properly.
"""

from __future__ import annotations

from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

STREAM_PATHS = ("/events",)
DISCONNECT: Message = {"type": "http.disconnect"}


class EndStreamsOnExit:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._stopping: anyio.Event | None = None

    def _event(self) -> anyio.Event:
        if self._stopping is None:
            self._stopping = anyio.Event()
        return self._stopping

    def stop(self) -> None:
        self._event().set()

    async def follow(self, server: Any) -> None:
        """Stop the streams once ``server`` (a ``uvicorn.Server``) starts to exit."""
        while not server.should_exit:
            await anyio.sleep(0.1)
        self.stop()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in STREAM_PATHS:
            await self.app(scope, receive, send)
            return
        stopping = self._event()
        state = {"started": False, "ended": False}

        async def receive_or_stop() -> Message:
            if stopping.is_set():
                return DISCONNECT
            got: list[Message] = []
            async with anyio.create_task_group() as tg:

                async def client() -> None:
                    got.append(await receive())
                    tg.cancel_scope.cancel()

                async def stop() -> None:
                    await stopping.wait()
                    got.append(DISCONNECT)
                    tg.cancel_scope.cancel()

                tg.start_soon(client)
                tg.start_soon(stop)
            return got[0]

        async def tracked(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["started"] = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                state["ended"] = True
            await send(message)

        await self.app(scope, receive_or_stop, tracked)
        if stopping.is_set() and state["started"] and not state["ended"]:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

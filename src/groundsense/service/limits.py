"""ASGI middleware that answers 413 to a request body over a size limit, whether or not
the client sent a Content-Length."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .answers import send_error

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(Exception):
    """Raised while an app reads a body past the limit; the app answers 413 (or this
    middleware does, when the app lets it through)."""


class BodyLimit:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            return await self._refuse(send)
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:
                raise BodyTooLarge(f"request body over the {self.limit}-byte limit")
            return message

        try:
            await self.app(scope, counted, send)
        except BodyTooLarge:
            await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        await send_error(send, 413, f"request body over the {self.limit}-byte limit")

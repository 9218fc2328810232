"""The service's JSON error answers, ``{"error": message}``: :class:`ApiError`, which a route
raises (the app's handler answers it), and :func:`send_error`, which the ASGI middlewares call."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import Send


class ApiError(Exception):
    def __init__(self, status: int, message: str, retry_after: float | None = None, request_id: str | None = None):
        super().__init__(message)
        self.status, self.message, self.retry_after, self.request_id = status, message, retry_after, request_id


async def send_error(send: Send, status: int, message: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    """Answer ``status`` with ``{"error": message}`` and ``headers`` through an ASGI ``send``."""
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})

"""The service's error answers, ``{"error": message}``: :class:`ApiError`, which a route
raises (the app's handler answers it; :func:`check_media_type` raises one), and
:func:`send_error`, which the ASGI middlewares call; and a stream's NDJSON events
(:func:`event`), whose ``error`` event ends a stream whose response has begun."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.types import Send


class ApiError(Exception):
    def __init__(self, status: int, message: str, retry_after: float | None = None, request_id: str | None = None):
        super().__init__(message)
        self.status, self.message, self.retry_after, self.request_id = status, message, retry_after, request_id


def check_media_type(request: Request, media_type: str) -> None:
    """Refuse (415) a body not declared as ``media_type``. A web page may send a form or plain
    text to any address, this service on loopback included, without the browser asking the
    server first; a JSON or NDJSON body it may send only after a preflight, which gets 405."""
    given = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if given != media_type:
        raise ApiError(415, f"send the body with Content-Type: {media_type}, not {given or 'none'}")


async def send_error(send: Send, status: int, message: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    """Answer ``status`` with ``{"error": message}`` and ``headers`` through an ASGI ``send``."""
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})


def event(kind: str, **fields: Any) -> bytes:
    """One NDJSON line of a stream's response: ``{"event": kind, **fields}``."""
    return (json.dumps({"event": kind, **fields}, ensure_ascii=False) + "\n").encode()

"""The JSON error answer that the service's ASGI middlewares send themselves, in the shape of
the app's own errors: ``{"error": message}``."""

from __future__ import annotations

import json


async def send_error(send, status: int, message: str, headers: list[tuple[bytes, bytes]] = ()) -> None:
    """Answer ``status`` with ``{"error": message}`` and ``headers`` through an ASGI ``send``."""
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *headers]})
    await send({"type": "http.response.body", "body": body})

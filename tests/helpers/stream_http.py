"""A raw HTTP/1.1 client of ``POST /v1/detect/stream``: a request body sent in chunks as the
answer is written, and the NDJSON events read back from the chunked response."""

import json
import socket

from groundsense.inputs.files import load_example

EXAMPLE = load_example("passages-qa")
HEAD = {"id": "s1", "question": EXAMPLE["question"], "passages": EXAMPLE["passages"]}  # a stream's first line
END = b"\r\n0\r\n\r\n"  # a chunked body's last chunk


def ndjson(*lines) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def chunk(data: bytes) -> bytes:
    """``data`` as one chunk of a chunked request body."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def open_stream(port: int, *lines) -> socket.socket:
    """A stream request to the server on ``port``, its body's first chunk the NDJSON ``lines``."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=600)
    sock.sendall(b"POST /v1/detect/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"Content-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(ndjson(*lines)))
    return sock


def read_until(sock: socket.socket, marker: bytes, received: bytes = b"") -> bytes:
    """What ``sock`` received, read until it holds ``marker``."""
    while marker not in received:
        data = sock.recv(65536)
        assert data, f"the connection closed before {marker!r}: {received!r}"
        received += data
    return received


def chunked_events(received: bytes) -> list[dict]:
    """The NDJSON events of a raw chunked HTTP response."""
    body, events = received.split(b"\r\n\r\n", 1)[1], b""
    while (size := int(body.split(b"\r\n", 1)[0], 16)) > 0:
        data_start = body.index(b"\r\n") + 2
        events, body = events + body[data_start : data_start + size], body[data_start + size + 2 :]
    return [json.loads(line) for line in events.splitlines() if line.strip()]

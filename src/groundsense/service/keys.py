"""API keys: who may use the service, checked on every request but the open ones.

Keys are stored as hashes, ``sha256:<64 hex digits>`` (:func:`hash_key`), in a file (one
per line, optionally followed by a name for the operator; ``#`` starts a comment) and in
``GROUNDSENSE_API_KEYS`` (comma-separated hashes). A client sends ``Authorization: Bearer
<key>``; the key's hash is compared with every stored one in constant time. A key is known
in logs and metrics by its id, the first 8 hex digits of its hash, never by itself.

The file is read again when it changes (its modification time, size or inode), checked on
each request, so a key deleted from it stops working at the next request, without a restart.
A file that has become unreadable or invalid refuses every request (503) until it is fixed:
failing open would revive revoked keys. :class:`RequireKey` is the middleware that asks for them.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError
from .answers import send_error
from .observe import current_record

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)

PREFIX = "sha256:"
HASH = re.compile(r"sha256:[0-9a-f]{64}")
ID_DIGITS = 8
MAKE_ONE = "make one with `groundsense serve --hash-key` (it reads the key on stdin)"


def hash_key(key: str) -> str:
    """The stored form of ``key``: ``sha256:`` and the hex digest of its UTF-8 bytes."""
    return PREFIX + hashlib.sha256(key.encode()).hexdigest()


def key_id(hashed: str) -> str:
    """The name a key goes by in the request log and the metrics."""
    return hashed[len(PREFIX) : len(PREFIX) + ID_DIGITS]


class KeyFileError(Exception):
    """The key file, read again, cannot be used: every request is refused until it is fixed."""


class Refused(Exception):
    """A request without an accepted key: the 401's message."""


def parse_key_file(text: str, where: str) -> list[str]:
    """The hashes of a key file's text; a line that holds something else raises :class:`InputError`."""
    hashes = []
    for number, line in enumerate(text.splitlines(), 1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        word = entry.split()[0]
        if not HASH.fullmatch(word):  # the line is not echoed: it may hold a key
            raise InputError(f"{where} line {number} does not start with a key hash (sha256: and 64 lowercase hex "
                             f"digits): store hashes, never keys; {MAKE_ONE}")
        hashes.append(word)
    return hashes


def parse_key_list(text: str, where: str) -> list[str]:
    """The hashes of a comma-separated list (``GROUNDSENSE_API_KEYS``)."""
    hashes = [entry.strip() for entry in text.split(",") if entry.strip()]
    for number, entry in enumerate(hashes, 1):
        if not HASH.fullmatch(entry):
            raise InputError(f"{where} entry {number} is not a key hash (sha256: and 64 lowercase hex digits): "
                             f"store hashes, never keys; {MAKE_ONE}")
    return hashes


class ApiKeys:
    """The accepted key hashes: ``listed`` ones (from the environment) and those of ``file``,
    read again whenever it changes. Construction checks both and raises :class:`InputError`
    when they are invalid or hold no key at all."""

    def __init__(self, file: str | Path | None = None, listed: str | None = None):
        self.file = Path(file).expanduser() if file else None
        self.listed = parse_key_list(listed, "GROUNDSENSE_API_KEYS") if listed else []
        self._seen: tuple[int, int, int] | None = None
        self._from_file: list[str] = []
        self._broken: str | None = None
        if self.file is not None:
            try:
                self._read(self.file)
            except KeyFileError as exc:
                raise InputError(str(exc)) from None
        if not self.hashes:
            raise InputError(f"no API key is configured: {self.file or 'GROUNDSENSE_API_KEYS'} holds no key hash; "
                             f"{MAKE_ONE}")

    @property
    def hashes(self) -> list[str]:
        return self.listed + self._from_file

    @staticmethod
    def _signature(file: Path) -> tuple[int, int, int]:
        try:
            stat = file.stat()
        except OSError as exc:
            raise KeyFileError(f"cannot read the API key file {file}: {exc.strerror}") from None
        return stat.st_mtime_ns, stat.st_size, stat.st_ino

    def _read(self, file: Path) -> None:
        """Read ``file`` (``self.file``) again if it changed since the last read."""
        signature = self._signature(file)
        if signature == self._seen:
            return
        try:
            text = file.read_text(encoding="utf-8")
            self._from_file = parse_key_file(text, f"the API key file {file}")
        except (OSError, UnicodeDecodeError, InputError) as exc:
            raise KeyFileError(str(exc) if isinstance(exc, InputError) else
                               f"cannot read the API key file {file}: {exc}") from None
        self._seen = signature
        log.info("API keys: %d from %s (ids %s)", len(self._from_file), file,
                 ", ".join(map(key_id, self._from_file)) or "none")

    def refresh(self) -> None:
        """Read the file again if it changed; raises :class:`KeyFileError` while it is unusable."""
        if self.file is None:
            return
        try:
            self._read(self.file)
        except KeyFileError as exc:
            if self._broken != str(exc):
                log.error("%s: every request is refused until it is fixed", exc)
            self._broken = str(exc)
            raise
        self._broken = None

    def check(self, authorization: str | None) -> str:
        """The id of the key an ``Authorization`` header carries, or :class:`Refused`."""
        self.refresh()
        scheme, _, key = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise Refused("this server needs an API key: send the header 'Authorization: Bearer <key>'")
        presented = hash_key(key.strip())
        accepted = [h for h in self.hashes if hmac.compare_digest(h, presented)]  # every one, in constant time
        if not accepted:
            raise Refused("the API key is not accepted (mistyped or revoked): ask the service's operator for a key")
        return key_id(accepted[0])


OPEN_PATHS = frozenset({"/healthz", "/readyz", "/", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})
CHALLENGE = 'Bearer realm="groundsense"'


class RequireKey:
    """ASGI middleware: every request but the probes, the review page's own files, the API's
    description (and ``/metrics`` when ``metrics_open``) needs an accepted key, or gets 401 with
    ``WWW-Authenticate: Bearer``. The key's id goes to the request's record (log and metrics)."""

    def __init__(self, app: ASGIApp, keys: ApiKeys, metrics_open: bool) -> None:
        self.app, self.keys = app, keys
        self.open = OPEN_PATHS | ({"/metrics"} if metrics_open else set())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in self.open or path.startswith("/static/"):
            return await self.app(scope, receive, send)
        authorization = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1") or None
        try:
            current_record().key = self.keys.check(authorization)
        except Refused as exc:
            invalid = ', error="invalid_token"' if authorization else ""
            return await send_error(send, 401, str(exc), [(b"www-authenticate", (CHALLENGE + invalid).encode())])
        except KeyFileError:
            message = "the server cannot read its API keys: its operator must fix its key file"
            return await send_error(send, 503, message)
        await self.app(scope, receive, send)


"""Service configuration from flags and ``GROUNDSENSE_*`` environment variables."""

from __future__ import annotations

import os
from dataclasses import MISSING, dataclass, field, fields
from typing import get_args, get_type_hints

from ..config import DetectorConfig
from ..errors import InputError


@dataclass(frozen=True)
class ServiceSettings:
    detection: DetectorConfig = field(default_factory=DetectorConfig)
    host: str = "127.0.0.1"
    port: int = 8000
    queue_size: int = 8  # requests waiting for the scorer; more get 429
    timeout_s: float = 120.0  # per request, queueing included
    max_streams: int = 4  # streams open at once (each holds its conditions' caches); more get 429
    # the worker's load (one more stream's included) up to which a stream is admitted; 0: by max_streams only
    admit_load: float = 0.8
    max_body_bytes: int = 2_000_000
    max_batch_items: int = 32
    allowed_hosts: str | None = None  # comma-separated Host names to accept (Starlette's TrustedHostMiddleware)
    log_text: bool = False  # the request log includes each question and answer
    api_key_file: str | None = None  # a file of API key hashes (keys.py); read again when it changes
    api_keys: str | None = None  # comma-separated API key hashes; with neither, no key is asked for
    metrics_open: bool = False  # /metrics answers without a key even when keys are configured
    grace_s: float = 30.0  # after SIGTERM, seconds the requests and streams in flight get to finish

    def __post_init__(self) -> None:
        """Refuse a value that would start a server unable to answer (every request a 504 at a
        timeout of 0, a 413 at a body limit of 0), before anything starts."""
        for name, valid, bound in (
            ("port", 0 <= self.port <= 65535, "0 to 65535"),
            ("queue_size", self.queue_size >= 1, "at least 1"),
            ("timeout_s", self.timeout_s > 0, "above 0"),
            ("max_streams", self.max_streams >= 1, "at least 1"),
            ("admit_load", self.admit_load >= 0, "at least 0"),
            ("max_body_bytes", self.max_body_bytes >= 1, "at least 1"),
            ("max_batch_items", self.max_batch_items >= 1, "at least 1"),
            ("grace_s", self.grace_s >= 0, "at least 0"),
        ):
            if not valid:
                raise InputError(f"{name} (GROUNDSENSE_{name.upper()}) must be {bound}, not {getattr(self, name)}")

    @property
    def allowed_host_list(self) -> list[str]:
        return [h.strip() for h in (self.allowed_hosts or "").split(",") if h.strip()]

    @classmethod
    def from_env(cls, **overrides: object) -> ServiceSettings:
        """Defaults, then ``GROUNDSENSE_<FIELD>`` variables, then non-None ``overrides``, for
        the service's fields and its detection's alike (``GROUNDSENSE_K``, ``GROUNDSENSE_LEAVE_ONE_OUT``, ...)."""
        detection = DetectorConfig(**_values(DetectorConfig, overrides))
        return cls(detection=detection, **_values(cls, overrides))


def _values(kind: type, overrides: dict) -> dict:
    """``kind``'s fields (those with a default value) from the environment, then ``overrides``."""
    values, types = {}, get_type_hints(kind)
    for f in fields(kind):
        if f.default is MISSING:
            continue
        raw = os.environ.get(f"GROUNDSENSE_{f.name.upper()}")
        if raw is not None:
            given = [t for t in get_args(types[f.name]) if t is not type(None)] or [types[f.name]]
            parse = given[0] if len(given) == 1 else str  # "X | None" parses as X; a wider union is text (a path)
            try:
                values[f.name] = _switch(raw) if parse is bool else parse(raw)
            except ValueError:
                expected = "1 or 0 (true or false, yes or no, on or off)" if parse is bool else parse.__name__
                raise InputError(f"GROUNDSENSE_{f.name.upper()}={raw!r}: expected {expected}") from None
        if overrides.get(f.name) is not None:
            values[f.name] = overrides[f.name]
    return values


def _switch(raw: str) -> bool:
    """A switch's variable: 1, true, yes or on; 0, false, no, off or empty. Anything else (a typo) is
    a ValueError, not silently off."""
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(raw)

"""Service configuration from flags and ``GROUNDSENSE_*`` environment variables."""

from __future__ import annotations

import os
from dataclasses import MISSING, dataclass, field, fields

from ..config import DetectorConfig


@dataclass(frozen=True)
class ServiceSettings:
    detector: DetectorConfig = field(default_factory=DetectorConfig)
    host: str = "127.0.0.1"
    port: int = 8000
    queue_size: int = 8  # requests waiting for the scorer; more get 429
    timeout_s: float = 120.0  # per request, queueing included
    max_body_bytes: int = 2_000_000
    max_batch_items: int = 32
    allowed_hosts: str | None = None  # comma-separated Host names to accept (Starlette's TrustedHostMiddleware)
    log_text: bool = False  # the request log includes each question and answer

    @property
    def allowed_host_list(self) -> list[str]:
        return [h.strip() for h in (self.allowed_hosts or "").split(",") if h.strip()]

    @classmethod
    def from_env(cls, **overrides) -> ServiceSettings:
        """Defaults, then ``GROUNDSENSE_<FIELD>`` variables, then non-None ``overrides``, for
        the service's fields and the detector's alike (``GROUNDSENSE_K``, ``GROUNDSENSE_LEAVE_ONE_OUT``, ...)."""
        detector = DetectorConfig(**_values(DetectorConfig, overrides))
        return cls(detector=detector, **_values(cls, overrides))


def _values(kind: type, overrides: dict) -> dict:
    """``kind``'s fields (those with a default value) from the environment, then ``overrides``."""
    values = {}
    for f in fields(kind):
        if f.default is MISSING:
            continue
        raw = os.environ.get(f"GROUNDSENSE_{f.name.upper()}")
        if raw is not None:
            # A None default says nothing of the type: the annotation does ("float | None").
            parse = type(f.default) if f.default is not None else float if str(f.type).startswith("float") else str
            values[f.name] = raw.strip().lower() in ("1", "true", "yes", "on") if parse is bool else parse(raw)
        if overrides.get(f.name) is not None:
            values[f.name] = overrides[f.name]
    return values

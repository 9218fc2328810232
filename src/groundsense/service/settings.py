"""Service configuration from flags and ``GROUNDSENSE_*`` environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class ServiceSettings:
    scorer: str | None = None  # None: the embedded default
    k: int = 5
    mode: str = "full"
    calibration: str | None = None
    device: str | None = None
    max_context_tokens: int = 1800
    max_answer_tokens: int = 256
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
    def from_env(cls, **overrides) -> "ServiceSettings":
        """Defaults, then ``GROUNDSENSE_<FIELD>`` variables, then non-None ``overrides``."""
        values = {}
        for f in fields(cls):
            raw = os.environ.get(f"GROUNDSENSE_{f.name.upper()}")
            if raw is not None:
                kind = type(f.default) if f.default is not None else str
                values[f.name] = raw.strip().lower() in ("1", "true", "yes", "on") if kind is bool else kind(raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

"""What the routes share: one :class:`Service` per app, in ``app.state.service``, handed to a
route through the :data:`ServiceDep` dependency; its worker's state is a :class:`.scoring.Scoring`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from ..detection import Detection
from ..verification.factory import prepare_detection
from ..weights import display_name
from .drain import Drain
from .metrics import Metrics
from .observe import RequestRecord, request_log
from .scoring import Scoring
from .settings import ServiceSettings
from .stream import OpenStreams
from .worker import ScoringWorker


@dataclass(frozen=True)
class Service:
    settings: ServiceSettings
    worker: ScoringWorker  # its state is a Scoring, once loaded
    open_streams: OpenStreams
    metrics: Metrics
    drain: Drain  # begun by the server on SIGTERM (server.py)

    @classmethod
    def build(cls, settings: ServiceSettings, detection: Callable[[], Detection] | None = None) -> Service:
        """The service of :func:`.app.create_app`'s arguments. Without ``detection``, the settings'
        detection is prepared here, before the worker starts, so that a setting it refuses (a bad
        verifier, calibration or fusion file, a scorer whose weights are not here) stops the server
        before it listens; the worker loads the models."""
        make = detection or prepare_detection(settings.detection).build
        worker = ScoringWorker(lambda: Scoring(make()), settings.queue_size)
        open_streams = OpenStreams(settings.max_streams, settings.admit_load)
        metrics = Metrics(display_name(settings.detection.scorer), lambda: worker.pending, lambda: len(open_streams))
        return cls(settings, worker, open_streams, metrics, Drain(settings.grace_s))

    def finish(self, record: RequestRecord) -> None:
        """A scoring request's record, once answered: to the metrics and the request log."""
        self.metrics.observe(record)
        request_log.info(record.log_line(self.metrics.scorer, self.settings.log_text))


async def get_service(request: Request) -> Service:  # async: FastAPI runs a plain def in its thread pool
    return request.app.state.service


ServiceDep = Annotated[Service, Depends(get_service)]

"""Prometheus metrics of one app, in its own registry (several apps in a process do not clash).

Every series carries the scorer's name as the ``scorer`` label:

- ``groundsense_requests_total{route, status, outcome, key}``: scoring requests by HTTP status
  (200, 400, 401, 413, 422, 429, 503, 504, 500), outcome (supported, flagged, unscored, error;
  see :mod:`.observe`) and API key id (:mod:`.keys`; empty without an accepted key);
- ``groundsense_latency_seconds{route, phase}``: a histogram of the time a request waited in
  the queue (``phase="queue"``) and spent on the scorer (``phase="scoring"``);
- ``groundsense_queue_depth``: requests waiting for the scorer now;
- ``groundsense_open_streams``: streams open now (``/v1/detect/stream``, at most ``--max-streams``);
  0 when the service is idle, so a stream's place that outlived it shows here;
- ``groundsense_sentences_total{status}``: sentences ``scored`` and ``unscored`` (past the
  answer cap).
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from .observe import RequestRecord

# Seconds: a request waits from nothing to minutes in the queue and scores in ~0.1 s to minutes.
BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, float("inf"))


class Metrics:
    def __init__(self, scorer: str, queue_depth: Callable[[], int], open_streams: Callable[[], int] = lambda: 0):
        self.scorer = scorer
        self.registry = CollectorRegistry()
        self.requests = Counter("groundsense_requests", "Scoring requests by HTTP status and outcome.",
                                ["scorer", "route", "status", "outcome", "key"], registry=self.registry)
        self.latency = Histogram("groundsense_latency_seconds", "Seconds a request spent queued and scoring.",
                                 ["scorer", "route", "phase"], buckets=BUCKETS, registry=self.registry)
        self.sentences = Counter("groundsense_sentences", "Sentences of answers checked, scored or unscored.",
                                 ["scorer", "status"], registry=self.registry)
        depth = Gauge("groundsense_queue_depth", "Requests waiting for the scorer.", ["scorer"], registry=self.registry)
        depth.labels(scorer).set_function(queue_depth)
        streams = Gauge("groundsense_open_streams", "Streams open now.", ["scorer"], registry=self.registry)
        streams.labels(scorer).set_function(open_streams)

    def observe(self, record: RequestRecord) -> None:
        self.requests.labels(self.scorer, record.route, str(record.status), record.outcome, record.key or "").inc()
        for phase, seconds in zip(("queue", "scoring"), record.timing.phases()):
            if seconds is not None:
                self.latency.labels(self.scorer, record.route, phase).observe(seconds)
        for status, count in record.sentences.items():
            self.sentences.labels(self.scorer, status).inc(count)

    async def endpoint(self) -> Response:
        """The metrics in Prometheus' text format."""
        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)

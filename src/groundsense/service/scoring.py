"""What the service's worker thread owns (:class:`Scoring`): the detection, what it is, and the
running estimate of a request's time."""

from __future__ import annotations

import time
from collections.abc import Callable

from ..detection import Detection, as_detection
from ..inputs.validate import CheckedRow
from ..rows.runner import run_row


class Scoring:
    """What the worker thread owns: the detection (a detector, or a cascade when the settings
    name a verifier; one per K and mode through ``with_options``) and what it is."""

    def __init__(self, detection: Detection):
        self.detection = as_detection(detection)
        self.about = detection.describe()
        self.mean_seconds = 5.0  # running estimate of one request's time, for Retry-After

    def timed(self, rows: list[CheckedRow], stop: Callable[[], bool], request_id: str) -> list[dict]:
        """Each row's record (:func:`row_runner.run_row`, internal errors hidden behind ``request_id``),
        in order, until ``stop()``."""
        started = time.perf_counter()
        results = [run_row(self.detection, row, stop, request_id) for row in rows]
        elapsed = (time.perf_counter() - started) / max(len(rows), 1)
        self.mean_seconds = 0.8 * self.mean_seconds + 0.2 * elapsed
        return results

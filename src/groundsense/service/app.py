"""FastAPI app: ``POST /v1/detect``, ``POST /v1/detect/batch``, probes, and the review page.

The service fails closed: any error is an HTTP error with a message, never a "supported"
verdict. Status codes: 413 oversized body, 422 input a person must fix, 429 queue full
(with Retry-After), 503 scorer not ready or failed to load, 504 request timed out,
500 anything else.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from contextlib import asynccontextmanager
from importlib import resources
from typing import Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field

from ..errors import GroundsenseError
from ..inputs import example_names, load_example
from .limits import BodyLimit
from .settings import ServiceSettings
from .worker import QueueFull, ScoringWorker

log = logging.getLogger(__name__)


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k: int | None = Field(None, ge=1, le=50, description="Chunks for a single context string.")
    mode: Literal["full", "two_pass"] | None = None


class DetectRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str | int | None = Field(None, description="Echoed back in the response.")
    question: str = ""
    context: str | None = Field(None, description="The evidence as one string; or give passages.")
    passages: list[str] | None = Field(None, description="Retrieved passages, one chunk each.")
    answer: str
    sentences: list[tuple[int, int]] | None = Field(None, description="Optional sentence spans in the answer.")
    options: Options | None = None


class ApiError(Exception):
    def __init__(self, status: int, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.status, self.message, self.retry_after = status, message, retry_after


class Scoring:
    """What the worker thread owns: the scorer and a detector per (K, mode)."""

    def __init__(self, settings: ServiceSettings):
        from ..detector import Detector
        from ..scorer import Scorer

        self.settings = settings
        self.scorer = Scorer(settings.scorer, device=settings.device)
        self._detectors: dict[tuple[int, str], Detector] = {}
        self.detector(settings.k, settings.mode)  # load the calibration now, not on the first request
        self.mean_seconds = 5.0  # running estimate of one request's time, for Retry-After

    def detector(self, k: int, mode: str):
        from ..detector import Detector

        if (k, mode) not in self._detectors:
            s = self.settings
            self._detectors[k, mode] = Detector(
                self.scorer, k=k, mode=mode, calibration=s.calibration,
                max_context_tokens=s.max_context_tokens, max_answer_tokens=s.max_answer_tokens,
            )
        return self._detectors[k, mode]

    def run(self, request: DetectRequest) -> dict:
        options = request.options or Options()
        detector = self.detector(options.k or self.settings.k, options.mode or self.settings.mode)
        result = detector.detect(
            answer=request.answer, context=request.context, passages=request.passages,
            question=request.question, sentences=request.sentences,
        ).to_dict()
        return result if request.id is None else {"id": request.id, **result}

    def timed(self, requests: list[DetectRequest]) -> list[dict]:
        """Score requests in order; an input error becomes that item's error record."""
        started = time.perf_counter()
        results = []
        for request in requests:
            try:
                results.append(self.run(request))
            except GroundsenseError as exc:
                results.append({"id": request.id, "error": {"type": type(exc).__name__, "message": str(exc)}})
        elapsed = (time.perf_counter() - started) / max(len(requests), 1)
        self.mean_seconds = 0.8 * self.mean_seconds + 0.2 * elapsed
        return results


def create_app(settings: ServiceSettings | None = None) -> FastAPI:
    settings = settings or ServiceSettings.from_env()
    worker = ScoringWorker(lambda: Scoring(settings), settings.queue_size)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        worker.start()
        yield
        worker.stop()

    app = FastAPI(
        title="groundsense",
        summary="Flags the sentences of a RAG answer that the evidence does not support.",
        version="0.1.0",
        lifespan=lifespan,
    )
    app.state.worker, app.state.settings = worker, settings
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)

    async def score(requests: list[DetectRequest]) -> list[dict]:
        if worker.load_error is not None:
            raise ApiError(503, f"the scorer failed to load: {worker.load_error}")
        if not worker.ready.is_set():
            raise ApiError(503, "the scorer is still loading; retry shortly", retry_after=5)
        try:
            future = worker.submit(lambda state: state.timed(requests))
        except QueueFull:
            estimate = worker.state.mean_seconds * (worker.pending + 1) * len(requests)
            raise ApiError(429, "the scorer is busy: too many requests are waiting", retry_after=estimate) from None
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout=settings.timeout_s)
        except asyncio.TimeoutError:
            raise ApiError(504, f"scoring took longer than the {settings.timeout_s:g} s limit",
                           retry_after=settings.timeout_s) from None

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError):
        headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after)))} if exc.retry_after else None
        return JSONResponse({"error": exc.message}, status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        problems = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        return JSONResponse({"error": "invalid request: " + "; ".join(problems), "problems": problems}, status_code=422)

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception):
        log.exception("internal error")
        return JSONResponse({"error": f"internal error ({type(exc).__name__}): {exc}"}, status_code=500)

    @app.get("/healthz", summary="The process is up")
    async def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/readyz", summary="The scorer is loaded")
    async def readyz():
        if worker.ready.is_set():
            return {"status": "ready", "scorer": worker.state.scorer.name, "queue": worker.pending}
        status = "failed" if worker.load_error else "loading"
        return JSONResponse({"status": status, "error": str(worker.load_error or "")}, status_code=503)

    @app.post("/v1/detect", summary="Check one answer; same JSON as `groundsense detect --json`")
    async def detect(request: DetectRequest) -> dict:
        (result,) = await score([request])
        if "error" in result:
            raise ApiError(422, result["error"]["message"])
        return result

    @app.post("/v1/detect/batch", summary="Check several answers; one result or error record each, in order")
    async def detect_batch(requests: list[DetectRequest]) -> list[dict]:
        if not requests:
            raise ApiError(422, "the batch is empty: send a JSON list of detect requests")
        if len(requests) > settings.max_batch_items:
            raise ApiError(413, f"at most {settings.max_batch_items} items per batch; split the list")
        return await score(requests)

    @app.get("/v1/examples", summary="Names of the shipped examples")
    async def examples() -> list[str]:
        return example_names()

    @app.get("/v1/examples/{name}", summary="One shipped example as a detect request")
    async def example(name: str) -> dict:
        try:
            return load_example(name)
        except GroundsenseError as exc:
            raise ApiError(404, str(exc)) from None

    static = resources.files("groundsense") / "service" / "static"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")

    @app.get("/", include_in_schema=False)
    async def page() -> HTMLResponse:
        return HTMLResponse((static / "index.html").read_text(encoding="utf-8"))

    return app

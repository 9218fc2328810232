"""FastAPI app: ``POST /v1/detect``, ``/v1/detect/batch``, ``/v1/detect/stream`` (:mod:`.stream`),
the AlignScore route for NeMo Guardrails, probes, Prometheus metrics, and the review page.

The service fails closed: any error is an HTTP error with a message, never a "supported"
verdict. Status codes: 413 oversized body or batch, 422 input a person must fix, 429 queue
full (with Retry-After), 503 scorer not ready or failed to load, 504 request timed out,
500 anything else ("internal error" and a request id; the details go to the log only); with
API keys configured (:mod:`.keys`), 401 without an accepted one; while draining after
SIGTERM (:mod:`.drain`), 503 with Retry-After to any new request but ``/healthz`` and ``/metrics``.

Request bodies are read and checked by the same core functions as the command line
(:func:`inputs.decode`, :func:`inputs.parse_json`, :func:`validate.check_row`), so both
accept and refuse the same inputs with the same messages, and each is scored into its record
by :func:`row_runner.run_row`, as in `batch` and the Ray engine (internal errors hidden behind
the request id). The pydantic models below only document the request in the OpenAPI schema.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Callable
from contextlib import asynccontextmanager
from importlib import resources
from typing import Literal

from fastapi import FastAPI, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.middleware.trustedhost import TrustedHostMiddleware

from ..detection import Detection, check_detection
from ..errors import GroundsenseError, InputError
from ..inputs.files import decode, example_names, load_example, parse_json
from ..inputs.validate import MAX_K, CheckedRow, check_row, echo_id
from ..rows.runner import error_record, internal_error, run_row
from ..verification import check_verifier
from ..weights import display_name
from .alignscore import PATHS as ALIGNSCORE_PATHS
from .alignscore import alignscore_response, alignscore_row
from .drain import Admission, Drain
from .keys import ApiKeys, RequireKey
from .limits import BodyLimit, BodyTooLarge
from .metrics import Metrics
from .observe import Observe, RequestRecord, current_record, request_log
from .settings import ServiceSettings
from .stream import OpenStreams, StepFailed, open_stream
from .worker import QueueFull, ScoringWorker

log = logging.getLogger(__name__)


class Options(BaseModel):
    model_config = ConfigDict(extra="forbid")
    k: int | None = Field(None, ge=1, le=MAX_K, description="Chunks for a single context string.")
    mode: Literal["full", "two_pass"] | None = None


class DetectRequest(BaseModel):
    """The request row :func:`validate.check_row` accepts (documentation only)."""

    model_config = ConfigDict(extra="forbid")
    id: str | int | None = Field(None, description="Echoed back in the response.")
    question: str = ""
    context: str | None = Field(None, description="The evidence as one string; or give passages.")
    passages: list[str] | None = Field(None, description="Retrieved passages, one chunk each.")
    answer: str
    sentences: list[tuple[int, int]] | None = Field(
        None, description="Optional sentence spans in the answer: integer pairs, in order, not overlapping.")
    options: Options | None = None
    labels: list | None = Field(None, description="Read by `groundsense calibrate` and `fit`; ignored here.")
    source: str | int | None = Field(None, description="Read by `groundsense fit` (its cross-validation groups); "
                                                       "ignored here.")


class ApiError(Exception):
    def __init__(self, status: int, message: str, retry_after: float | None = None, request_id: str | None = None):
        super().__init__(message)
        self.status, self.message, self.retry_after, self.request_id = status, message, retry_after, request_id


class Scoring:
    """What the worker thread owns: the detection (a detector, or a cascade when the settings
    name a verifier; one per K and mode through ``with_options``) and what it is."""

    def __init__(self, detection: Detection):
        self.detection = check_detection(detection)
        self.about = detection.describe()
        self.mean_seconds = 5.0  # running estimate of one request's time, for Retry-After

    @classmethod
    def from_settings(cls, settings: ServiceSettings) -> Scoring:
        from ..verification import make_detection

        return cls(make_detection(settings.detector))

    def timed(self, rows: list[CheckedRow], stop, request_id: str) -> list[dict]:
        """Each row's record (:func:`row_runner.run_row`, internal errors hidden behind ``request_id``),
        in order, until ``stop()``."""
        started = time.perf_counter()
        results = [run_row(self.detection, row, stop, request_id) for row in rows]
        elapsed = (time.perf_counter() - started) / max(len(rows), 1)
        self.mean_seconds = 0.8 * self.mean_seconds + 0.2 * elapsed
        return results


async def read_json(request: Request) -> object:
    """The request body as JSON, read by the same functions as the command line's input."""
    return parse_json(decode(await request.body(), "the request body"), "the request body")


def _request_schema(many: bool) -> dict:
    schema = {"$ref": "#/components/schemas/DetectRequest"}
    schema = {"type": "array", "items": schema} if many else schema
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def create_app(settings: ServiceSettings | None = None, detection: Callable[[], Detection] | None = None) -> FastAPI:
    """The app for ``settings`` (default: from the environment). The worker thread builds its
    detection from them (a bad verifier is refused here, before it starts), or calls ``detection``
    for one made elsewhere: any object that implements :class:`~groundsense.detection.Detection`."""
    settings = settings or ServiceSettings.from_env()
    check_verifier(settings.detector)
    load = (lambda: Scoring(detection())) if detection else (lambda: Scoring.from_settings(settings))
    worker = ScoringWorker(load, settings.queue_size)
    open_streams = OpenStreams(settings.max_streams)

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
    metrics = Metrics(display_name(settings.detector.scorer), lambda: worker.pending, lambda: len(open_streams))
    app.state.worker, app.state.settings, app.state.metrics = worker, settings, metrics
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    if settings.allowed_hosts:  # a request for another Host gets 400 before anything else
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=settings.allowed_host_list)
    if settings.api_key_file or settings.api_keys:  # inside Observe: a 401 is counted and logged
        app.add_middleware(RequireKey, keys=ApiKeys(settings.api_key_file, settings.api_keys),
                           metrics_open=settings.metrics_open)
    app.state.drain = Drain(settings.grace_s)  # begun by the server on SIGTERM (server.py)
    app.add_middleware(Admission, drain=app.state.drain)  # inside Observe: a 503 while draining is counted

    def finish(record: RequestRecord) -> None:
        metrics.observe(record)
        request_log.info(record.log_line(metrics.scorer, settings.log_text))

    app.add_middleware(Observe, routes=("/v1/detect", "/v1/detect/batch", "/v1/detect/stream", *ALIGNSCORE_PATHS),
                       finish=finish)

    async def score(rows: list[CheckedRow]) -> list[dict]:
        record = current_record()
        record.keep_text(rows)
        if not rows:  # a batch of bad items only: nothing to score
            return []
        if reason := worker.unavailable():
            raise ApiError(503, reason, retry_after=None if worker.load_error else 5)
        stopped = threading.Event()
        try:
            # On timeout a queued job never starts ...
            return await worker.run(record.timing.around(
                lambda state: state.timed(rows, stopped.is_set, record.request_id)), settings.timeout_s)
        except QueueFull:
            estimate = worker.state.mean_seconds * (worker.pending + 1) * len(rows)
            raise ApiError(429, "the scorer is busy: too many requests are waiting", retry_after=estimate) from None
        except asyncio.TimeoutError:
            stopped.set()  # ... and a running one stops at the scorer's next check
            raise ApiError(504, f"scoring took longer than the {settings.timeout_s:g} s limit",
                           retry_after=settings.timeout_s) from None

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError):
        headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after)))} if exc.retry_after else None
        body = {"error": exc.message} | ({"request_id": exc.request_id} if exc.request_id else {})
        return JSONResponse(body, status_code=exc.status, headers=headers)

    @app.exception_handler(InputError)
    async def bad_input(request: Request, exc: InputError):
        return JSONResponse({"error": str(exc)}, status_code=422)

    @app.exception_handler(BodyTooLarge)
    async def too_large(request: Request, exc: BodyTooLarge):
        return JSONResponse({"error": str(exc)}, status_code=413)

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception):
        request_id = current_record().request_id
        log.exception("internal error, request id %s", request_id)
        return JSONResponse({"error": internal_error(request_id), "request_id": request_id}, status_code=500)

    @app.get("/healthz", summary="The process is up")
    async def healthz() -> dict:
        return {"status": "ok"}

    @app.get("/readyz", summary="The scorer is loaded")
    async def readyz():
        if worker.ready.is_set():
            return {"status": "ready", "scorer": worker.state.about["scorer"], "detection": worker.state.about,
                    "queue": worker.pending}
        status = "failed" if worker.load_error else "loading"
        return JSONResponse({"status": status, "error": str(worker.load_error or "")}, status_code=503)

    async def score_one(row: CheckedRow) -> dict:
        """One row's result; its error record becomes the error response."""
        (result,) = await score([row])
        if "error" in result:
            error = result["error"]
            if error["type"] == "InternalError":
                raise ApiError(500, error["message"], request_id=error["request_id"])
            raise ApiError(422, error["message"])
        current_record().note(result)
        return result

    @app.post("/v1/detect", summary="Check one answer; same JSON as `groundsense detect --json`",
              openapi_extra=_request_schema(many=False))
    async def detect(request: Request) -> dict:
        return await score_one(check_row(await read_json(request)))

    @app.post(ALIGNSCORE_PATHS[0], summary="NeMo Guardrails' AlignScore API: 1 when every sentence of the claim is "
              "judged supported, else half the share that is (docs/integrations.md)")
    @app.post(ALIGNSCORE_PATHS[1], include_in_schema=False)
    async def alignscore(request: Request) -> dict:
        return alignscore_response(await score_one(alignscore_row(await read_json(request))))

    @app.post("/v1/detect/batch", summary="Check several answers; one result or error record each, in order",
              openapi_extra=_request_schema(many=True))
    async def detect_batch(request: Request) -> list[dict]:
        rows = await read_json(request)
        if not isinstance(rows, list) or not rows:
            raise ApiError(422, "the batch must be a non-empty JSON list of detect requests")
        if len(rows) > settings.max_batch_items:
            raise ApiError(413, f"at most {settings.max_batch_items} items per batch; split the list")
        checked: list[CheckedRow | dict] = []
        for row in rows:  # checked here, so that a batch of bad items needs no scorer
            try:
                checked.append(check_row(row))
            except InputError as exc:
                checked.append(error_record(echo_id(row), exc))
        scored = iter(await score([item for item in checked if isinstance(item, CheckedRow)]))
        results = [next(scored) if isinstance(item, CheckedRow) else item for item in checked]
        current_record().note(*results)
        return results

    app.get("/metrics", summary="Prometheus metrics", response_class=Response)(metrics.endpoint)

    @app.post("/v1/detect/stream", summary="Check an answer while it streams: NDJSON in (evidence, then "
              "{\"delta\": ...} lines), NDJSON events out (each sentence as it ends, then the result)")
    async def detect_stream(request: Request):
        try:
            return await open_stream(request, worker, settings, open_streams)
        except StepFailed as exc:
            # a failed load won't recover
            retry = exc.status == 429 or (exc.status == 503 and worker.load_error is None)
            raise ApiError(exc.status, exc.message, retry_after=5 if retry else None) from None

    @app.get("/v1/examples", summary="Names of the shipped examples")
    async def examples() -> list[str]:
        return example_names()

    @app.get("/v1/examples/{name}", summary="One shipped example as a detect request")
    async def example(name: str) -> dict:
        try:
            return load_example(name)
        except GroundsenseError as exc:
            raise ApiError(404, str(exc)) from None

    default_openapi = app.openapi

    def openapi() -> dict:
        """The generated schema, plus the request models the endpoints read by hand."""
        if app.openapi_schema is None:
            schema = default_openapi()
            schemas = schema.setdefault("components", {}).setdefault("schemas", {})
            for model in (DetectRequest, Options):
                model_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
                model_schema.pop("$defs", None)
                schemas[model.__name__] = model_schema
        return app.openapi_schema

    app.openapi = openapi
    static = resources.files("groundsense") / "service" / "static"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")

    @app.get("/", include_in_schema=False)
    async def page() -> HTMLResponse:
        return HTMLResponse((static / "index.html").read_text(encoding="utf-8"))

    return app

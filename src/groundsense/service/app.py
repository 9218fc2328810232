"""FastAPI app: ``POST /v1/detect``, ``/v1/detect/batch``, ``/v1/detect/stream`` (:mod:`.stream`),
the AlignScore route for NeMo Guardrails, probes, Prometheus metrics, and the review page: one
router per concern (:mod:`.routes`), over the :class:`~.state.Service` they share.

The service fails closed: any error is an HTTP error with a message, never a "supported"
verdict. Status codes: 413 oversized body or batch, 415 a body not declared JSON (NDJSON for a
stream), 422 input a person must fix, 429 queue full (with Retry-After), 503 scorer not ready or
failed to load, 504 request timed out, 500 anything else ("internal error" and a request id;
the details go to the log only); with API keys configured (:mod:`.keys`), 401 without an
accepted one; while draining after SIGTERM (:mod:`.drain`), 503 with Retry-After to any new
request but ``/healthz`` and ``/metrics``.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware

from ..detection import Detection
from ..errors import InputError
from ..rows.runner import internal_error
from .alignscore import PATHS as ALIGNSCORE_PATHS
from .answers import ApiError
from .drain import Admission
from .keys import ApiKeys, RequireKey
from .limits import BodyLimit, BodyTooLarge
from .observe import Observe, current_record
from .routes import detect, metrics, page, probes, stream
from .settings import ServiceSettings
from .state import Service

log = logging.getLogger(__name__)


async def api_error(request: Request, exc: ApiError) -> JSONResponse:
    headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after)))} if exc.retry_after else None
    body = {"error": exc.message} | ({"request_id": exc.request_id} if exc.request_id else {})
    return JSONResponse(body, status_code=exc.status, headers=headers)


async def bad_input(request: Request, exc: InputError) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=422)


async def too_large(request: Request, exc: BodyTooLarge) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=413)


async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
    """Starlette's own errors (404 no such route, 405 another method) in the service's one shape."""
    return JSONResponse({"error": f"{exc.detail}: {request.method} {request.url.path}"}, status_code=exc.status_code,
                        headers=exc.headers)


async def internal(request: Request, exc: Exception) -> JSONResponse:
    request_id = current_record().request_id
    log.exception("internal error, request id %s", request_id)
    return JSONResponse({"error": internal_error(request_id), "request_id": request_id}, status_code=500)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The scorer's thread runs while the app does. It is waited for off the event loop, so that the
    requests the shutdown cancelled get their answer and stop their jobs meanwhile."""
    worker = app.state.service.worker
    worker.start()
    yield
    await asyncio.to_thread(worker.stop)


class App(FastAPI):
    def openapi(self) -> dict[str, Any]:
        """The generated schema, plus the request models the scoring routes read by hand."""
        if self.openapi_schema is not None:
            return self.openapi_schema
        schema = super().openapi()  # kept as self.openapi_schema, completed here
        schemas = schema.setdefault("components", {}).setdefault("schemas", {})
        for model in detect.REQUEST_MODELS:
            model_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
            model_schema.pop("$defs", None)
            schemas[model.__name__] = model_schema
        return schema


def create_app(settings: ServiceSettings | None = None, detection: Callable[[], Detection] | None = None) -> FastAPI:
    """The app for ``settings`` (default: from the environment). The worker thread builds its
    detection from them (a bad verifier is refused here, before it starts), or calls ``detection``
    for one made elsewhere: any :class:`~groundsense.detection.Detection` (a subclass, or a registered class)."""
    settings = settings or ServiceSettings.from_env()
    service = Service.build(settings, detection)
    app = App(title="groundsense", summary="Flags the sentences of a RAG answer that the evidence does not support.",
              version="0.1.0", lifespan=lifespan, exception_handlers={
                  ApiError: api_error, InputError: bad_input, BodyTooLarge: too_large, HTTPException: http_error,
                  Exception: internal})
    app.state.service = service
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    if settings.api_key_file or settings.api_keys:  # inside Observe: a 401 is counted and logged
        app.add_middleware(RequireKey, keys=ApiKeys(settings.api_key_file, settings.api_keys),
                           metrics_open=settings.metrics_open)
    app.add_middleware(Admission, drain=service.drain)  # inside Observe: a 503 while draining is counted
    app.add_middleware(Observe, routes=("/v1/detect", "/v1/detect/batch", "/v1/detect/stream", *ALIGNSCORE_PATHS),
                       finish=service.finish)
    if settings.allowed_hosts:  # added last, so outermost: a request for another Host gets 400 before anything else
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=settings.allowed_host_list)
    for router in (probes.router, detect.router, metrics.router, stream.router, page.router):  # the OpenAPI order
        app.include_router(router)
    return app

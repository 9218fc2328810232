"""``POST /v1/detect/stream`` (:mod:`..stream`)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import StreamingResponse

from ..answers import ApiError
from ..state import ServiceDep
from ..stream import StepFailed, open_stream

router = APIRouter()


@router.post("/v1/detect/stream", summary="Check an answer while it streams: NDJSON in (evidence, then "
             "{\"delta\": ...} lines), NDJSON events out (each sentence as it ends, then the result)")
async def detect_stream(request: Request, service: ServiceDep) -> StreamingResponse:
    try:
        return await open_stream(request, service.worker, service.settings, service.open_streams)
    except StepFailed as exc:
        # a failed load won't recover
        retry = exc.status == 429 or (exc.status == 503 and service.worker.load_error is None)
        raise ApiError(exc.status, exc.message, retry_after=5 if retry else None) from None

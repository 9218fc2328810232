"""The scoring routes: ``POST /v1/detect``, ``/v1/detect/batch`` and the AlignScore route.

Request bodies are read and checked by the same core functions as the command line
(:func:`inputs.decode`, :func:`inputs.parse_json`, :func:`validate.check_row`), so both
accept and refuse the same inputs with the same messages, and each is scored into its record
by :func:`row_runner.run_row`, as in `batch` and the Ray engine (internal errors hidden behind
the request id). The pydantic models below only document the request in the OpenAPI schema.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from ...errors import InputError
from ...inputs.files import decode, parse_json
from ...inputs.validate import MAX_K, CheckedRow, check_row, echo_id
from ...rows.runner import error_record
from ..alignscore import PATHS as ALIGNSCORE_PATHS
from ..alignscore import alignscore_response, alignscore_row
from ..answers import ApiError, check_media_type
from ..observe import current_record
from ..state import Service, ServiceDep
from ..worker import QueueFull

router = APIRouter()


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


REQUEST_MODELS = (DetectRequest, Options)  # added to the OpenAPI schema by the app


async def read_json(request: Request) -> object:
    """The request body as JSON (declared so: :func:`check_media_type`), read by the same
    functions as the command line's input."""
    check_media_type(request, "application/json")
    return parse_json(decode(await request.body(), "the request body"), "the request body")


def _request_schema(many: bool) -> dict[str, Any]:
    schema: dict[str, Any] = {"$ref": "#/components/schemas/DetectRequest"}
    schema = {"type": "array", "items": schema} if many else schema
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


async def score(service: Service, rows: list[CheckedRow]) -> list[dict]:
    """The rows' records, scored on the worker within the timeout, or an :class:`ApiError`."""
    record = current_record()
    record.keep_text(rows)
    if not rows:  # a batch of bad items only: nothing to score
        return []
    worker, timeout_s = service.worker, service.settings.timeout_s
    if reason := worker.unavailable():
        raise ApiError(503, reason, retry_after=None if worker.load_error else 5)
    stopped = threading.Event()
    try:
        # On timeout a queued job never starts ...
        return await worker.run(record.timing.around(
            lambda state: state.timed(rows, stopped.is_set, record.request_id)), timeout_s)
    except QueueFull:
        estimate = worker.state.mean_seconds * (worker.pending + 1) * len(rows)
        raise ApiError(429, "the scorer is busy: too many requests are waiting", retry_after=estimate) from None
    except asyncio.TimeoutError:
        raise ApiError(504, f"scoring took longer than the {timeout_s:g} s limit", retry_after=timeout_s) from None
    finally:
        stopped.set()  # ... and a running one, timed out or cut off by the shutdown, stops at the scorer's next check


async def score_one(service: Service, row: CheckedRow) -> dict:
    """One row's result; its error record becomes the error response."""
    (result,) = await score(service, [row])
    if "error" in result:
        error = result["error"]
        if error["type"] == "InternalError":
            raise ApiError(500, error["message"], request_id=error["request_id"])
        raise ApiError(422, error["message"])
    current_record().note(result)
    return result


@router.post("/v1/detect", summary="Check one answer; same JSON as `groundsense detect --json`",
             openapi_extra=_request_schema(many=False))
async def detect(request: Request, service: ServiceDep) -> dict:
    return await score_one(service, check_row(await read_json(request)))


@router.post(ALIGNSCORE_PATHS[0], summary="NeMo Guardrails' AlignScore API: 1 when the claim passes (the answer "
             "verdict), else at most 0.49: half the integrations' score (docs/integrations.md)")
@router.post(ALIGNSCORE_PATHS[1], include_in_schema=False)
async def alignscore(request: Request, service: ServiceDep) -> dict:
    return alignscore_response(await score_one(service, alignscore_row(await read_json(request))))


@router.post("/v1/detect/batch", summary="Check several answers; one result or error record each, in order",
             openapi_extra=_request_schema(many=True))
async def detect_batch(request: Request, service: ServiceDep) -> list[dict]:
    rows = await read_json(request)
    if not isinstance(rows, list) or not rows:
        raise ApiError(422, "the batch must be a non-empty JSON list of detect requests")
    if len(rows) > service.settings.max_batch_items:
        raise ApiError(413, f"at most {service.settings.max_batch_items} items per batch; split the list")
    checked: list[CheckedRow | dict] = []
    for row in rows:  # checked here, so that a batch of bad items needs no scorer
        try:
            checked.append(check_row(row))
        except InputError as exc:
            checked.append(error_record(echo_id(row), exc))
    scored = iter(await score(service, [item for item in checked if isinstance(item, CheckedRow)]))
    results = [next(scored) if isinstance(item, CheckedRow) else item for item in checked]
    current_record().note(*results)
    return results

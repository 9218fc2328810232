"""``/healthz`` (the process is up) and ``/readyz`` (the scorer is loaded): open without a key."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ..state import ServiceDep

router = APIRouter()


@router.get("/healthz", summary="The process is up")
async def healthz() -> dict:
    return {"status": "ok"}


@router.get("/readyz", summary="The scorer is loaded", response_model=None)
async def readyz(service: ServiceDep) -> dict | JSONResponse:
    worker = service.worker
    if worker.ready.is_set():
        return {"status": "ready", "scorer": worker.state.about["scorer"], "detection": worker.state.about,
                "queue": worker.pending}
    status = "failed" if worker.load_error else "loading"
    return JSONResponse({"status": status, "error": str(worker.load_error or "")}, status_code=503)

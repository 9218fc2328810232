"""``GET /metrics``: the app's Prometheus metrics (:mod:`..metrics`)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from ..state import ServiceDep

router = APIRouter()


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def endpoint(service: ServiceDep) -> Response:  # its name makes the operationId, endpoint_metrics_get
    """The metrics in Prometheus' text format."""
    return await service.metrics.endpoint()

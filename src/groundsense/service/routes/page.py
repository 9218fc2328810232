"""The review page: ``/``, its static files, and the shipped examples it offers."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from ...errors import GroundsenseError
from ...inputs.files import example_names, load_example
from ..answers import ApiError

STATIC = resources.files("groundsense") / "service" / "static"

router = APIRouter()


@router.get("/v1/examples", summary="Names of the shipped examples")
async def examples() -> list[str]:
    return example_names()


@router.get("/v1/examples/{name}", summary="One shipped example as a detect request")
async def example(name: str) -> dict:
    try:
        return load_example(name)
    except GroundsenseError as exc:
        raise ApiError(404, str(exc)) from None


router.mount("/static", StaticFiles(directory=str(STATIC)), name="static")


@router.get("/", include_in_schema=False)
async def page() -> HTMLResponse:
    return HTMLResponse((STATIC / "index.html").read_text(encoding="utf-8"))

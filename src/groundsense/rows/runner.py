"""One request row in, one record out: what `batch`, the service and the Ray engine each run per row.

:func:`run_row` checks a row once (:func:`validate.check_row`, unless it is a
:class:`~groundsense.inputs.validate.CheckedRow` already) and detects on it
(:meth:`Detection.detect_checked`, which does not check it again). Its record is the result's
``to_dict()`` after the row's ``id`` (null when the row has none), or, when the row fails, the
error record of :func:`error_record`, the one place one is built. Each caller keeps only its
transport: `batch` adds the input ``line`` and writes the file, the service turns a lone
request's error into an HTTP status, the Ray engine packs records into Arrow blocks.

Which errors are shown (docs/output.md): a :class:`~groundsense.errors.GroundsenseError` (bad
input, a verifier's server unreachable, ...) says what to do, so its type and message are
always shown. Any other exception is internal. A batch file, read by whoever ran it, shows its
type and message too, so the file says what went wrong. A service, whose replies must not leak
its internals, passes its ``request_id``: the record then says ``InternalError`` and that id,
and the details go to the log. :class:`~groundsense.errors.Cancelled` is never a row's record:
it stops the caller's whole run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from ..detection import Detection
from ..errors import Cancelled, GroundsenseError
from ..inputs.validate import CheckedRow, check_row, echo_id

log = logging.getLogger(__name__)


def run_row(detection: Detection, row: Mapping | CheckedRow, stop: Callable[[], bool] | None = None,
            request_id: str | None = None) -> dict:
    """The record of one request ``row``: ``{"id", **result.to_dict()}`` or ``{"id", "error"}``.

    ``stop()`` returning True raises :class:`Cancelled` before the row starts (and where the
    detection checks it); ``request_id``: hide internal errors behind it (see the module)."""
    row_id = row.id if isinstance(row, CheckedRow) else echo_id(row)
    try:
        checked = row if isinstance(row, CheckedRow) else check_row(row)
        if stop is not None and stop():
            raise Cancelled("the request was stopped before this row started")
        result = detection.detect_checked(checked, stop)
    except Cancelled:
        raise
    except Exception as exc:  # noqa: BLE001 - a failed row is its error record; the others go on
        return error_record(row_id, exc, request_id)
    return {"id": row_id, **result.to_dict()}


def error_record(row_id: str | int | None, error: Exception, request_id: str | None = None) -> dict:
    """``{"id", "error": {"type", "message"}}`` for a row that raised ``error``; an internal error
    with a ``request_id`` is logged and hidden behind it (``type`` InternalError, plus ``request_id``)."""
    if isinstance(error, GroundsenseError) or request_id is None:
        return {"id": row_id, "error": {"type": type(error).__name__, "message": str(error)}}
    log.error("internal error scoring a row of request %s", request_id, exc_info=error)
    return {"id": row_id, "error": {"type": "InternalError", "message": internal_error(request_id),
                                    "request_id": request_id}}


def internal_error(request_id: str) -> str:
    """What a service tells its caller of an internal error: only that there was one, and its request id."""
    return f"internal error (request id {request_id}); the details are in the server's log"

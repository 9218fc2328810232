"""MCP: the ``check_grounding`` tool for agents (``pip install 'groundsense[mcp]'``; ``groundsense mcp``).

An agent that drafts answers from retrieved passages (Claude Desktop, Cursor, an agent
framework) calls the tool before it shows a draft::

    check_grounding(answer, passages=[...] | context="...", question="...")

The arguments are a detect request's (``groundsense.inputs.validate.check_row`` checks them as it
does for ``detect`` and the HTTP API), and the tool makes the one ``detect`` call.
It returns:

- structured content: the result's ``to_dict()``, the JSON of ``groundsense detect --json``
  (each sentence's ``flagged`` and, for a supported one, its ``support`` passage);
- text, which is what a model reads: the verdict and each sentence not judged supported
  (:attr:`~groundsense.integrations.common.GroundingReport.feedback`).

The verdict is the integrations' (:mod:`groundsense.integrations.common`), the answer verdict
every entry point gives: supported only where the detection clears the answer, so an unjudged
sentence fails it. Bad input, or a scorer
that cannot load, is a tool error with groundsense's message (``is_error``), never a verdict.

Decisions: the detector settings are the server's (``groundsense mcp``'s options), not the
caller's, so an agent cannot ask for a cheaper check than the one configured; scoring runs in a
worker thread, one answer at a time per process, so the server keeps answering other
requests while it works; the scorer loads in the background as the server starts
(:func:`run`), so the first call does not wait for it from zero.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict, Field, model_validator

from ..config import DetectorConfig
from ..errors import GroundsenseError
from ..inputs.validate import CheckedRow, check_row
from ..verification.factory import prepare_detection
from .common import GroundingReport, PreparedOnce, check_flags, detect

__all__ = ["create_server", "run"]

logger = logging.getLogger(__name__)

TOOL = "check_grounding"
DESCRIPTION = """\
Check which sentences of an answer the retrieved evidence does not support.

Call it after drafting an answer from retrieved passages and before showing it: give the answer, \
the passages it was written from (or one context string) and the user's question. It flags each \
sentence the evidence does not support and names, for each supported one, the passage it relies \
on. Revise or drop the unsupported sentences (or retrieve more evidence), then check again. \
It judges support by the given evidence only, not truth; it takes seconds per answer."""
INSTRUCTIONS = f"Before showing an answer drafted from retrieved passages, check it with {TOOL}."

Answer = Annotated[str, Field(description="The drafted answer to check, as it would be shown.")]
Context = Annotated[str | None, Field(description="The evidence as one string (give this or passages).")]
Passages = Annotated[list[str] | None,
                     Field(description="The retrieved passages, one string each (give this or context).")]
Question = Annotated[str | None,
                     Field(description="The user's question the answer responds to; the verdict depends on it.")]


def create_server(detector_options: Mapping[str, Any] | None = None) -> MCPServer:
    """The MCP server with the one tool, scoring with the detection ``detector_options`` describe
    (``DetectorConfig`` fields with plain values, a ``verifier`` among them for a cascade; none: the
    default detection)."""
    return _server(_prepared(detector_options))


def _prepared(detector_options: Mapping[str, Any] | None) -> PreparedOnce:
    """The server's detection, prepared: bad settings fail here, as the server starts, not on the
    first call (no model loads); the warm-up or the first call builds it from this preparation."""
    prepared = prepare_detection(config := DetectorConfig(**dict(detector_options or {})))
    if prepared.verifier is None:  # a cascade flags by its verifier's threshold
        check_flags({"scorer": prepared.adjudicator.config.scorer, **prepared.adjudicator.describe(config.k)})
    return PreparedOnce(prepared)


def _server(detection: PreparedOnce) -> MCPServer:
    # The return annotation publishes an output schema: an object, the to_dict() contract (docs/output.md).
    async def check_grounding(answer: Answer, context: Context = None, passages: Passages = None,
                              question: Question = None) -> Annotated[CallToolResult, dict[str, Any]]:
        row = {"answer": answer, "context": context, "passages": passages, "question": question}
        try:
            checked = check_row({key: value for key, value in row.items() if value is not None})
            report = await anyio.to_thread.run_sync(_report, checked, detection)
        except GroundsenseError as exc:
            raise ToolError(str(exc)) from exc
        except Exception as exc:
            # e.g. a model that fails to load or run: an error result that names it, never a verdict
            logger.exception("groundsense: %s failed", TOOL)
            raise ToolError(f"internal error: {type(exc).__name__}: {exc} "
                            "(the server's stderr has the traceback)") from exc
        return CallToolResult(content=[TextContent(type="text", text=verdict_text(report))],
                              structured_content=report.result.to_dict())

    tool = Tool.from_function(check_grounding, name=TOOL, title="Check an answer's grounding", description=DESCRIPTION,
                              annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))

    # The tool's arguments, none other: a misspelled question is an error, not dropped.
    base = tool.fn_metadata.arg_model

    class Arguments(base):  # type: ignore[valid-type,misc]
        model_config = ConfigDict(extra="forbid", title=base.__name__)  # the SDK's schema title

        @model_validator(mode="before")
        @classmethod
        def _only_the_tools(cls, given: Any) -> Any:
            if isinstance(given, dict) and (unknown := [key for key in given if key not in cls.model_fields]):
                raise ValueError(f"unknown argument {unknown[0][:40]!r}: {TOOL} takes "
                                 f"{', '.join(cls.model_fields)}")
            return given

    tool.fn_metadata.arg_model = Arguments
    tool.parameters = Arguments.model_json_schema(by_alias=True)  # published: additionalProperties false
    return MCPServer("groundsense", instructions=INSTRUCTIONS, tools=[tool])


def _report(row: CheckedRow, detection: PreparedOnce) -> GroundingReport:
    return GroundingReport(row.arguments["answer"], detect(row, detection.get()))


def verdict_text(report: GroundingReport) -> str:
    """What the model reads: the verdict, then the sentences not judged supported."""
    verdict = ("SUPPORTED: every sentence is supported by the evidence." if report.passing else
               "NOT SUPPORTED: revise or remove the sentences below before showing the answer.")
    return f"Verdict: {verdict}\n{report.feedback}"


def run(detector_options: Mapping[str, Any] | None = None, transport: Literal["stdio", "streamable-http"] = "stdio",
        **http_options: Any) -> None:
    """Serve until the client goes (stdio) or the process is stopped, the scorer loading in the
    background meanwhile; a scorer that cannot load is logged, and each call reports it.
    ``http_options`` (streamable-http): the SDK's ``host`` (127.0.0.1) and ``port`` (8000)."""
    detection = _prepared(detector_options)
    server = _server(detection)
    threading.Thread(target=_warm_up, args=(detection,), daemon=True, name="groundsense-warm-up").start()
    server.run(transport, **http_options)


def _warm_up(detection: PreparedOnce) -> None:
    try:
        detection.get()
    except GroundsenseError as exc:
        logger.error("groundsense: the scorer did not load: %s", exc)
    except Exception:  # each call reports it too
        logger.exception("groundsense: the scorer did not load")

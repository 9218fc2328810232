"""`groundsense mcp`: the ``check_grounding`` tool for agents, as an MCP server."""

from __future__ import annotations

from typing import Any, Literal

import click

from ..errors import InputError
from .common import CONTEXT_SETTINGS, detector_options

TRANSPORTS = ("stdio", "streamable-http")


@click.command(context_settings=CONTEXT_SETTINGS)
@detector_options()
@click.option("--transport", type=click.Choice(TRANSPORTS), default="stdio", show_default=True,
              help="stdio: the client starts this command (Claude Desktop, Cursor); streamable-http: serve "
                   "http://HOST:PORT/mcp to clients that connect.")
@click.option("--host", default=None, help="With streamable-http [default: 127.0.0.1].")
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="With streamable-http [default: 8000].")
def mcp(transport: Literal["stdio", "streamable-http"], host: str | None, port: int | None,
        **detector_options: Any) -> None:
    """Run an MCP server whose tool, check_grounding, checks an answer against its evidence.

    An agent calls it after drafting an answer from retrieved passages, before showing it
    (docs/integrations.md). The detector options set how every call is scored; the scorer
    loads in the background as the server starts. Needs the extra: pip install 'groundsense[mcp]'.
    """
    http = {name: value for name, value in (("host", host), ("port", port)) if value is not None}
    if http and transport == "stdio":
        raise InputError("--host and --port only apply with --transport streamable-http")
    try:
        from ..integrations.mcp import run
    except ImportError as exc:  # no mcp, or one before 2.3 (which named its server FastMCP)
        raise InputError(f"`groundsense mcp` needs the MCP SDK, mcp 2.3 or later ({exc}): "
                         "pip install 'groundsense[mcp]'") from exc

    run(detector_options, transport, **http)

"""Stopping a long command cleanly: Ctrl-C or SIGTERM (``kill``, a scheduler stopping a job)
unwind it like an exception, so that it writes what it finished, says where, and exits as a
shell expects (130 for SIGINT, 143 for SIGTERM)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import click


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised wherever the main thread is when it arrives."""


def _terminate(_signum: int, _frame: object) -> None:
    raise Terminated


def rearm_sigterm() -> None:
    """Take SIGTERM back for :func:`resumable`'s block after a library took it over (Ray's
    ``init`` installs its own handler, which aborts the process and loses what was not written)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)


@contextmanager
def resumable(saved: str) -> Iterator[None]:
    """Run a command whose finished work is written as it goes; on Ctrl-C or SIGTERM tell the
    user ``saved`` (what is kept, and where) and how to resume, and exit 130 or 143.

    The SIGTERM handler is set only for the block (and only on the main thread, where Python
    runs signal handlers), so a server's own handling is left alone.
    """
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main else None
    try:
        yield
    except KeyboardInterrupt as stop:
        click.echo(f"Interrupted: {saved}; run the same command again to resume.", err=True)
        raise click.exceptions.Exit(143 if isinstance(stop, Terminated) else 130) from None
    finally:
        if main:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)

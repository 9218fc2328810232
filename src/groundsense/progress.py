"""Progress with an ETA on stderr: a rich bar on a terminal, plain lines in a log file."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

__all__ = ["track"]

T = TypeVar("T")
LOG_EVERY_S = 60.0


def track(items: Iterable[T], description: str, enabled: bool = True, total: int | None = None) -> Iterator[T]:
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    if not enabled:
        yield from items
        return
    console = Console(file=sys.stderr)
    if not console.is_terminal:  # a background job's log: a line now and then, not a bar
        yield from logged(items, description, total)
        return
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        console=console, transient=False,
    ) as progress:
        task = progress.add_task(description, total=total)
        for item in items:
            yield item
            progress.advance(task)


def logged(items: Iterable[T], description: str, total: int | None, every_s: float = LOG_EVERY_S) -> Iterator[T]:
    """Yield ``items``, writing a progress line to stderr after the first, then at most every
    ``every_s`` seconds, and after the last."""
    start = last = time.monotonic()
    done = 0
    for item in items:
        yield item
        done += 1
        now = time.monotonic()
        if done == 1 or done == total or now - last >= every_s:
            last = now
            print(progress_line(description, done, total, now - start), file=sys.stderr, flush=True)


def progress_line(description: str, done: int, total: int | None, elapsed_s: float) -> str:
    """``Scoring answers: 120/2,700 (0:08:02 elapsed, ETA 2:52:43)``."""
    line = (f"{description}: {done:,}" + (f"/{total:,}" if total else "")
            + f" ({timedelta(seconds=round(elapsed_s))} elapsed")
    if total and done:
        line += f", ETA {timedelta(seconds=round(elapsed_s / done * (total - done)))}"
    return line + ")"

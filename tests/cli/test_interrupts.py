"""Stopping a long command: what the user is told, the exit status, the handler's scope."""

import os
import signal
import socket
import sys
from collections.abc import Callable

import click
import pytest

from groundsense.cli.interrupts import resumable


def sigterm() -> None:
    os.kill(os.getpid(), signal.SIGTERM)


def ctrl_c() -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize("stop, status", [(sigterm, 143), (ctrl_c, 130)])
def test_an_interrupt_says_what_is_saved_and_exits_like_a_shell(capsys, stop, status):
    with pytest.raises(click.exceptions.Exit) as stopped, resumable("the finished cases are saved under cache/"):
        stop()
    assert stopped.value.exit_code == status
    assert ("Interrupted: the finished cases are saved under cache/; run the same command again to resume."
            in capsys.readouterr().err)


def test_the_sigterm_handler_is_set_only_inside_the_block():
    before = signal.getsignal(signal.SIGTERM)
    with resumable("nothing"):
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_reader_that_closed_the_pipe_gives_141_not_a_verdicts_1():
    """`... | head -1`: the shell's code for a writer that SIGPIPE stops, quietly, which `--fail-on-flag`'s 1
    is not. The pipe's reading end is closed before the command writes, so every write fails."""
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "groundsense.cli", "examples"], stdout=write,
                              stderr=subprocess.PIPE, timeout=300)
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr.decode()
    assert b"Traceback" not in done.stderr and b"Exception ignored" not in done.stderr, done.stderr.decode()


def test_the_views_console_hands_a_closed_pipe_to_the_root_group():
    """detect's and stream's view (rich, whose own answer is exit 1) raises what the root group exits 141 on."""
    from groundsense.cli.render import terminal

    console = terminal()
    with pytest.raises(BrokenPipeError):
        console.on_broken_pipe()
    assert console.quiet  # nothing more is written


def _group_writing(write: Callable[[], None]) -> click.Group:
    """The root group's class with one command, ``write``, under it."""
    from groundsense.cli.plugins import WithPlugins

    group = WithPlugins("groundsense")
    group.add_command(click.Command("write", callback=write))
    return group


@pytest.mark.parametrize("reader_closed", [True, False])
def test_only_standard_outputs_closed_pipe_exits_141(monkeypatch, reader_closed):
    """A reader of stdout that went away is a quiet 141; a pipe or socket of the work itself that broke
    (a judge server's, a Ray worker's), while stdout's reader is still there, is an error with its cause
    (click alone would end it quietly with exit 1, taking any EPIPE for stdout's)."""
    read, write = os.pipe()
    monkeypatch.setattr(sys, "stdout", os.fdopen(write, "w"))
    ours, theirs = socket.socketpair()
    theirs.close()

    def send() -> None:
        if reader_closed:
            os.close(read)
            click.echo("x" * 100_000)  # more than a pipe holds: the write itself fails
        ours.send(b"request")

    try:
        if reader_closed:
            assert _group_writing(send).main(["write"], standalone_mode=False) == 141
        else:
            with pytest.raises(RuntimeError, match="not standard output") as raised:
                _group_writing(send).main(["write"], standalone_mode=False)
            assert isinstance(raised.value.__cause__, BrokenPipeError)
            os.close(read)
    finally:
        ours.close()
        sys.stdout.close()

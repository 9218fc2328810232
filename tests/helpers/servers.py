"""Servers the service's tests start on a free loopback port: in a process of their own, or
(:class:`LiveServer`) under uvicorn in a thread of the test process."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import uvicorn

from groundsense.service.app import create_app
from groundsense.service.settings import ServiceSettings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServeProcess:
    """`groundsense serve ARGS` in a process of its own on a free loopback port, its stdout and
    stderr in files in ``folder``; stopped with SIGTERM (then SIGKILL) if still running at the end."""

    def __init__(self, folder, *args: str, env: dict | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [sys.executable, "-m", "groundsense.cli", "serve", "--port", str(self.port), *args]
        self.env = {**os.environ, **(env or {})}
        self.stdout, self.stderr = folder / "stdout", folder / "stderr"

    def __enter__(self):
        with self.stdout.open("w") as stdout, self.stderr.open("w") as stderr:
            self.process = subprocess.Popen(self.command, stdout=stdout, stderr=stderr, env=self.env)
        return self

    def wait_status(self, status: str, timeout: float = 300.0) -> None:
        """Poll /readyz until its status is ``status`` (``ready``, ``failed``)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            assert self.process.poll() is None, self.stderr.read_text()
            try:
                if httpx.get(self.url + "/readyz").json()["status"] == status:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"/readyz never said {status!r}: {self.stderr.read_text()}")

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def wait_until_ready(get, timeout=300.0):
    """Poll /readyz through a ``get(path)`` callable until the scorer is loaded."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if get("/readyz").status_code == 200:
            return
        time.sleep(0.2)
    raise TimeoutError("the scorer did not load")


class LiveServer:
    """The real app under uvicorn on a free loopback port, in a thread of the test process."""

    def __init__(self, settings: ServiceSettings, **app_options):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(settings, **app_options), host="127.0.0.1", port=self.port,
                                log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        wait_until_ready(lambda path: httpx.get(self.url + path, timeout=5) if self.server.started
                         else httpx.Response(503))
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=30)

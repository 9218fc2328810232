import threading
import time

import httpx
import pytest
import uvicorn
from helpers.servers import free_port

from groundsense.config import DetectorConfig
from groundsense.service.app import create_app
from groundsense.service.settings import ServiceSettings


def _wait_ready(get, timeout=300.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if get("/readyz").status_code == 200:
            return
        time.sleep(0.2)
    raise TimeoutError("the scorer did not load")


class LiveServer:
    """The real app under uvicorn on a free loopback port, in a thread of the test process."""

    def __init__(self, settings: ServiceSettings):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        _wait_ready(lambda path: httpx.get(self.url + path, timeout=5) if self.server.started else httpx.Response(503))
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture(scope="package")
def live_server():
    # admission by --max-streams only: the package's tests share this server, and the load one
    # leaves would otherwise decide whether the next one's stream is admitted (test_open_streams
    # tests admission by load)
    with LiveServer(ServiceSettings(queue_size=1, timeout_s=300, admit_load=0)) as server:
        yield server


@pytest.fixture(scope="package")
def short_context_server():
    """A server whose context budget is a few tokens, so every context gets cut."""
    with LiveServer(ServiceSettings(detection=DetectorConfig(max_context_tokens=12))) as server:
        yield server


@pytest.fixture(scope="package")
def wait_ready():
    """Poll /readyz through a ``get(path)`` callable until the scorer is loaded."""
    return _wait_ready

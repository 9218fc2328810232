
import pytest
from helpers.servers import LiveServer, wait_until_ready

from groundsense.config import DetectorConfig
from groundsense.service.settings import ServiceSettings


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
    return wait_until_ready

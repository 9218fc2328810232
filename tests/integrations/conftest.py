"""Shared by the framework integrations' tests: the shipped example, a network block and the integration module."""

import importlib
import socket

import pytest
from helpers.integration_example import EXAMPLE


@pytest.fixture
def example() -> dict:
    return dict(EXAMPLE)


@pytest.fixture
def offline(monkeypatch) -> list:
    """No network: every name lookup and every non-local connection fails (as it does on a
    machine without internet) and is recorded; a test asserts the list stays empty."""
    attempts = []
    real_connect = socket.socket.connect

    def getaddrinfo(host, *args, **kwargs):
        attempts.append(host)
        raise socket.gaierror(socket.EAI_NONAME, f"offline test: no lookup of {host}")

    def connect(self, address):
        if self.family == socket.AF_UNIX:
            return real_connect(self, address)
        attempts.append(address)
        raise OSError(f"offline test: no connection to {address}")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    return attempts


@pytest.fixture(scope="module")
def integration(request):
    """The integration module a test module is named for (test_ragas.py: ``groundsense.integrations.ragas``),
    imported when a test asks for it rather than at collection: importing a framework takes
    seconds, which the fast tier, collecting every module, would pay too."""
    return importlib.import_module(f"groundsense.integrations.{request.module.__name__.removeprefix('test_')}")

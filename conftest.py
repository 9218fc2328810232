import os
import sys
from collections import Counter
from collections.abc import Callable
from types import ModuleType

import pytest
import torch
from hypothesis import settings

from groundsense.pipeline.detector import Detector
from groundsense.scorer import Scorer
from groundsense_eval.data.locations import data_root

# The code the tests share (tests/helpers, imported only after this conftest) asserts too: its
# failures get pytest's explanations, as a test module's do.
pytest.register_assert_rewrite("helpers")

# What loads the real default scorer: the session's scorer and detector here; in
# tests/service, the servers and the readiness wait of an app whose lifespan loads it.
REAL_SCORER_FIXTURES = {"scorer", "detector", "live_server", "short_context_server", "wait_ready"}

# What serves the app on a real port (uvicorn in a thread of the test process, in tests/service) or
# drives a real browser (tests/service/test_page.py) makes a system test, run by `make test-system`;
# a test that starts such a process itself is marked `system` in its module (CONTRIBUTING, "Test tiers").
SYSTEM_FIXTURES = {"live_server", "short_context_server", "browser"}

# The suite scores in fp32 on every machine, in its own process and in those it starts (the CLI,
# `serve`): its exactness bounds and the README's worked example are fp32's, and `auto` would run
# bf16 on a CPU with native bf16 (a detection reads it: groundsense.pipeline.precision; the `scorer`
# fixture names fp32 itself). tests/scorer/test_precision.py unsets it to test `auto` itself.
os.environ["GROUNDSENSE_PRECISION"] = "fp32"

# Hypothesis (tests/test_properties.py). "ci", the default, draws the same examples on every run
# and keeps no database, so a run's outcome and time depend only on the code; no deadline, since
# two shared cores time nothing reliably. "explore" draws new examples each run, more of them,
# and replays the failures it found from .hypothesis/ (git-ignored):
# HYPOTHESIS_PROFILE=explore pytest tests/test_properties.py -n 0
settings.register_profile("ci", derandomize=True, database=None, deadline=None, max_examples=100, print_blob=True)
settings.register_profile("explore", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config):
    """Where the fallback SIMD paths are asked for (the Makefile's SIMD_FALLBACK), check that
    they are in force, so that a library that renames its switches cannot turn the pass into a
    repeat of the first one."""
    from numpy._core._multiarray_umath import __cpu_features__

    disabled = os.environ.get("NPY_DISABLE_CPU_FEATURES", "").split()
    unknown_or_on = [name for name in disabled if __cpu_features__.get(name, True)]
    if unknown_or_on:
        raise pytest.UsageError(f"NPY_DISABLE_CPU_FEATURES names {unknown_or_on}, which this numpy does not know "
                                "or left on: name its CPU feature groups (numpy.show_runtime() lists them)")
    if os.environ.get("ATEN_CPU_CAPABILITY") == "default" and torch.backends.cpu.get_cpu_capability() != "DEFAULT":
        raise pytest.UsageError("ATEN_CPU_CAPABILITY=default did not take effect: torch runs "
                                f"{torch.backends.cpu.get_cpu_capability()}")


def pytest_collection_modifyitems(items):
    """A test that uses the real scorer is slow, and one that serves on a real port or drives a
    browser is a system test, whether or not its module says so."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if REAL_SCORER_FIXTURES & fixtures:
            item.add_marker(pytest.mark.slow)
        if SYSTEM_FIXTURES & fixtures:
            item.add_marker(pytest.mark.system)


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (``make test``): a worker per CPU, at most 4, since each worker holds its
    own real scorer and imports every framework."""
    return max(1, min(4, cpu_count()))


def pytest_collection_finish(session):
    """Under xdist the workers share the CPUs: each runs torch on its share, and so do the
    ``groundsense`` processes its tests start (``OMP_NUM_THREADS``), so that a result computed
    in a subprocess and one computed in the test process sum in the same order. Run alone
    without a slow test, torch runs one thread: what is left scores on tiny models, whose
    small operations gain nothing from a second thread, and on a machine busy with other work
    two threads wait on each other (the fast tier took twice as long)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        threads = max(1, cpu_count() // workers)
        torch.set_num_threads(threads)
        os.environ["OMP_NUM_THREADS"] = str(threads)
    elif not any(item.get_closest_marker("slow") for item in session.items):
        torch.set_num_threads(1)


def pytest_runtest_setup(item):
    if item.get_closest_marker("data") and not data_root().is_dir():
        pytest.skip(f"the benchmark data is not at {data_root()}: set GROUNDSENSE_DATA to its folder "
                    "(or place it at ../shared/data) to run this test")


@pytest.fixture(scope="session")
def scorer() -> Scorer:
    """The real embedded default scorer (SmolLM2-135M-Instruct) in fp32, loaded once."""
    return Scorer(precision="fp32")


@pytest.fixture(scope="session")
def detector(scorer) -> Detector:
    return Detector(scorer, k=5)


@pytest.fixture(scope="session")
def answer_rule_detector(scorer) -> Detector:
    """The default detector whose answer rule alone decides (:func:`helpers.fusions.answer_rule_fusions`)."""
    from helpers.fusions import answer_rule_fusions

    return Detector(scorer, k=5, fusion=answer_rule_fusions())


@pytest.fixture(scope="session")
def tiny_scorer() -> Scorer:
    """A two-layer Llama with random weights and the default scorer's tokenizer, for tests of
    the scorer's plumbing (what is encoded, kept, reused, counted): it loads in a second and
    scores in milliseconds, and its scores mean nothing."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from groundsense import weights

    tokenizer = AutoTokenizer.from_pretrained(weights.resolve(None)[1])
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
    )
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = LlamaForCausalLM(config)
    return Scorer.from_model(model, tokenizer, "tiny-random-llama")


@pytest.fixture(params=["tiny", pytest.param("real", marks=pytest.mark.slow)])
def cli_scorer(request, monkeypatch):
    """The commands get their detection on a scorer the session already holds, through the
    ``common.make_detection`` seam, instead of loading one per command: the tiny scorer in
    the fast tier, the real default one in the slow tier. For tests of what a command does
    with scores, not of the scores. Each detection gets a fresh scorer around the shared
    model, so no test sees another's kept evidence (a judge verifier on the same scorer
    shares it, as ``make_detection`` does)."""
    from groundsense.cli import common
    from groundsense.verification import make_detection

    held = request.getfixturevalue("tiny_scorer" if request.param == "tiny" else "scorer")

    def make(config, **given):
        return make_detection(config, Scorer.from_model(held.model, held.tokenizer, held.name), **given)

    monkeypatch.setattr(common, "make_detection", make)
    return held


@pytest.fixture
def invoke_cli(cli_scorer):
    """Run a `groundsense` command line (its arguments, without the program) in this process,
    on ``cli_scorer``'s scorer: a resume checked against a run in a process of its own, without
    another process start and scorer load. torch's thread count and ``GROUNDSENSE_THREADS``,
    which ``--threads`` sets, are put back after it."""
    from click.testing import CliRunner

    from groundsense.cli import cli
    from groundsense.scorer.threads import THREADS_VARIABLE

    def invoke(args):
        threads, variable = torch.get_num_threads(), os.environ.get(THREADS_VARIABLE)
        try:
            return CliRunner().invoke(cli, [str(a) for a in args])
        finally:
            torch.set_num_threads(threads)
            if variable is None:
                os.environ.pop(THREADS_VARIABLE, None)
            else:
                os.environ[THREADS_VARIABLE] = variable

    return invoke


@pytest.fixture
def absent_scorer(monkeypatch, tmp_path):
    """A built-in scorer whose weight package is not installed (and never converted).

    The real catalogue's larger scorers cannot serve here: a machine that has run them
    holds their converted weights in the shared cache, so they load.
    """
    from groundsense import weights

    builtin = weights.BuiltinScorer(
        name="absent-test-scorer",
        hf_id="groundsense-tests/absent-scorer",
        packages=("groundsense-test-absent-weights==0.0.0",),
        parts=(("groundsense_test_absent_weights", "model.gguf"),),
    )
    monkeypatch.setitem(weights.BUILTINS, builtin.name, builtin)
    monkeypatch.setenv("GROUNDSENSE_CACHE", str(tmp_path))
    return builtin


@pytest.fixture
def unloadable_scorer(tmp_path) -> str:
    """A scorer directory that passes every check made before a model loads (it holds a
    config.json) and then fails to load (nothing else is there): a server loads its model in the
    background, and fails there."""
    folder = tmp_path / "unloadable-scorer"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}')
    return str(folder)


@pytest.fixture
def hub_offline(monkeypatch):
    """Hugging Face's offline mode (``HF_HUB_OFFLINE=1``, which the hub client reads at import),
    as a machine without the network sets it."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


@pytest.fixture
def calls_counted(monkeypatch) -> Callable[..., Counter]:
    """``calls_counted(module, *names)``: how often a test calls each of ``module``'s functions
    ``names``, the real ones, wrapped wherever a groundsense module holds them (a spy, not a
    stand-in)."""
    counts: Counter = Counter()

    def count(module: ModuleType, *names: str) -> Counter:
        for name in names:
            original = getattr(module, name)

            def counted(*args, _name=name, _original=original, **kwargs):
                counts[_name] += 1
                return _original(*args, **kwargs)

            for held in [m for key, m in list(sys.modules.items()) if key.startswith("groundsense") and m is not None]:
                for attribute, value in list(vars(held).items()):
                    if value is original:
                        monkeypatch.setattr(held, attribute, counted)
        return counts

    return count


@pytest.fixture
def validator_calls(calls_counted) -> Counter:
    """How often a test calls each request validator (``check_row``, ``check_inputs``,
    ``check_spans``): the real ones, wrapped wherever a groundsense module holds them."""
    from groundsense.inputs import validate

    return calls_counted(validate, "check_row", "check_inputs", "check_spans")

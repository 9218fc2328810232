"""The ``openai:`` verifier against a real OpenAI-compatible server: llama-cpp-python's server on
the default scorer's GGUF, started here on a free loopback port with an API key
(benchmarks/llamacpp_server.py). The replies a real server cannot be made to give (429, a body
that is not JSON, no logprobs) come from a minimal HTTP server in a thread that answers just
that: a peer for the error paths, not a stand-in for the verifier."""

import importlib.util
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from groundsense.errors import InputError, VerifierError
from groundsense.inputs.files import load_example
from groundsense.inputs.text import join_passages
from groundsense.verification import Cascade, make_verifier
from groundsense.verification.openai_judge import OpenAIVerifier
from groundsense.verification.verifier import SentenceInput

KEY = "test-key-of-the-judge"
SENTENCES = SentenceInput.from_texts(
    "Tell me about these places.",
    ["The Eiffel Tower is in Paris. It was completed in 1889 for the World's Fair.",
     "The Colosseum is in Rome. It could hold about 50,000 spectators."],
    ["The Colosseum could hold about 50,000 spectators.", "The Eiffel Tower was painted blue by Picasso.",
     "The Eiffel Tower is in Paris."],
)


def _helper():
    """benchmarks/llamacpp_server.py, which the benchmark uses too."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "llamacpp_server.py"
    spec = importlib.util.spec_from_file_location("llamacpp_server", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


llamacpp_server = _helper()


@pytest.fixture(scope="session")
def judge_server():
    """llama-cpp-python's OpenAI-compatible server, refusing any key but :data:`KEY`."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed: pip install 'groundsense[llamacpp-server]' to test the "
                    "openai: verifier against a real server")
    with llamacpp_server.LlamaCppServer(api_key=KEY, threads=1) as server:  # one, as each test worker runs
        yield server


@pytest.fixture(scope="session")
def refusing_server():
    """The same server started without all logits (``--logits_all False``): it answers a request
    for logprobs with HTTP 500 "logprobs is not supported ...", as llama.cpp servers do."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed: pip install 'groundsense[llamacpp-server]' to test the "
                    "openai: verifier against a real server")
    with llamacpp_server.LlamaCppServer(logits_all=False, threads=1) as server:
        yield server


@pytest.fixture
def keyed(monkeypatch):
    """The judge server's key in the environment, as a user would give it."""
    monkeypatch.setenv("GROUNDSENSE_VERIFIER_API_KEY", KEY)


@pytest.fixture(autouse=True)
def no_ambient_settings(monkeypatch):
    for name in ("GROUNDSENSE_VERIFIER_URL", "GROUNDSENSE_VERIFIER_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


# --- the real server ------------------------------------------------------------------------

def test_scores_are_probabilities_read_from_the_logprobs(judge_server, keyed):
    judge = make_verifier(f"openai:{judge_server.model}", {"url": judge_server.url})
    scores = judge.verify(SENTENCES)
    p = scores.extra["p_supported"]
    assert p.shape == (3,) and ((p > 0) & (p < 1)).all()  # a probability, not a parsed answer word's 0 or 1
    np.testing.assert_allclose(scores.score, 1 - p)
    assert scores.extra["from_logprobs"].all() and not scores.extra["cached"].any()
    assert ((scores.extra["answer_mass"] > 0) & (scores.extra["answer_mass"] <= 1 + 1e-9)).all()
    assert (scores.extra["prompt_tokens"] > 50).all() and (scores.extra["completion_tokens"] >= 1).all()
    assert judge.usage == {"requests": 3, "cache_hits": 0, "prompt_tokens": int(scores.extra["prompt_tokens"].sum()),
                           "completion_tokens": int(scores.extra["completion_tokens"].sum())}
    assert (scores.gflops == 0).all() and judge.n_parameters == 0  # the remote model's size is unknown


def test_the_cache_makes_a_repeat_cost_no_tokens_in_memory_and_on_disk(judge_server, keyed, tmp_path):
    judge = OpenAIVerifier(judge_server.model, url=judge_server.url, cache=str(tmp_path))
    first = judge.verify(SENTENCES)
    spent = dict(judge.usage)
    again = judge.verify(SENTENCES)
    assert judge.usage == {**spent, "cache_hits": 3}  # no request, no token
    assert again.extra["cached"].all() and (again.extra["prompt_tokens"] == 0).all()
    np.testing.assert_array_equal(again.score, first.score)
    fresh = OpenAIVerifier(judge_server.model, url=judge_server.url, cache=str(tmp_path))  # a new process's view
    np.testing.assert_array_equal(fresh.verify(SENTENCES).score, first.score)
    assert fresh.usage["requests"] == 0 and fresh.usage["cache_hits"] == 3
    assert len(list(tmp_path.glob("*/*.json"))) == 3


def test_cascade_escalates_to_the_server_and_reports_the_tokens(detector, judge_server, keyed):
    example = load_example("passages-qa")
    judge = make_verifier(f"openai:{judge_server.model}", {"url": judge_server.url}, device=None)
    result = Cascade(detector, judge, escalate=0.5).detect(**example)
    escalated = [s for s in result.sentences if s.verifier_score is not None]
    assert result.cascade["verifier"] == "openai:smollm2" and len(escalated) == result.cascade["n_escalated"] == 2
    usage = result.cascade["verifier_usage"]
    assert usage["requests"] == 2 and usage["prompt_tokens"] > 100 and usage["completion_tokens"] >= 2
    context = join_passages(example["passages"])[0]  # the escalated sentences alone, on the detector's chunks
    chunks = [context[c.start : c.end] for c in result.chunks]
    alone = judge.score_sentences(example["question"], chunks, [s.text for s in escalated])
    for sentence, expected in zip(escalated, alone):
        assert 0 <= sentence.verifier_score <= 1 and sentence.verifier_score == expected
        assert sentence.flagged is bool(expected >= 0.5)
    assert judge.usage["cache_hits"] == 2  # the same requests as the cascade's: answered from the cache


def test_eval_verify_caches_scores_with_their_tokens_and_a_failure_as_an_error_row(judge_server, keyed, tmp_path):
    from groundsense_eval.caches.store import read_parts
    from groundsense_eval.caches.verify import verify
    from groundsense_eval.data.cases import Case, LabelledSentence

    answer = "The Colosseum is in Rome. It was built by Napoleon."
    labels = [LabelledSentence(0, 25, False), LabelledSentence(26, len(answer), True, "baseless")]
    passages = ["The Colosseum is in Rome. It could hold about 50,000 spectators."]
    cases = [Case(f"ragtruth:{i}", "ragtruth:src", "QA", "Where?", None, passages, answer, labels, "ragtruth", "test")
             for i in (1, 2)]
    judge = make_verifier(f"openai:{judge_server.model}", {"url": judge_server.url})
    rows = read_parts(verify(judge, cases, tmp_path, progress=False).folder)
    assert len(rows) == 4 and (rows["status"] == "scored").all() and rows["score"].between(0, 1).all()
    assert rows["from_logprobs"].all() and (rows["gflops"] == 0).all()
    first, second = rows[rows["case_id"] == "ragtruth:1"], rows[rows["case_id"] == "ragtruth:2"]
    assert (first["prompt_tokens"] > 0).all() and (second["prompt_tokens"] == 0).all()  # the same prompts: cached
    down = OpenAIVerifier("smollm2", url=f"http://127.0.0.1:{llamacpp_server.free_port()}/v1", retries=0)
    failed = verify(down, cases[:1], tmp_path, progress=False)
    assert (failed.written, failed.errors) == (1, 1)
    error = pd.read_parquet(next(failed.folder.glob("part-*.parquet")))
    assert error["status"].tolist() == ["error"] and "cannot reach" in error["error"].iloc[0]


@pytest.mark.slow  # the real scorer
@pytest.mark.parametrize("cli_scorer", ["real"], indirect=True)
def test_cli_detect_escalates_to_the_server_named_by_the_environment(judge_server, invoke_cli, monkeypatch):
    """`groundsense detect`, configured only by the environment (on the session's real scorer)."""
    monkeypatch.setenv("GROUNDSENSE_VERIFIER_URL", judge_server.url)
    monkeypatch.setenv("GROUNDSENSE_VERIFIER_API_KEY", KEY)
    done = invoke_cli(["detect", "--example", "passages-qa", "--verifier", "openai:smollm2", "--escalate", "0.3",
                       "--json"])
    assert done.exit_code in (0, 1), done.output
    data = json.loads(done.stdout)
    assert data["cascade"]["verifier"] == "openai:smollm2" and data["cascade"]["n_escalated"] == 1
    assert data["cascade"]["verifier_usage"]["requests"] == 1
    assert sum(s["verifier_score"] is not None for s in data["sentences"]) == 1


def test_a_server_that_refuses_logprobs_is_read_by_its_answer_words(refusing_server):
    judge = make_verifier(f"openai:{refusing_server.model}", {"url": refusing_server.url, "retries": 0})
    asked = httpx.post(f"{refusing_server.url}/chat/completions", timeout=60,
                       json={**judge.request("The sky is blue.", "", "The sky is blue."), "max_tokens": 1})
    assert asked.status_code == 500 and "logprobs is not supported" in asked.text  # what the verifier meets
    scores = judge.verify(SENTENCES)
    assert judge.logprobs_refused and not scores.extra["from_logprobs"].any()
    assert set(scores.extra["p_supported"]) <= {0.0, 1.0} and np.isnan(scores.extra["answer_mass"]).all()
    assert judge.usage["requests"] == 3 and (scores.extra["completion_tokens"] >= 1).all()


# --- failures: an error naming the server and what to do, never a score ---------------------

def test_a_closed_port_is_unreachable(detector):
    url = f"http://127.0.0.1:{llamacpp_server.free_port()}/v1"  # nothing listens there
    judge = OpenAIVerifier("smollm2", url=url, retries=1)
    with pytest.raises(VerifierError,
                       match=rf"cannot reach the verifier server {url} .*after 1 retries.*start the server, or point"):
        judge.verify(SENTENCES)
    with pytest.raises(VerifierError, match="cannot reach"):  # a cascade passes it on: nothing is "supported"
        Cascade(detector, judge, escalate=1.0).detect(**load_example("passages-qa"))


@pytest.mark.parametrize("key", [None, "a-wrong-key"])
def test_a_refused_key_is_401(judge_server, monkeypatch, key):
    if key:
        monkeypatch.setenv("OPENAI_API_KEY", key)  # the fallback variable is read too
    judge = OpenAIVerifier(judge_server.model, url=judge_server.url, retries=0)
    with pytest.raises(VerifierError, match=r"refused the API key \(HTTP 401\): set GROUNDSENSE_VERIFIER_API_KEY"):
        judge.verify(SENTENCES)
    assert judge.usage["requests"] == 0


def test_a_server_slower_than_the_timeout_times_out(judge_server, keyed):
    judge = OpenAIVerifier(judge_server.model, url=judge_server.url, timeout=0.001, retries=1)
    with pytest.raises(VerifierError, match=r"did not answer within 0.001 s after 1 retries: raise -o timeout"):
        judge.verify(SENTENCES)


class Peer:
    """An HTTP server in a thread that answers every POST with one canned reply (or, when
    ``status`` is a function, with the status and body it gives for the request), after ``delay``
    seconds, and records the requests, their Authorization headers and the peak concurrency."""

    def __init__(self, status, body: str = "", content_type: str = "application/json", delay: float = 0.0):
        peer = self
        self.requests, self.authorization, self.in_flight, self.peak, self.lock = [], [], 0, 0, threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                code, payload = status(request) if callable(status) else (status, body)
                with peer.lock:
                    peer.requests.append(request)
                    peer.authorization.append(self.headers.get("Authorization"))
                    peer.in_flight += 1
                    peer.peak = max(peer.peak, peer.in_flight)
                time.sleep(delay)
                with peer.lock:
                    peer.in_flight -= 1
                payload = payload.encode()
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def reply(content: str, logprobs=None) -> str:
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "logprobs": logprobs,
              "finish_reason": "stop"}
    return json.dumps({"id": "x", "object": "chat.completion", "choices": [choice],
                       "usage": {"prompt_tokens": 40, "completion_tokens": 2, "total_tokens": 42}})


def test_429_is_retried_with_backoff_then_an_error():
    with Peer(429, json.dumps({"error": {"message": "slow down"}})) as peer:
        judge = OpenAIVerifier("m", url=peer.url, retries=2, concurrency=1)
        started = time.monotonic()
        with pytest.raises(VerifierError, match=r"rate-limited \(HTTP 429\) after 2 retries: lower -o concurrency"):
            judge.verify(SentenceInput.from_texts("", ["a b c."], ["a b."]))
        assert len(peer.authorization) == 3 and time.monotonic() - started > 0.5  # waited before retrying


@pytest.mark.parametrize("body, content_type, message", [
    ("<html>Bad gateway</html>", "text/html", "not JSON"),
    ("{\"choices\": [", "application/json", "not JSON"),
    (json.dumps({"object": "list", "data": []}), "application/json", r"no choices\[0\].message"),
])
def test_a_malformed_reply_is_an_error(body, content_type, message):
    with Peer(200, body, content_type) as peer:
        judge = OpenAIVerifier("m", url=peer.url, retries=0)
        with pytest.raises(VerifierError, match=message):
            judge.verify(SENTENCES)
        assert judge.usage["requests"] == 0


@pytest.mark.parametrize("content, said", [("Maybe", "neither Yes nor No"), ("Yes and no", "both Yes and No")])
def test_no_logprobs_and_no_answer_word_is_an_error_and_nothing_is_cached(tmp_path, content, said):
    with Peer(200, reply(content)) as peer:
        judge = OpenAIVerifier("m", url=peer.url, cache=str(tmp_path))
        with pytest.raises(VerifierError, match=rf"answered '{content}', {said}, and gave no logprobs"):
            judge.verify(SENTENCES)
    assert not list(tmp_path.rglob("*.json"))


@pytest.mark.parametrize("content, score", [("No", 1.0), ("Yes.", 0.0), (" no, it is not", 1.0),
                                            ("The answer is Yes.", 0.0), ("**No**", 1.0)])
def test_without_logprobs_the_answer_word_decides_and_says_so(content, score):
    with Peer(200, reply(content)) as peer:
        scores = OpenAIVerifier("m", url=peer.url).verify(SENTENCES)
    assert (scores.score == score).all() and not scores.extra["from_logprobs"].any()
    assert np.isnan(scores.extra["answer_mass"]).all() and (scores.extra["prompt_tokens"] == 40).all()


@pytest.mark.parametrize("status", [500, 400])
def test_a_refusal_of_logprobs_is_paid_once_then_the_answer_words_decide(status):
    def answer(request):
        if "logprobs" in request:
            return status, json.dumps({"error": {"message": "Logprobs is not supported for this model"}})
        return 200, reply("No")

    with Peer(answer) as peer:
        judge = OpenAIVerifier("m", url=peer.url, retries=0, concurrency=1)
        scores = judge.verify(SENTENCES)
        judge.verify(SentenceInput.from_texts("", ["a b c."], ["a b.", "c."]))
    assert ["logprobs" in request for request in peer.requests] == [True] + [False] * 5
    assert [request["max_tokens"] for request in peer.requests] == [3] + [8] * 5  # room for "The answer is No."
    assert (scores.score == 1.0).all() and not scores.extra["from_logprobs"].any()


def test_an_error_that_is_not_about_logprobs_stays_an_error():
    with Peer(500, json.dumps({"error": {"message": "out of memory"}})) as peer:
        judge = OpenAIVerifier("m", url=peer.url, retries=0)
        with pytest.raises(VerifierError, match="answered HTTP 500: .*out of memory"):
            judge.verify(SENTENCES)
    assert not judge.logprobs_refused and all("logprobs" in request for request in peer.requests)


def test_logprobs_are_read_at_the_first_token_that_offers_yes_or_no():
    position = lambda token, tops: {"token": token, "logprob": 0.0,  # noqa: E731
                                    "top_logprobs": [{"token": t, "logprob": lp} for t, lp in tops]}
    logprobs = {"content": [position("**", [("**", -0.1), ("The", -3.0)]),
                            position("Yes", [("Yes", np.log(0.6)), (" yes", np.log(0.1)), ("No", np.log(0.1)),
                                             ("Maybe", np.log(0.2))])]}
    with Peer(200, reply("**Yes", logprobs)) as peer:
        scores = OpenAIVerifier("m", url=peer.url).verify(SENTENCES)
    np.testing.assert_allclose(scores.extra["p_supported"], 0.7 / 0.8)
    np.testing.assert_allclose(scores.extra["answer_mass"], 0.8)
    assert scores.extra["from_logprobs"].all()


def test_requests_are_bounded_by_the_concurrency_and_the_key_is_sent_only_when_set(monkeypatch):
    many = SentenceInput.from_texts("", ["a b c."], [f"Sentence {i}." for i in range(6)])
    with Peer(200, reply("Yes"), delay=0.3) as peer:
        OpenAIVerifier("m", url=peer.url, concurrency=2).verify(many)
        assert peer.peak == 2 and peer.authorization == [None] * 6  # no key: no header
        monkeypatch.setenv("OPENAI_API_KEY", "fallback")
        OpenAIVerifier("m", url=peer.url).verify(SENTENCES)
        monkeypatch.setenv("GROUNDSENSE_VERIFIER_API_KEY", "ours")
        OpenAIVerifier("m", url=peer.url).verify(SENTENCES)
    assert peer.authorization[6:] == ["Bearer fallback"] * 3 + ["Bearer ours"] * 3


def test_the_url_comes_from_the_option_or_the_environment(monkeypatch):
    with pytest.raises(InputError, match="needs its server's URL, e.g. .*: set GROUNDSENSE_VERIFIER_URL, or pass it"):
        make_verifier("openai:m", device=None)
    monkeypatch.setenv("GROUNDSENSE_VERIFIER_URL", "http://127.0.0.1:1/v1/")
    judge = make_verifier("openai:m", device=None)
    assert judge.url == "http://127.0.0.1:1/v1" and judge.name == "openai:m"
    assert make_verifier("openai:m", {"url": "http://h:2/v1"}).url == "http://h:2/v1"
    assert judge.key != make_verifier("openai:m", {"url": "http://h:2/v1"}).key  # another server, another cache
    with pytest.raises(InputError, match="concurrency must be at least 1"):
        make_verifier("openai:m", {"concurrency": "0"})
    with pytest.raises(InputError, match="openai has no option 'k'"):
        make_verifier("openai:m", {"k": "3"})


@pytest.mark.slow  # the real scorer and the real judge server
def test_batch_escalates_to_the_server_named_by_verifier_url(judge_server, keyed, scorer, tmp_path, monkeypatch):
    """The served judge through `batch`, configured only by its flags (the one config's fields)."""
    from click.testing import CliRunner

    from groundsense.cli import cli, common
    from groundsense.inputs.files import load_example
    from groundsense.verification import make_detection

    monkeypatch.setattr(common, "make_detection", lambda config, **given: make_detection(config, scorer, **given))
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": n, **load_example(n)}) + "\n"
                            for n in ("passages-qa", "clinical-summary")))
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(cli, ["batch", str(rows), "-o", str(out), "--no-progress", "--verifier",
                                      "openai:smollm2", "--verifier-url", judge_server.url, "--escalate", "0.2"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == ["passages-qa", "clinical-summary"]
    for record in records:
        assert record["cascade"]["verifier"] == "openai:smollm2" and record["cascade"]["n_escalated"] == 1
        assert record["cascade"]["verifier_usage"]["requests"] == 1
        scored = [s["verifier_score"] for s in record["sentences"] if s["verifier_score"] is not None]
        assert len(scored) == 1 and 0 <= scored[0] <= 1

"""``openai:MODEL``: the LLM judge behind any OpenAI-compatible chat-completions endpoint
(vLLM, SGLang, a llama.cpp server, a hosted API), through the ``openai`` SDK.

One request per sentence, up to ``concurrency`` at a time: a system message asking for one
word, then the judge's user message (:func:`~groundsense.verification.prompts.judge_message`:
the evidence as given, i.e. the detector's chunks joined as the detector joins passages, the
question, the instruction and the sentence), ``temperature`` 0, a few answer tokens and the top
:data:`TOP_LOGPROBS` log-probabilities per token. P(supported) is read at the first answer
token whose alternatives hold a Yes or No spelling: the probability of the Yes spellings over
Yes and No together, as the local judge does. A server that gives no logprobs is read by its
answer word: the reply's Yes or No (Yes -> 1, No -> 0; ``from_logprobs`` False); a reply
with neither, or both, is an error. A server that refuses to give logprobs (an HTTP error
whose message mentions them, as llama.cpp's 500 "logprobs is not supported ..." without
``--logits_all``) is asked again without them, with room for a short lead-in
(:data:`ANSWER_TOKENS`: a small model answers "The answer is No."), and from then on the
verifier asks it that way: the refusal is paid once per verifier, not per sentence.

Every failure raises :class:`~groundsense.errors.VerifierError` naming the server and what
to do; a failure is never a score. The SDK retries 408/409/429/5xx replies, timeouts and
connection errors ``retries`` times with exponential backoff and jitter (0.5 s doubling, at
most 8 s, or the server's ``Retry-After`` up to 2 minutes). Replies are cached by a hash of
the URL and the request, in memory and, with ``cache=DIR``, on disk; a cached reply costs no
tokens. Token counts come from the replies' ``usage``: per sentence in the
:class:`~groundsense.verification.model.VerifierScores` and as running totals in
:attr:`OpenAIVerifier.usage`. The model's size is unknown, so ``n_parameters`` and ``gflops`` are 0.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, VerifierError, VerifierUnavailable
from ..inputs.text import join_passages
from .model import ModelVerifier, VerifierScores
from .prompts import JUDGE_NO, JUDGE_YES, judge_message
from .verifier import SentenceInput

log = logging.getLogger(__name__)

URL_ENV = "GROUNDSENSE_VERIFIER_URL"
KEY_ENVS = ("GROUNDSENSE_VERIFIER_API_KEY", "OPENAI_API_KEY")  # the first one set is sent
SYSTEM = "You check whether a sentence is supported by a context. Answer with one word: Yes or No."
MAX_TOKENS, TOP_LOGPROBS = 3, 20
ANSWER_TOKENS = 8  # reply tokens when the answer is read from its words alone
USAGE = ("requests", "cache_hits", "prompt_tokens", "completion_tokens")


@dataclass(frozen=True)
class Reading:
    """What one reply says about its sentence."""

    p_supported: float
    answer_mass: float  # P(Yes) + P(No) at the answer token; NaN when read from the answer word
    from_logprobs: bool
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False


class LogprobsRefused(Exception):
    """The server answered a request for logprobs with an error about them."""


def without_logprobs(request: dict) -> dict:
    """``request`` for a server that refuses logprobs: none asked, room for the answer's words."""
    kept = {name: value for name, value in request.items() if name not in ("logprobs", "top_logprobs")}
    return {**kept, "max_tokens": ANSWER_TOKENS}


class OpenAIVerifier(ModelVerifier):
    """``openai:<model>``: ``model`` is the name the server knows the judge by. Options:
    ``url`` (the API base, e.g. ``http://127.0.0.1:8080/v1``; default ``$GROUNDSENSE_VERIFIER_URL``),
    ``concurrency`` (parallel requests, 4), ``timeout`` (seconds per request, 30), ``retries``
    (3) and ``cache`` (a directory for replies; default in memory only). ``device`` is ignored."""

    kind = "openai"
    options = {"url": str, "concurrency": int, "timeout": float, "retries": int, "cache": str}

    def __init__(self, model: str, url: str | None = None, concurrency: int = 4, timeout: float = 30.0,
                 retries: int = 3, cache: str | Path | None = None, device: str | None = None):
        try:
            import openai
        except ImportError as exc:
            raise VerifierUnavailable("the openai: verifier needs the openai package: "
                                      "pip install 'groundsense[openai]'") from exc
        url = url or os.environ.get(URL_ENV)
        if not url:
            raise InputError(f"the openai:{model} verifier needs its server's URL, e.g. http://127.0.0.1:8000/v1: "
                             f"set {URL_ENV}, or pass it (--verifier-url, -o url=URL, url=URL)")
        if concurrency < 1 or retries < 0 or not timeout > 0:
            raise InputError(f"openai verifier: concurrency must be at least 1, retries at least 0 and timeout "
                             f"above 0 (got {concurrency}, {retries}, {timeout})")
        self.url = url.rstrip("/")
        self.concurrency, self.timeout, self.retries = concurrency, timeout, retries
        api_key = next((os.environ[name] for name in KEY_ENVS if os.environ.get(name)), None)
        self.client = openai.OpenAI(base_url=self.url, api_key=api_key or "none", timeout=timeout, max_retries=retries)
        self.headers = {} if api_key else {"Authorization": openai.omit}  # no key: no Authorization header at all
        self.model_name, self.n_parameters = model, 0
        self.params = {"url": self.url, "max_tokens": MAX_TOKENS, "top_logprobs": TOP_LOGPROBS}
        self.cache = ReplyCache(Path(cache).expanduser() if cache else None)
        self.usage = dict.fromkeys(USAGE, 0)  # running totals over every call
        self.logprobs_refused = False  # the server refused logprobs once: it is asked without them since
        self._lock = threading.Lock()

    @property
    def server(self) -> str:
        return f"the verifier server {self.url} (model {self.model_name!r})"

    def score_input(self, sentences: SentenceInput) -> VerifierScores:
        context = sentences.context if sentences.context is not None else join_passages(sentences.passages or [])[0]
        requests = [self.request(context, sentences.question, sentence) for sentence in sentences.texts()]
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = [pool.submit(self.ask, request) for request in requests]
            try:
                readings = [future.result() for future in futures]
            except BaseException:
                for future in futures:
                    future.cancel()
                raise

        def column(name: str, dtype: type = float) -> np.ndarray:
            return np.array([getattr(reading, name) for reading in readings], dtype=dtype)

        p_supported = column("p_supported")
        return VerifierScores(
            score=1.0 - p_supported,
            gflops=np.zeros(len(readings)),
            extra={"p_supported": p_supported, "answer_mass": column("answer_mass"),
                   "from_logprobs": column("from_logprobs", bool), "cached": column("cached", bool),
                   "prompt_tokens": column("prompt_tokens", int),
                   "completion_tokens": column("completion_tokens", int)},
        )

    def request(self, context: str, question: str, sentence: str) -> dict:
        """The chat-completions request body for one sentence."""
        return {
            "model": self.model_name,
            "messages": [{"role": "system", "content": SYSTEM},
                         {"role": "user", "content": judge_message(context, question, sentence)}],
            "max_tokens": MAX_TOKENS, "temperature": 0, "logprobs": True, "top_logprobs": TOP_LOGPROBS,
        }

    def ask(self, request: dict) -> Reading:
        """One sentence's reading: from the cache, else from the server (then cached and counted);
        without logprobs once the server has refused them."""
        if self.logprobs_refused:
            request = without_logprobs(request)
        key = hashlib.sha256(json.dumps({"url": self.url, "request": request}, sort_keys=True).encode()).hexdigest()
        reply = self.cache.get(key)
        if reply is not None:
            self._count(requests=0, cache_hits=1)
            return replace(read_reply(reply, self.server), prompt_tokens=0, completion_tokens=0, cached=True)
        try:
            reply = self.post(request)
        except LogprobsRefused as exc:
            if not self.logprobs_refused:
                log.warning("%s refused logprobs (%s): asking it without them, its answers read from its Yes or No",
                            self.server, exc)
            self.logprobs_refused = True
            return self.ask(request)
        reading = read_reply(reply, self.server)  # raises before an unreadable reply is cached
        self.cache.put(key, reply)
        self._count(requests=1, prompt_tokens=reading.prompt_tokens, completion_tokens=reading.completion_tokens)
        return reading

    def post(self, request: dict) -> dict:
        """The server's reply as parsed JSON; each way it can fail as a :class:`VerifierError`, but a
        refusal of the logprobs ``request`` asks for: :class:`LogprobsRefused`."""
        import openai

        tries = f"after {self.retries} retries" if self.retries else "(no retries)"
        try:
            raw = self.client.chat.completions.with_raw_response.create(**request, extra_headers=self.headers)
        except openai.AuthenticationError as exc:
            raise VerifierError(f"{self.server} refused the API key (HTTP 401): set GROUNDSENSE_VERIFIER_API_KEY "
                                "(or OPENAI_API_KEY) to a key it accepts") from exc
        except openai.RateLimitError as exc:
            raise VerifierError(f"{self.server} still refused the request as rate-limited (HTTP 429) {tries}: "
                                "lower -o concurrency, raise -o retries, or try later") from exc
        except openai.APITimeoutError as exc:
            raise VerifierError(f"{self.server} did not answer within {self.timeout:g} s {tries}: raise -o timeout, "
                                "or check that the server is not overloaded") from exc
        except openai.APIConnectionError as exc:
            raise VerifierError(f"cannot reach {self.server} {tries} ({exc.__cause__ or exc}): start the server, "
                                "or point the verifier at it (its URL, ending in /v1)") from exc
        except openai.APIStatusError as exc:
            if "logprobs" in request and "logprobs" in exc.response.text.lower():
                raise LogprobsRefused(f"HTTP {exc.status_code}: {exc.response.text[:200]}") from exc
            hint = " (is the model name right, and does the URL end in /v1?)" if exc.status_code == 404 else ""
            raise VerifierError(f"{self.server} answered HTTP {exc.status_code}{hint}: "
                                f"{exc.response.text[:300]}") from exc
        try:
            return json.loads(raw.http_response.text)
        except ValueError as exc:
            raise VerifierError(f"{self.server} replied with something that is not JSON "
                                f"({raw.http_response.text[:200]!r}): is the URL an OpenAI-compatible API?") from exc

    def _count(self, **amounts: int) -> None:
        with self._lock:
            for name, amount in amounts.items():
                self.usage[name] += amount


def read_reply(reply: Any, server: str) -> Reading:
    """P(supported) and the token counts of one chat-completions reply (parsed JSON)."""
    choices: Any = reply.get("choices") if isinstance(reply, dict) else None
    message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise VerifierError(f"{server} replied without a chat completion (no choices[0].message): "
                            f"{json.dumps(reply)[:200]}; is the URL an OpenAI-compatible chat-completions API?")
    usage = reply.get("usage") or {}
    prompt_tokens, completion_tokens = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    for position in (choices[0].get("logprobs") or {}).get("content") or []:
        p_yes, p_no = (sum(math.exp(top["logprob"]) for top in position.get("top_logprobs") or []
                           if _word(top.get("token", "")) in words) for words in (JUDGE_YES, JUDGE_NO))
        if p_yes + p_no > 0:
            return Reading(p_yes / (p_yes + p_no), p_yes + p_no, True, prompt_tokens, completion_tokens)
    text = message.get("content") or ""
    words = {_word(word) for word in text.split()}
    yes, no = (not words.isdisjoint(spellings) for spellings in (JUDGE_YES, JUDGE_NO))
    if yes != no:
        return Reading(1.0 if yes else 0.0, math.nan, False, prompt_tokens, completion_tokens)
    said = "both Yes and No" if yes else "neither Yes nor No"
    raise VerifierError(f"{server} answered {text[:100]!r}, {said}, and gave no logprobs for either: "
                        "use a model that follows the instruction (an instruct model), or one that returns logprobs")


def _word(token: str) -> str:
    """A token or word without surrounding spaces, BPE space markers and punctuation."""
    return token.strip().lstrip("Ġ▁").strip(".,:;!*\"'")


class ReplyCache:
    """Replies by request hash: in memory, and under ``folder`` (one JSON file each) when given."""

    def __init__(self, folder: Path | None) -> None:
        self.folder, self._lock = folder, threading.Lock()
        self.memory: dict[str, dict] = {}

    def get(self, key: str) -> dict | None:
        with self._lock:
            if key in self.memory:
                return self.memory[key]
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        reply = json.loads(path.read_text())
        with self._lock:
            self.memory[key] = reply
        return reply

    def put(self, key: str, reply: dict) -> None:
        with self._lock:
            self.memory[key] = reply
        path = self._path(key)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(f".{os.getpid()}-{threading.get_ident()}.tmp")
            partial.write_text(json.dumps(reply))
            partial.replace(path)  # atomic: a reader never sees half a file

    def _path(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / key[:2] / f"{key}.json"

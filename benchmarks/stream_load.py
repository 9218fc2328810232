"""Concurrent streams through `groundsense serve`: verdict latency with 1, 2 and 4 streams over
HTTP, on 127.0.0.1 only.

    PYTHONPATH=src python benchmarks/stream_load.py --streams 1 2 4 --answers 2 --rate 20 --out stream_load.json

Starts the real server (the embedded default scorer) in a subprocess on a free loopback port
(as benchmarks/load.py does). For each count N of ``--streams``, N clients each stream
``--answers`` RAGTruth test answers one after another to ``POST /v1/detect/stream`` over their
own HTTP/1.1 connection, writing the request body as it goes (chunked) and reading the events
meanwhile. Every answer is fed one scorer token at a time (as in benchmarks/streaming.py), at
``--rate`` tokens per second per stream (an LLM's pace; 0: as fast as the client can write,
so the latency includes the stream's own backlog). Each level draws answers of its own, one
per source, so that no level reuses evidence another one encoded.

A sentence's verdict latency is the time from writing the delta that completes its text to
reading its verdict: it includes the wait for the next sentence to begin (a sentence is judged
once its tokens are final) and, for the sentences judged at the close, runs from the end of the
body to the result. After the last level, each answer's result is compared with the server's
``/v1/detect`` on the whole answer with the same sentence spans (within 1e-4 at every precision:
at bf16 or int8 a stream's close scores the finished answer as ``detect`` does). Refusals
(429/503), other failures and the largest score difference are reported per level; the exit
status is 1 when a stream failed or differs from ``detect``. A refusal is not a failure: since
issue #53 the server refuses a stream at once when its measured load leaves no room for one more
(docs/service.md), which at two or more K+2 streams on two cores it does. ``--seconds`` bounds each
level: a client starts no answer after it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path

import httpx
from load import HOST, free_port, percentile, start_server, wait_ready
from speed import TOLERANCE, emit_json, load_test_cases, pick_cases, results_machine
from streaming import token_deltas

from groundsense import Detector

REFUSED = {429, 503}


@dataclass
class Answer:
    """One answer as a client streams it."""

    head: dict  # the request's first line
    text: str
    deltas: list[str]
    ends: list[int]  # where each delta ends in the answer


def answer(detector: Detector, case) -> Answer:
    evidence = {"passages": case.passages} if case.passages is not None else {"context": case.context}
    deltas = token_deltas(detector, case.answer)
    ends = list(accumulate(map(len, deltas)))
    return Answer({"id": str(case.id), "question": case.question, **evidence}, case.answer, deltas, ends)


@dataclass
class Outcome:
    """What one streamed answer got."""

    answer: Answer
    status: int | str = 0  # HTTP status, or the transport error's name
    result: dict | None = None
    latencies: list[float] = field(default_factory=list)
    difference: float | None = None  # largest sentence-score difference from detect
    error: str | None = None
    retry_after: str | None = None  # a refusal's Retry-After header


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def line(value: dict) -> bytes:
    return (json.dumps(value) + "\n").encode()


async def read_events(reader: asyncio.StreamReader, outcome: Outcome) -> list[tuple[float, dict]]:
    """The response's events with their arrival times; the status goes to ``outcome`` (a
    refusal's body to its ``error``)."""
    status_line = await reader.readline()
    outcome.status = int(status_line.split()[1])
    headers = {}
    while (header := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = header.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if outcome.status != 200:
        outcome.retry_after = headers.get("retry-after")
        outcome.error = (await reader.readexactly(int(headers.get("content-length", 0)))).decode()
        return []
    events, buffer = [], b""
    while size := int((await reader.readline()).strip() or b"0", 16):
        buffer += (await reader.readexactly(size + 2))[:-2]
        *complete, buffer = buffer.split(b"\n")
        arrived = time.perf_counter()
        events += [(arrived, json.loads(text)) for text in complete if text.strip()]
    return events


async def stream_one(port: int, answer: Answer, rate: float) -> Outcome:
    """Stream one answer, writing deltas at ``rate`` per second while reading the events."""
    outcome = Outcome(answer)
    try:
        reader, writer = await asyncio.open_connection(HOST, port)
    except OSError as exc:
        outcome.status, outcome.error = type(exc).__name__, str(exc)
        return outcome
    sent: list[float] = []
    try:
        writer.write(b"POST /v1/detect/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n" + chunk(line(answer.head)))
        await writer.drain()
        events_task = asyncio.create_task(read_events(reader, outcome))
        start = time.perf_counter()
        for index, delta in enumerate([*answer.deltas, None]):
            if events_task.done():  # refused or failed: stop writing
                break
            if rate:
                await asyncio.sleep(max(0.0, start + index / rate - time.perf_counter()))
            writer.write(b"0\r\n\r\n" if delta is None else chunk(line({"delta": delta})))
            await writer.drain()
            sent.append(time.perf_counter())
        events = await events_task
    except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
        outcome.status = outcome.status or type(exc).__name__
        outcome.error = f"{type(exc).__name__}: {exc}"
        return outcome
    finally:
        writer.close()
    if outcome.status == 200:
        timed(outcome, events, sent)
    return outcome


def timed(outcome: Outcome, events: list[tuple[float, dict]], sent: list[float]) -> None:
    """The result and each sentence's latency, from a 200 response's events and the times
    the deltas (then the body's end) were written."""
    if not events or events[-1][1]["event"] != "result":
        outcome.error = f"no result: {events[-1][1] if events else 'no event'}"
        return
    outcome.result = events[-1][1]["result"]
    verdicts = [arrived for arrived, event in events if event["event"] == "sentence"]
    verdicts += [events[-1][0]] * (len(outcome.result["sentences"]) - len(verdicts))
    ends = outcome.answer.ends
    for arrived, sentence in zip(verdicts, outcome.result["sentences"]):
        completing = bisect_left(ends, sentence["end"])  # the first delta that reaches the sentence's end
        outcome.latencies.append(arrived - sent[completing])


def compare(url: str, outcome: Outcome) -> None:
    """The largest sentence-score difference between the stream's result and ``/v1/detect``."""
    head, result = outcome.answer.head, outcome.result
    spans = [[s["start"], s["end"]] for s in result["sentences"]]
    whole = httpx.post(url + "/v1/detect", json={**head, "answer": outcome.answer.text, "sentences": spans},
                       timeout=600).json()
    pairs = list(zip(result["sentences"], whole["sentences"]))
    if len(pairs) != len(spans) or any((a["score"] is None) != (b["score"] is None) for a, b in pairs):
        outcome.error = "the stream scored other sentences than detect"
    outcome.difference = max((abs(a["score"] - b["score"]) for a, b in pairs if a["score"] is not None), default=0.0)


async def level(port: int, clients: list[list[Answer]], rate: float, seconds: float) -> tuple[list[Outcome], float]:
    """Each client streams its answers in turn, all clients at once; the outcomes and the wall time."""
    started = time.perf_counter()

    async def client(answers: list[Answer]) -> list[Outcome]:
        outcomes = []
        for one in answers:
            if time.perf_counter() - started > seconds:
                break
            outcomes.append(await stream_one(port, one, rate))
        return outcomes

    per_client = await asyncio.gather(*(client(answers) for answers in clients))
    return [o for outcomes in per_client for o in outcomes], time.perf_counter() - started


def summary(n: int, outcomes: list[Outcome], wall: float) -> dict:
    latencies = [x for o in outcomes for x in o.latencies]
    statuses: dict[str, int] = {}
    for o in outcomes:
        statuses[str(o.status)] = statuses.get(str(o.status), 0) + 1
    differences = [o.difference for o in outcomes if o.difference is not None]
    return {
        "streams": n,
        "answers": len(outcomes),
        "sentences": len(latencies),
        "wall_s": round(wall, 2),
        "latency_p50_s": round(percentile(latencies, 0.5), 3) if latencies else None,
        "latency_p95_s": round(percentile(latencies, 0.95), 3) if latencies else None,
        "latency_max_s": round(max(latencies), 3) if latencies else None,
        "statuses": dict(sorted(statuses.items())),
        "refused": sum(o.status in REFUSED for o in outcomes),
        "errors": [o.error for o in outcomes if o.error and o.status not in REFUSED],
        "max_difference_from_detect": max(differences) if differences else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 2, 4], help="concurrent stream counts")
    parser.add_argument("--answers", type=int, default=2, help="answers each stream sends, one after another")
    parser.add_argument("--rate", type=float, default=20.0, help="tokens per second per stream (0: no pause)")
    parser.add_argument("--seconds", type=float, default=600, help="per level, no answer starts after this")
    parser.add_argument("--threads", type=int, default=2, help="the server's torch threads")
    parser.add_argument("--queue-size", type=int, default=8, help="the server's queue")
    parser.add_argument("--timeout", type=float, default=600.0, help="the server's per-step timeout")
    parser.add_argument("--mode", choices=["full", "two_pass"], default="full", help="the server's detector mode")
    parser.add_argument("--precision", choices=["fp32", "bf16", "int8"], default="fp32",
                        help="the server's scorer precision")
    parser.add_argument("--tasks", nargs="+", choices=["QA", "Summary", "Data2txt"], default=None,
                        help="draw answers of these RAGTruth tasks only (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the RAGTruth answers drawn")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON report here")
    args = parser.parse_args()

    cases = pick_cases(load_test_cases(), 1 + args.answers * sum(args.streams), 1, args.seed,
                       set(args.tasks) if args.tasks else None)
    detector = Detector()  # its tokenizer cuts the deltas
    answers = [answer(detector, case) for case in cases]
    del detector
    warmup, drawn = answers[0], iter(answers[1:])
    plan = [[[next(drawn) for _ in range(args.answers)] for _ in range(n)] for n in args.streams]

    load_before = os.getloadavg()[0]
    port = free_port()
    url = f"http://{HOST}:{port}"
    server = start_server(port, args.queue_size, args.timeout, args.threads,
                          ["--mode", args.mode, "--precision", args.precision])
    try:
        wait_ready(url)
        asyncio.run(stream_one(port, warmup, 0))
        runs = [asyncio.run(level(port, clients, args.rate, args.seconds)) for clients in plan]
        for outcomes, _ in runs:  # after every level: detect is not timed
            for outcome in outcomes:
                if outcome.result is not None:
                    compare(url, outcome)
        after = httpx.get(url + "/readyz", timeout=10).status_code
    finally:
        server.terminate()
        server.wait(timeout=120)

    report = {
        "command": " ".join(["python", "benchmarks/stream_load.py", *sys.argv[1:]]),
        "machine": results_machine(args.threads),
        "load_average_1min": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        "rate_tokens_per_s": args.rate,
        "mode": args.mode,
        "precision": args.precision,
        "levels": [summary(n, *run) for n, run in zip(args.streams, runs)],
        "ready_after": after,
    }
    emit_json(report, args.out)
    failed = any(lv["errors"] or (lv["max_difference_from_detect"] or 0) > TOLERANCE
                 or lv["answers"] == 0 for lv in report["levels"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

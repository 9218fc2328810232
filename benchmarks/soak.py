"""Soak test of `groundsense serve`: mixed detect, batch and stream load at its capacity for a
long time, on 127.0.0.1 only.

    PYTHONPATH=src python benchmarks/soak.py --minutes 30 --out benchmarks/soak.json

Starts the real server (the embedded default scorer) in a subprocess on a free loopback port
(benchmarks/load.py's helpers), then warms it up: one ``/v1/detect`` per answer of a pool of
``--pool`` generated answers, each over evidence of its own (so the scorer's evidence cache
holds the whole pool before the memory is first measured, and its filling is not taken for
growth), then ``--rounds`` sequential requests of each kind, whose median times are the
service's capacity. The load is a cycle of four requests, ``/v1/detect``, a
``/v1/detect/batch`` of ``--batch-size`` answers, ``/v1/detect`` again and a stream
(``/v1/detect/stream``, one word a delta at ``--stream-rate`` words per second, as
benchmarks/stream_load.py sends it), sent open-loop (request i at its time, whatever the
answers before it) at ``--factor`` times the rate of cycles the warm-up measured, for
``--minutes`` (at most ``--max-requests``). The answers cycle through the pool.

It samples the server's resident memory every ``--sample-seconds``, counts every status by
route, and once the load has ended and the queue has drained reads ``groundsense_open_streams``
from ``/metrics``. The JSON report (``--out`` and stdout) holds the RSS after warm-up, once
settled (the first sample ``--settled-minutes``, 5, into the load), at its peak after that and at
the end, the statuses, the open streams left and the requests done. Checks (exit status 1 when
one fails): the peak at most ``--max-peak`` (10%) and the end at most ``--max-growth`` (5%)
above the settled RSS (in a run shorter than that, the RSS after warm-up); no stream slot left open;
only documented statuses (docs/service.md: 200, 429, 503, 504), each refusal with
Retry-After; every 200 with its full result (a stream's ``result`` event); every route
answered; a normal request succeeds afterwards. ``tests/service/test_soak.py`` runs
:func:`soak` for 45 seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import accumulate
from pathlib import Path

import httpx
from load import DOCUMENTED, HOST, free_port, percentile, rss_mib, start_server, wait_ready
from prometheus_client.parser import text_string_to_metric_families
from speed import emit_json, results_machine
from stream_load import Answer, stream_one

CYCLE = ("detect", "batch", "detect", "stream")  # one cycle of the load, in order
REFUSALS = {429, 503, 504}  # each must carry Retry-After (docs/service.md)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="how long the load runs")
    parser.add_argument("--factor", type=float, default=1.0, help="offered load as a multiple of capacity")
    parser.add_argument("--max-requests", type=int, default=20_000, help="bound on the requests sent")
    parser.add_argument("--pool", type=int, default=16, help="answers, each over evidence of its own")
    parser.add_argument("--batch-size", type=int, default=4, help="answers per /v1/detect/batch")
    parser.add_argument("--stream-rate", type=float, default=20.0, help="a stream's words per second")
    parser.add_argument("--rounds", type=int, default=3, help="timed warm-up requests of each kind")
    parser.add_argument("--sample-seconds", type=float, default=10.0, help="between two RSS samples")
    parser.add_argument("--max-growth", type=float, default=0.05,
                        help="growth of the RSS at the end over the settled RSS that fails the run")
    parser.add_argument("--max-peak", type=float, default=0.10,
                        help="growth of the peak RSS over the settled RSS that fails the run")
    parser.add_argument("--settled-minutes", type=float, default=5.0,
                        help="the settled RSS: the first sample this far into the load (the RSS after warm-up in a "
                             "shorter run)")
    parser.add_argument("--queue-size", type=int, default=8, help="the server's queue")
    parser.add_argument("--timeout", type=float, default=120.0, help="the server's per-request timeout")
    parser.add_argument("--max-streams", type=int, default=4, help="the server's open streams at most")
    parser.add_argument("--threads", type=int, default=1, help="the server's torch threads")
    parser.add_argument("--workers", type=int, default=32, help="client threads (concurrent requests at most)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated answers")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON report here")
    return parser.parse_args(argv)


def answer_pool(size: int, seed: int) -> list[dict]:
    """``size`` detect requests, each over evidence of its own; the second sentence is not supported."""
    rng = random.Random(seed)
    rows = []
    for i in range(size):
        name, span, opened, painted = f"Bridge No. {i + 1}", rng.randint(1_000, 9_000), rng.randint(1880, 1990), \
            rng.randint(1950, 2020)
        rows.append({"question": f"How long is the main span of {name}?",
                     "passages": [f"{name} opened to traffic on May {rng.randint(1, 28)}, {opened}.",
                                  f"{name}'s main span is {span:,} feet long."],
                     "answer": f"Its main span is {span:,} feet long. It was painted gold in {painted}."})
    return rows


def streamed(row: dict, index: int) -> Answer:
    """``row`` as a stream sends it: the evidence first, then the answer a word at a time."""
    deltas = re.findall(r"\S+\s*", row["answer"])
    head = {"id": f"stream-{index}", "question": row["question"], "passages": row["passages"]}
    return Answer(head, row["answer"], deltas, list(accumulate(map(len, deltas))))


class Client:
    """Sends one request of a kind and records what came back; one HTTP connection per thread."""

    def __init__(self, url: str, port: int, rows: list[dict], batch_size: int):
        self.url, self.port, self.rows, self.batch_size = url, port, rows, batch_size
        self.local = threading.local()

    def http(self) -> httpx.Client:
        if not hasattr(self.local, "client"):
            self.local.client = httpx.Client(timeout=600)
        return self.local.client

    def send(self, kind: str, index: int, stream_rate: float) -> dict:
        started = time.perf_counter()
        row = self.rows[index % len(self.rows)]
        try:
            if kind == "stream":
                outcome = asyncio.run(stream_one(self.port, streamed(row, index), stream_rate))
                status, retry_after = outcome.status, outcome.retry_after
                complete = outcome.result is not None and len(outcome.result["sentences"]) == 2
                error = outcome.error
            else:
                if kind == "batch":
                    body = [{"id": f"{index}.{j}", **self.rows[(index + j) % len(self.rows)]}
                            for j in range(self.batch_size)]
                    response = self.http().post(self.url + "/v1/detect/batch", json=body)
                else:
                    response = self.http().post(self.url + "/v1/detect", json={"id": index, **row})
                status, retry_after, error = response.status_code, response.headers.get("Retry-After"), None
                complete = status == 200 and _complete(kind, response.json(), self.batch_size)
        except httpx.TransportError as exc:
            status, retry_after, complete, error = f"transport error: {type(exc).__name__}", None, False, str(exc)
        return {"kind": kind, "status": status, "retry_after": retry_after, "complete": complete,
                "error": None if status in REFUSALS else error, "seconds": time.perf_counter() - started}


def _complete(kind: str, body, batch_size: int) -> bool:
    """A 200's body holds every result: two judged sentences per answer, no error record."""
    results = body if kind == "batch" else [body]
    return len(results) == (batch_size if kind == "batch" else 1) and all(
        "error" not in r and len(r["sentences"]) == 2 and r["answer"]["flagged"] is not None for r in results)


def warm_up(client: Client, rounds: int) -> dict[str, float]:
    """Visit every answer of the pool once, then the median seconds of each kind, sent one at a time."""
    for index in range(len(client.rows)):
        record = client.send("detect", index, 0)
        assert record["status"] == 200, record
    times: dict[str, list[float]] = {kind: [] for kind in CYCLE}
    for index in range(rounds):
        for kind in dict.fromkeys(CYCLE):
            record = client.send(kind, index, 0)  # a stream as fast as it can: its time on the scorer
            assert record["status"] == 200 and record["complete"], record
            times[kind].append(record["seconds"])
    return {kind: statistics.median(seconds) for kind, seconds in times.items()}


def open_loop(client: Client, period: float, seconds: float, max_requests: int, workers: int,
              stream_rate: float) -> list[dict]:
    """Request i, of kind ``CYCLE[i % 4]``, is sent at ``i * period / 4`` seconds."""
    results: list[dict] = []
    lock = threading.Lock()
    step = period / len(CYCLE)

    def send(i: int, due: float) -> None:
        time.sleep(max(0.0, due - time.perf_counter()))
        record = client.send(CYCLE[i % len(CYCLE)], i, stream_rate)
        with lock:
            results.append(record)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for i in range(min(max_requests, int(seconds / step))):
            pool.submit(send, i, start + i * step)
    return results


class Sampler(threading.Thread):
    """The server's RSS every ``every`` seconds, as (seconds since start, MiB)."""

    def __init__(self, pid: int, every: float):
        super().__init__(daemon=True)
        self.pid, self.every, self.samples, self.stop = pid, every, [], threading.Event()
        self.start_time = time.perf_counter()

    def run(self) -> None:
        while True:
            self.samples.append((round(time.perf_counter() - self.start_time, 1), round(rss_mib(self.pid), 1)))
            if self.stop.wait(self.every):
                return


def settled(samples: list[tuple[float, float]], seconds: float, load_s: float, rss_start: float
            ) -> tuple[float, float]:
    """(seconds, MiB) of the first RSS sample at least ``seconds`` into the load (of ``load_s``
    seconds; the samples taken while the queue drained after it do not count): the memory once
    the load has settled, which its peak and its end are held to; (0, ``rss_start``, the RSS
    after warm-up) where the load ran shorter."""
    return next(((s, mib) for s, mib in samples if seconds <= s <= load_s), (0.0, rss_start))


def open_streams(url: str) -> float:
    """``groundsense_open_streams`` on the server's ``/metrics``."""
    text = httpx.get(url + "/metrics", timeout=30).text
    return sum(s.value for family in text_string_to_metric_families(text) for s in family.samples
               if s.name == "groundsense_open_streams")


def settle(url: str, seconds: float = 120) -> None:
    """Wait until no request waits for the scorer and no stream is open (or ``seconds`` pass)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not httpx.get(url + "/readyz", timeout=30).json().get("queue", 0) and not open_streams(url):
            return
        time.sleep(0.5)


def soak(args: argparse.Namespace) -> dict:
    """Run the soak as ``args`` say (:func:`parse_args`); the report, with its ``checks``."""
    load_before = os.getloadavg()[0]
    port = free_port()
    url = f"http://{HOST}:{port}"
    server = start_server(port, args.queue_size, args.timeout, args.threads, ["--max-streams", str(args.max_streams)])
    try:
        wait_ready(url)
        client = Client(url, port, answer_pool(args.pool, args.seed), args.batch_size)
        costs = warm_up(client, args.rounds)
        cycle_s = sum(costs[kind] for kind in CYCLE)
        period = cycle_s / args.factor
        rss_start = rss_mib(server.pid)
        sampler = Sampler(server.pid, args.sample_seconds)
        sampler.start()
        started = time.perf_counter()
        results = open_loop(client, period, args.minutes * 60, args.max_requests, args.workers, args.stream_rate)
        load_s = time.perf_counter() - started
        settle(url)
        left_open = open_streams(url)
        rss_end = rss_mib(server.pid)
        sampler.stop.set()
        sampler.join()
        after = client.send("detect", 0, 0)
    finally:
        server.terminate()
        server.wait(timeout=120)

    statuses: dict[str, dict[str, int]] = {kind: {} for kind in dict.fromkeys(CYCLE)}
    for r in results:
        statuses[r["kind"]][str(r["status"])] = statuses[r["kind"]].get(str(r["status"]), 0) + 1
    seen = {status for counts in statuses.values() for status in counts}
    ok = {kind: [r["seconds"] for r in results if r["kind"] == kind and r["status"] == 200] for kind in statuses}
    rss = [mib for _, mib in sampler.samples]
    settled_s, rss_settled = settled(sampler.samples, args.settled_minutes * 60, load_s, rss_start)
    after_settled = [mib for s, mib in sampler.samples if s >= settled_s] + [rss_end]
    report = {
        "command": " ".join(["python", "benchmarks/soak.py", *sys.argv[1:]]) if __name__ == "__main__" else None,
        "machine": results_machine(args.threads),
        "load_average_1min": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        "server": {"queue_size": args.queue_size, "timeout_s": args.timeout, "max_streams": args.max_streams,
                   "torch_threads": args.threads},
        "pool": args.pool,
        "batch_size": args.batch_size,
        "stream_words_per_s": args.stream_rate,
        "warmup_median_s": {kind: round(s, 3) for kind, s in costs.items()},
        "cycle": list(CYCLE),
        "capacity_cycles_per_min": round(60 / cycle_s, 2),
        "offered_cycles_per_min": round(60 / period, 2),
        "minutes_planned": args.minutes,
        "minutes_run": round(load_s / 60, 2),
        "requests": len(results),
        "answers_judged": sum((args.batch_size if r["kind"] == "batch" else 1) for r in results if r["complete"]),
        "statuses": {kind: dict(sorted(counts.items())) for kind, counts in statuses.items()},
        "retry_after_on_every_refusal": all(r["retry_after"] for r in results if r["status"] in REFUSALS),
        "incomplete_200s": sum(r["status"] == 200 and not r["complete"] for r in results),
        "errors": sorted({r["error"] for r in results if r["error"]})[:10],
        "success_p50_s": {kind: percentile(s, 0.5) and round(percentile(s, 0.5), 3) for kind, s in ok.items()},
        "success_p95_s": {kind: percentile(s, 0.95) and round(percentile(s, 0.95), 3) for kind, s in ok.items()},
        "rss_start_mib": round(rss_start, 1),
        "rss_end_mib": round(rss_end, 1),
        "rss_min_mib": min(rss, default=None),
        "rss_max_mib": max(rss, default=None),
        "rss_growth": round(rss_end / rss_start - 1, 4),
        "rss_settled_at_s": settled_s,
        "rss_settled_mib": rss_settled,
        "rss_peak_after_settled_mib": max(after_settled),
        "rss_peak_growth": round(max(after_settled) / rss_settled - 1, 4),
        "rss_end_growth": round(rss_end / rss_settled - 1, 4),
        "rss_samples_s_mib": sampler.samples,
        "open_streams_after": left_open,
        "normal_request_after": after["status"],
    }
    report["checks"] = {
        f"peak RSS within {args.max_peak:.0%} of the settled RSS": report["rss_peak_growth"] <= args.max_peak,
        f"RSS at the end within {args.max_growth:.0%} of the settled RSS": report["rss_end_growth"] <= args.max_growth,
        "no stream slot left open": left_open == 0,
        "only documented statuses": seen <= {str(s) for s in DOCUMENTED},
        "Retry-After on every 429/503/504": report["retry_after_on_every_refusal"],
        "every 200 holds its full result": report["incomplete_200s"] == 0,
        "every route answered 200": all(ok.values()),
        "a normal request succeeds after": after["status"] == 200 and after["complete"],
    }
    return report


def main() -> int:
    args = parse_args()
    report = soak(args)
    emit_json(report, args.out)
    return 0 if all(report["checks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())

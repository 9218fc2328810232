"""Bounded load test of `groundsense serve`, on 127.0.0.1 only.

    python benchmarks/load.py --seconds 60 --factor 4 --out benchmarks/load.json

Starts the real server (the embedded default scorer) in a subprocess on a free loopback
port, measures its capacity with sequential warm-up requests, then sends requests open-loop
at ``--factor`` times that capacity for ``--seconds`` (at most ``--max-requests``). It
reports the statuses, whether every 429/503 carried Retry-After, the latency of the
successes (p50/p95), the server's resident memory after warm-up and after the load, and
whether a normal request succeeds afterwards. The figures go to ``--out`` (JSON) and stdout;
the exit status is 1 when a check fails (docs/reliability.md lists them).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil

HOST = "127.0.0.1"  # never anything else: this sends a flood of requests
DOCUMENTED = {200, 429, 503, 504}
REQUEST = {
    "question": "How long is the main span?",
    "passages": ["The Golden Gate Bridge opened to traffic on May 27, 1937.",
                 "The bridge's main span is 4,200 feet long."],
    "answer": "Its main span is 4,200 feet long. It was painted gold in 1990.",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def start_server(port: int, queue_size: int, timeout_s: float, threads: int,
                 detector_flags: list[str] | None = None) -> subprocess.Popen:
    """`groundsense serve` on ``port``; ``detector_flags``: its detector options (``--mode two_pass``, ...)."""
    command = [sys.executable, "-m", "groundsense.cli", "--threads", str(threads), "serve", "--host", HOST,
               "--port", str(port), "--queue-size", str(queue_size), "--timeout", str(timeout_s),
               *(detector_flags or [])]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_ready(url: str, seconds: float = 300) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if httpx.get(url + "/readyz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise TimeoutError("the server did not get ready")


def rss_mib(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def flood(url: str, rate: float, seconds: float, max_requests: int, workers: int) -> list[dict]:
    """Open loop: request i is sent at i / rate seconds, whatever the answers before it."""
    results: list[dict] = []
    lock = threading.Lock()
    local = threading.local()

    def send(due: float) -> None:
        if not hasattr(local, "client"):
            local.client = httpx.Client(timeout=300)  # one connection per client thread
        client = local.client
        time.sleep(max(0.0, due - time.perf_counter()))
        started = time.perf_counter()
        try:
            response = client.post(url + "/v1/detect", json=REQUEST)
            record = {"status": response.status_code, "retry_after": response.headers.get("Retry-After"),
                      "seconds": time.perf_counter() - started}
        except httpx.TransportError as exc:
            record = {"status": f"transport error: {type(exc).__name__}", "retry_after": None,
                      "seconds": time.perf_counter() - started}
        with lock:
            results.append(record)

    start = time.perf_counter()
    total = min(max_requests, int(rate * seconds))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for i in range(total):
            pool.submit(send, start + i / rate)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--factor", type=float, default=4.0, help="offered load as a multiple of capacity")
    parser.add_argument("--max-requests", type=int, default=2000, help="bound on the requests sent")
    parser.add_argument("--warmup", type=int, default=8, help="sequential requests that measure capacity")
    parser.add_argument("--queue-size", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=30.0, help="the server's per-request timeout")
    parser.add_argument("--threads", type=int, default=1, help="the server's torch threads")
    parser.add_argument("--workers", type=int, default=64, help="client threads (concurrent requests at most)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/load.json"))
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    port = free_port()
    url = f"http://{HOST}:{port}"
    server = start_server(port, args.queue_size, args.timeout, args.threads)
    try:
        wait_ready(url)
        with httpx.Client(timeout=300) as client:
            warm = []
            for _ in range(args.warmup):
                started = time.perf_counter()
                assert client.post(url + "/v1/detect", json=REQUEST).status_code == 200
                warm.append(time.perf_counter() - started)
        service_s = statistics.median(warm)
        rss_warm = rss_mib(server.pid)
        rate = args.factor / service_s
        results = flood(url, rate, args.seconds, args.max_requests, args.workers)
        while httpx.get(url + "/readyz", timeout=10).json().get("queue", 0):
            time.sleep(0.5)  # let the queue drain before measuring
        rss_after = rss_mib(server.pid)
        after = httpx.post(url + "/v1/detect", json=REQUEST, timeout=300)
    finally:
        server.terminate()
        server.wait(timeout=120)

    statuses: dict[str, int] = {}
    for r in results:
        statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
    ok = [r["seconds"] for r in results if r["status"] == 200]
    backoff = [r for r in results if r["status"] in (429, 503)]
    figures = {
        "command": " ".join(["python", "benchmarks/load.py", *sys.argv[1:]]),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                 capture_output=True, text=True).stdout.strip(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}",
        "load_average_1min": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        "server": {"queue_size": args.queue_size, "timeout_s": args.timeout, "torch_threads": args.threads},
        "warmup_service_s_median": round(service_s, 3),
        "capacity_per_s": round(1 / service_s, 2),
        "offered_per_s": round(rate, 2),
        "seconds": args.seconds,
        "requests": len(results),
        "statuses": dict(sorted(statuses.items())),
        "retry_after_on_every_429_503": all(r["retry_after"] for r in backoff),
        "success_p50_s": percentile(ok, 0.5) and round(percentile(ok, 0.5), 3),
        "success_p95_s": percentile(ok, 0.95) and round(percentile(ok, 0.95), 3),
        "rss_after_warmup_mib": round(rss_warm, 1),
        "rss_after_load_mib": round(rss_after, 1),
        "rss_change": round(rss_after / rss_warm - 1, 4),
        "normal_request_after": after.status_code,
    }
    checks = {
        "only documented statuses": set(statuses) <= {str(s) for s in DOCUMENTED},
        "Retry-After on every 429/503": figures["retry_after_on_every_429_503"],
        "RSS within 10% of warm-up": abs(figures["rss_change"]) <= 0.10,
        "a normal request succeeds after": after.status_code == 200,
        "some requests succeed under load": bool(ok),
    }
    figures["checks"] = checks
    args.out.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

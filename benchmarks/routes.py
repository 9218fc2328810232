"""One answer, one score (issue #53): the same RAGTruth test answers through every route at the
default precision, at 1 and 2 CPU threads, and how far each route's sentence scores and flags lie
from ``detect``'s.

    PYTHONPATH=src python benchmarks/routes.py --cases 200 --out benchmarks/routes.json

Every answer is scored with its RAGTruth sentence spans, by the default detector (the fused
score, ``--precision auto``), through each route:

- ``detect-2``, ``detect-1``: ``Detector.detect`` in this process at 2 and at 1 threads;
- ``stream-2``: ``Detector.stream`` fed a scorer token at a time, at 2 threads: its closing
  result, and the verdicts its ``feed`` returned while the answer arrived (``in_flight``);
- ``batch-2``: ``groundsense --threads 2 batch``, the local engine, in a subprocess;
- ``serve-2``: ``groundsense --threads 2 serve``, each answer sent to ``POST /v1/detect``;
- ``ray-1``: ``groundsense batch --engine ray --actors 1 --cpus-per-actor 1`` (an actor runs
  the threads its CPUs give it: 1).

Each route's answers are kept in ``--cache`` (``ROUTE.jsonl``: per answer its sentence scores
and flags, its verdict and the threads its record names), so that a stopped run resumes where it
stopped; ``--routes`` runs some only; ``--baseline`` compares ``detect`` with another run's cache
(``results/routes-sdpa``: the same routes scored with transformers' fused attention before the
aligned attention, :mod:`groundsense.scorer.attention`). The report compares, per sentence and per answer: each route
with ``detect`` at the same thread count (goal: equal scores), ``detect`` at 1 thread with 2, and
the stream's verdicts in flight with ``detect``. Goals: across routes and thread counts, flags
agree on at least 99.9% of sentences and of answers and no score differs by more than 0.02; the
verdicts in flight stay within that bound of the result. The scores' differences
are given as quantiles. The goals are read off only when every route holds every answer
(``complete``); ``--routes ''`` reports on what the cache holds so far. Nothing here is timed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import numpy as np
import torch
from load import HOST, free_port, start_server, wait_ready
from speed import emit_json, load_test_cases, pick_cases, results_machine
from streaming import token_deltas

from groundsense import DetectionResult, Detector
from groundsense_eval.data.rows import case_row

ROUTES = ("detect-2", "detect-1", "stream-2", "batch-2", "serve-2", "ray-1")
GOAL_AGREEMENT, GOAL_DIFFERENCE = 0.999, 0.02
# (route, the route it is compared with): equal thread counts first, then what may differ
PAIRS = [("stream-2", "detect-2"), ("batch-2", "detect-2"), ("serve-2", "detect-2"), ("ray-1", "detect-1"),
         ("detect-1", "detect-2"), ("stream-2 in flight", "detect-2")]
EQUAL_THREADS = PAIRS[:4]


def compact(record: dict) -> dict:
    """What the comparison needs of a detection record (``to_dict()`` and an ``id``)."""
    kept = {"id": str(record["id"]), "threads": record["threads"], "precision": record["precision"],
            "score_rule": record["score_rule"], "scores": [s["score"] for s in record["sentences"]],
            "flags": [s["flagged"] for s in record["sentences"]], "answer_flagged": record["answer"]["flagged"]}
    if record.get("in_flight") is not None:  # a stream's: the verdicts feed returned, by sentence index
        kept["in_flight"] = [[v["index"], v["score"], v["flagged"]] for v in record["in_flight"]]
    return kept


def evidence(case) -> dict:
    return {"passages": case.passages} if case.passages is not None else {"context": case.context}


def in_process(detector: Detector, threads: int, stream: bool) -> Callable[[object], DetectionResult]:
    """The route that scores a case in this process, at ``threads``."""

    def score(case) -> DetectionResult:
        torch.set_num_threads(threads)
        spans = [(s.start, s.end) for s in case.sentences]
        if not stream:
            return detector.detect(case.answer, question=case.question, sentences=spans, **evidence(case))
        checking = detector.stream(case.question, **evidence(case))
        for delta in token_deltas(detector, case.answer):
            checking.feed(delta)
        result = checking.close()
        if [(s.start, s.end) for s in result.sentences] != spans:
            raise SystemExit(f"{case.id}: the stream's sentences are not RAGTruth's; pick answers it segments alike")
        return result

    return score


def cached(path: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())} if path.exists() else {}


def run_in_process(path: Path, cases: list, score: Callable[[object], DetectionResult]) -> None:
    done = cached(path)
    with path.open("a") as out:
        for i, case in enumerate(c for c in cases if str(c.id) not in done):
            out.write(json.dumps(compact({"id": case.id, **score(case).to_dict()})) + "\n")
            out.flush()
            print(f"{path.stem}: {len(done) + i + 1}/{len(cases)}", file=sys.stderr, flush=True)


def run_batch(path: Path, rows_file: Path, engine: str) -> None:
    """``groundsense batch`` over the rows (it resumes from its own output), then compacted."""
    records = path.with_suffix(".records.jsonl" if engine == "local" else ".parquet")
    command = [sys.executable, "-m", "groundsense.cli", "--threads", "2" if engine == "local" else "1", "batch",
               str(rows_file), "-o", str(records), "--no-progress"]
    if engine == "ray":
        command += ["--engine", "ray", "--actors", "1", "--cpus-per-actor", "1"]
    subprocess.run(command, check=True)
    if engine == "local":
        got = [json.loads(line) for line in records.read_text().splitlines()]
    else:
        import pyarrow.parquet as pq

        from groundsense.scale import table_records

        got = table_records(pq.read_table(records))
    failed = [r for r in got if r.get("error")]
    if failed:
        raise SystemExit(f"{path.stem}: {len(failed)} rows failed, e.g. {failed[0]['error']}")
    path.write_text("".join(json.dumps(compact(r)) + "\n" for r in got))


def run_serve(path: Path, rows: list[dict]) -> None:
    done = cached(path)
    port = free_port()
    server = start_server(port, queue_size=4, timeout_s=600, threads=2)
    url = f"http://{HOST}:{port}"
    try:
        wait_ready(url)
        with path.open("a") as out, httpx.Client(timeout=600) as client:
            for row in (r for r in rows if str(r["id"]) not in done):
                response = client.post(url + "/v1/detect", json=row)
                response.raise_for_status()
                out.write(json.dumps(compact({**response.json(), "id": row["id"]})) + "\n")
                out.flush()
    finally:
        server.terminate()
        server.wait(30)


def pairs_of(records: dict[str, dict[str, dict]], route: str, base: str) -> Iterator[tuple[dict, dict]]:
    """(record, base record) of each answer both routes hold."""
    for answer_id, record in records.get(route.removesuffix(" in flight"), {}).items():
        if answer_id in records.get(base, {}):
            yield record, records[base][answer_id]


def verdicts(record: dict, in_flight: bool) -> list[tuple[int, float | None, bool | None]]:
    """(sentence index, score, flag) of a record's sentences, or of the verdicts its stream gave in flight."""
    if in_flight:
        return [tuple(v) for v in record["in_flight"]]
    return list(zip(range(len(record["scores"])), record["scores"], record["flags"]))


def compare(records: dict[str, dict[str, dict]], route: str, base: str) -> dict | None:
    differences, sentences_agree, answers_agree, n_answers = [], [], [], 0
    in_flight = route.endswith(" in flight")
    for record, reference in pairs_of(records, route, base):
        n_answers += 1
        for index, score, flag in verdicts(record, in_flight):
            ref_score, ref_flag = reference["scores"][index], reference["flags"][index]
            if ref_score is None or score is None:
                sentences_agree.append(score is ref_score and flag == ref_flag)
                continue
            differences.append(abs(score - ref_score))
            sentences_agree.append(flag == ref_flag)
        if not in_flight:  # an answer verdict is given only when a stream closes
            answers_agree.append(record["answer_flagged"] == reference["answer_flagged"])
    if not n_answers:
        return None
    threads = {r["threads"] for r, _ in pairs_of(records, route, base)}
    q = np.quantile(differences, [0.5, 0.9, 0.99, 1.0]) if differences else [np.nan] * 4
    return {"route": route, "against": base, "threads": sorted(threads), "answers": n_answers,
            "sentences": len(differences),
            "sentence flags agree": round(float(np.mean(sentences_agree)), 5),
            "answer flags agree": round(float(np.mean(answers_agree)), 5) if answers_agree else None,
            "score difference": {"p50": float(q[0]), "p90": float(q[1]), "p99": float(q[2]), "max": float(q[3])},
            "equal scores": bool(differences) and max(differences) == 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--per-source", type=int, default=2, help="answers per source (they share evidence)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--routes", default=",".join(ROUTES),
                        help=f"routes to run now (of {', '.join(ROUTES)}); empty: report on what the cache holds")
    parser.add_argument("--cache", type=Path, default=Path("results/routes"))
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another run's cache (made with other code, e.g. another attention): the report adds "
                             "this run's detect at 2 and at 1 threads against that run's")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    chosen = [route for route in args.routes.split(",") if route]
    unknown = set(chosen) - set(ROUTES)
    if unknown:
        parser.error(f"unknown routes {sorted(unknown)}: choose from {', '.join(ROUTES)}")
    args.cache.mkdir(parents=True, exist_ok=True)
    cases = pick_cases(load_test_cases(), args.cases, args.per_source, args.seed)
    detector = Detector() if chosen else None  # a report on the cache scores nothing
    for route in (r for r in ROUTES if r in chosen):
        assert detector is not None
        path = args.cache / f"{route}.jsonl"
        if route in ("detect-2", "detect-1", "stream-2"):
            threads = int(route[-1])
            run_in_process(path, cases, in_process(detector, threads, stream=route.startswith("stream")))
            continue
        rows = [case_row(c) for c in cases]
        if route == "serve-2":
            run_serve(path, rows)
            continue
        if len(cached(path)) == len(cases):
            continue
        with tempfile.TemporaryDirectory() as folder:
            rows_file = Path(folder) / "rows.jsonl"
            rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
            run_batch(path, rows_file, "local" if route == "batch-2" else "ray")
    picked = {str(c.id) for c in cases}
    records = {route: {i: r for i, r in cached(args.cache / f"{route}.jsonl").items() if i in picked}
               for route in ROUTES}
    comparisons = [c for route, base in PAIRS if (c := compare(records, route, base)) is not None]
    kinds = {(r["precision"], r["score_rule"]) for route in records.values() for r in route.values()}
    complete = all(len(records[route]) == len(cases) for route in ROUTES)
    routes = [c for c in comparisons if not c["route"].endswith(" in flight")]
    report = {
        "machine": results_machine(None), "precision and score": sorted(kinds),
        "answers": len(cases), "routes": {route: len(records[route]) for route in ROUTES},
        "complete": complete,
        "comparisons": comparisons,
        "goals": {} if not complete else {
            "equal scores at equal threads": all(c["equal scores"] for c in comparisons
                                                 if (c["route"], c["against"]) in EQUAL_THREADS),
            f"across routes and thread counts, flags agree on at least {GOAL_AGREEMENT:.1%}": all(
                c["sentence flags agree"] >= GOAL_AGREEMENT
                and (c["answer flags agree"] is None or c["answer flags agree"] >= GOAL_AGREEMENT)
                for c in routes),
            f"across routes and thread counts, the largest score difference at most {GOAL_DIFFERENCE}": all(
                c["score difference"]["max"] <= GOAL_DIFFERENCE for c in routes),
            f"verdicts in flight within {GOAL_DIFFERENCE} of the result": all(
                c["score difference"]["max"] <= GOAL_DIFFERENCE for c in comparisons if c not in routes),
        },
    }
    if args.baseline:
        for route in ("detect-2", "detect-1"):
            records[f"baseline {route}"] = {i: r for i, r in cached(args.baseline / f"{route}.jsonl").items()
                                            if i in picked}
        report["against the baseline"] = {"cache": str(args.baseline), "comparisons": [
            c for route in ("detect-2", "detect-1") if (c := compare(records, route, f"baseline {route}")) is not None]}
    emit_json(report, args.out)


if __name__ == "__main__":
    main()

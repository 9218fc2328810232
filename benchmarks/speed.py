"""Speed benchmark: the library's scorer against the naive method, on RAGTruth test cases.

    PYTHONPATH=src python benchmarks/speed.py --cases 12 --repeats 3 --out docs/results.md
    PYTHONPATH=src python benchmarks/speed.py --sections masked,rss4k --cases 4 --threads 1
    PYTHONPATH=src python benchmarks/speed.py --sections measured --threads 2

The naive method (``groundsense.scorer.reference``, the method by its definition) runs one
independent forward pass per condition at batch size 1, with no cache, and computes logits
at every position. Both methods score identical token ids: every case goes through the
library's own ``build_evidence`` and ``Scorer.encode``. Each measurement runs in its own
subprocess, so peak resident memory (``ru_maxrss``) belongs to what that process ran; the
speed ratio is the median over repeated (naive, library) pairs run back to back in one
process.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from groundsense.config import DEFAULTS, DetectorConfig
from groundsense.features import assign_tokens, sentence_features
from groundsense.inputs.evidence import build_evidence
from groundsense.inputs.text import Span, segment_sentences
from groundsense.scorer import EncodedPrompt, Scorer, TokenScores
from groundsense.scorer.reference import condition_sequences
from groundsense.scorer.reference import independent_token_scores as naive_scores

# split: token counts over the whole test split, no model; masked: naive vs exact vs masked
# leave-one-out in one run; rss4k: peak memory of one 4k-token context; measured: the whole
# split as `groundsense eval extract ragtruth --sample full` timed it, against the naive method
SECTIONS = ("main", "length", "k", "split", "masked", "rss4k", "measured")
RSS_TARGET_MB = 1.5e9 / 2**20  # the memory target, "under 1.5 GB", in the MiB that peak_rss_mb() reports
MAX_CONTEXT_TOKENS = DEFAULTS.max_context_tokens
MAX_ANSWER_TOKENS = DEFAULTS.max_answer_tokens
TOLERANCE = 1e-4
REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Item:
    """One answer, encoded exactly as the detector encodes it."""

    case_id: str
    source_id: str
    task: str
    prompt: EncodedPrompt
    spans: list[Span]  # answer sentences


# ---------------------------------------------------------------- the two methods


METHODS: dict[str, Callable[[Scorer, EncodedPrompt], TokenScores]] = {
    "naive": naive_scores,  # groundsense.scorer.reference: the method by its definition
    "library": lambda scorer, prompt: scorer.score(prompt),
    "two_pass": lambda scorer, prompt: scorer.score(prompt, leave_one_out=False),
    "masked": lambda scorer, prompt: scorer.score(prompt, masked=True),  # approximate leave-one-out
}
LABELS = {"naive": "naive K+2", "library": "library K+2", "two_pass": "library two-pass",
          "masked": "library masked K+2"}


# ---------------------------------------------------------------- token accounting


def distinct_prefixes(sequences: Iterable[list[int]]) -> int:
    """Nodes of the token trie of ``sequences``: every distinct prefix counted once. A
    causal LM's state at a position depends on the whole prefix, so an exact method must
    process at least one token per distinct prefix."""
    root: dict = {}
    nodes = 0
    for ids in sequences:
        node = root
        for token in ids:
            child = node.get(token)
            if child is None:
                child = node[token] = {}
                nodes += 1
            node = child
    return nodes


def lower_bound(prompts: list[EncodedPrompt], leave_one_out: bool = True) -> int:
    """Fewest tokens any exact implementation processes for the whole run (prefixes shared
    across answers over the same evidence count once)."""
    return distinct_prefixes(s for p in prompts for s in condition_sequences(p, leave_one_out))


def per_answer_bound(prompts: list[EncodedPrompt], leave_one_out: bool = True) -> int:
    """The same bound when nothing is shared between answers."""
    return sum(distinct_prefixes(condition_sequences(p, leave_one_out)) for p in prompts)


# ---------------------------------------------------------------- inputs


def load_test_cases() -> list:
    from groundsense_eval.data.ragtruth import load_ragtruth

    cases, _ = load_ragtruth(splits={"test"})
    return cases


def pick_cases(cases: list, n: int, per_source: int, seed: int, tasks: set[str] | None = None) -> list:
    """``n`` answers: sources drawn in turn from each task (seeded), ``per_source`` answers
    from each, so that some answers share their evidence as they do in RAGTruth."""
    rng = random.Random(seed)
    by_source: dict[str, list] = defaultdict(list)
    for case in cases:
        if tasks is None or case.task in tasks:
            by_source[case.source_id].append(case)
    by_task: dict[str, list[str]] = defaultdict(list)
    for source in sorted(by_source):
        by_task[by_source[source][0].task].append(source)
    queues = []
    for task in sorted(by_task):
        rng.shuffle(by_task[task])
        queues.append(by_task[task])
    picked: list = []
    for round_ in range(max(map(len, queues))):
        for queue in queues:
            if round_ < len(queue) and len(picked) < n:
                answers = sorted(by_source[queue[round_]], key=lambda c: c.id)
                picked += rng.sample(answers, min(per_source, len(answers)))[: n - len(picked)]
    return picked


def parse_run_arguments(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Parse with ``--threads`` (torch threads, set here) and ``--seed`` (the cases drawn) added."""
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the RAGTruth answers drawn")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    return args


def ragtruth_prompts(scorer: Scorer, n: int, seed: int, k: int = 5,
                     tasks: set[str] | None = None) -> list[EncodedPrompt]:
    """``n`` RAGTruth test answers, one per source (:func:`pick_cases`), encoded as the detector does."""
    encoder = Encoder(scorer, k)
    return [encoder.item(case).prompt for case in pick_cases(load_test_cases(), n, 1, seed, tasks)]


class Encoder:
    """``build_evidence`` + ``Scorer.encode`` as the detector calls them; evidence is built
    once per distinct context."""

    def __init__(self, scorer: Scorer, k: int, max_context_tokens: int = MAX_CONTEXT_TOKENS):
        self.scorer, self.k, self.max_context_tokens = scorer, k, max_context_tokens
        self._chunks: dict[tuple, list[str]] = {}

    def chunk_texts(self, context: str | None, passages: list[str] | None) -> list[str]:
        key = (context, tuple(passages or ()))
        if key not in self._chunks:
            evidence = build_evidence(self.scorer, context, passages, self.k, self.max_context_tokens)
            self._chunks[key] = [evidence.chunk_text(c) for c in evidence.chunks]
        return self._chunks[key]

    def item(self, case) -> Item:
        chunks = self.chunk_texts(case.context, case.passages)
        prompt = self.scorer.encode(case.question or "", chunks, case.answer, MAX_ANSWER_TOKENS)
        spans = [Span(s.start, s.end) for s in case.sentences]
        return Item(case.id, case.source_id, case.task, prompt, spans)


def synthetic_items(scorer: Scorer, cases: list, tokens: int, k: int, n: int) -> list[Item]:
    """Answers over a context of ``tokens`` tokens, built by concatenating RAGTruth
    contexts (each answer keeps its own question and answer text)."""
    contexts = [c.context if c.context is not None else "\n\n".join(c.passages) for c in cases]
    encoder = Encoder(scorer, k, max_context_tokens=tokens)
    items = []
    for i, case in enumerate(cases[:n]):
        parts, length, j = [], 0, i
        while length < tokens:
            parts.append(contexts[j % len(contexts)])
            length += len(scorer.tokenize(parts[-1]))
            j += 1
        chunks = encoder.chunk_texts("\n\n".join(parts), None)
        prompt = scorer.encode(case.question or "", chunks, case.answer, MAX_ANSWER_TOKENS)
        items.append(Item(f"{case.id}@{tokens}", case.source_id, case.task, prompt, segment_sentences(case.answer)))
    return items


# ---------------------------------------------------------------- measurement (subprocess)


@dataclass
class Measurement:
    times: dict[str, list[float]]  # method -> wall seconds per repeat, over all items
    tokens: dict[str, int]
    peak_rss_mb: dict[str, float]  # process peak after the method's first run
    loaded_rss_mb: float  # after loading the model and a warm-up pass
    scores: dict[str, list[TokenScores]]  # from the first repeat
    threads: int


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def measure_here(items: list[Item], methods: list[str], repeats: int, threads: int | None) -> Measurement:
    if threads:
        torch.set_num_threads(threads)
    scorer = Scorer(precision="fp32")  # the report's and the feature cache's
    scorer.model(input_ids=torch.tensor([items[0].prompt.prefix]))  # warm-up
    result = Measurement(defaultdict(list), {}, {}, peak_rss_mb(), {}, torch.get_num_threads())
    for repeat in range(repeats):
        for method in methods:  # interleaved, so that load drift hits every method alike
            scorer.forget_evidence()  # every run starts cold: no evidence kept from the last one
            start = time.perf_counter()
            scores = [METHODS[method](scorer, item.prompt) for item in items]
            result.times[method].append(time.perf_counter() - start)
            if repeat == 0:
                result.scores[method] = scores
                result.tokens[method] = sum(s.tokens_processed for s in scores)
                result.peak_rss_mb[method] = peak_rss_mb()
    result.times = dict(result.times)
    return result


def measure(items: list[Item], methods: list[str], repeats: int = 1, threads: int | None = None) -> Measurement:
    """Run :func:`measure_here` in a fresh Python process."""
    with tempfile.TemporaryDirectory() as tmp:
        job, out = Path(tmp) / "job.pkl", Path(tmp) / "out.pkl"
        job.write_bytes(pickle.dumps((items, methods, repeats, threads)))
        start = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--worker", str(job), str(out)], check=True)
        print(f"measured {'+'.join(methods)} x{repeats} on {len(items)} answers: "
              f"{time.perf_counter() - start:.0f} s", file=sys.stderr)
        return Measurement(**pickle.loads(out.read_bytes()))


# ---------------------------------------------------------------- comparison


def features(item: Item, scores: TokenScores) -> np.ndarray:
    """Every sentence feature the detector reports, flattened (NaN where undefined)."""
    owner = assign_tokens(item.prompt.answer.offsets, item.spans)
    f = sentence_features(scores.logp, scores.jsd, owner, len(item.spans))
    return np.concatenate([*f.values.values(), f.drops.ravel(), f.jsds.ravel()])


def max_feature_difference(items: list[Item], a: list[TokenScores], b: list[TokenScores]) -> float:
    """Largest absolute difference over the features both define (two-pass vs K+2:
    the ones two-pass computes)."""
    worst = 0.0
    for item, x, y in zip(items, a, b):
        rows = min(len(x.logp), len(y.logp))
        fx = features(item, TokenScores(x.logp[:rows], x.jsd[:rows]))
        fy = features(item, TokenScores(y.logp[:rows], y.jsd[:rows]))
        both = np.isfinite(fx) & np.isfinite(fy)
        if not np.array_equal(np.isfinite(fx), np.isfinite(fy)):
            return float("inf")
        worst = max(worst, float(np.abs(fx[both] - fy[both]).max(initial=0.0)))
    return worst


def speedups(times: dict[str, list[float]], method: str) -> float:
    """Median over repeats of naive time / method time (pairs run back to back)."""
    return statistics.median(n / m for n, m in zip(times["naive"], times[method]))


# ---------------------------------------------------------------- report


def emit_json(report: dict, out: Path | None) -> None:
    """A benchmark's JSON report on standard output, and in ``out`` when given."""
    text = json.dumps(report, indent=2)
    if out:
        out.write_text(text + "\n")
    print(text)


def results_machine(threads: int | None) -> str:
    """CPU, library versions and git commit, as one line."""
    import transformers

    cpu = platform.processor()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                    if line.startswith("model name")), cpu)
    git = lambda *a: subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True).stdout.strip()  # noqa: E731
    changed = git("status", "--porcelain", "--", "src", "benchmarks").splitlines()
    # a new output (a report not yet committed) is no change to what ran
    modified = [line for line in changed if not (line.startswith("??") and line.endswith((".json", ".md")))]
    commit = git("rev-parse", "--short", "HEAD") + (" (modified)" if modified else "")
    return (f"{cpu}, {os.cpu_count()} logical cores; torch {torch.__version__} "
            f"({threads or torch.get_num_threads()} threads), transformers {transformers.__version__}, "
            f"Python {platform.python_version()}; commit {commit}.")


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def main_table(items: list[Item], runs: dict[str, Measurement], pairs: Measurement) -> tuple[str, dict]:
    prompts = [i.prompt for i in items]
    n_sentences = sum(len(i.spans) for i in items)
    bounds = {"K+2": lower_bound(prompts), "two-pass": lower_bound(prompts, leave_one_out=False)}
    rows, data = [], {}
    for method in ("naive", "library", "two_pass"):
        bound = bounds["two-pass" if method == "two_pass" else "K+2"]
        seconds = statistics.median(pairs.times[method])
        diff = max_feature_difference(items, runs["naive"].scores["naive"], runs[method].scores[method])
        data[method] = {
            "tokens": runs[method].tokens[method], "tokens_over_bound": runs[method].tokens[method] / bound,
            "seconds_median": seconds, "seconds_all": pairs.times[method],
            "sentences_per_s": n_sentences / seconds, "answers_per_s": len(items) / seconds,
            "peak_rss_mb": runs[method].peak_rss_mb[method], "loaded_rss_mb": runs[method].loaded_rss_mb,
            "speedup_vs_naive": speedups(pairs.times, method), "max_feature_diff": diff,
        }
        d = data[method]
        rows.append([
            LABELS[method], f"{d['tokens']:,}", f"{d['tokens_over_bound']:.3f}", f"{seconds:.2f}",
            f"{d['sentences_per_s']:.2f}", f"{d['peak_rss_mb']:.0f} ({d['loaded_rss_mb']:.0f})",
            f"{d['speedup_vs_naive']:.2f}×", f"{diff:.1e}",
        ])
    header = ["method", "tokens processed", "tokens / bound", "wall s (median)", "sentences/s",
              "peak RSS MB (after load)", "speed-up vs naive (median of pairs)", "max abs feature diff vs naive"]
    data["bounds"] = bounds | {"K+2 per answer": per_answer_bound(prompts)}
    return table(header, rows), data


SPLIT_ANSWERS, ANSWERS_PER_SOURCE = 2700, 6  # RAGTruth's test split: 450 sources, 6 answers each


def split_projection(main: dict, items: list[Item]) -> tuple[str, dict[str, float]]:
    """The whole test split's time at this run's median seconds per answer, per method."""
    hours = {m: main[m]["seconds_median"] / len(items) * SPLIT_ANSWERS / 3600 for m in ("naive", "library", "two_pass")}
    per_source = Counter(i.source_id for i in items)
    caveat = ("every source's answers are in the sample, as in the split"
              if min(per_source.values()) >= ANSWERS_PER_SOURCE else
              f"{len(items)} answers over {len(per_source)} sources against the split's {ANSWERS_PER_SOURCE} "
              "per source, "
              "so the library's share of reused evidence is lower than over the split")
    return (f"Projected to the whole {SPLIT_ANSWERS:,}-answer test split at these seconds per answer ({caveat}): "
            + ", ".join(f"{LABELS[m]} {h:.1f} h" for m, h in hours.items()) + "."), hours


def scaling_table(points: dict[str, list[Item]], repeats: int, threads: int | None) -> tuple[str, dict]:
    """Each point in one process: the library first (its peak RSS is clean), then naive."""
    rows, data = [], {}
    for label, items in points.items():
        m = measure(items, ["library", "naive"], repeats, threads)
        prompts = [i.prompt for i in items]
        context = statistics.mean(sum(map(len, p.chunks)) for p in prompts)
        lib, naive = statistics.median(m.times["library"]), statistics.median(m.times["naive"])
        data[label] = {
            "answers": len(items), "context_tokens_mean": context, "library_s": lib, "naive_s": naive,
            "speedup": speedups(m.times, "library"),
            "library_tokens_over_bound": m.tokens["library"] / lower_bound(prompts),
            "library_peak_rss_mb": m.peak_rss_mb["library"],
            "max_feature_diff": max_feature_difference(items, m.scores["naive"], m.scores["library"]),
        }
        d = data[label]
        rows.append([label, len(items), f"{context:.0f}", f"{naive:.2f}", f"{lib:.2f}", f"{d['speedup']:.2f}×",
                     f"{d['library_tokens_over_bound']:.3f}", f"{d['library_peak_rss_mb']:.0f}",
                     f"{d['max_feature_diff']:.1e}"])
    header = ["point", "answers", "context tokens (mean)", "naive s", "library s", "speed-up",
              "library tokens / bound", "library peak RSS MB", "max abs feature diff"]
    return table(header, rows), data


def masked_table(items: list[Item], m: Measurement) -> tuple[str, dict]:
    """Naive, exact and masked K+2 from one interleaved run; the masked features' agreement with exact."""
    n_sentences = sum(len(i.spans) for i in items)
    rows, data = [], {}
    for method in ("naive", "library", "masked"):
        seconds = statistics.median(m.times[method])
        data[method] = {
            "tokens": m.tokens[method], "seconds_median": seconds, "seconds_all": m.times[method],
            "sentences_per_s": n_sentences / seconds, "speedup_vs_naive": speedups(m.times, method),
        }
        d = data[method]
        rows.append([LABELS[method], f"{d['tokens']:,}", f"{seconds:.2f}", f"{d['sentences_per_s']:.2f}",
                     f"{d['speedup_vs_naive']:.2f}×"])
    ratio = statistics.median(e / x for e, x in zip(m.times["library"], m.times["masked"]))
    data["masked_speedup_vs_exact"] = ratio
    data["exact_max_feature_diff_vs_naive"] = max_feature_difference(items, m.scores["naive"], m.scores["library"])
    data["agreement"] = agreement = feature_agreement(items, m.scores["library"], m.scores["masked"])
    header = ["method", "tokens processed", "wall s (median)", "sentences/s", "speed-up vs naive (median of pairs)"]
    lines = [table(header, rows), "",
             f"Masked vs exact K+2: {ratio:.2f}× faster (median of pairs); exact vs naive max abs feature difference "
             f"{data['exact_max_feature_diff_vs_naive']:.1e}. Masked features against exact ones, over "
             f"{n_sentences} sentences:", "",
             table(["feature", "Pearson", "Spearman", "max abs diff"],
                   [[f, f"{a['pearson']:.3f}", f"{a['spearman']:.3f}", f"{a['max_abs_diff']:.3f}"]
                    for f, a in agreement.items()])]
    return "\n".join(lines), data


def feature_agreement(items: list[Item], a: list[TokenScores], b: list[TokenScores]) -> dict[str, dict[str, float]]:
    """Pearson, Spearman and absolute differences of each feature over all sentences
    (``groundsense_eval.reports.configurations.agreement``, as `eval compare` reports them)."""
    import pandas as pd

    from groundsense_eval.reports.configurations import AGREEMENT, agreement

    def values(scores: list[TokenScores]) -> pd.DataFrame:
        frames = []
        for item, s in zip(items, scores):
            f = sentence_features(s.logp, s.jsd, assign_tokens(item.prompt.answer.offsets, item.spans), len(item.spans))
            frames.append(pd.DataFrame({**{name: f.values[name] for name in AGREEMENT}, "drops": list(f.drops)}))
        return pd.concat(frames, ignore_index=True)

    return agreement(values(a), values(b)).to_dict("index")


def rss_table(items: list[Item], threads: int | None) -> tuple[str, dict]:
    """Peak RSS of scoring one long-context answer, each method alone in a fresh process."""
    rows, data = [], {}
    context = sum(map(len, items[0].prompt.chunks))
    for method in ("library", "masked"):
        m = measure(items, [method], 1, threads)
        data[method] = {"peak_rss_mb": m.peak_rss_mb[method], "loaded_rss_mb": m.loaded_rss_mb,
                        "seconds": m.times[method][0], "tokens": m.tokens[method], "context_tokens": context}
        d = data[method]
        rows.append([LABELS[method], f"{context:,}", f"{d['tokens']:,}", f"{d['seconds']:.1f}",
                     f"{d['peak_rss_mb']:,.0f} ({d['loaded_rss_mb']:,.0f})",
                     "yes" if d["peak_rss_mb"] < RSS_TARGET_MB else "**no**"])
    header = ["method", "context tokens", "tokens processed", "wall s", "peak RSS MB (after load)", "under 1.5 GB"]
    return table(header, rows), data


def split_summary(scorer: Scorer, cases: list, k: int, lengths_out: Path | None) -> tuple[str, dict]:
    """Token counts over the whole test split (tokenisation only, no model)."""
    encoder = Encoder(scorer, k)
    prompts = [encoder.item(c).prompt for c in cases]
    naive = sum(sum(map(len, condition_sequences(p))) for p in prompts)
    data = {
        "answers": len(prompts), "sources": len({c.source_id for c in cases}), "naive_tokens": naive,
        "per_answer_bound": per_answer_bound(prompts), "shared_bound": lower_bound(prompts),
        "two_pass_shared_bound": lower_bound(prompts, leave_one_out=False),
    }
    if lengths_out:
        rows = [{"source": c.source_id, "prefix": len(p.prefix), "chunks": [len(x) for x in p.chunks],
                 "middle": len(p.middle), "answer": len(p.answer.ids)} for c, p in zip(cases, prompts)]
        lengths_out.write_text(json.dumps({"tokenizer": scorer.name, "k": k, "answers": rows}) + "\n")
    text = (f"Whole RAGTruth test split ({data['answers']:,} answers over {data['sources']} sources, K={k}): "
            f"naive K+2 processes {naive:,} tokens; the per-answer bound (what the library processes) is "
            f"{data['per_answer_bound']:,}; sharing prefixes across answers over the same evidence lowers the "
            f"bound to {data['shared_bound']:,} ({data['shared_bound'] / data['per_answer_bound']:.3f} of per-answer). "
            f"Two-pass bound with sharing: {data['two_pass_shared_bound']:,}.")
    return text, data


def split_cache(cache: Path, k: int) -> Path:
    """The default scorer's RAGTruth feature folder under ``cache``; exits with what to run if absent."""
    from groundsense.weights import DEFAULT_SCORER
    from groundsense_eval.caches.extract import ExtractionConfig, cache_folder

    config = ExtractionConfig(DetectorConfig(scorer=DEFAULT_SCORER, k=k, precision="fp32"))  # as eval extract keeps
    folder = cache_folder(cache, "ragtruth", config)
    if not (folder / "config.json").is_file():
        sys.exit(f"{folder}: no features cached; run `groundsense eval extract ragtruth --sample full --cache {cache}`"
                 " (resumable) or give --cache")
    return folder


def measured_split(folder: Path, cases: list, split: dict, naive: Measurement) -> tuple[str, dict]:
    """The whole test split as the feature cache recorded it (seconds and tokens per answer,
    from ``groundsense eval extract ragtruth --sample full``) against the naive method's time
    for it, projected from the naive seconds per token measured in this run.

    The recorded seconds are those of the runs that filled the cache, under their thread
    counts and machine load, and a resumed run starts with no evidence kept, so they can only
    overstate the library's time."""
    from groundsense_eval.caches.store import read_parts

    rows = read_parts(folder)
    test_ids = {c.id for c in cases}
    answers = rows[rows["case_id"].isin(test_ids)].groupby("case_id").first()
    scored = answers[answers["status"] != "error"]
    naive_per_token = statistics.median(naive.times["naive"]) / naive.tokens["naive"]
    threads = naive.threads
    data = {
        "folder": str(folder), "answers": len(answers), "split_answers": len(test_ids),
        "errors": len(answers) - len(scored),
        "library_hours": float(scored["seconds"].sum() / 3600),
        "library_tokens": int(scored["tokens_processed"].sum()),
        "hours_by_task": {t: float(v / 3600) for t, v in scored.groupby("task")["seconds"].sum().items()},
        "naive_seconds_per_token": naive_per_token, "naive_threads": threads,
        "naive_hours_projected": split["naive_tokens"] * naive_per_token / 3600,
    }
    by_task = ", ".join(f"{t} {h:.2f} h" for t, h in data["hours_by_task"].items())
    text = (f"Whole test split from the feature cache `{folder}`: {data['answers']:,} of {data['split_answers']:,} "
            f"answers, {data['errors']} errors. Library K+2, as recorded per answer by the runs that filled the cache: "
            f"**{data['library_hours']:.2f} h** ({by_task}), {data['library_tokens']:,} tokens processed. Naive K+2, "
            f"projected from this run's {naive_per_token * 1e3:.2f} ms per token ({threads} thread(s)) "
            "over the split's "
            f"{split['naive_tokens']:,} naive tokens: **{data['naive_hours_projected']:.2f} h**.")
    if data["answers"] < data["split_answers"]:
        return text + " The split is not complete: rerun the extraction to finish it (it resumes).", data
    if data["errors"]:
        return text + " Some answers failed, so the two totals do not cover the same answers: no ratio.", data
    data["speedup"] = data["naive_hours_projected"] / data["library_hours"]
    data["tokens_over_shared_bound"] = data["library_tokens"] / split["shared_bound"]
    text += (f" Speed-up {data['speedup']:.2f}×; tokens {data['tokens_over_shared_bound']:.3f} × the "
             f"shared lower bound ({split['shared_bound']:,}).")
    return text, data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=12, help="answers in the main comparison")
    parser.add_argument("--per-source", type=int, default=2, help="answers taken from each drawn source")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="(naive, library, two-pass) rounds for the ratio")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", default="Data2txt,QA,Summary", help="RAGTruth tasks to draw from")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument("--scaling-cases", type=int, default=2, help="answers per scaling point")
    parser.add_argument("--scaling-repeats", type=int, default=1)
    parser.add_argument("--sections", default="main,length,k", help=f"comma-separated, of {','.join(SECTIONS)}")
    parser.add_argument("--lengths-out", type=Path, default=None,
                        help="with split: write token lengths (for gpu_throughput.py)")
    parser.add_argument("--cache", type=Path, default=REPO / "results/split-features",
                        help="with measured: the feature cache holding the whole split")
    parser.add_argument("--out", type=Path, default=None, help="Markdown (.md) or JSON (.json) results file")
    parser.add_argument("--worker", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        job, out = args.worker
        out.write_bytes(pickle.dumps(vars(measure_here(*pickle.loads(job.read_bytes())))))  # a dict: no __main__ class
        return

    started = time.perf_counter()
    chosen = args.sections.split(",")
    measured_folder = split_cache(args.cache, args.k) if "measured" in chosen else None  # before any measuring
    scorer = Scorer(precision="fp32")  # tokenizer and prompt layout; the model runs in the subprocesses
    cases = load_test_cases()
    picked = pick_cases(cases, args.cases, args.per_source, args.seed, set(args.tasks.split(",")))
    items = [Encoder(scorer, args.k).item(c) for c in picked]
    print(f"{len(items)} answers, {sum(len(i.spans) for i in items)} sentences", file=sys.stderr)

    sections = [f"Machine: {results_machine(args.threads)}"]
    results: dict = {"args": {k: str(v) for k, v in vars(args).items()}, "cases": [i.case_id for i in items]}
    if "main" in chosen:
        runs = {m: measure(items, [m], 1, args.threads) for m in ("naive", "library", "two_pass")}
        pairs = measure(items, ["naive", "library", "two_pass"], args.repeats, args.threads)
        main_md, results["main"] = main_table(items, runs, pairs)
        tasks = ", ".join(f"{t} {sum(i.task == t for i in items)}" for t in sorted({i.task for i in items}))
        bounds = results["main"]["bounds"]
        sections += [
            f"Cases: {len(items)} RAGTruth test answers (seed {args.seed}; {tasks}; "
            f"up to {args.per_source} per source), "
            f"{sum(len(i.spans) for i in items)} sentences, K={args.k}, default scorer, fp32; "
            f"{args.repeats} repeat(s).",
            main_md,
            f"Lower bound (K+2): {bounds['K+2']:,} tokens with prefixes shared across answers, "
            f"{bounds['K+2 per answer']:,} without; two-pass: {bounds['two-pass']:,}.",
            "Feature differences within 1e-4: "
            + ("yes" if all(results["main"][m]["max_feature_diff"] <= TOLERANCE for m in ("library", "two_pass"))
               else "**NO**") + ".",
        ]
        projection, results["main"]["split_projection_hours"] = split_projection(results["main"], items)
        sections.append(projection)
    points = {
        "length": (f"Scaling with context length (K={args.k}, synthetic contexts)",
                   lambda: {f"{n} tok": synthetic_items(scorer, picked, n, args.k, args.scaling_cases)
                            for n in (500, 1000, 2000, 4000)}),
        "k": ("Scaling with K (real contexts)",
              lambda: {f"K={k}": [Encoder(scorer, k).item(c) for c in picked[: args.scaling_cases]]
                       for k in (3, 5, 10)}),
    }
    for section, (title, build) in points.items():
        if section in chosen:
            md, results[section] = scaling_table(build(), args.scaling_repeats, args.threads)
            sections += [f"**{title}**, {args.scaling_cases} answer(s) per point, "
                         f"{args.scaling_repeats} repeat(s):", md]
    if "masked" in chosen:
        md, results["masked"] = masked_table(items, measure(items, ["naive", "library", "masked"],
                                                            args.repeats, args.threads))
        sections += [f"**Masked leave-one-out** on the same {len(items)} answers, {args.repeats} repeat(s), "
                     "naive / exact / masked interleaved in one process:", md]
    if "rss4k" in chosen:
        long = synthetic_items(scorer, picked, 4000, args.k, 1)
        md, results["rss4k"] = rss_table(long, args.threads)
        sections += [f"**Peak memory, one answer over a 4k-token context** (K={args.k}, synthetic context, "
                     "each method alone in a fresh process):", md]
    if "split" in chosen or "measured" in chosen:
        text, results["split"] = split_summary(scorer, cases, args.k, args.lengths_out)
        sections.append(text)
    if "measured" in chosen:
        naive = runs["naive"] if "main" in chosen else measure(items, ["naive"], 1, args.threads)
        text, results["measured"] = measured_split(measured_folder, cases, results["split"], naive)
        sections.append(text)
    sections.append(f"Benchmark wall time: {time.perf_counter() - started:.0f} s.")
    report = "\n\n".join(sections) + "\n"
    print(report)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n" if args.out.suffix == ".json" else report)


if __name__ == "__main__":
    main()

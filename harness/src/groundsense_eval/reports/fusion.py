"""The fusion protocol of docs/detector-selection.md ("Word overlap and the scorer's signal,
fused"): the shipped ``sensitivity`` score fused with lexical signals (:mod:`groundsense.lexical`)
by a rule that reads no label of the domain it scores, chosen on dev partitions, held against
today's score and word overlap on the test partitions.

Every benchmark is a domain. The label-free rules (z-sum, rank average) standardise or rank
each signal on the domain's own dev partition with its labels removed, as
``calibrate --adapt`` re-estimates them on a team's unlabelled rows; the logistic rule is
fitted, with labels, on the other two benchmarks' dev partitions only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from groundsense.calibration import Calibration, rank_share

from ..caches.detector_inputs import detector_table
from ..caches.extract import FeatureSet
from ..caches.lexical import lexical_path, with_lexical
from ..statistics.benchmark_result import partitioned
from ..statistics.bootstrap import BootstrapResult, source_bootstrap
from .operating import OperatingPoint, judged
from .selection import fit_logistic
from .tables import interval_at, markdown_table

# The lexical sets a rule may fuse with ``sensitivity``, in order (ties go to the first).
# ``number_flag`` is 1 for a sentence stating a number the evidence does not (novel_numbers > 0).
LEXICAL_SETS: dict[str, tuple[str, ...]] = {
    "overlap": ("overlap_chunk",),
    "stems": ("stem_novel",),
    "overlap, bigrams": ("overlap_chunk", "bigram_novel"),
    "overlap, stems, bigrams": ("overlap_chunk", "stem_novel", "bigram_novel"),
    "overlap, numbers": ("overlap_chunk", "number_flag"),
    "overlap, bigrams, numbers": ("overlap_chunk", "bigram_novel", "number_flag"),
    "stems, numbers": ("stem_novel", "number_flag"),
}
RULES = ("z-sum", "rank average", "logistic")
AGGREGATIONS = ("most suspicious sentence", "mean of the top two", "noisy-OR")
# What the dev sweep chose, frozen in the protocol before any test partition was read; the
# report refuses to score the test partitions if the sweep no longer chooses it.
FROZEN = {"rule": "rank average", "signals": "overlap, stems, bigrams", "aggregation": "noisy-OR"}
BASELINES = ("sensitivity", "word overlap (chunk)", "word overlap (evidence)", "sentence gap", "shipped, as judged")


def fusion_table(features: FeatureSet, calibration: Calibration) -> pd.DataFrame:
    """A feature set's scored sentences with the lexical signals, ``number_flag``,
    ``sensitivity`` (the shipped statistics, on every sentence whatever its chunk count) and
    ``shipped`` (the product's score: the ``gap`` where the calibration does not serve the chunk count)."""
    table = with_lexical(detector_table(features), lexical_path(features))
    inputs = {f: table[f].to_numpy(float) for f in calibration.inputs}
    return table.assign(
        number_flag=(table["novel_numbers"] > 0).astype(float),
        sensitivity=calibration.score("sensitivity", inputs),
        shipped=judged(calibration, table, OperatingPoint())["score"].to_numpy(),
    )


def label_free_score(rule: str, reference: pd.DataFrame, rows: pd.DataFrame, signals: Sequence[str]) -> np.ndarray:
    """``rows``' fused score under ``rule``, each signal standardised (z-sum) or ranked (rank
    average: the share of ``reference``'s values below, ties counted half) on ``reference``, the
    domain's unlabelled rows."""
    total = np.zeros(len(rows))
    for name in signals:
        ref, x = reference[name].to_numpy(float), rows[name].to_numpy(float)
        if rule == "z-sum":
            total += (x - ref.mean()) / (ref.std() or 1.0)
        else:
            total += rank_share(np.sort(ref), x)
    return total


def rule_score(rule: str, signals: Sequence[str], reference: pd.DataFrame, others: Sequence[pd.DataFrame],
               rows: pd.DataFrame) -> np.ndarray:
    """The sentence score on ``rows`` fusing ``signals``: label-free on ``reference`` (the same
    domain's dev partition), or logistic fitted on ``others`` (the other domains' dev partitions)."""
    signals = list(signals)
    if rule == "logistic":
        return fit_logistic(others, signals).decision_function(rows[signals].to_numpy(float))
    return label_free_score(rule, reference, rows, signals)


def answer_scores(rows: pd.DataFrame, score: np.ndarray, probability: np.ndarray) -> dict[str, np.ndarray]:
    """Per answer (in order of first appearance): each :data:`AGGREGATIONS` of its sentences."""
    frame = rows[["case_id"]].assign(s=score, log_q=np.log1p(-np.clip(probability, 0, 1 - 1e-9)))
    by = frame.groupby("case_id", sort=False)
    return {
        "most suspicious sentence": by["s"].max().to_numpy(),
        "mean of the top two": by["s"].apply(lambda s: np.sort(s.to_numpy())[-2:].mean()).to_numpy(),
        "noisy-OR": -by["log_q"].sum().to_numpy(),
    }


def answer_labels(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.groupby("case_id", sort=False).agg(label=("label", "max"), source_id=("source_id", "first"))


def probabilities(score: np.ndarray, others: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """P(unsupported) of each sentence score: a logistic (Platt) map fitted on the other
    domains' dev (score, label) pairs, for the noisy-OR."""
    from sklearn.linear_model import LogisticRegression

    x = np.concatenate([s for s, _ in others])[:, None]
    y = np.concatenate([labels for _, labels in others])
    return LogisticRegression().fit(x, y).predict_proba(np.asarray(score)[:, None])[:, 1]


@dataclass
class Domain:
    name: str
    dev: pd.DataFrame
    test: pd.DataFrame


def _others(domain: Domain, domains: Sequence[Domain]) -> list[pd.DataFrame]:
    return [d.dev for d in domains if d.name != domain.name]


def score_on(rule: str, signals: Sequence[str], domain: Domain, domains: Sequence[Domain], rows: pd.DataFrame
             ) -> tuple[np.ndarray, np.ndarray]:
    """A candidate's sentence scores and probabilities on ``rows`` of ``domain``."""
    score = rule_score(rule, signals, domain.dev, _others(domain, domains), rows)
    other_pairs = [(rule_score(rule, signals, d.dev, _others(d, domains), d.dev), d.dev["label"].to_numpy())
                   for d in domains if d.name != domain.name]
    return score, probabilities(score, other_pairs)


def dev_sweep(domains: Sequence[Domain], sets: Mapping[str, Sequence[str]] = LEXICAL_SETS,
              rules: Sequence[str] = RULES, alone: Sequence[str] = ("sensitivity", "word overlap (chunk)")
              ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str]]:
    """On the dev partitions only: every (rule, signal set)'s sentence AUC per domain and their
    mean, each set fused with ``sensitivity``; then the best pair's answer AUC per aggregation.
    Returns both tables and the choice. ``alone``: baselines (or signals) shown for the reader."""
    from sklearn.metrics import roc_auc_score

    rows = {}
    for rule in rules:
        for name, signals in sets.items():
            fused = ["sensitivity", *signals]
            aucs = {d.name: roc_auc_score(d.dev["label"], rule_score(rule, fused, d.dev, _others(d, domains), d.dev))
                    for d in domains}
            rows[(rule, name)] = {**aucs, "mean": float(np.mean(list(aucs.values())))}
    sentences = pd.DataFrame.from_dict(rows, orient="index")
    rule, chosen = sentences["mean"].idxmax()  # the first of equals, in the order above
    sentences.index = [f"{r}: {lx}" for r, lx in sentences.index]
    for method in alone:  # for the reader; not candidates
        aucs = {d.name: roc_auc_score(d.dev["label"], baseline_scores(d.dev).get(method, d.dev.get(method)))
                for d in domains}
        sentences.loc[f"({method} alone)"] = {**aucs, "mean": float(np.mean(list(aucs.values())))}
    answers: dict[str, dict[str, float]] = {}
    for d in domains:
        score, probability = score_on(rule, ["sensitivity", *sets[chosen]], d, domains, d.dev)
        labels = answer_labels(d.dev)["label"].to_numpy()
        for aggregation, values in answer_scores(d.dev, score, probability).items():
            answers.setdefault(aggregation, {})[d.name] = roc_auc_score(labels, values)
    answer_table = pd.DataFrame.from_dict(answers, orient="index")
    answer_table["mean"] = answer_table.mean(axis=1)
    choice = {"rule": rule, "signals": chosen, "aggregation": str(answer_table["mean"].idxmax())}
    return sentences, answer_table, choice


def baseline_scores(rows: pd.DataFrame) -> dict[str, np.ndarray]:
    return {
        "sensitivity": rows["sensitivity"].to_numpy(float),
        "word overlap (chunk)": rows["overlap_chunk"].to_numpy(float),
        "word overlap (evidence)": rows["overlap_evidence"].to_numpy(float),
        "sentence gap": -rows["gap"].to_numpy(float),
        "shipped, as judged": rows["shipped"].to_numpy(float),
    }


@dataclass
class Scored:
    """One test set's sentence and answer bootstraps (the candidate and the baselines)."""

    name: str
    sentences: int
    unsupported: int
    sentence: pd.DataFrame  # per method: auc, lo, hi, and the differences from sensitivity and overlap
    answer: pd.DataFrame
    against: dict[str, dict[str, dict]]  # level -> baseline -> difference of the candidate


def score_test(rows: pd.DataFrame, candidate: np.ndarray, probability: np.ndarray, aggregation: str, name: str,
               n_resamples: int, seed: int, others: Mapping[str, np.ndarray] | None = None) -> Scored:
    """The candidate against the baselines (and ``others``: more sentence scores to compare, each
    aggregated at answer level by its most suspicious sentence) on one test set."""
    compared = {**baseline_scores(rows), **(others or {})}
    scores = {"candidate": candidate, **compared}
    y, groups = rows["label"].to_numpy(), rows["source_id"].to_numpy()
    sentence = source_bootstrap(y, scores, groups, n_resamples, seed)
    answers = answer_labels(rows)
    by_answer = {"candidate": answer_scores(rows, candidate, probability)[aggregation]}
    for method, values in compared.items():
        by_answer[method] = answer_scores(rows, values, values)["most suspicious sentence"]
    answer = source_bootstrap(answers["label"].to_numpy(), by_answer, answers["source_id"].to_numpy(),
                              n_resamples, seed)
    against = {level: {b: boot.difference("candidate", b) for b in ("sensitivity", "word overlap (chunk)")}
               for level, boot in (("sentence", sentence), ("answer", answer))}
    return Scored(name, len(rows), int(y.sum()), with_differences(sentence), with_differences(answer), against)


AGAINST = {"sensitivity": "− sensitivity", "word overlap (chunk)": "− word overlap"}


def with_differences(boot: BootstrapResult, against: Mapping[str, str] = AGAINST) -> pd.DataFrame:
    """Each method's AUC with its interval, and its paired difference from each baseline of
    ``against`` (method -> its column's name), as a report's table cells."""
    table = boot.intervals()
    cells = pd.DataFrame({"AUC": [interval_at(table, m, ["auc", "lo", "hi"]) for m in table.index]},
                         index=table.index)
    for baseline, column in against.items():
        diffs = boot.differences(baseline)
        cells[column] = [interval_at(diffs, m, sign="+") if m in diffs.index else "—"
                         for m in table.index]
    return cells


@dataclass
class Verdict:
    """The adoption rule on the benchmarks where the candidate is significantly ``better`` than
    ``baseline`` at sentence level, and where it is significantly ``worse`` (at ``worse_at``)."""

    better: list[str]
    worse: list[str]
    baseline: str = "sensitivity"
    worse_at: str = "sentence or answer level"

    @property
    def adopted(self) -> bool:
        return len(self.better) >= 2 and not self.worse

    def text(self) -> str:
        return (f"Significantly better than {self.baseline} at sentence level on {len(self.better)} of 3 benchmarks "
                f"({', '.join(self.better) or 'none'}); significantly worse at {self.worse_at} on "
                f"{len(self.worse)} ({', '.join(self.worse) or 'none'}): "
                f"{'adopt' if self.adopted else 'do not adopt'}")


def apply_rule(results: Sequence[Scored]) -> Verdict:
    better = [r.name for r in results if r.against["sentence"]["sensitivity"]["lo"] > 0]
    worse = [r.name for r in results
             if any(r.against[level]["sensitivity"]["hi"] < 0 for level in ("sentence", "answer"))]
    return Verdict(better, worse)


def goals(results: Sequence[Scored]) -> list[str]:
    """The issue's goals, each with its measured shortfall or margin (reported; not the rule)."""
    lines = []
    for r in results:
        margin = r.against["sentence"]["word overlap (chunk)"]["diff"]
        lines.append(f"- {r.name}: candidate − word overlap {margin:+.3f} at sentence level "
                     f"(goal ≥ +0.02: {'met' if margin >= 0.02 else 'not met'})")
    return lines


def fusion_report(sets: Mapping[str, FeatureSet], calibration: Calibration, command: str,
                  n_resamples: int = 2000, seed: int = 0, dev_only: bool = False) -> str:
    """The Markdown report: the dev sweep, then (unless ``dev_only``) the frozen candidate and the
    baselines on every test partition, RAGTruth's tasks apart, and the rule's verdict."""
    domains = []
    for name, features in sets.items():
        dev, test = partitioned(fusion_table(features, calibration), seed)
        domains.append(Domain(name, dev, test))
    sentences, answers, choice = dev_sweep(domains)
    lines = ["# Detector selection: the scorer's signal fused with word overlap", "", f"`{command}`", "",
             "Protocol and rule: docs/detector-selection.md (\"Word overlap and the scorer's signal, fused\"). "
             "Data: " + "; ".join(f"{n}: {fs.key}, {fs.table['case_id'].nunique()} answers scored"
                                  for n, fs in sets.items()) + ".", "",
             "## Dev partitions: rule and lexical set", "",
             "Sentence AUC of each rule fusing `sensitivity` with each lexical set, on each dev partition (z-sum "
             "and rank average standardise or rank on the domain's own dev rows without labels; logistic is "
             "fitted on the other two benchmarks' dev partitions). The best mean is chosen.", "",
             markdown_table(sentences), "",
             *aggregation_section(choice, answers),
             f"Chosen on dev: rule **{choice['rule']}**, lexical set **{choice['signals']}** "
             f"({', '.join(LEXICAL_SETS[choice['signals']])}), answer aggregation **{choice['aggregation']}**.", ""]
    if dev_only:
        return "\n".join(lines)
    check_frozen(choice, FROZEN)
    lines += ["## Test partitions", "",
              "AUC with 95% source-level bootstrap intervals (2,000 resamples), and each method's paired difference "
              "from `sensitivity` (today's shipped score, on every sentence) and from word overlap "
              "(`groundsense.lexical`, `1 − share of the sentence's words in its best-matching chunk`). "
              "*shipped, as judged* is the product's score, which falls back to the gap for answers scored in a "
              "chunk count the calibration was not fitted on. Answer level: each baseline's most suspicious "
              f"sentence; the candidate's {FROZEN['aggregation']}.", ""]
    sections, results = test_sections(domains, ["sensitivity", *LEXICAL_SETS[FROZEN["signals"]]], FROZEN,
                                      n_resamples, seed)
    lines += [*sections, "## Verdict", "", apply_rule(results).text() + ".", "", "Goals (reported beside the rule):",
              "", *goals(results), "",
              "## Every candidate on the test partitions (reported, not eligible)", "",
              "Sentence AUC of every (rule, lexical set) of the dev sweep on each test partition, for the reader: "
              "only the frozen choice is held against the rule.", "", markdown_table(every_candidate(domains)), ""]
    return "\n".join(lines)


def aggregation_section(choice: Mapping[str, str], answers: pd.DataFrame) -> list[str]:
    """A report's lines on the dev sweep's answer aggregations of the chosen (rule, signal set)."""
    return [f"## Dev partitions: answer aggregation of {choice['rule']}, {choice['signals']}", "",
            "Answer AUC (label: any unsupported sentence) of each aggregation of the chosen score's sentences; the "
            "noisy-OR maps scores to probabilities with a logistic fitted on the other benchmarks' dev "
            "partitions.", "", markdown_table(answers), ""]


def check_frozen(choice: Mapping[str, str], frozen: Mapping[str, str]) -> None:
    """Refuse to score a test partition when the dev sweep no longer makes the protocol's choice."""
    if dict(choice) != dict(frozen):
        raise ValueError(f"the dev sweep now chooses {choice}, not the protocol's frozen {frozen}: the data or the "
                         "code changed since the protocol was written; the test partitions are not scored")


def test_sets(domains: Sequence[Domain]) -> list[tuple[Domain, pd.DataFrame, str]]:
    """Each domain's test partition, then RAGTruth's by task (reported apart; not in the rule)."""
    sets = [(d, d.test, d.name) for d in domains]
    ragtruth = next((d for d in domains if d.name == "ragtruth"), None)
    if ragtruth is not None:
        sets += [(ragtruth, ragtruth.test[ragtruth.test["task"] == task].reset_index(drop=True),
                  f"ragtruth · {task}") for task in sorted(ragtruth.test["task"].unique())]
    return sets


def set_heading(label: str, rows: pd.DataFrame) -> str:
    """A test set's heading: its sentences, how many unsupported, and its answers."""
    return (f"### {label}: {len(rows)} sentences ({int(rows['label'].sum())} unsupported), "
            f"{rows['case_id'].nunique()} answers")


def test_sections(domains: Sequence[Domain], signals: Sequence[str], frozen: Mapping[str, str], n_resamples: int,
                  seed: int, others: Callable[[Domain, pd.DataFrame], dict[str, np.ndarray]] | None = None
                  ) -> tuple[list[str], list[Scored]]:
    """The frozen candidate (``signals`` fused by ``frozen``'s rule and aggregation) against the
    baselines and ``others(domain, rows)`` on every test set: the report's lines and the
    benchmarks' results, for the rule."""
    lines, results = [], []
    for domain, rows, label in test_sets(domains):
        score, probability = score_on(frozen["rule"], signals, domain, domains, rows)
        scored = score_test(rows, score, probability, frozen["aggregation"], label, n_resamples, seed,
                            others(domain, rows) if others else None)
        if label == domain.name:
            results.append(scored)
        lines += [set_heading(label, rows), "", "Sentence level:", "", markdown_table(scored.sentence),
                  "", "Answer level:", "", markdown_table(scored.answer), ""]
    return lines, results


def every_candidate(domains: Sequence[Domain]) -> pd.DataFrame:
    from sklearn.metrics import roc_auc_score

    rows = {}
    for rule in RULES:
        for name, signals in LEXICAL_SETS.items():
            rows[f"{rule}: {name}"] = {
                d.name: roc_auc_score(d.test["label"], rule_score(rule, ["sensitivity", *signals], d.dev,
                                                                  _others(d, domains), d.test)) for d in domains}
    return pd.DataFrame.from_dict(rows, orient="index")

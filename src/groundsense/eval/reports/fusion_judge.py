"""Candidate J of docs/detector-selection.md ("The judge's score as one more signal"): where a team
configures a judge, its score fused with ``sensitivity`` (and candidate F's lexical set) by a
label-free rule, on the sentences the cached judges scored.

The judges' caches (``eval verify``) cover subsets: every TofuEval summary, RAGTruth's 600-answer
sample and RAGBench's 140-answer sample. Each benchmark's sentences keep the seeded partition of
its whole feature set, so dev and test are the same sources as everywhere else; the candidates
are held on the test sentences a judge scored.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from ...judging.calibration import Calibration
from ..caches.extract import FeatureSet
from ..caches.verifier_scores import KEY, load_verifier_cache, scored
from ..statistics.benchmark_result import partitioned
from .fusion import (
    AGGREGATIONS,
    FROZEN,
    LEXICAL_SETS,
    Domain,
    apply_rule,
    dev_sweep,
    fusion_table,
    goals,
    score_on,
    test_sections,
)
from .tables import markdown_table

# The judges with committed caches: a column name each, and its verifier key's prefix.
JUDGES = {"judge 0.5B": "judge-qwen2.5-coder-0.5b-instruct", "judge 1.5B": "judge-qwen2.5-coder-1.5b-instruct"}
# The signal sets fused with ``sensitivity``, in order (ties go to the first).
SETS: dict[str, tuple[str, ...]] = {
    **{name: (name,) for name in JUDGES},
    **{f"{name}, {FROZEN['signals']}": (name, *LEXICAL_SETS[FROZEN["signals"]]) for name in JUDGES},
}
RULES = ("z-sum", "rank average")  # label-free only: the judge's score needs no labelled domain
# What the dev sweep chose, frozen in the protocol before any test partition was read; the
# report refuses to score the test partitions if the sweep no longer chooses it.
FROZEN_J = {"rule": "rank average", "signals": "judge 1.5B, overlap, stems, bigrams",
            "aggregation": "mean of the top two"}


def with_judges(table: pd.DataFrame, verifiers: Path, benchmark: str) -> pd.DataFrame:
    """``table``'s sentences that every judge of :data:`JUDGES` scored, a column of each judge's
    score (P(unsupported))."""
    caches = load_verifier_cache(verifiers, benchmark)
    for name, prefix in JUDGES.items():
        found = [rows for key, rows in caches.items() if key.split("__")[0] == prefix]
        if len(found) != 1:
            raise FileNotFoundError(f"need exactly one {prefix} cache under {Path(verifiers) / benchmark} "
                                    f"(found {len(found)}): run `groundsense eval verify` first")
        judged = scored(found[0])[[*KEY, "score"]].rename(columns={"score": name})
        table = table.astype({"sentence_index": "Int32"}).merge(judged, on=KEY, how="inner", validate="one_to_one")
    return table.reset_index(drop=True)


def judge_domains(sets: Mapping[str, FeatureSet], calibration: Calibration, verifiers: Path, seed: int
                  ) -> list[Domain]:
    """Each benchmark's dev and test partitions (of its whole feature set), kept to the sentences
    the judges scored."""
    domains = []
    for name, features in sets.items():
        dev, test = partitioned(fusion_table(features, calibration), seed)
        domains.append(Domain(name, with_judges(dev, verifiers, name), with_judges(test, verifiers, name)))
    return domains


def judge_fusion_report(sets: Mapping[str, FeatureSet], calibration: Calibration, verifiers: Path, command: str,
                        n_resamples: int = 2000, seed: int = 0, dev_only: bool = False) -> str:
    """The Markdown report: the dev sweep, then (unless ``dev_only``) the frozen candidate against
    today's score, word overlap, each judge alone and candidate F on the judged test sentences,
    and the rule's verdict."""
    domains = judge_domains(sets, calibration, verifiers, seed)
    sentences, answers, choice = dev_sweep(domains, SETS, RULES, ("sensitivity", "word overlap (chunk)", *JUDGES))
    sizes = "; ".join(f"{d.name}: {d.dev['case_id'].nunique()} dev and {d.test['case_id'].nunique()} test answers "
                      f"({len(d.dev)} and {len(d.test)} sentences)" for d in domains)
    lines = ["# Detector selection: the judge's score as one more signal", "", f"`{command}`", "",
             "Protocol and rule: docs/detector-selection.md (\"The judge's score as one more signal\"). Features: "
             + "; ".join(f"{n}: {fs.key}" for n, fs in sets.items()) + f". Judged sentences: {sizes}.", "",
             "## Dev partitions: rule and signal set", "",
             "Sentence AUC of each label-free rule fusing `sensitivity` with each signal set, on each dev partition "
             "(z-sum and rank average standardise or rank on the domain's own judged dev rows without labels). The "
             "best mean is chosen.", "", markdown_table(sentences), "",
             f"## Dev partitions: answer aggregation of {choice['rule']}, {choice['signals']}", "",
             "Answer AUC (label: any unsupported sentence) of each aggregation of the chosen score's sentences; the "
             "noisy-OR maps scores to probabilities with a logistic fitted on the other benchmarks' dev "
             "partitions.", "", markdown_table(answers), "",
             f"Chosen on dev: rule **{choice['rule']}**, signals **sensitivity, {choice['signals']}**, answer "
             f"aggregation **{choice['aggregation']}** (of {', '.join(AGGREGATIONS)}).", ""]
    if dev_only:
        return "\n".join(lines)
    if choice != FROZEN_J:
        raise ValueError(f"the dev sweep now chooses {choice}, not the protocol's frozen {FROZEN_J}: the data or "
                         "the code changed since the protocol was written; the test partitions are not scored")

    def others(domain: Domain, rows: pd.DataFrame) -> dict[str, np.ndarray]:
        fused_f, _ = score_on(FROZEN["rule"], ["sensitivity", *LEXICAL_SETS[FROZEN["signals"]]], domain, domains,
                              rows)
        return {**{name: rows[name].to_numpy(float) for name in JUDGES}, "candidate F": fused_f}

    sections, results = test_sections(domains, ["sensitivity", *SETS[FROZEN_J["signals"]]], FROZEN_J, n_resamples,
                                      seed, others)
    lines += ["## Test partitions: the judged sentences", "",
              "AUC with 95% source-level bootstrap intervals (2,000 resamples), and each method's paired difference "
              "from `sensitivity` (today's shipped score) and from word overlap, on the test sentences the judges "
              "scored. *candidate F* is the lexical fusion of selection-F.md on the same sentences. Answer level: "
              f"the candidate's {FROZEN_J['aggregation']}; every other method's most suspicious sentence.", "",
              *sections, "## Verdict", "", apply_rule(results).text() + ".", "", "Goals (reported beside the rule):",
              "", *goals(results), ""]
    return "\n".join(lines)

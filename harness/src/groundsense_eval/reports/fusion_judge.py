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

from groundsense.calibration import Calibration, RankFusion, paired_f1, shipped_fusion, top_two_mean

from ..caches.extract import FeatureSet
from ..caches.verifier_scores import KEY, load_verifier_cache, scored
from ..statistics.benchmark_result import partitioned
from ..statistics.bootstrap import source_bootstrap
from .fusion import (
    AGGREGATIONS,
    FROZEN,
    LEXICAL_SETS,
    Domain,
    aggregation_section,
    answer_labels,
    answer_scores,
    apply_rule,
    check_frozen,
    dev_sweep,
    fusion_table,
    goals,
    label_free_score,
    score_on,
    set_heading,
    test_sections,
    test_sets,
)
from .operating import Levels, OperatingPoint, flag_cells, judged, judged_levels
from .tables import interval_cells, interval_text, markdown_table

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
JUDGE = SETS[FROZEN_J["signals"]][0]  # the frozen candidate's judge, a column of the judged rows


def judge_spec(column: str = JUDGE) -> str:
    """The verifier spec of a judge column (``judge 1.5B`` -> ``judge:qwen2.5-coder-1.5b-instruct``)."""
    kind, _, model = JUDGES[column].partition("-")
    return f"{kind}:{model}"


def with_judges(table: pd.DataFrame, verifiers: Path, benchmark: str, judges: Mapping[str, str] = JUDGES
                ) -> pd.DataFrame:
    """``table``'s sentences that every judge of ``judges`` (column -> verifier key prefix) scored,
    a column of each judge's score (P(unsupported))."""
    caches = load_verifier_cache(verifiers, benchmark)
    for name, prefix in judges.items():
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
             *aggregation_section(choice, answers),
             f"Chosen on dev: rule **{choice['rule']}**, signals **sensitivity, {choice['signals']}**, answer "
             f"aggregation **{choice['aggregation']}** (of {', '.join(AGGREGATIONS)}).", ""]
    if dev_only:
        return "\n".join(lines)
    check_frozen(choice, FROZEN_J)

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
              "", *goals(results), "", *shipped_fusion_section(domains, calibration, n_resamples, seed),
              *fitted_fusion_section(domains, n_resamples, seed)]
    return "\n".join(lines)


def shipped_judge_fusion() -> RankFusion:
    """The fusion the package ships for the frozen candidate's judge."""
    fusion = shipped_fusion(judge_spec())
    if fusion is None:
        raise FileNotFoundError(f"the package ships no fusion for {judge_spec()}")
    return fusion


def fused_signals(fusion: RankFusion, rows: pd.DataFrame) -> dict[str, np.ndarray]:
    """``rows``' five fused signals (:meth:`RankFusion.signals`), the judge's score from its column."""
    features = {name: rows[name].to_numpy(float) for name in fusion.inputs}
    return fusion.signals(features, rows[JUDGE].to_numpy(float))


def cascade_scores(fusion: RankFusion, rows: pd.DataFrame) -> np.ndarray:
    """``rows``' fused score as the cascade computes it: their signals ranked against the
    fusion's own references (those of the rows it was fitted on: ``made_with['fitted_on']``)."""
    fused = fusion.score(fused_signals(fusion, rows))
    if np.isnan(fused).any():
        raise ValueError("a judged sentence has no fused score: the cascade would leave it undecided")
    return fused


def fused_levels(fusion: RankFusion, rows: pd.DataFrame, fused: np.ndarray) -> Levels:
    """The fused cascade's flags of ``rows`` given their ``fused`` scores: a sentence at the
    fusion's threshold; an answer when the mean of its two highest fused scores reaches the
    answer threshold or any of its sentences is flagged."""
    frame = rows[["case_id", "source_id", "label"]].assign(fused=fused, flagged=fused >= fusion.threshold)
    by = frame.groupby("case_id", sort=False)
    answers = by.agg(source_id=("source_id", "first"), label=("label", "max"), any_flagged=("flagged", "max"))
    top = by["fused"].apply(lambda s: top_two_mean(s.to_numpy())).to_numpy()
    blocked = answers["any_flagged"].to_numpy(bool) | (top >= fusion.answer_threshold)
    return {"sentence": (rows["label"], frame["flagged"].to_numpy(), rows["source_id"]),
            "answer": (answers["label"], blocked, answers["source_id"])}


def flag_rows(fusion: RankFusion, calibration: Calibration, rows: pd.DataFrame, n_resamples: int, seed: int
              ) -> pd.DataFrame:
    """The fused cascade's flags and the shipped detector's (its fitted thresholds, as
    `eval operating --score sensitivity` judges them) on ``rows``: each level's count and metrics with intervals,
    and the paired difference of their F1 (fused − detector)."""
    methods = {"fused cascade": fused_levels(fusion, rows, cascade_scores(fusion, rows)),
               "shipped detector": judged_levels(judged(calibration, rows, OperatingPoint()))}
    table = {f"{method}, {level}": {"n": len(y), **flag_cells(y, flagged, groups, n_resamples, seed)}
             for method, levels in methods.items() for level, (y, flagged, groups) in levels.items()}
    for level, (y, fused, groups) in methods["fused cascade"].items():
        detector_y, detector, _ = methods["shipped detector"][level]
        if not np.array_equal(y.to_numpy(), detector_y.to_numpy()):
            raise ValueError(f"the fused and the detector's {level} flags are not of the same items")
        difference = paired_f1(y.to_numpy(), fused, detector, groups.to_numpy(), n_resamples, seed)[2]
        table[f"F1, fused − detector, {level}"] = {"n": len(y), "f1": interval_text(*difference, sign="+")}
    return pd.DataFrame.from_dict(table, orient="index").fillna("—")


REFERENCES = ("the shipped file's references", "the benchmark's own dev references (the protocol)")


def reference_aucs(fusion: RankFusion, domain: Domain, rows: pd.DataFrame, n_resamples: int, seed: int
                   ) -> pd.DataFrame:
    """Sentence and answer (mean of the top two) AUC of the fused score ranked against the
    fusion's references and against ``domain``'s own dev rows (candidate J), and their paired difference."""
    signals = ["sensitivity", *SETS[FROZEN_J["signals"]]]
    scores = dict(zip(REFERENCES, (cascade_scores(fusion, rows),
                                   label_free_score(FROZEN_J["rule"], domain.dev, rows, signals))))
    answers = answer_labels(rows)
    levels = {"sentence": (rows["label"], rows["source_id"], scores),
              "answer": (answers["label"], answers["source_id"],
                         {name: answer_scores(rows, s, s)[FROZEN_J["aggregation"]] for name, s in scores.items()})}
    cells = {}
    for level, (y, groups, by_method) in levels.items():
        boot = source_bootstrap(y.to_numpy(), by_method, groups.to_numpy(), n_resamples, seed)
        diff = boot.difference(*REFERENCES)
        cells[f"{level} AUC"] = [*interval_cells(boot.intervals()),
                                 interval_text(diff["diff"], diff["lo"], diff["hi"], sign="+")]
    return pd.DataFrame(cells, index=[*REFERENCES, "shipped − own"])


def shipped_fusion_section(domains: list[Domain], calibration: Calibration, n_resamples: int, seed: int
                           ) -> list[str]:
    """The report's last section: the shipped fusion's flags and AUCs on every judged test set
    (RAGTruth's tasks apart), beside the shipped detector's flags."""
    fusion = shipped_judge_fusion()
    lines = ["## The shipped fused cascade on the judged test partitions", "",
             _section_intro(fusion, calibration, n_resamples), ""]
    for domain, rows, label in test_sets(domains):
        flags = flag_rows(fusion, calibration, rows, n_resamples, seed)
        aucs = reference_aucs(fusion, domain, rows, n_resamples, seed)
        lines += [set_heading(label, rows), "", "Flags:", "", markdown_table(flags), "", "AUC by references:", "",
                  markdown_table(aucs), ""]
    return lines


def fitted_fusion_section(domains: list[Domain], n_resamples: int, seed: int) -> list[str]:
    """The report's closing section: `fit --fuse`'s cross-validation (the weighted fusion against
    the ranks' average) on each benchmark's judged dev sentences, as a team with that many
    labelled answers would see it, and whether it would write the file."""
    from groundsense.calibration import compare, cross_validate, fusion_sides

    fusion = shipped_judge_fusion()
    rows = {}
    for domain in domains:
        values = fused_signals(fusion, domain.dev)
        finite = np.all([np.isfinite(v) for v in values.values()], axis=0)
        values = {name: v[finite] for name, v in values.items()}
        labels = domain.dev["label"].to_numpy()[finite]
        comparison = compare(cross_validate(labels, domain.dev["source_id"].to_numpy()[finite],
                                            fusion_sides(fusion, values, labels)), n_resamples, seed)
        table = comparison.cells()
        rows[domain.name] = {"answers": domain.dev["case_id"][finite].nunique(), "sentences": comparison.sentences,
                             "sources": comparison.groups,
                             **{f"{metric}, {side}": table[side][metric]
                                for metric in ("span AUC", "F1") for side in ("fitted", "default", "fitted − default")},
                             "written": "yes" if comparison.better else "no (exit 1)"}
    return ["## `fit --fuse` with a benchmark's labels", "",
            "What `groundsense fit --fuse` would find with each benchmark's judged dev answers as a team's labelled "
            "rows: five-fold source-grouped cross-validation of the logistic regression over the five ranks "
            "(*fitted*) against their plain average (*default*, the training-free fused score), both ranked against "
            "references from the training folds, with the shipped fusion's `sensitivity` statistics; each side's "
            f"best-F1 threshold from the training folds; 95% intervals over sources ({n_resamples:,} resamples). "
            "The file is written only when the AUC difference's interval lies above 0. Dev partitions only: no "
            "test sentence is read.", "", markdown_table(pd.DataFrame.from_dict(rows, orient="index")), ""]


def _section_intro(fusion: RankFusion, calibration: Calibration, n_resamples: int) -> str:
    detector = {level: calibration.threshold("sensitivity", level) for level in ("sentence", "answer")}
    return (
        f"The fusion file the package ships for {fusion.verifier}, as `Cascade(detector, judge, fuse=True)` runs it: "
        f"each sentence's five signals ranked against the file's references ({fusion.made_with['fitted_on']}, "
        "not each benchmark's own dev rows as in the protocol above), a sentence flagged at a "
        f"fused score ≥ {fusion.threshold:.3f}, an answer when the mean of its two highest fused scores reaches "
        f"{fusion.answer_threshold:.3f} or any of its sentences is flagged. *shipped detector*: today's flags on "
        "the same sentences, at the shipped calibration's fitted thresholds as `eval operating --score sensitivity` "
        "judges them "
        f"(sensitivity ≥ {detector['sentence']:.3f} for a sentence, its most suspicious sentence ≥ "
        f"{detector['answer']:.3f} for an answer, in the chunk counts the calibration was fitted on, "
        f"{', '.join(map(str, calibration.chunk_counts))}; the gap score rule and its thresholds in the others). "
        "Precision, recall, F1 and share flagged with 95% source-level bootstrap intervals "
        f"({n_resamples:,} resamples), and the paired difference of the two F1s. Then the fused score's AUC ranked "
        "against the file's references (what ships) and against the benchmark's own judged dev rows (the candidate "
        "above, what `calibrate --adapt --fuse` does for a domain), with their paired difference.")

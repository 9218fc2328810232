"""Candidate V-135M of docs/detector-selection.md ("A trained verifier (issue #55)") on the test
partitions, leave-one-benchmark-out: the trained verifier alone, as F's fused partner and as the
verifier of a cascade, each against F (the default score) and word overlap on the same sentences;
TofuEval's balanced accuracy at a threshold chosen on its dev partition; and the adoption rule.

Each benchmark is scored by the model that holds it out (RAGTruth by the TofuEval-held-out model,
in-domain), from the scores cached for it (:mod:`~groundsense_eval.caches.trained_scores`). A
benchmark whose model has no scores is not read: the report says what is missing and which
commands make it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from groundsense.calibration import Calibration, RankFusion, reference_sample, youden_threshold
from groundsense.config import DEFAULTS

from ..caches.trained_scores import MODEL_OF, ModelScores
from ..caches.verifier_scores import KEY
from ..statistics.benchmark_result import partitioned
from ..statistics.bootstrap import BootstrapResult, source_bootstrap
from .default_score import product_judgements
from .fusion import Domain, Verdict, set_heading, test_sets, with_differences
from .tables import markdown_table
from .verifier_measures import balanced_accuracy, escalated, partnered

ORDER = ("tofueval", "ragbench", "ragtruth")  # the protocol's: TofuEval held out, RAGBench held out, RAGTruth
ALONE, FUSED, CASCADE = "(a) verifier alone", "(b) F + verifier, fused", "(c) cascade: F, then the verifier"
DEFAULT, OVERLAP = "F (the default score)", "word overlap"
AGAINST = {DEFAULT: "− F", OVERLAP: "− word overlap"}
MODELS = {"tofueval": "the TofuEval-held-out model", "ragbench": "the RAGBench-held-out model"}
# LLM-AggreFact's balanced accuracy on TofuEval-MeetingBank (published; not these sentences).
PUBLISHED = {"AlignScore": 72.6, "MiniCheck-FT5": 77.3}
GOALS = {"tofueval": 0.707, "ragbench": 0.774, "ragtruth": 0.77}  # issue #55's, for (b)


def with_verifier(rows: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """``rows``' sentences that ``scores`` (``case_id``, ``sentence_index``, ``score``) holds, its
    score as ``verifier``."""
    right = scores[[*KEY, "score"]].astype({"sentence_index": "Int32"}).rename(columns={"score": "verifier"})
    return (rows.astype({"sentence_index": "Int32"}).merge(right, on=KEY, how="inner", validate="one_to_one")
            .reset_index(drop=True))


def candidate_domains(models: Mapping[str, ModelScores], tables: Mapping[str, pd.DataFrame], seed: int
                      ) -> list[Domain]:
    """Each benchmark whose model has sentence scores: its dev and test partitions (of its whole
    table, ``tables[name]``: :func:`.fusion.fusion_table` rows), kept to the sentences scored."""
    domains = []
    for name in benchmarks_scored(models):
        dev, test = partitioned(tables[name], seed)
        own = models[MODEL_OF[name]].scores_of(name)
        domains.append(Domain(name, with_verifier(dev, own), with_verifier(test, own)))
    return domains


def measured(rows: pd.DataFrame, training: np.ndarray | None, calibration: Calibration,
             fusions: Mapping[str, RankFusion], n_resamples: int, seed: int) -> BootstrapResult:
    """The sentence AUCs, on ``rows``, of the verifier alone, fused with F (its reference sample
    the ``training`` rows' scores; left out without them), and as a cascade's verifier, with F's
    and word overlap's, on the same resamples of sources."""
    sentences, _ = product_judgements(rows, calibration, fusions)
    f, verifier = sentences["f"].to_numpy(float), sentences["verifier"].to_numpy(float)
    scores = {ALONE: verifier}
    if training is not None:
        scores[FUSED] = partnered(sentences, fusions, verifier, reference_sample(training))
    scores |= {CASCADE: escalated(f, verifier), DEFAULT: f, OVERLAP: sentences["overlap_chunk"].to_numpy(float)}
    return source_bootstrap(sentences["label"].to_numpy(), scores, sentences["source_id"].to_numpy(), n_resamples,
                            seed)


def tofueval_balanced_accuracy(domain: Domain, n_resamples: int, seed: int) -> pd.DataFrame:
    """The verifier's balanced accuracy on TofuEval's test sentences at the threshold with the best
    one on its dev sentences (the best Youden's J, which is the same), in percent, beside the
    published figures."""
    threshold = youden_threshold(domain.dev["verifier"].to_numpy(float), domain.dev["label"].to_numpy())
    test = domain.test
    value, lo, hi = balanced_accuracy(test["label"].to_numpy(), test["verifier"].to_numpy(float) >= threshold,
                                      test["source_id"].to_numpy(), n_resamples, seed)
    percent = f"{100 * value:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
    rows: dict[str, dict[str, Any]] = {
        "V-135M alone (TofuEval held out)": {"threshold (on dev)": f"{threshold:.3f}", "balanced accuracy": percent}}
    rows |= {f"{name} (LLM-AggreFact, published)": {"threshold (on dev)": "—", "balanced accuracy": f"{figure:.1f}"}
             for name, figure in PUBLISHED.items()}
    return pd.DataFrame.from_dict(rows, orient="index")


def model_table(models: Mapping[str, ModelScores]) -> pd.DataFrame:
    """Per model: what its run's manifest says it was trained on and how, and what scores it has."""
    rows = {}
    for hold_out, model in models.items():
        made = model.manifest or {}
        identity = made.get("identity", {})
        settings = identity.get("hyperparameters", {})
        rows[f"{hold_out} held out"] = {
            "trained on": ", ".join(identity.get("trained_on", [])) or "—",
            "data": identity.get("data_version") or "—", "learning rate": settings.get("learning_rate", "—"),
            "epochs": settings.get("epochs", "—"), "rows": _rows(made),
            "finished": ("yes" if made.get("finished") else "no") if made else "—",
            "sentence scores": f"{len(model.sentences):,} ({model.source})" if model.sentences is not None else "none",
            "training rows scored": f"{len(model.training):,}" if model.training is not None else "none"}
    return pd.DataFrame.from_dict(rows, orient="index").astype(str)


def _rows(manifest: Mapping[str, Any]) -> str:
    """The rows a run trained on, and the draw's size where it was a draw (a learning-curve run)."""
    if not manifest:
        return "—"
    limit = manifest["identity"]["limit"]
    return f"{manifest['rows']:,}" + (f" (a draw of {limit:,})" if limit else "")


def verifier_selection_report(models: Mapping[str, ModelScores], tables: Mapping[str, pd.DataFrame],
                              calibration: Calibration, fusions: Mapping[str, RankFusion], command: str,
                              n_resamples: int = 2000, seed: int = 0) -> str:
    """The Markdown report. ``models``: each hold-out's scores; ``tables``: the fusion-table rows of
    each benchmark whose model has sentence scores (no other is read)."""
    missing = [line for model in models.values() for line in model.missing()]
    domains = candidate_domains(models, tables, seed)
    sections, differences = held_out_sections(domains, models, calibration, fusions, n_resamples, seed, missing)
    lines = ["# Detector selection: a trained verifier (candidate V-135M)", "", f"`{command}`", "",
             "Protocol and rule: docs/detector-selection.md (\"A trained verifier (issue #55)\"). Each benchmark's "
             "test partition (the seeded source-level 40%) is scored by the model that holds it out; RAGTruth's by "
             "the TofuEval-held-out model, which trained on RAGTruth's train split: in-domain.", "",
             "## The models", "", markdown_table(model_table(models)), "",
             "## Test partitions: sentence AUC", "",
             f"AUC with 95% source-level bootstrap intervals ({n_resamples:,} resamples, seed {seed}) and each "
             "method's paired difference from F and from word overlap (`overlap_chunk`), on the test sentences the "
             "verifier scored. F is the default score as the product computes it (the shipped fp32 lexical fusions; "
             "two-pass mode's where the calibration does not serve the chunk count). (b) adds the verifier's "
             "P(unsupported) to F's rank average as a fifth signal, ranked against its scores of the rows its model "
             "trained on; F's other signals and references are unchanged. (c) ranks the sentences the shipped "
             f"cascade escalates (F's most suspicious {DEFAULTS.escalate:.0%} of the set) above the rest, by the "
             "verifier's score, and the rest by F.", "",
             *(sections or ["No test figure: no model has sentence scores yet.", ""]),
             "## TofuEval: balanced accuracy of the verifier alone", "",
             *balanced_accuracy_lines(domains, n_resamples, seed, missing),
             "## Verdict", "", *verdict_lines(differences), ""]
    if missing:
        lines += ["## What is missing", "", *(f"- {line}" for line in missing), "",
                  "On a lent GPU, `scripts/gpu_verifier.sh evaluate HOLD_OUT LR EPOCHS` writes a run's manifest.json, "
                  "scores.parquet and training-scores.parquet to `$OUT/RUN/`: copy them into the hold-out's folder "
                  "(CONTRIBUTING.md, \"On a lent GPU machine\"). No test partition is read for a model without its "
                  "scores.", ""]
    return "\n".join(lines)


def held_out_sections(domains: list[Domain], models: Mapping[str, ModelScores], calibration: Calibration,
                  fusions: Mapping[str, RankFusion], n_resamples: int, seed: int, missing: list[str]
                  ) -> tuple[list[str], dict[str, BootstrapResult]]:
    """Each test set's heading and table (RAGTruth's tasks apart), and each benchmark's bootstrap where
    it has (b), for the rule; a set without a scored sentence is added to ``missing``."""
    lines, differences = [], {}
    for domain, rows, label in test_sets(domains):
        model = models[MODEL_OF[domain.name]]
        if rows.empty:
            missing.append(f"no test sentence of {label} among {model.source}'s scores")
            continue
        boot = measured(rows, model.training, calibration, fusions, n_resamples, seed)
        if label == domain.name and FUSED in boot.point:
            differences[label] = boot
        kind = ", in-domain" if domain.name == "ragtruth" else ""
        lines += [set_heading(f"{label} ({MODELS[model.hold_out]}{kind})", rows), "",
                  markdown_table(with_differences(boot, AGAINST)), ""]
    return lines, differences


def balanced_accuracy_lines(domains: list[Domain], n_resamples: int, seed: int, missing: list[str]) -> list[str]:
    """TofuEval's balanced accuracy section, or why it is not measured (added to ``missing``)."""
    tofueval = next((d for d in domains if d.name == "tofueval"), None)
    if tofueval is not None and not tofueval.dev.empty and not tofueval.test.empty:
        return ["At the threshold with the best balanced accuracy on TofuEval's dev partition, on its test "
                "partition (95% source-level interval, in percent), beside LLM-AggreFact's published figures on "
                "TofuEval-MeetingBank (other sentences and labels, so not paired).", "",
                markdown_table(tofueval_balanced_accuracy(tofueval, n_resamples, seed)), ""]
    if tofueval is not None:
        missing.append("TofuEval's dev and test sentences, both, among the TofuEval-held-out model's scores")
    return ["Not measured: it needs the TofuEval-held-out model's scores of TofuEval's dev and test sentences.", ""]


def verdict_lines(differences: Mapping[str, BootstrapResult]) -> list[str]:
    """The adoption rule on (b) − F at sentence level, once all three benchmarks have it, and the
    issue's goals beside it."""
    absent = [name for name in ORDER if name not in differences]
    if absent:
        return [f"Not evaluated: (b) has no figure on {', '.join(absent)} (see what is missing below). The rule: "
                "adopted only if (b) is significantly better than F at sentence level on at least two of the three "
                "benchmarks and not significantly worse on any."]
    against = {name: boot.difference(FUSED, DEFAULT) for name, boot in differences.items()}
    verdict = Verdict([n for n, d in against.items() if d["lo"] > 0], [n for n, d in against.items() if d["hi"] < 0],
                      "F", "sentence level")
    goals = [f"- {name}: (b) {differences[name].point[FUSED]:.3f} against {bar:.3f}: "
             f"{'met' if differences[name].point[FUSED] >= bar else 'not met'}" for name, bar in GOALS.items()]
    return [f"{verdict.text()}.", "", "Issue #55's goals for (b), reported beside the rule:", "", *goals]


def benchmarks_scored(models: Mapping[str, ModelScores]) -> list[str]:
    """The benchmarks whose model has scores of their sentences: the tables the report reads."""
    return [name for name in ORDER if name in models[MODEL_OF[name]].benchmarks()]

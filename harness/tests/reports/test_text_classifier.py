"""The trained text classifier baseline of `eval text-classifier`, on constructed sentences."""

import numpy as np
import pandas as pd

from groundsense_eval.reports.fusion import Domain
from groundsense_eval.reports.text_classifier import (
    CLASSIFIER,
    in_domain_rows,
    text_classifier,
    top_terms,
    transfer_rows,
    unsupported_probability,
)

FILLER = ["the", "council", "approved", "budget", "report", "meeting", "city", "plan", "water", "board"]


def sentences(marker: str, n_sources: int = 30, per_source: int = 10, seed: int = 0, task: str = "QA"
              ) -> pd.DataFrame:
    """Sentences of random filler words; the unsupported ones carry ``marker``, a word the
    classifier can learn and word overlap (here, noise) cannot see."""
    rng = np.random.default_rng(seed)
    n = n_sources * per_source
    label = rng.random(n) < 0.25
    text = [" ".join(rng.choice(FILLER, 6)) + (f" {marker}" if y else "") for y in label]
    return pd.DataFrame({
        "sentence": text, "label": label.astype(int),
        "source_id": np.repeat([f"{marker}{i}" for i in range(n_sources)], per_source),
        "case_id": [f"{marker}{i // 2}" for i in range(n)], "task": task,
        "sensitivity": rng.random(n), "overlap_chunk": rng.random(n),
    })


def test_the_classifier_learns_the_words_of_the_unsupported_sentences():
    train = sentences("reportedly")
    model = text_classifier(train["sentence"], train["label"].to_numpy())
    p = unsupported_probability(model, ["the city plan reportedly", "the city plan"])
    assert p[0] > 0.5 > p[1]
    assert top_terms(model, 1) == ["reportedly"]


def test_in_domain_it_beats_overlap_out_of_fold_where_the_words_tell():
    found = in_domain_rows({"constructed": sentences("reportedly")}, 200, 0)
    row = found.loc["constructed"]
    assert row["sentences"].startswith("300 (") and row["sources"] == "30"
    assert float(row["in-domain fit"].split()[0]) > 0.95 > float(row["word overlap"].split()[0])
    assert row["fit − word overlap"].startswith("+")


def test_trained_elsewhere_it_falls_to_chance_where_other_words_tell():
    train = sentences("reportedly")
    model = text_classifier(train["sentence"], train["label"].to_numpy())
    same, other = sentences("reportedly", seed=1), sentences("allegedly", seed=2)
    domains = [Domain("ragtruth", same, same), Domain("tofueval", other, other)]
    sentence, answer = transfer_rows(model, domains, 200, 0)
    assert list(sentence.index) == ["ragtruth", "tofueval", "ragtruth · QA"]  # RAGTruth's tasks apart
    assert float(sentence.loc["ragtruth", CLASSIFIER].split()[0]) > 0.95
    assert abs(float(sentence.loc["tofueval", CLASSIFIER].split()[0]) - 0.5) < 0.1
    assert answer.loc["tofueval", "n (unsupported)"].startswith("150 (")  # two sentences an answer


def test_the_command_names_the_cache_it_lacks(tmp_path, monkeypatch):
    from pathlib import Path

    from helpers.cli import run

    monkeypatch.chdir(Path(__file__).parents[3])
    refused = run("eval", "text-classifier", "--cache", "results/features")
    assert refused.exit_code == 2 and "give --split-cache" in refused.output
    refused = run("eval", "text-classifier", "--cache", "results/features", "--split-cache", "results/split-features",
                  "--train-cache", str(tmp_path))
    assert refused.exit_code == 2
    assert f"need exactly one full-mode smollm2-135m-instruct ragtruth feature set under {tmp_path}" in refused.output

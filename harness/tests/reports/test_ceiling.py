"""The in-domain fit of `eval ceiling` against word overlap, on constructed sentences."""

import numpy as np
import pandas as pd
import pytest

from groundsense_eval.reports.ceiling import GOAL, ceiling_rows, in_domain_fit, reached


def rows(n_sources: int = 40, per_source: int = 12, seed: int = 0) -> pd.DataFrame:
    """Sentences whose label a hidden signal tells apart and word overlap only faintly."""
    rng = np.random.default_rng(seed)
    n = n_sources * per_source
    label = rng.random(n) < 0.2
    return pd.DataFrame({
        "label": label.astype(int),
        "source_id": np.repeat([f"s{i}" for i in range(n_sources)], per_source),
        "hidden": label + rng.normal(0, 0.5, n),
        "overlap_chunk": 0.2 * label + rng.random(n),
        "gap": rng.normal(size=n), "n_tokens": rng.integers(3, 30, n).astype(float),
    })


def test_a_fit_over_a_signal_overlap_lacks_beats_it_out_of_fold():
    found = in_domain_fit(rows(), ["hidden"], n_resamples=200, seed=0)
    assert found.auc["fitted"][0] > 0.85 > found.auc["default"][0]
    assert found.auc["fitted − default"][1] > 0  # the interval lies above 0
    assert found.groups == 40


def test_the_table_reads_the_goal_from_the_difference_and_a_fit_skips_sentences_without_every_value():
    table = rows()
    table.loc[:9, "hidden"] = np.nan  # ten sentences a fit over "hidden" cannot use
    found = ceiling_rows({"constructed": table}, {"overlap": ("overlap_chunk",), "hidden": ("hidden",)}, 200, 0)
    assert found.loc["constructed · overlap", "sentences"].startswith(f"{len(table)} (")
    assert found.loc["constructed · hidden", "sentences"].startswith(f"{len(table) - 10} (")
    assert found.loc["constructed · hidden", f"≥ +{GOAL}"] == "yes"
    assert found.loc["constructed · overlap", f"≥ +{GOAL}"] == "no"  # a fit on overlap alone gains nothing
    assert reached(found, {"constructed": table}) == ("Reaching word overlap + 0.02 with the domain's own labels: "
                                                      "constructed: hidden.")


def test_covered_sentences_are_counted_and_ranked_among_themselves():
    """Sentences with no novel stem and no novel number: their share per label, and each score's
    AUC among them only (the score ranks them right and the others backwards)."""
    from sklearn.metrics import roc_auc_score

    from groundsense_eval.reports.ceiling import covered_rows

    table = rows()
    stems = np.where(np.arange(len(table)) % 2 == 0, 0.0, 0.5)
    numbers = np.where(np.arange(len(table)) % 4 == 2, 1.0, 0.0)  # half the stem-covered state a novel number
    covered = (stems == 0) & (numbers == 0)
    table = table.assign(stem_novel=stems, novel_numbers=numbers,
                         sensitivity=np.where(covered, table["hidden"], -table["hidden"]))
    found = covered_rows({"constructed": table}, {"sensitivity": "sensitivity"}, 200, 0).loc["constructed"]
    n_unsupported, n_covered = int(table["label"].sum()), int(table["label"][covered].sum())
    assert found["unsupported, covered"].startswith(f"{n_covered} of {n_unsupported} (")
    assert found["supported, covered"].startswith(f"{covered.sum() - n_covered} of {len(table) - n_unsupported} (")
    expected = roc_auc_score(table["label"][covered], table["sensitivity"][covered])
    assert float(found["sensitivity"].split()[0]) == pytest.approx(expected, abs=5e-4) and expected > 0.85
    assert roc_auc_score(table["label"], table["sensitivity"]) < 0.7  # over every sentence it would not be


def test_without_both_labels_among_the_covered_no_auc_is_given():
    from groundsense_eval.reports.ceiling import covered_rows

    table = rows().assign(stem_novel=lambda t: np.where(t["label"] == 1, 0.5, 0.0), novel_numbers=0.0,
                          sensitivity=0.0)
    found = covered_rows({"constructed": table}, {"sensitivity": "sensitivity"}, 200, 0)
    assert found.loc["constructed", "unsupported, covered"].startswith("0 of ")
    assert "sensitivity" not in found.columns

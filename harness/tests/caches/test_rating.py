"""Attribution ratings (step 2): the rater on the real default scorer, the resumable run
into ratings-<judge>.parquet, and `eval rate-attribution`."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from click.testing import CliRunner

from groundsense.cli import cli
from groundsense.errors import InputError
from groundsense.verification import option_probabilities
from groundsense_eval.caches.attribution import attribution_summary
from groundsense_eval.caches.rater import SupportRater, rating_layout
from groundsense_eval.caches.rating import COLUMNS, PROBABILITY_COLUMNS, rate_pairs, read_ratings
from groundsense_eval.caches.rating_scale import SCALE

EIFFEL = "The Eiffel Tower is in Paris. It was completed in 1889 for the World's Fair."
BANANAS = "Bananas are yellow when ripe. They grow in tropical climates."
COLOSSEUM = "The Colosseum is in Rome. It could hold about 50,000 spectators."
COPIED = "It was completed in 1889 for the World's Fair."


def pairs_table() -> pd.DataFrame:
    """Five rows over two answers and three chunk texts, as `eval attribution-pairs` writes them."""
    rows = [
        ("ragtruth:1", 0, "detector", 0, COPIED, EIFFEL),
        ("ragtruth:1", 0, "random", 1, COPIED, BANANAS),
        ("ragtruth:1", 0, "lexical", 0, COPIED, EIFFEL),
        ("ragtruth:2", 1, "detector", 2, "The Colosseum held 50,000 people.", COLOSSEUM),
        ("ragtruth:2", 1, "random", 0, "The Colosseum held 50,000 people.", EIFFEL),
    ]
    return pd.DataFrame(rows, columns=["case_id", "sentence_index", "which", "chunk", "sentence", "chunk_text"])


def test_the_scale_loads_without_torch():
    """Ratings can be read without loading a scorer."""
    code = "import sys, groundsense_eval.caches.rating_scale; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.fixture(scope="module")
def rater(scorer):
    return SupportRater(scorer)


def test_ratings_are_on_the_scale_with_option_probabilities(rater):
    sentences = [COPIED, "The Eiffel Tower is in London.", COPIED]
    ratings = rater.rate(EIFFEL, sentences)
    assert set(ratings.rating) <= set(SCALE) and len(ratings.rating) == 3
    np.testing.assert_allclose(ratings.probabilities.sum(axis=1), 1.0, rtol=1e-9)
    assert ((ratings.mass > 0) & (ratings.mass <= 1)).all()
    assert ratings.rating == [SCALE[i] for i in ratings.probabilities.argmax(axis=1)]
    np.testing.assert_array_equal(ratings.probabilities[0], ratings.probabilities[2])  # a repeat is run once


def test_shared_passage_encoding_equals_one_plain_pass_per_sentence(scorer, rater):
    sentences = [COPIED, "Bananas are blue."]
    ratings = rater.rate(EIFFEL, sentences)
    layout = rating_layout(scorer.tokenizer)
    ids = [i for option in rater.option_ids for i in option]
    for row, sentence in enumerate(sentences):
        tokens = (scorer.encode_prefix(layout.prefix) + scorer.tokenize(EIFFEL) + scorer.tokenize(layout.lead)
                  + scorer.tokenize(sentence) + scorer.tokenize(layout.suffix))
        with torch.inference_mode():
            logits = scorer.model(input_ids=torch.tensor([tokens]), use_cache=False).logits[0, -1]
        logp = torch.log_softmax(logits.float(), -1)[ids].double().numpy()
        p, mass = option_probabilities(logp[None], [len(o) for o in rater.option_ids])
        np.testing.assert_allclose(ratings.probabilities[row], p[0], atol=1e-4)
        assert abs(ratings.mass[row] - mass[0]) <= 1e-4


@pytest.mark.parametrize("sentence, source, unrelated", [
    (COPIED, EIFFEL, BANANAS),
    ("It could hold about 50,000 spectators.", COLOSSEUM, EIFFEL),
])
def test_a_copied_sentence_is_more_fully_supported_by_its_source(rater, sentence, source, unrelated):
    full = SCALE.index("full")
    own, other = rater.rate(source, [sentence]), rater.rate(unrelated, [sentence])
    assert own.probabilities[0, full] > other.probabilities[0, full]


def test_blank_input_is_refused(rater):
    with pytest.raises(InputError, match="must have text"):
        rater.rate("  ", [COPIED])


def test_option_probabilities_sum_each_options_spellings():
    logp = np.log(np.array([[0.2, 0.1, 0.05, 0.1, 0.05]]))  # option sizes 2, 1, 2
    p, mass = option_probabilities(logp, [2, 1, 2])
    np.testing.assert_allclose(p[0], [0.6, 0.1, 0.3])
    assert mass[0] == pytest.approx(0.5)


def test_a_rerun_keeps_the_rated_rows_and_rates_only_the_rest(tmp_path, rater):
    path, pairs = tmp_path / "ratings-judge.parquet", pairs_table()
    first = rate_pairs(rater, pairs, path, limit=3, every=2, progress=False)
    before = read_ratings(path)
    assert (first.rated, first.skipped, len(before)) == (3, 0, 3)
    second = rate_pairs(rater, pairs, path, every=2, progress=False)
    after = read_ratings(path)
    assert (second.rated, second.skipped, len(after)) == (2, 3, 5)
    assert list(after.columns) == COLUMNS
    pd.testing.assert_frame_equal(after.iloc[:3], before)  # the first run's rows untouched
    assert after.set_index(["case_id", "sentence_index", "which"]).index.is_unique
    np.testing.assert_allclose(after[PROBABILITY_COLUMNS].sum(axis=1), 1.0)
    assert rate_pairs(rater, pairs, path, progress=False).rated == 0
    summary = attribution_summary(after)  # what `eval report` reads
    assert summary.rates.loc["detector", "n"] == 2


@pytest.mark.slow  # loads the real scorer as the judge
def test_cli_rates_the_pairs_beside_them(tmp_path):
    folder = tmp_path / "attribution" / "ragtruth" / "smollm2-135m-instruct__full-k5-test"
    folder.mkdir(parents=True)
    pairs_table().to_parquet(folder / "pairs.parquet", index=False)
    result = CliRunner().invoke(cli, ["eval", "rate-attribution", "ragtruth", "--judge",
                                      "smollm2-135m-instruct", "--cache", str(tmp_path / "features"),
                                      "--limit", "4", "--no-progress"])
    assert result.exit_code == 0, result.output
    ratings = pd.read_parquet(folder / "ratings-smollm2-135m-instruct.parquet")
    assert len(ratings) == 4 and set(ratings["rating"]) <= set(SCALE)


@pytest.mark.parametrize("columns, message", [
    (None, "eval attribution-pairs ragtruth --cache"),  # no pairs file: the command that writes it
    (["case_id", "sentence_index"], "lacks the columns"),
    ("blank", "blank sentence or chunk"),
])
def test_cli_refuses_missing_or_bad_pairs(tmp_path, columns, message):
    if columns:
        folder = tmp_path / "attribution" / "ragtruth" / "key"
        folder.mkdir(parents=True)
        table = pairs_table().assign(sentence=" ") if columns == "blank" else pairs_table()[columns]
        table.to_parquet(folder / "pairs.parquet", index=False)
    result = CliRunner().invoke(cli, ["eval", "rate-attribution", "ragtruth", "--judge", "smollm2-135m-instruct",
                                      "--attribution", str(tmp_path / "attribution")])
    assert result.exit_code == 2 and message in result.output


def test_attribution_pairs_says_to_score_a_set_where_none_is_cached(tmp_path):
    result = CliRunner().invoke(cli, ["eval", "attribution-pairs", "ragtruth", "--cache", str(tmp_path)])
    assert result.exit_code == 2
    assert (f"no full-mode, exact leave-one-out ragtruth feature set under {tmp_path}: score one first "
            f"(`groundsense eval extract ragtruth --cache {tmp_path}`)") in " ".join(result.output.split())

"""The trained verifier (issue #55): its input, training, resuming, and the saved adapter and head.
The plumbing runs on a copy of the tiny random model (the adapter changes a model in place); one
test loads the real default scorer under the adapter."""

import copy
import gzip
import json
from itertools import islice

import numpy as np
import pandas as pd
import pytest
import torch
from click.testing import CliRunner

from groundsense.cli import cli
from groundsense.errors import InputError
from groundsense.scorer import Scorer
from groundsense.verification import SentenceInput
from groundsense_eval.caches.verifier_scores import load_verifier_cache
from groundsense_eval.data.cases import Case, LabelledSentence
from groundsense_eval.data.locations import data_root
from groundsense_eval.data.ragtruth import load_ragtruth
from groundsense_eval.data.training_set import COLUMNS, sentence_rows
from groundsense_eval.fits.verifier import TrainedVerifier
from groundsense_eval.fits.verifier_inputs import CLAIM, EVIDENCE, QUESTION, chunk_texts, input_ids
from groundsense_eval.fits.verifier_training import (
    ARTEFACT,
    CHECKPOINT,
    MANIFEST,
    Hyperparameters,
    begin,
    data_identity,
    row_inputs,
    run_manifest,
    train,
    training_rows,
)

pytestmark = pytest.mark.numeric

CHUNKS = ["The cat sat on the mat.", "Dogs bark loudly at night."]
CLAIMS = [("The cat sat on the mat.", 0), ("Dogs bark at night.", 0), ("Zebras orbit Jupiter quickly.", 1),
          ("Quantum violins melt.", 1)] * 4


@pytest.fixture
def tiny_base(tiny_scorer):
    """A scorer around a copy of the tiny model, for an adapter to change."""
    return Scorer.from_model(copy.deepcopy(tiny_scorer.model), tiny_scorer.tokenizer, tiny_scorer.name)


def toy_inputs(scorer):
    return [input_ids(scorer, CHUNKS, claim) for claim, _ in CLAIMS], [label for _, label in CLAIMS]


def text_of(scorer, ids):
    return scorer.tokenizer.decode(ids)


def test_the_input_takes_the_best_chunks_first_and_cuts_the_one_past_the_budget(tiny_scorer):
    filler = " ".join(f"word{i}" for i in range(400))
    chunks = [f"Unrelated {filler}.", "The harbour opened in 1990 after a long delay.", f"Other {filler}."]
    ids = input_ids(tiny_scorer, chunks, "The harbour opened in 1990.")
    text = text_of(tiny_scorer, ids)
    assert len(ids) == 512
    assert text.startswith(EVIDENCE + "The harbour opened in 1990 after a long delay.\n\nUnrelated word0")
    assert text.endswith(CLAIM + "The harbour opened in 1990." + QUESTION) and "Other" not in text


def test_a_short_evidence_is_whole_and_a_long_claim_keeps_the_input_in_budget(tiny_scorer):
    whole = input_ids(tiny_scorer, CHUNKS, "Dogs bark.")
    assert text_of(tiny_scorer, whole) == f"{EVIDENCE}{CHUNKS[1]}\n\n{CHUNKS[0]}{CLAIM}Dogs bark.{QUESTION}"
    assert len(input_ids(tiny_scorer, CHUNKS, "Dogs bark. " * 300)) <= 512
    assert len(input_ids(tiny_scorer, CHUNKS, "Dogs bark.", max_tokens=20)) <= 20


def test_the_chunks_are_the_detectors(tiny_scorer):
    """A context in K = 5 chunks; passages one chunk each."""
    context = " ".join(f"Sentence number {i} of the record." for i in range(20))
    assert len(chunk_texts(tiny_scorer, context, None)) == 5
    assert chunk_texts(tiny_scorer, None, ["One passage.", "Another."]) == ["One passage.", "Another."]


def test_a_few_steps_lower_the_loss_on_a_separable_toy_set(tiny_base, tmp_path):
    verifier = TrainedVerifier(tiny_base)
    inputs, labels = toy_inputs(tiny_base)
    losses = train(verifier, inputs, labels, Hyperparameters(learning_rate=1e-2, epochs=5, batch_size=8), tmp_path,
                   progress=False)
    assert len(losses) == 10 and np.mean(losses[-2:]) < np.mean(losses[:2]) - 0.15
    scores = verifier.probabilities(inputs)
    assert scores[np.array(labels) == 1].min() > scores[np.array(labels) == 0].max()


def test_a_resumed_run_ends_where_an_uninterrupted_one_does(tiny_scorer, tmp_path):
    def fresh():
        base = Scorer.from_model(copy.deepcopy(tiny_scorer.model), tiny_scorer.tokenizer, tiny_scorer.name)
        return TrainedVerifier(base)

    settings = Hyperparameters(learning_rate=1e-2, epochs=2, batch_size=6)  # 3 steps an epoch, the last short
    inputs, labels = toy_inputs(tiny_scorer)
    whole = fresh()
    straight = train(whole, inputs, labels, settings, tmp_path / "straight", checkpoint_every=2, progress=False,
                     micro_batch=4)
    assert train(fresh(), inputs, labels, settings, tmp_path / "resumed", checkpoint_every=2, steps=3,
                 progress=False, micro_batch=4) == straight[:3]
    resumed = fresh()  # as in a new process: a fresh adapter and head, replaced by the checkpoint's,
    torch.manual_seed(1)  # and another RNG state, replaced by the checkpoint's (LoRA's dropout draws from it)
    losses = train(resumed, inputs, labels, settings, tmp_path / "resumed", checkpoint_every=2, progress=False,
                   micro_batch=4)
    assert len(losses) == 6 and torch.load(tmp_path / "resumed" / CHECKPOINT)["step"] == 6
    np.testing.assert_allclose(losses, straight, atol=1e-6)  # the same operations in the same order: equal here
    for name, value in whole.model.trained_state().items():
        torch.testing.assert_close(resumed.model.trained_state()[name], value, atol=1e-6, rtol=0)


def test_the_saved_adapter_and_head_reload_to_the_same_scores(tiny_base, tiny_scorer, tmp_path):
    verifier = TrainedVerifier(tiny_base)
    inputs, labels = toy_inputs(tiny_base)
    train(verifier, inputs, labels, Hyperparameters(learning_rate=1e-2, epochs=1, batch_size=8), tmp_path,
          progress=False)
    verifier.save(tmp_path / "v.safetensors")
    other = Scorer.from_model(copy.deepcopy(tiny_scorer.model), tiny_scorer.tokenizer, tiny_scorer.name)
    loaded = TrainedVerifier.load(tmp_path / "v.safetensors", scorer=other, batch_size=3)
    # other batches pad otherwise: measured within 6e-8 (AVX2 and torch's fallback path alike)
    np.testing.assert_allclose(loaded.probabilities(inputs), verifier.probabilities(inputs), atol=1e-6)
    assert loaded.key.startswith("trained-v__") and loaded.key != TrainedVerifier(
        Scorer.from_model(copy.deepcopy(tiny_scorer.model), tiny_scorer.tokenizer, tiny_scorer.name)).key
    renamed = Scorer.from_model(copy.deepcopy(tiny_scorer.model), tiny_scorer.tokenizer, "another")
    with pytest.raises(ValueError, match="trained over 'tiny-random-llama'"):
        TrainedVerifier.load(tmp_path / "v.safetensors", scorer=renamed)


def test_the_rows_a_hold_out_trains_on_and_nested_seeded_draws():
    data = pd.DataFrame({"benchmark": ["ragtruth", "ragbench"] * 50, "label": [0, 1] * 50})
    assert set(training_rows(data, "ragbench")["benchmark"]) == {"ragtruth"}
    assert len(training_rows(data, "tofueval")) == 100
    small, large = (training_rows(data, "tofueval", limit, seed=0) for limit in (10, 40))
    assert len(small) == 10 and set(small.index) <= set(large.index) and small.index.is_monotonic_increasing
    assert not small.index.equals(training_rows(data, "tofueval", 10, seed=1).index)


def test_a_folder_holding_another_run_is_refused(tmp_path):
    data = tmp_path / "td.parquet"
    pd.DataFrame({"benchmark": ["ragtruth"] * 4, "label": [0, 1, 0, 1]}).to_parquet(data)
    rows = training_rows(pd.read_parquet(data), "ragbench")
    identity = data_identity(data)
    begin(tmp_path / "run", run_manifest(identity, rows, "ragbench", None, Hyperparameters(1e-4, 1), "base"))
    begin(tmp_path / "run", run_manifest(identity, rows, "ragbench", None, Hyperparameters(1e-4, 1), "base"))
    with pytest.raises(InputError, match="differs in: hyperparameters"):
        begin(tmp_path / "run", run_manifest(identity, rows, "ragbench", None, Hyperparameters(3e-4, 1), "base"))


def test_a_delete_rows_input_lacks_the_deleted_sentence(tiny_scorer):
    support = "The bridge was painted red in 2001."
    context = f"The town has a bridge. {support} Tourists visit it every summer."
    answer = "The bridge was painted red in 2001."
    case = Case("c1", "s1", "QA", "q", context, None, answer, [LabelledSentence(0, len(answer), False)], "ragtruth",
                "train")
    rows = pd.DataFrame([{"case_id": "c1", "sentence": answer, "recipe": "", "replaced": ""},
                         {"case_id": "c1", "sentence": answer, "recipe": "delete", "replaced": support}])
    natural, deleted = (text_of(tiny_scorer, ids) for ids in row_inputs(rows, {"c1": case}, tiny_scorer))
    assert support in natural.split(CLAIM)[0] and support not in deleted.split(CLAIM)[0]
    assert "Tourists visit it every summer." in deleted


@pytest.mark.data
def test_the_command_trains_in_slices_and_writes_the_adapter(tiny_scorer, tmp_path):
    """`eval train-verifier` on three RAGTruth training answers, over the tiny model saved as a
    local base: stopped after one step, then rerun to the end; then `eval verify` with what it wrote."""
    with gzip.open(data_root() / "ragtruth" / "ragtruth.jsonl.gz", "rt") as stream:
        lines = list(islice((line for line in stream if json.loads(line)["split"] == "train"), 3))
    (tmp_path / "data" / "ragtruth").mkdir(parents=True)
    with gzip.open(tmp_path / "data" / "ragtruth" / "ragtruth.jsonl.gz", "wt") as stream:
        stream.writelines(lines)
    answers = load_ragtruth(tmp_path / "data" / "ragtruth" / "ragtruth.jsonl.gz", splits={"train"})[0]
    rows = sentence_rows(answers)
    rows[COLUMNS].to_parquet(tmp_path / "td.parquet", index=False)
    tiny_scorer.model.save_pretrained(tmp_path / "base")
    tiny_scorer.tokenizer.save_pretrained(tmp_path / "base")
    command = ["eval", "train-verifier", "-o", str(tmp_path / "run"), "--hold-out", "ragbench", "--lr", "1e-3",
               "--epochs", "1", "--training-data", str(tmp_path / "td.parquet"), "--data", str(tmp_path / "data"),
               "--base", str(tmp_path / "base"), "--device", "cpu", "--checkpoint-every", "1", "--no-progress"]
    first = CliRunner().invoke(cli, [*command, "--steps", "1"])
    assert first.exit_code == 0, first.output
    assert not (tmp_path / "run" / ARTEFACT).exists() and "rerun the same command" in first.output
    second = CliRunner().invoke(cli, command)
    assert second.exit_code == 0, second.output
    manifest = json.loads((tmp_path / "run" / MANIFEST).read_text())
    steps = -(-len(rows) // 16)
    assert manifest["finished"] and len(manifest["losses"]) == steps and manifest["rows"] == len(rows)
    assert [run["steps_done"] for run in manifest["runs"]] == [1, steps]
    spec = f"trained:{tmp_path / 'run' / ARTEFACT}"
    scored = CliRunner().invoke(cli, ["eval", "verify", "ragtruth", "--data", str(tmp_path / "data"), "--split",
                                      "train", "--sample", "full", "--verifier", spec, "--device", "cpu", "--cache",
                                      str(tmp_path / "cache"), "--no-progress"])
    assert scored.exit_code == 0, scored.output
    (cache,) = load_verifier_cache(tmp_path / "cache", "ragtruth").values()
    assert cache.attrs["config"]["verifier"] == "trained" and (cache["status"] == "scored").all()
    assert len(cache) == sum(len(case.sentences) for case in answers)


@pytest.mark.slow
def test_the_real_scorers_adapter_and_head_are_small_and_load_over_the_base_by_name(tmp_path):
    verifier = TrainedVerifier(Scorer(None, device="cpu", precision="fp32"))
    verifier.save(tmp_path / "v.safetensors")
    assert (tmp_path / "v.safetensors").stat().st_size < 20e6
    loaded = TrainedVerifier.load(tmp_path / "v.safetensors", device="cpu")
    answer = SentenceInput.from_texts("", ["Paris is the capital of France."],
                                      ["Paris is the capital of France.", "Paris has 90 million people."])
    scores = loaded.verify(answer).score
    np.testing.assert_allclose(scores, verifier.verify(answer).score, atol=1e-5)
    assert ((0 < scores) & (scores < 1)).all()

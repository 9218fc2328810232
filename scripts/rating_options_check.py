"""Why the attribution rater answers with words (Yes/Some/No/False), not letters (A-D).

Rates sentences copied from a passage against that passage and against an unrelated one,
with the shipped prompt (:class:`groundsense_eval.caches.rater.SupportRater`) and with the same
prompt asking for a letter instead, and prints P(full) for each; a judge that reads the
passage gives the copied sentence more P(full) against its source. One thread, a minute:

    PYTHONPATH=src python scripts/rating_options_check.py [SCORER ...]
"""

import sys

import numpy as np
import torch

from groundsense.inputs.prompt import render_user_turn
from groundsense.verification.judge import option_probabilities, reply_token_ids
from groundsense_eval.caches.rater import SupportRater

PASSAGES = {
    "eiffel": "The Eiffel Tower is in Paris. It was completed in 1889 for the World's Fair.",
    "bananas": "Bananas are yellow when ripe. They grow in tropical climates.",
    "colosseum": "The Colosseum is in Rome. It could hold about 50,000 spectators.",
}
COPIED = [  # (sentence copied from the source, source, an unrelated passage)
    ("It was completed in 1889 for the World's Fair.", "eiffel", "bananas"),
    ("The Eiffel Tower is in Paris.", "eiffel", "colosseum"),
    ("They grow in tropical climates.", "bananas", "colosseum"),
    ("It could hold about 50,000 spectators.", "colosseum", "eiffel"),
    ("The Colosseum is in Rome.", "colosseum", "bananas"),
]
LETTERS = (
    "Passage:\n{passage}\n\nSentence: {sentence}\n\nDoes the passage support the sentence? Answer A (it says "
    "everything the sentence says), B (it says only part of it), C (it does not say it) or D (it says otherwise)."
)


def letters_p_full(rater: SupportRater, passage: str, sentence: str) -> float:
    scorer = rater.scorer
    ids = [reply_token_ids(scorer, (letter,)) for letter in "ABCD"]
    text, _ = render_user_turn(scorer.tokenizer, LETTERS.format(passage=passage, sentence=sentence))
    with torch.inference_mode():
        logits = scorer.model(input_ids=torch.tensor([scorer.encode_prefix(text)])).logits[0, -1]
    logp = torch.log_softmax(logits.float(), -1)[[i for o in ids for i in o]].double().numpy()
    return float(option_probabilities(logp[None], [len(o) for o in ids])[0][0, 0])


def main(scorers: list[str | None]) -> None:
    torch.set_num_threads(1)
    for name in scorers:
        rater = SupportRater(name, device="cpu")
        print(f"{rater.name}: P(full) against the source / against an unrelated passage")
        gaps, mass = {"words": [], "letters": []}, []
        for sentence, source, unrelated in COPIED:
            rated = [rater.rate(PASSAGES[p], [sentence]) for p in (source, unrelated)]
            words = [r.probabilities[0, 0] for r in rated]
            mass += [r.mass[0] for r in rated]
            letters = [letters_p_full(rater, PASSAGES[p], sentence) for p in (source, unrelated)]
            gaps["words"].append(words[0] - words[1])
            gaps["letters"].append(letters[0] - letters[1])
            print(f"  {sentence:48s} words {words[0]:.3f} / {words[1]:.3f}   "
                  f"letters {letters[0]:.3f} / {letters[1]:.3f}")
        for kind, gap in gaps.items():
            print(f"  {kind}: source ahead in {sum(g > 0 for g in gap)}/{len(gap)}, mean gap {np.mean(gap):+.3f}")
        print(f"  words: mean mass on the four options {np.mean(mass):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:] or [None])

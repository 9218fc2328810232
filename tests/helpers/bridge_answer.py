"""Three passages about the Golden Gate Bridge and a two-sentence answer: the first copied from
a passage, the second invented; and the check that two token scores of it give the same
sentence features."""

import numpy as np

from groundsense.features import assign_tokens, sentence_features
from groundsense.inputs.text import segment_sentences

PASSAGES = [
    "The Golden Gate Bridge opened to traffic on May 27, 1937, after four years of construction.",
    "The bridge's main span is 4,200 feet long, the longest in the world until 1964.",
    "Its colour, International Orange, was chosen by architect Irving Morrow to stand out in fog.",
]
ANSWER = (
    "The bridge's main span is 4,200 feet long. "
    "The bridge was designed by Gustave Eiffel and painted red to honour the city's Chinese community."
)


def assert_same_sentence_features(fast, slow, prompt, names) -> None:
    """The named sentence features of ANSWER from two token scores agree within 1e-4."""
    spans = segment_sentences(ANSWER)
    owner = assign_tokens(prompt.answer.offsets, spans)
    a = sentence_features(fast.logp, fast.jsd, owner, len(spans)).values
    b = sentence_features(slow.logp, slow.jsd, owner, len(spans)).values
    for name in names:
        assert np.abs(a[name] - b[name]).max() <= 1e-4, name

"""Check groundsense's ContextCite surrogate against the `context-cite` package (0.0.4).

Not part of the test suite: the package is not a dependency (see docs/verifiers.md). To run
it, install the package without its dependencies (they would pull a CUDA torch) and the three
it imports, into a separate folder, then:

    pip install --target /tmp/ccpkgs --no-deps context-cite==0.0.4
    pip install --target /tmp/ccpkgs nltk spacy datasets
    CONTEXT_CITE_PATH=/tmp/ccpkgs python scripts/contextcite_check.py

Both score the same answer with the default scorer, the same chunks (as the package's
"sources", through a partitioner) and the same 64 ablation masks; the package is handed the
fixed answer through its response cache, since its API only attributes its own generations.
"""

import os
import sys

import numpy as np

sys.path.append(os.environ.get("CONTEXT_CITE_PATH", ""))  # after the project's packages

from context_cite import ContextCiter  # noqa: E402
from context_cite.context_partitioner import BaseContextPartitioner  # noqa: E402

from groundsense.inputs.text import Span, join_passages
from groundsense.scorer import Scorer  # noqa: E402
from groundsense.verification.contextcite import ContextCiteVerifier  # noqa: E402
from groundsense.verification.verifier import SentenceInput

PASSAGES = [
    "The Eiffel Tower is in Paris. It was completed in 1889 for the World's Fair.",
    "The Colosseum is in Rome. It could hold about 50,000 spectators.",
    "Bananas are yellow when ripe. They grow in tropical climates.",
]
ANSWER = "The Colosseum could hold about 50,000 spectators. The Eiffel Tower was painted blue by Picasso."
QUESTION = "Tell me about these places."


class ChunkPartitioner(BaseContextPartitioner):
    """The package's sources = groundsense's chunks, removed exactly as the scorer removes them."""

    def __init__(self, context, chunks):
        super().__init__(context)
        self.chunks = chunks

    @property
    def num_sources(self):
        return len(self.chunks)

    def split_context(self):
        pass

    def get_source(self, index):
        return self.chunks[index].content.of(self.context)

    def get_context(self, mask=None):
        mask = np.ones(len(self.chunks), bool) if mask is None else mask
        return "".join(c.removal.of(self.context) for c, kept in zip(self.chunks, mask) if kept)


def main() -> None:
    cut = ANSWER.index(" The Eiffel")
    sentences = [Span(0, cut), Span(cut + 1, len(ANSWER))]
    scorer = Scorer(precision="fp32")  # its 1e-4 agreement is fp32's
    ours = ContextCiteVerifier(scorer, ablations=64).verify(
        SentenceInput(QUESTION, ANSWER, sentences, passages=PASSAGES))
    context, chunks = join_passages(PASSAGES)
    citer = ContextCiter(scorer.model, scorer.tokenizer, context, QUESTION, num_ablations=64,
                         partitioner=ChunkPartitioner(context, chunks),
                         prompt_template="Context:\n{context}\n\nQuestion: {query}")
    _, prompt = citer._get_prompt_ids(return_prompt=True)
    citer._cache["output"] = prompt + ANSWER  # attribute the fixed answer, not a generation
    for i, s in enumerate(sentences):
        weights = citer.get_attributions(s.start, s.end, verbose=False)
        print(f"sentence {i}: package max {max(weights.max(), 0):.2f} at chunk {int(weights.argmax())}; "
              f"groundsense max {ours.extra['attribution_max'][i]:.2f} at chunk {ours.support_chunk[i]}")


if __name__ == "__main__":
    main()

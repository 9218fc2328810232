"""The attribution rater's scale: four ratings, best first, and the word that answers each
(the words :data:`~groundsense.inputs.prompt.RATING_QUESTION` offers). Model-free, so that ratings
can be read without loading a scorer."""

SCALE = ("full", "partial", "none", "contradicts")
OPTION_WORDS = dict(zip(SCALE, ("Yes", "Some", "No", "False")))  # rating -> the word that answers it

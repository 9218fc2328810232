"""The attribution rater's scale: four ratings, best first, the word that answers each, and
:data:`RATING_QUESTION`, which offers those words. Model-free, so that ratings can be read
without loading a scorer."""

SCALE = ("full", "partial", "none", "contradicts")
OPTION_WORDS = dict(zip(SCALE, ("Yes", "Some", "No", "False")))  # rating -> the word that answers it
RATING_QUESTION = (
    "Does the passage support the sentence? Answer Yes (it says everything the sentence says), Some (it says only "
    "part of it), No (it does not say it) or False (it says otherwise)."
)

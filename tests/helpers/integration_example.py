"""The example every integration test checks: `groundsense detect --example passages-qa`.

Three passages about the Golden Gate Bridge and a three-sentence answer whose last sentence
(Gustave Eiffel, painted red) none of them says; the real default scorer flags that sentence
and only it.
"""

from groundsense.inputs.files import load_example

EXAMPLE = load_example("passages-qa")
INVENTED = "The bridge was designed by Gustave Eiffel and painted red to honour the city's Chinese community."
SUPPORTED = "The Golden Gate Bridge opened to traffic on May 27, 1937. Its main span is 4,200 feet long."
assert EXAMPLE["answer"] == f"{SUPPORTED} {INVENTED}"

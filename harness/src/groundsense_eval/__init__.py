"""groundsense's research harness (the ``groundsense-eval`` distribution): the evaluation on RAGTruth,
TofuEval and RAGBench, in five layers, each importing only those before it: :mod:`.data` (benchmark
cases), :mod:`.caches` (what the detector and the verifiers computed on them), :mod:`.statistics` (the
measurements), :mod:`.reports` (what `groundsense eval` renders) and :mod:`.cli` (that command group,
which the ``groundsense`` command loads through the ``groundsense.commands`` entry point).

It sees the product from outside: ``groundsense`` never imports it.
"""

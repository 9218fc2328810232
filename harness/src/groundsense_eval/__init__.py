"""groundsense's research harness (the ``groundsense-eval`` distribution): the evaluation on RAGTruth,
TofuEval and RAGBench, in six layers, each importing only those before it: :mod:`.data` (benchmark
cases), :mod:`.caches` (what the detector and the verifiers computed on them), :mod:`.statistics` (the
measurements), :mod:`.reports` (what `groundsense eval` renders), :mod:`.fits` (the files the product
ships) and :mod:`.cli` (that command group, which the ``groundsense`` command loads through the
``groundsense.commands`` entry point).

``groundsense`` never imports it; it reads the product through its public surface only (the
public modules' ``__all__``: docs/architecture.md, "The public surface"; tests/test_public_surface.py).
"""

"""The evaluation on RAGTruth, TofuEval and RAGBench, in four layers, each importing only those before it:
:mod:`.data` (benchmark cases), :mod:`.caches` (what the detector and the verifiers computed on them),
:mod:`.statistics` (the measurements) and :mod:`.reports` (what `groundsense eval` renders).
"""

"""The files the product ships, fitted from the harness's caches: the calibrations
(:mod:`.calibration`, `groundsense eval calibrate`), the lexical fusions (:mod:`.lexical_fusion`) and
the fused cascade's fusion (:mod:`.judge_fusion`, both `groundsense eval fusion --fit-fusion`). It
reads the reports layer's tables, so it sits between ``reports`` and ``cli``."""

"""How a score becomes a flag, in one home: calibrations and their thresholds (``calibration``,
``thresholds``), fused scores' references and thresholds (``fusion``; a fused cascade's,
``judge_fusion``), fitting one on labels (``fitting``, checked by ``cross_validation`` with
``resampling``'s intervals) or adapting one without (``adaptation``), and the
:class:`~groundsense.calibration.adjudicator.Adjudicator` that builds a result (``adjudicator``)."""

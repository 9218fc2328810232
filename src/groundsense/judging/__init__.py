"""From sentence features to verdicts: calibrations and their thresholds (``calibration``,
``thresholds``), fitting one on labels (``fitting``) or adapting one without (``adaptation``),
and the :class:`~groundsense.judging.adjudicator.Adjudicator` that builds a result (``adjudicator``)."""

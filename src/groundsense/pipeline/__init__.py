"""The detector: one answer through inputs → scorer → features → calibration (``detector``), and the
same while the answer is generated (``stream``, with ``stream_tokens`` telling final tokens)."""

"""Reading one sentence of a token-row feature cache back into the detector's rows: what the
token-feature and extract tests compare with."""

import numpy as np


def token_rows(row) -> tuple[np.ndarray, np.ndarray]:
    """One cached sentence's [conditions, n] log p and JSD rows (as the detector builds them)."""
    n = len(row.tok_logp_full)
    loo_logp = np.asarray(row.tok_logp_loo, dtype=float).reshape(-1, n) if n else np.zeros((0, 0))
    loo_jsd = np.asarray(row.tok_jsd_loo, dtype=float).reshape(-1, n) if n else np.zeros((0, 0))
    logp = np.vstack([row.tok_logp_full, row.tok_logp_noctx, loo_logp]) if n else np.zeros((2, 0))
    jsd = np.vstack([np.zeros(n), row.tok_jsd_noctx, loo_jsd]) if n else np.zeros((2, 0))
    return logp, jsd

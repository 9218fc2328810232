"""Jensen-Shannon divergences between rows of next-token distributions."""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

LN2 = math.log(2.0)
TINY = torch.finfo(torch.float32).tiny  # keeps log(0) finite; adds nothing to s·log s


class Distributions(NamedTuple):
    """Rows of next-token distributions with the sums the JSD needs: the probabilities,
    sum p·log p and sum p (a log-softmax row sums to 1 only up to rounding)."""

    probs: torch.Tensor
    plogp: torch.Tensor
    mass: torch.Tensor

    @classmethod
    def of(cls, logp: torch.Tensor) -> Distributions:
        probs = logp.exp()
        return cls(probs, _dot(probs, logp), probs.sum(-1))

    def rows(self, start: int, stop: int) -> Distributions:
        return Distributions(*(t[start:stop] for t in self))


def _dot(probs: torch.Tensor, logs: torch.Tensor) -> torch.Tensor:
    """Row sums of probs·logs, with 0·log 0 = 0 (log-probs of -inf are clamped)."""
    return torch.linalg.vecdot(probs, logs.clamp_min(torch.finfo(logs.dtype).min))


def js_divergence(logp: torch.Tensor, logq: torch.Tensor) -> torch.Tensor:
    """Jensen-Shannon divergence (natural log, so in [0, ln 2]) between rows of log-probs."""
    return jsd(Distributions.of(logp), logq)


def jsd(p: Distributions, logq: torch.Tensor) -> torch.Tensor:
    """JSD in its entropy form, H(M) - (H(P) + H(Q))/2 with M = (P + Q)/2, written as
    (Σ p log p + Σ q log q - Σ s log s + ln 2 · Σ s)/2 with s = p + q: the same value as
    the two KL terms, with one logarithm per entry instead of a log-add-exp, and P's sums
    computed once for all conditions (see docs/performance.md for the speed-up)."""
    q = Distributions.of(logq)
    s = p.probs + q.probs
    s_log_s = torch.linalg.vecdot(s, (s + TINY).log_())
    return (0.5 * (p.plogp + q.plogp - s_log_s + LN2 * (p.mass + q.mass))).clamp(0.0, LN2)

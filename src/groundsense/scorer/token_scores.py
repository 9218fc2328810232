"""The scorer's output: per condition and answer token, the token's log-probability and the
JSD between the condition's next-token distribution and the full context's."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .divergence import Distributions, jsd


@dataclass
class TokenScores:
    """Per condition and answer token: log-probability of the token, and the JSD between
    the condition's next-token distribution and the full-context one (row 0 is zeros)."""

    logp: np.ndarray  # [2 + K, T] (or [2, T] in two-pass mode)
    jsd: np.ndarray
    tokens_processed: int = field(default=0)
    threads: int | None = None  # the CPU threads that computed them (None: not on a CPU)


class ConditionRows:
    """The rows of a :class:`TokenScores` filled from each condition's logits at the answer
    positions. Every row's JSD is taken to row 0's distributions (the full context), so
    row 0 is added first. ``block_size`` bounds the positions compared at once."""

    def __init__(self, rows: int, answer_ids: list[int], block_size: int, device: torch.device):
        self.target = torch.tensor(answer_ids, device=device)
        self.logp = np.zeros((rows, len(answer_ids)), dtype=np.float64)
        self.jsd = np.zeros_like(self.logp)
        self.block_size = block_size
        self._full: Distributions | None = None

    def add(self, row: int, logits: torch.Tensor) -> None:
        logq = torch.log_softmax(logits[0].float(), dim=-1)
        if row == 0:
            self._full = Distributions.of(logq)
        elif self._full is None:
            raise ValueError("row 0, the full context every row is compared with, must be added first")
        blocks = [
            jsd(self._full.rows(i, i + self.block_size), logq[i : i + self.block_size])
            for i in range(0, len(self.target), self.block_size)
        ]
        self.logp[row] = logq.gather(1, self.target[:, None])[:, 0].double().cpu().numpy()
        self.jsd[row] = torch.cat(blocks).double().cpu().numpy()

    def scores(self, tokens_processed: int) -> TokenScores:
        return TokenScores(logp=self.logp, jsd=self.jsd, tokens_processed=tokens_processed)

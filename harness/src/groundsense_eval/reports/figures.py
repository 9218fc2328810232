"""PNG figures of the evaluation (matplotlib, Agg backend): each function writes one file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.metrics import roc_curve  # noqa: E402


def _save(fig: plt.Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def roc_curves(y: np.ndarray, scores: Mapping[str, np.ndarray], path: Path) -> Path:
    """ROC curve of every method on the same test sentences."""
    fig, ax = plt.subplots(figsize=(5.5, 5))
    for name, score in scores.items():
        fpr, tpr, _ = roc_curve(y, score)
        ax.plot(fpr, tpr, label=name)
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
    ax.set(xlabel="false positive rate", ylabel="true positive rate", title="Span-level ROC (test)")
    ax.legend(fontsize=8, loc="lower right")
    return _save(fig, path)


def feature_bars(intervals: pd.DataFrame, path: Path) -> Path:
    """AUC of each single feature (``auc``, ``lo``, ``hi`` columns) with its 95% interval."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    x = np.arange(len(intervals))
    # On a small test set the full-set AUC can fall outside its bootstrap interval: no negative bar.
    errors = np.clip(np.vstack([intervals["auc"] - intervals["lo"], intervals["hi"] - intervals["auc"]]), 0, None)
    ax.bar(x, intervals["auc"], yerr=errors, capsize=3, color="tab:blue")
    ax.axhline(0.5, color="grey", linestyle=":", linewidth=1)
    ax.set_xticks(x, intervals.index, rotation=30, ha="right")
    ax.set(ylabel="span AUC (test)", ylim=(min(0.3, float(intervals["lo"].min())), 1.0), title="Single-feature AUC")
    return _save(fig, path)


def drop_distribution(table: pd.DataFrame, path: Path) -> Path:
    """Histogram of the largest leave-one-out drop, grounded vs unsupported sentences."""
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    values = table["drop_max"].to_numpy(dtype=float)
    lo, hi = np.nanpercentile(values, [1, 99])
    bins = np.linspace(lo, hi, 40)
    for label, name in ((0, "grounded"), (1, "unsupported")):
        # matplotlib's stub types ``bins`` without arrays; hist takes any array-like of bin edges
        ax.hist(values[table["label"].to_numpy() == label], bins=bins,  # type: ignore[arg-type]
                density=True, alpha=0.55, label=name)
    ax.set(xlabel="largest leave-one-out drop (nats/token)", ylabel="density", title="drop_max by label")
    ax.legend()
    return _save(fig, path)


def transfer_heatmap(matrix: pd.DataFrame, path: Path) -> Path:
    """Train-benchmark x test-benchmark AUC matrix."""
    fig, ax = plt.subplots(figsize=(1.6 * len(matrix.columns) + 2, 1.3 * len(matrix) + 1.5))
    image = ax.imshow(matrix.to_numpy(dtype=float), vmin=0.5, vmax=1.0, cmap="viridis")
    ax.set_xticks(range(len(matrix.columns)), matrix.columns)
    ax.set_yticks(range(len(matrix.index)), matrix.index)
    ax.set(xlabel="tested on (test partition)", ylabel="trained on (dev partition)", title="LightGBM transfer AUC")
    for (i, j), value in np.ndenumerate(matrix.to_numpy(dtype=float)):
        ax.text(j, i, f"{value:.3f}", ha="center", va="center", color="white" if value < 0.75 else "black")
    fig.colorbar(image, ax=ax)
    return _save(fig, path)


def cost_frontier(frame: pd.DataFrame, path: Path) -> Path:
    """Span AUC against GFLOPs per sentence (log scale): detectors by scorer, verifiers apart."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (kind, scorer), group in frame.groupby(["kind", "scorer"], sort=True):
        marker = "o" if kind == "detector" else "s"
        ax.scatter(group["gflops"], group["auc"], marker=marker,
                   label=scorer if kind == "detector" else f"{scorer} (verifier)")
        for _, row in group.iterrows():
            ax.annotate(row["method"].split(" (")[0], (row["gflops"], row["auc"]), fontsize=6,
                        xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.axhline(0.5, color="grey", linestyle=":", linewidth=1)
    ax.set(xlabel="GFLOPs per sentence (log scale)", ylabel="span AUC (test)", title="Cost and accuracy")
    ax.legend(fontsize=7, loc="lower right")
    return _save(fig, path)


def cascade_curve(table: pd.DataFrame, path: Path) -> Path:
    """AUC (with interval) against GFLOPs per sentence along a cascade's escalation rates."""
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    errors = np.vstack([table["auc"] - table["lo"], table["hi"] - table["auc"]])
    ax.errorbar(table["gflops"], table["auc"], yerr=errors, marker="o", capsize=3)
    for name, row in table.iterrows():
        ax.annotate(str(name), (row["gflops"], row["auc"]), fontsize=7, xytext=(4, -10), textcoords="offset points")
    ax.set_xscale("log")
    ax.set(xlabel="GFLOPs per sentence (log scale)", ylabel="span AUC (test)", title="Cascade")
    return _save(fig, path)

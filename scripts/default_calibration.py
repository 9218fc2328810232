"""Rebuild the shipped calibration of the default scorer.

Data: RAGTruth *train* split (never the test split the evaluation reports on), a seeded
sample of 75 answers with a labelled hallucination and 75 without, over the three tasks.
The threshold is the best-F1 one (the `calibrate` default). Features are cached in
runs/calibration/features.jsonl, so a killed run resumes.

    python scripts/default_calibration.py
"""

import json
import subprocess
import sys
from pathlib import Path

from groundsense.eval.ragtruth import load_ragtruth
from groundsense.eval.rows import case_row
from groundsense.eval.sampling import sample_ragtruth
from groundsense.weights import DEFAULT_SCORER

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "runs" / "calibration"
TARGET = ROOT / "src" / "groundsense" / "calibrations" / f"{DEFAULT_SCORER}-k5.json"


def main() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    cases, _ = load_ragtruth(splits={"train"})
    rows = WORK / "rows.jsonl"
    with rows.open("w") as sink:
        for case in sample_ragtruth(cases, "train", n_unsupported=75, n_supported=75, seed=0):
            sink.write(json.dumps(case_row(case, labels=True)) + "\n")
    subprocess.run(
        [sys.executable, "-m", "groundsense.cli", "calibrate", str(rows), "-o", str(TARGET),
         "--features", str(WORK / "features.jsonl")],
        check=True,
    )


if __name__ == "__main__":
    main()

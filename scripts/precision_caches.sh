#!/usr/bin/env bash
# The scoring behind the bf16 decision (docs/performance.md, "Numeric precision"): the first
# ANSWERS RAGTruth test answers (by source id, of the whole split) scored in fp32 and in bf16 on
# one device, and the 1,500 training answers of the shipped calibration (scripts/
# default_calibration.sh) in bf16, each under its own cache key in OUT. Made for a CUDA machine
# (the three runs share it); on a CPU with AVX-512 BF16 or AMX, DEVICE=cpu. Rerun to resume.
# TIMEOUT bounds each run (seconds); the caches keep what finished. With the training answers all
# scored, it fits the calibration shipped for bf16 (src/groundsense/calibrations/, read at bf16
# by groundsense.calibration.calibration.shipped_calibration); the fit reads the cache in seconds.
#   DEVICE=cuda scripts/precision_caches.sh results/precision
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/precision}
GS="${GS:-python -m groundsense} --threads ${THREADS:-4}"
RUN="timeout ${TIMEOUT:-0} $GS eval extract ragtruth --device ${DEVICE:-cuda} --no-progress"
N=${ANSWERS:-1100}
$RUN --sample full --limit "$N" --precision fp32 --cache "$OUT/test" &
$RUN --sample full --limit "$N" --precision bf16 --cache "$OUT/test" &
$RUN --split train --sample 1500 --token-rows --precision bf16 --cache "$OUT/calibration" &
wait
$GS eval calibrate --cache "$OUT/calibration" --precision bf16 -o src/groundsense/calibrations/smollm2-135m-instruct-bf16-k5.json

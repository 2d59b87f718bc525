#!/usr/bin/env bash
# The second call of the lease: GPU utilisation sampled by nvidia-smi during 9x9 self-play in 8 and 16
# processes, a shard of 10,240 games (at least two minutes) end to end, and one generation of params-gpu.yaml
# without the servers. From the repository root:
#   bash docs/performance/gpu-2026-11-26/run2.sh OUT
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
step warmup 100 $py -m zero.cli warmup --params params-gpu.yaml --model models/go-9.pt
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -lms 500 > "$out/smi.csv" &
smi=$!
step go9-8-16 130 $py -m zero.cli bench --json --params params-gpu.yaml --model models/go-9.pt --games 1024 \
    --seconds 30 --processes 8,16
kill $smi
step selfplay-10240 200 $py -m zero.cli selfplay --params params-gpu.yaml --model models/go-9.pt \
    --out /tmp/shard.npz --seed 1 --games 10240 --set selfplay.concurrent_games=1024
step standalone 200 $py -m flows.standalone run params-gpu.yaml --generations 1

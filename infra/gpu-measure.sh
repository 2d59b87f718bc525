#!/usr/bin/env bash
# The GPU engine's figures on one GPU machine (docs/performance.md), sized to run in under 8 minutes: the
# engine's kernels compiled first (`zero warmup`), then `zero bench` of the shipped 9x9 network with
# params-gpu.yaml in 1, 4, 8 and 16 processes with nvidia-smi's utilisation sampled beside it, one process in
# lockstep (`step_rounds: 0`), one `zero selfplay` shard of 10,240 games with 1,024 in flight (about two and a
# half minutes), 19x19 in 8 and 16 processes, and training (plain, channels-last, bf16). Each step has its own
# time limit, so a step that runs long loses only itself. Eight files in OUT (default gpu-figures/): run.txt
# (the machine, the warm-up, each step's time), log.txt (every step's stderr), go9.json, go9-lockstep.json,
# smi.csv, shard.json, go19.json, train.jsonl. From the repository root:
#   bash infra/gpu-measure.sh docs/performance/gpu-$(date +%F)
set -uo pipefail
export PYTHONUNBUFFERED=1
out=${1:-gpu-figures}
py=${PYTHON:-python3}
mkdir -p "$out"
step() {  # step NAME LIMIT_S OUTFILE COMMAND...: COMMAND's stdout appended to OUTFILE, its time to run.txt
    local name=$1 limit=$2 file=$3; shift 3
    local t0=$SECONDS
    echo "== $name" >> "$out/log.txt"
    timeout "$limit" "$@" >> "$out/$file" 2>> "$out/log.txt"
    echo "$name: rc $?, $((SECONDS - t0)) s" | tee -a "$out/run.txt"
}
{
    date -u +%FT%TZ
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    nproc
    $py -c "import sys, torch, numba; print(sys.version.split()[0], torch.__version__, torch.version.cuda, numba.__version__)"
} >> "$out/run.txt" 2>&1
cat "$out/run.txt"

# a fresh machine has no numba cache: compile once, before anything is timed
step warmup 150 run.txt $py -m zero.cli warmup --params params-gpu.yaml --model models/go-9.pt
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -lms 500 > "$out/smi.csv" &
smi=$!
step go9 180 go9.json $py -m zero.cli bench --json --params params-gpu.yaml --model models/go-9.pt --games 1024 \
    --seconds 30 --processes 4,8,16
kill "$smi"
step go9-lockstep 60 go9-lockstep.json $py -m zero.cli bench --json --params params-gpu.yaml --model models/go-9.pt \
    --games 1024 --seconds 30 --set selfplay.step_rounds=0
step shard 200 shard.json $py -m zero.cli selfplay --params params-gpu.yaml --model models/go-9.pt \
    --out /tmp/gpu-measure-shard.npz --seed 1 --games 10240 --set selfplay.concurrent_games=1024
rm -f /tmp/gpu-measure-shard.npz
step go19 120 go19.json $py -m zero.cli bench --json --params params-gpu.yaml --set game.size=19 --games 256 \
    --seconds 25 --processes 8,16
step train 40 train.jsonl $py -m zero.cli bench --json --params params-gpu.yaml --train --seconds 20
step train-channels-last 40 train.jsonl $py -m zero.cli bench --json --params params-gpu.yaml --train \
    --seconds 20 --set train.channels_last=true
step train-bf16 40 train.jsonl $py -m zero.cli bench --json --params params-gpu.yaml --train --seconds 20 \
    --set train.mixed_precision=true

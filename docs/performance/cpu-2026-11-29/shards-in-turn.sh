#!/usr/bin/env bash
# Two self-play shards of campaigns/go-9.yaml (256 games, 128 at once) on one core: one after the other, then
# both at once, as a flow pinned to one core ran them until its process pool counted the core's affinity.
# Run pinned, from the repository root:  taskset -c 0 bash docs/performance/cpu-2026-11-29/shards-in-turn.sh MODEL OUT
set -euo pipefail
model=${1:-models/go-9.pt}; out=${2:-/tmp/shards-in-turn}; mkdir -p "$out"
shard() { zero selfplay --params campaigns/go-9.yaml --model "$model" --out "$out/$1.npz" --seed "$2" --games 256 \
            > "$out/$1.json" 2> "$out/$1.err"; }
t0=$(date +%s.%N); shard seq1 11; shard seq2 12; t1=$(date +%s.%N)
echo "in turn: $(echo "$t1 - $t0" | bc) s"
t0=$(date +%s.%N); shard con1 11 & shard con2 12 & wait; t1=$(date +%s.%N)
echo "at once: $(echo "$t1 - $t0" | bc) s"
for n in seq1 seq2 con1 con2; do
    python -c "import json, sys; d = json.load(open('$out/$n.json')); print('$n', d['sha256'][:12], d['positions'], 'positions', round(d['seconds'], 1), 's')"
done

#!/usr/bin/env bash
# What compiling the engine's kernels costs a run, and what `zero warmup` saves it: a shard of 16 games
# (campaigns/go-9.yaml, the shipped network) with an empty numba cache, then `zero warmup` into another
# empty cache and the same shard after it. Wall and CPU seconds of each process (GNU time), and the kernels
# each compiled inside its own run. Run from the repository root, on one core:
#   taskset -c 0 bash docs/performance/cpu-2026-11-26/warmup.sh > docs/performance/cpu-2026-11-26/warmup.txt
set -euo pipefail
py=${PYTHON:-.venv/bin/python}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--params campaigns/go-9.yaml --model models/go-9.pt)
shard=(-m zero.cli selfplay "${common[@]}" --games 16 --set selfplay.concurrent_games=16
       --set selfplay.min_positions_per_shard=0 --seed 1)
timed() {  # timed LABEL CACHE ARGS...: the command's wall and CPU time, and its last lines
    local label=$1 cache=$2; shift 2
    local t0=$(date +%s.%N)
    NUMBA_CACHE_DIR=$cache /usr/bin/time -f "%e s wall, %U s user, %S s system" -o "$tmp/time" "$py" "$@" \
        > "$tmp/out" 2>/dev/null
    echo "$label: $(cat "$tmp/time")"
    grep -E '"(games|positions|seconds|nn_evals|compiled|loaded)"|kernels compiled' "$tmp/out" | tr -s ' ' | tr -d '\n'
    echo
}
echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
timed "shard, cold cache" "$tmp/cold" "${shard[@]}" --out "$tmp/a.npz"
timed "zero warmup, cold cache" "$tmp/warm" -m zero.cli warmup "${common[@]}"
timed "shard, after zero warmup" "$tmp/warm" "${shard[@]}" --out "$tmp/b.npz"
cmp -s "$tmp/a.npz" "$tmp/b.npz" && echo "the two shards are the same bytes"

#!/bin/bash
# zero bench of the shipped champion at campaigns/go-9.yaml's settings on one core, in three checkouts of this
# repository: before the tree kernels took a structref (3c1f7d5d^), after (3c1f7d5d) and HEAD; two rounds each,
# after one warm-up run per checkout (numba's kernels compiled once into each checkout's cache).
# Usage: taskset -c 0 bash bench.sh REPO   (REPO: a clone with .venv; writes worktrees beside it)
set -euo pipefail
repo=$(cd "$1" && pwd); py=$repo/.venv/bin/python
declare -A tree=([before]=3c1f7d5d^ [after]=3c1f7d5d [head]=HEAD)
for name in before after head; do
    dir=$repo/../bench-$name
    [ -d "$dir" ] || git -C "$repo" worktree add -q "$dir" "${tree[$name]}"
    (cd "$dir" && $py -m zero.cli bench --params "$repo/campaigns/go-9.yaml" --model "$repo/models/go-9.pt" \
        --seconds 5 --json >/dev/null 2>&1)
done
for round in 1 2; do
    for name in before after head; do
        (cd "$repo/../bench-$name" && $py -m zero.cli bench --params "$repo/campaigns/go-9.yaml" \
            --model "$repo/models/go-9.pt" --seconds 25 --json 2>/dev/null | tail -1 | $py -c "
import json, sys
d = json.loads(sys.stdin.read())
print('$name', 'round $round', 'search_leaves_per_s', d['search_leaves_per_s'],
      'selfplay_steady_evals_per_s', d['selfplay_steady_evals_per_s'])")
    done
done

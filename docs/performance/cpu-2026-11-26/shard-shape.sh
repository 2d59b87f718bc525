#!/usr/bin/env bash
# Positions a second of one self-play shard of campaigns/go-9.yaml on one core for three shapes of shard:
#   a  64 games at once, 64 games a shard, at least 1,000 positions (the campaign's shape: top-up rounds of
#      a few games each until the positions are there)
#   b  64 games at once, 128 games a shard (finished games refilled), at least 2,000 positions (half the
#      shards for the same positions: one drain of the batch for 2,000 positions, not for 1,000)
#   c  128 games at once, 160 games a shard, at least 2,000 positions
#   d  128 games at once, 128 games a shard, at least 2,000 positions (half the shards for the same games)
#   e  128 games at once, 256 games a shard, at least 4,000 positions (a quarter of the shards)
# Run from the repository root: taskset -c 0 bash docs/performance/cpu-2026-11-26/shard-shape.sh MODEL ROUNDS [SHAPES]
set -euo pipefail
model=${1:-models/go-9.pt}
rounds=${2:-2}
shapes=${3:-a b c}
out=$(mktemp -d)
zero warmup --params campaigns/go-9.yaml --model "$model" >/dev/null
printf "%-6s %-5s %-8s %-8s %-9s %-6s %s\n" shape seed wall_s user_s positions games positions/s
for r in $(seq 1 "$rounds"); do
  for shape in $shapes; do
    case $shape in
      a) sets=() ;;
      b) sets=(--set selfplay.games_per_shard=128 --set selfplay.min_positions_per_shard=2000) ;;
      c) sets=(--set selfplay.concurrent_games=128 --set selfplay.games_per_shard=160
               --set selfplay.min_positions_per_shard=2000) ;;
      d) sets=(--set selfplay.concurrent_games=128 --set selfplay.games_per_shard=128
               --set selfplay.min_positions_per_shard=2000) ;;
      e) sets=(--set selfplay.concurrent_games=128 --set selfplay.games_per_shard=256
               --set selfplay.min_positions_per_shard=4000) ;;
    esac
    /usr/bin/time -f "%e %U" -o "$out/time" zero selfplay --params campaigns/go-9.yaml --model "$model" \
      --out "$out/$shape-$r.npz" --seed "$r" "${sets[@]}" >"$out/log" 2>&1
    read -r wall user <"$out/time"
    read -r positions games < <(python - "$out/$shape-$r.npz" <<'PY'
import sys
import numpy as np
with np.load(sys.argv[1]) as z:
    print(len(z["planes"]), len(z["result"]))
PY
)
    printf "%-6s %-5s %-8s %-8s %-9s %-6s %.1f\n" "$shape" "$r" "$wall" "$user" "$positions" "$games" \
      "$(python -c "print($positions / $wall)")"
  done
done

#!/usr/bin/env bash
# The player's first minute: what `zero warmup` (run by make install) costs on an empty numba cache, how soon
# the default `zero gtp` answers a controller (zero bench --gtp-latency) with the kernels compiled and on an
# empty cache, and how soon `zero play` draws the board and answers a first move. Wall and CPU seconds, and the
# load average, since the machine is shared. Run from the repository root, on one core:
#   taskset -c 0 bash docs/performance/gtp-2026-11-26/measure.sh > docs/performance/gtp-2026-11-26/measure.txt
set -euo pipefail
py=${PYTHON:-.venv/bin/python}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD), cores $(taskset -pc $$ | sed 's/.*: //'), $(lscpu | sed -n 's/^Model name: *//p')"
echo "## zero warmup on an empty cache (what make install adds), then again on the filled one"
for run in empty filled; do
    echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
    NUMBA_CACHE_DIR=$tmp/cache /usr/bin/time -f "%e s wall, %U s user, %S s system" "$py" -m zero.cli warmup 2>&1 \
        | grep -v '^zero: playing'
done
for round in 1 2; do
    echo "## zero bench --gtp-latency, round $round"
    "$py" -m zero.cli bench --gtp-latency
    "$py" -m zero.cli bench --gtp-latency --cold-cache
done
echo "## zero play: the board, and the answer to a first move typed at once"
for round in 1 2; do
    "$py" - <<'EOF'
import os, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.Popen([sys.executable, "-m", "zero.cli", "play"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, text=True)
proc.stdin.write("E5\nquit\n")
proc.stdin.flush()
seen = {}
for line in proc.stdout:
    for key, needle in (("board", " A B C"), ("reply", "zero (White)")):
        if needle in line and key not in seen:
            seen[key] = time.perf_counter() - start
proc.wait()
cpu = os.times().children_user + os.times().children_system
print(f"load average {os.getloadavg()[0]:.2f}: board drawn at {seen['board']:.2f} s, first move answered at "
      f"{seen['reply']:.2f} s, {cpu:.2f} s of CPU in all")
EOF
done

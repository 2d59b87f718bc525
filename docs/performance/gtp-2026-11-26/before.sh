#!/usr/bin/env bash
# zero bench --gtp-latency's measure of the `zero gtp` of an earlier commit (default bc4bab2f, the last before the
# engine loaded on a thread): that commit's tree unpacked into a temp dir, its kernels compiled by a first session,
# then one session with its cache filled and one on an empty cache. Run from the repository root, on one core:
#   taskset -c 0 bash docs/performance/gtp-2026-11-26/before.sh > docs/performance/gtp-2026-11-26/before.txt
set -euo pipefail
commit=${1:-bc4bab2f}
py=${PYTHON:-.venv/bin/python}
old=$(mktemp -d)
trap 'rm -rf "$old"' EXIT
git archive "$commit" | tar -x -C "$old"
echo "# $(date -u +%FT%TZ) zero gtp of commit $commit, measured by zero.bench.measure_gtp_latency of $(git rev-parse --short HEAD)"
for run in compile filled empty; do
    ZERO_OLD=$old RUN=$run "$py" - <<'EOF'
import os
from zero.bench import measure_gtp_latency

os.chdir(os.environ["ZERO_OLD"])  # the engine started is the old commit's, with its params.yaml and models/
os.environ["PYTHONPATH"] = os.environ["ZERO_OLD"]
got = measure_gtp_latency([], 9, 7.5, cold_cache=os.environ["RUN"] == "empty")
if os.environ["RUN"] != "compile":
    print(f"numba's cache {os.environ['RUN']}, load average {got['load_before'][0]:g} before and "
          f"{got['load_after'][0]:g} after:")
    for r in got["rows"]:
        print(f"  {r['command']:<24} answered at {r['at']:6.2f} s ({r['took']:5.2f} s after it was sent), "
              f"engine CPU {r['cpu']:6.2f} s: {r['answer']}")
EOF
done

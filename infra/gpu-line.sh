#!/usr/bin/env bash
# GPU generations through the pipeline on one GPU machine, sized to end within 10 minutes: the workspace
# installed (from the offline archive where the machine reaches no package index), the servers started, then
# generations of PARAMS as flow runs of zero-generation (`python -m flows.serve run`, what `make run` runs:
# self-play shards fanned out over processes that share the GPU, training, the gate, the registry), or as one
# flow run of zero-loop (MODE loop: what `make loop` and a campaign run, the generations back to back in one
# process), then one generation of the same params by flows.standalone in a copy of the workspace, for the
# flow's overhead.
# nvidia-smi's utilisation is sampled twice a second throughout. After the flow, where time is left, the CUDA
# graph test runs and zero bench --train times the training step with and without train.cuda_graph. A generation or the standalone one that would
# end past ZERO_GPU_LINE_SECONDS (560) is not started; PREFECT_PORT and MLFLOW_PORT choose the workspace's ports
# (4200, 5000); ZERO_GPU_SET (space-separated section.key=value) sets parameters over PARAMS for every step,
# flow and standalone alike (as `make run OVERRIDES=...`; each generation's params.yaml records them), e.g.
#   ZERO_GPU_SET="pipeline.selfplay_shards=8 selfplay.threads=2 selfplay.concurrent_games=1024"
# From the repository root:
#   bash infra/gpu-line.sh OUT [PARAMS] [FLOW_GENERATIONS] [MODE]     (defaults: params-gpu.yaml, 2, run)
# FLOW_GENERATIONS 0: the standalone generation alone, without the servers. ZERO_GPU_STANDALONE=0: no standalone
# generation, the whole budget for the flow's (the line first, once the flow's overhead is measured).
# OUT gets at most eight files: run.txt (the machine, each step's time, flows.timeline's table of where a
# generation's time went in the flow and standalone), log.txt (every step's output),
# smi.csv, generations.json (each flow generation's record, then the standalone one's), flow.log (the serve
# process's log), mlflow.db.xz (the MLflow store, for the UI elsewhere), champion.pt (the flow's last
# champion, whose making generations.json records: to measure it elsewhere, e.g. `zero match` against the
# network it started from), ship.tar (that champion shipped by `flows.ship --no-window`: <line>.pt, its lineage
# <line>.json continuing models/'s, and its recipe <line>.reproduce/; to ship it at home:
# `rm -rf models/<line>.window && tar -xf ship.tar -C models`).
set -uo pipefail
export PYTHONUNBUFFERED=1
out=${1:?usage: infra/gpu-line.sh OUT [PARAMS] [FLOW_GENERATIONS] [run|loop]}
params=${2:-params-gpu.yaml}
flow_generations=${3:-2}
mode=${4:-run}
case $mode in run|loop) ;; *) echo "gpu-line: MODE is run or loop, not '$mode'" >&2; exit 2 ;; esac
sets=()
for kv in ${ZERO_GPU_SET:-}; do sets+=(--set "$kv"); done
archive=${ZERO_OFFLINE_ARCHIVE:-.offline/wheels-py312.tar.xz}
budget=${ZERO_GPU_LINE_SECONDS:-560}  # the whole script's seconds: a step that would end past them is not started
standalone=${ZERO_GPU_STANDALONE:-1}
reserve=$([ "$standalone" = 0 ] && echo 30 || echo 120)  # seconds the loop leaves for what follows it
last=0
mkdir -p "$out"
out=$(cd "$out" && pwd)
step() {  # step NAME LIMIT_S COMMAND...: its output to log.txt, its time to run.txt
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    echo "== $name: $*" >> "$out/log.txt"
    timeout "$limit" "$@" >> "$out/log.txt" 2>&1
    local rc=$?
    echo "$name: rc $rc, $((SECONDS - t0)) s" | tee -a "$out/run.txt"
    return $rc
}
{
    date -u +%FT%TZ
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    echo "cores: $(nproc)"
    echo "params: $params${ZERO_GPU_SET:+ with $ZERO_GPU_SET}"
} >> "$out/run.txt" 2>&1

command -v git >/dev/null || { echo "gpu-line: git is needed (the workspace is a git repository for DVC)" | tee -a "$out/run.txt"; exit 1; }
if [ ! -x .venv/bin/python ]; then
    if [ -f "$archive" ]; then
        step install 240 bash infra/offline-install.sh "$archive" || exit 1
    else
        step install 400 make install || exit 1
    fi
fi
.venv/bin/python -m flows.serve --port "${PREFECT_PORT:-4200}" activate --venv .venv --mlflow-port "${MLFLOW_PORT:-5000}" \
    >> "$out/log.txt" 2>&1
. .venv/bin/activate
python -c "import sys, torch, numba; print(sys.version.split()[0], torch.__version__, torch.version.cuda, numba.__version__)" \
    >> "$out/run.txt" 2>&1
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -lms 500 > "$out/smi.csv" &
    smi=$!
    trap 'kill $smi 2>/dev/null' EXIT
fi
step check 60 python -m flows.serve check --line-free "$params" "${sets[@]}" || exit 1
if [ "$flow_generations" -gt 0 ]; then step up 120 python -m flows.serve up || exit 1; fi
if [ "$flow_generations" -eq 0 ]; then
    echo "flow: none asked for (the standalone generation alone)" >> "$out/run.txt"
elif [ "$mode" = loop ]; then  # one zero-loop run of the generations; watched until what the budget leaves the standalone
    left=$((budget - SECONDS - reserve))
    if [ "$left" -lt 60 ]; then
        echo "flow loop: skipped, $SECONDS s of $budget gone" >> "$out/run.txt"
    else
        echo "flow loop of $flow_generations: $(date -u +%T)" >> "$out/run.txt"
        step flow-loop "$left" prefect deployment run zero-loop/local --param "params_file=$params" \
            --param "generations=$flow_generations" --watch --watch-interval 2 \
            --param "overrides=$(python -c 'import json, sys; print(json.dumps(sys.argv[1:]))' ${ZERO_GPU_SET:-})" \
            || python -m flows.serve down >> "$out/log.txt" 2>&1  # a loop still running would share the GPU with the standalone
    fi
else
    for i in $(seq "$flow_generations"); do  # another only while the last one's time still fits before the budget
        if [ "$i" -gt 1 ] && [ $((SECONDS + last)) -gt $((budget - 60)) ]; then
            echo "flow generation $i: skipped, $SECONDS s of $budget gone" >> "$out/run.txt"; break
        fi
        echo "flow generation $i: $(date -u +%T)" >> "$out/run.txt"
        t0=$SECONDS
        step "flow-$i" 300 python -m flows.serve run "$params" "${sets[@]}" || break
        last=$((SECONDS - t0))
    done
fi
cp .prefect/serve.log "$out/flow.log" 2>/dev/null
# train.cuda_graph checked against the plain steps on this device (skipped without CUDA), and the training step
# timed with and without it (zero bench --train, 10 s each), where the budget leaves 90 s
if [ $((budget - SECONDS - reserve)) -gt 90 ]; then
    step test-cuda-graph 60 python -m pytest -q -p no:cacheprovider tests/test_train_recipe.py -k cuda_graph
    tail -n 1 "$out/log.txt" >> "$out/run.txt"
    for graph in true false; do
        step "bench-train-cuda_graph-$graph" 45 zero bench --params "$params" "${sets[@]}" --set "train.cuda_graph=$graph" \
            --train --seconds 10
        tail -n 1 "$out/log.txt" >> "$out/run.txt"
    done
fi
# the same params in a copy of the workspace without the servers: the generation after the flow's last
copy=$(mktemp -d)
if [ "$standalone" != 0 ]; then
    tar -c --exclude=./.venv --exclude=./.prefect --exclude=./.git --exclude=./mlflow.db . | tar -x -C "$copy"
    # a generation the flow left unfinished is dropped: the standalone one plays its own games, not the flow's
    for gdir in "$copy"/gens/*/g*/; do
        case $gdir in */g0000/) continue ;; esac
        [ -f "$gdir/generation.json" ] || rm -rf "$gdir"
    done
fi
echo "standalone: $(date -u +%T)" >> "$out/run.txt"
left=$((budget - SECONDS - 20))
if [ "$standalone" = 0 ]; then
    echo "standalone: none asked for (ZERO_GPU_STANDALONE=0)" >> "$out/run.txt"
elif [ "$left" -gt 30 ]; then
    (cd "$copy" && step standalone "$left" "$OLDPWD/.venv/bin/python" -m flows.standalone run "$params" --generations 1 "${sets[@]}")
else
    echo "standalone: skipped, $SECONDS s of $budget gone" >> "$out/run.txt"
fi
python - "$out/generations.json" "$copy" <<'EOF'
import json, shutil, sys
from pathlib import Path
records = []
for root, kind in ((Path("."), "flow"), (Path(sys.argv[2]), "standalone")):
    for path in sorted(root.glob("gens/*/g*/generation.json" if kind == "flow" else "gens/*/g*/standalone.json")):
        rec = json.loads(path.read_text())
        if kind == "standalone" or rec.get("generation", 0) > 0:
            records.append({"kind": kind, "path": str(path.relative_to(root)), "record": rec})
Path(sys.argv[1]).write_text(json.dumps(records, indent=1) + "\n")
print(f"{len(records)} generation records")
flow = [r for r in records if r["kind"] == "flow"]
if flow:  # the flow's last champion, to measure elsewhere
    champion = Path(flow[-1]["path"]).parent / "champion.pt"
    shutil.copyfile(champion, Path(sys.argv[1]).parent / "champion.pt")
    with open(Path(sys.argv[1]).parent / "run.txt", "a") as run:
        print(f"champion.pt: the champion after {champion.parent}", file=run)
EOF
if [ -f "$out/champion.pt" ]; then  # the flow's last champion with its lineage and recipe, to ship at home
    shipped=$(mktemp -d)
    if step ship 60 python -m flows.ship --params "$params" "${sets[@]}" --models "$shipped" --no-window; then
        tar -C "$shipped" -cf "$out/ship.tar" . && echo "ship.tar: $(tar -tf "$out/ship.tar" | grep -c .) entries" \
            >> "$out/run.txt"
    fi
fi
for line in gens/*/; do  # where each generation's time went, the flow's beside the standalone one's
    python -m flows.timeline "$line" $([ "$standalone" = 0 ] || echo "$copy/$line") >> "$out/run.txt" 2>&1
done
python -m flows.serve down >> "$out/log.txt" 2>&1
[ -f mlflow.db ] && python -c 'import lzma, sys; open(sys.argv[1], "wb").write(lzma.compress(open("mlflow.db", "rb").read()))' \
    "$out/mlflow.db.xz" 2>> "$out/log.txt"
date -u +%FT%TZ >> "$out/run.txt"

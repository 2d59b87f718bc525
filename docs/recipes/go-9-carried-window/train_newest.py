"""A generation of a campaign workspace trained again as a resumed workspace trains it: the same champion,
params and seed, on the generation's own games instead of its window.

    python docs/recipes/go-9-carried-window/train_newest.py WORKSPACE GENERATION OUT.pt
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root: flows and zero
from flows.layout import Workspace, derive_seed
from flows.stages import load_gen_params, window_paths, file_sha256
from zero.train import train

root, g, out = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
gen = Workspace(root).generation("go-9", g)
params = load_gen_params(gen)
seed = derive_seed(params.pipeline.seed, gen.g, "train")
paths = [str(p) for p in window_paths(gen)]
newest = [p for p in paths if f"/{gen.name}/games/" in p]
print(f"window: {len(paths)} shards; newest generation alone: {len(newest)}", flush=True)
summary = train(params, gen.prev.champion, newest, out, seed, meta={"generation": gen.g},
                network=params.network.for_generation(gen.g))
summary["sha256"] = file_sha256(out)
json.dump({"seed": seed, "shards": newest, "summary": summary}, open(out.with_suffix(".json"), "w"), indent=1, default=str)
print(json.dumps({k: summary[k] for k in ("steps", "positions", "sha256") if k in summary}, default=str))

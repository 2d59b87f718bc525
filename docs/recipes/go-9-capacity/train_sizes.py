"""Two fresh networks, b6c64 (the line's) and a larger one, trained the same way on the same carried window
(campaigns/state/go-9.window: twelve generations of the 9x9 line's self-play), scored on the same held-out
games of its newest generation; and the line's own network of the generation before, which never saw them.

    python docs/recipes/go-9-capacity/train_sizes.py OUT_DIR STEPS SIZE [SIZE ...] [--reference NET.pt]
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root
from zero.config import load_params
from zero.games import make_game
from zero.network import ZeroNet, load_checkpoint, net_config_for, save_checkpoint
from zero.train import evaluate, holdout_positions, load_window, train

REPO = Path(__file__).resolve().parents[3]
WINDOW = REPO / "campaigns/state/go-9.window"

parser = argparse.ArgumentParser()
parser.add_argument("out", type=Path)
parser.add_argument("steps", type=int)
parser.add_argument("sizes", nargs="*")
parser.add_argument("--reference", type=Path, help="a trained network scored as it is on the same held-out games")
args = parser.parse_args()
args.out.mkdir(parents=True, exist_ok=True)
manifest = json.loads((WINDOW / "window.json").read_text())
shards = sorted(manifest["shards"], key=lambda s: -s["age"])  # oldest first, as the pipeline lists them
paths = [str(WINDOW / s["file"]) for s in shards]
newest = sum(1 for s in shards if s["age"] == 0)
print(f"{len(paths)} shards, {sum(s['positions'] for s in shards):,} positions; newest generation {newest} shards",
      flush=True)
s1, s2 = int(args.steps * 0.6), int(args.steps * 0.9)
HOLDOUT = "train.holdout_share=0.25"  # a quarter of the newest generation's games: about 2,200 positions
common = [HOLDOUT, f"train.steps={args.steps}", f"train.lr_milestones=[{s1}, {s2}]", "train.max_samples_per_position=null"]
if args.reference:  # scored as it is, in eval mode, on the held-out games the trainings below leave out
    params = load_params(REPO / "campaigns/go-9.yaml", [HOLDOUT])
    net = load_checkpoint(args.reference, torch.device("cpu"))[0]
    c = net.config
    window = load_window(paths, params.train.max_window_positions, (c.in_planes, c.height, c.width), c.num_actions)
    held = np.flatnonzero(holdout_positions(window, newest, params.train.holdout_share))
    scored = evaluate(net, window, held, 256, torch.device("cpu"), c.aux_heads and window.aux_mask is not None)
    (args.out / "reference.json").write_text(json.dumps({"network": str(args.reference), "positions": len(held),
                                                          "holdout": scored}, indent=1) + "\n")
    print(f"reference {args.reference}: {len(held)} held-out positions; "
          + ", ".join(f"{k} {v:.4f}" for k, v in sorted(scored.items())), flush=True)
for size in args.sizes:
    params = load_params(REPO / "campaigns/go-9.yaml", common + [f"network.size={size}"])
    torch.manual_seed(1)
    init = args.out / f"init-{size}.pt"
    save_checkpoint(ZeroNet(net_config_for(params, make_game(params.game))), init, {"generation": 0})
    curve = []

    def held_out(step, metrics):
        scored = {k: v for k, v in metrics.items() if k.startswith("holdout_")}
        if scored:  # the steps at which train() scored the held-out games
            curve.append({"step": step, **scored})

    out = args.out / f"{size}.pt"
    summary = train(params, init, paths, out, seed=7, newest_shards=newest, on_step=held_out)
    record = {"size": size, "init": str(init), "steps": summary["steps"], "seconds": summary["seconds"],
              "holdout": summary.get("holdout"), "final": summary.get("final"), "curve": curve}
    (args.out / f"{size}.json").write_text(json.dumps(record, indent=1, default=str) + "\n")
    h = summary.get("holdout") or {}
    print(f"{size}: {summary['steps']} steps in {summary['seconds']:.0f} s; held out "
          + ", ".join(f"{k} {v:.4f}" for k, v in sorted(h.items()) if isinstance(v, float)), flush=True)

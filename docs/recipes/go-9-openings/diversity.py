# How many different openings a generation's self-play plays: distinct first-k-move sequences up to the
# board's 8 symmetries, and how many games the commonest one opens.
#   python docs/recipes/go-9-openings/diversity.py GAMES.json            (a list of move lists)
#   python docs/recipes/go-9-openings/diversity.py gens/go-9/gNNNN/games OUT.json   (from a generation's
#                                                                         shards; writes the move lists too)
# Run from the repository root.
import collections
import json
import sys
from pathlib import Path

import numpy as np

from zero.config import load_params
from zero.games import make_game
from zero.shards import read_shard

source = Path(sys.argv[1])
if source.is_dir():
    games = [[int(a) for a in m if a >= 0] for f in sorted(source.glob("shard-*.npz")) for m in read_shard(f).moves]
    Path(sys.argv[2]).write_text(json.dumps(games, separators=(",", ":")) + "\n")
else:
    games = json.loads(source.read_text())
perms = np.array(make_game(load_params("campaigns/go-9.yaml").game).symmetries())
print(f"{len(games)} games")
for k in (2, 4, 8, 12, 16, 20, 30):
    seen = collections.Counter(min(tuple(p[np.array(m[:k])]) for p in perms) for m in games if len(m) >= k)
    print(f"first {k:2d} moves: {len(seen):4d} distinct up to symmetry, the commonest in {seen.most_common(1)[0][1]} games")

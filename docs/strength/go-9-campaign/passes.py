# Who passes in the 9x9 campaign's self-play, and when: python passes.py WORKSPACE [LINE_GENERATION_OF_G0000]
# (run from the repository root; the second argument, 11 by default, numbers the line's generations)
import glob, sys
import numpy as np
from zero.shards import read_shard
root = sys.argv[1]
first = int(sys.argv[2]) if len(sys.argv) > 2 else 11
print("| campaign generation (line generation) | games | a white pass before move 40 | a black pass before move 40 "
      "| white's first pass, median move | passes a game, white / black | black wins |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for d in sorted(glob.glob(f"{root}/gens/go-9/g0*")):
    shards = [read_shard(f) for f in sorted(glob.glob(f"{d}/games/shard-*.npz"))]
    if not shards or d.endswith("g0000"):
        continue
    pass_action = shards[0].header["num_actions"] - 1
    early = {1: 0, -1: 0}; count = {1: 0, -1: 0}; first_white = []; games = 0; black = 0
    for s in shards:
        for moves, length, result in zip(s.moves, s.length, s.result):
            passes = np.flatnonzero(moves[:length] == pass_action)
            colour = np.where(passes % 2 == 0, 1, -1)
            for c in (1, -1):
                count[c] += int((colour == c).sum())
                early[c] += int(((colour == c) & (passes < 40)).any())
            if (colour == -1).any():
                first_white.append(passes[colour == -1][0])
            games += 1; black += int(result > 0)
    g = int(d[-4:])
    print(f"| {g} ({g + first}) | {games} | {early[-1]} | {early[1]} | {np.median(first_white):.0f} "
          f"| {count[-1] / games:.1f} / {count[1] / games:.1f} | {black / games:.1%} |")

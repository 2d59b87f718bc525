# Who wins the 9x9 campaign's self-play: python colours.py WORKSPACE (run from the repository root)
import glob, sys
import numpy as np
from zero.shards import read_shard
root = sys.argv[1]
print("| campaign generation (line generation) | games | black wins | resigned | played out, resignation off | black wins among them |")
print("| --- | --- | --- | --- | --- | --- |")
for d in sorted(glob.glob(f"{root}/gens/go-9/g0*")):
    shards = sorted(glob.glob(f"{d}/games/shard-*.npz"))
    if not shards or d.endswith("g0000"):
        continue
    s = [read_shard(f) for f in shards]
    r = np.concatenate([x.result for x in s]); rs = np.concatenate([x.resigned for x in s]); nr = np.concatenate([x.no_resign for x in s])
    g = int(d[-4:])
    print(f"| {g} ({g + 11}) | {len(r)} | {np.mean(r > 0):.1%} | {np.mean(rs):.1%} | {nr.sum()} | {np.mean(r[nr] > 0):.1%} |")

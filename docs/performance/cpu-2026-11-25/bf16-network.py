# The folded network on the CPU in float32 and in bfloat16 (what selfplay.cpu_bf16 / gate.cpu_bf16 run), and
# one training step in float32 and under bfloat16 autocast (train.cpu_bf16), one torch thread, alternating.
#   python docs/performance/cpu-2026-11-25/bf16-network.py MODEL BATCH,BATCH,... ROUNDS
# Run from the repository root.
import copy, sys, time

import numpy as np
import torch

from zero.inference import LeafNet, cpu_has_bfloat16
from zero.network import load_checkpoint
from zero.games import make_game
from zero.config import load_params

torch.set_num_threads(1)
model, batches, rounds = sys.argv[1], [int(b) for b in sys.argv[2].split(",")], int(sys.argv[3])
net, _ = load_checkpoint(model)
net.eval()
game = make_game(load_params("campaigns/go-9.yaml").game)
leaf = {dtype: LeafNet(net, game.symmetries(), torch.device("cpu"), half=dtype == "bf16") for dtype in ("fp32", "bf16")}
print(f"torch {torch.__version__}, bfloat16 instructions: {cpu_has_bfloat16()}")


def rate(f, n, seconds=3.0):
    for _ in range(3):
        f()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        f()
        count += 1
    return count * n / (time.perf_counter() - start)


rng = np.random.default_rng(0)
print("the evaluation's whole call (symmetry, network, softmax), positions/s")
print("batch  round  float32  bfloat16  ratio")
for batch in batches:
    planes = torch.from_numpy(rng.random((batch, game.num_planes, 9, 9)) < 0.3).to(torch.uint8)
    sym = torch.from_numpy(rng.integers(8, size=batch))
    legal = torch.ones((batch, game.num_actions), dtype=torch.bool)
    for r in range(rounds):
        a = rate(lambda: leaf["fp32"](planes, sym, legal), batch)
        b = rate(lambda: leaf["bf16"](planes, sym, legal), batch)
        print(f"{batch:5d}  {r:5d}  {a:7.0f}  {b:8.0f}  {b / a:.2f}x", flush=True)

train_net = copy.deepcopy(net).train().to(memory_format=torch.channels_last)
opt = torch.optim.SGD(train_net.parameters(), lr=1e-3, momentum=0.9)
B = 256
x = (torch.rand(B, game.num_planes, 9, 9) < 0.3).float().contiguous(memory_format=torch.channels_last)
pi, z = torch.softmax(torch.randn(B, game.num_actions), 1), torch.rand(B) * 2 - 1


def step(amp):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
        logits, v = train_net(x)[:2]
    loss = -(pi * torch.log_softmax(logits.float(), 1)).sum(1).mean() + ((v.float().reshape(-1) - z) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


print("training steps, batch 256, channels-last, positions/s")
print("round  float32  bf16-autocast  ratio")
for r in range(rounds):
    a = rate(lambda: step(False), B, 6.0)
    b = rate(lambda: step(True), B, 6.0)
    print(f"{r:5d}  {a:7.0f}  {b:13.0f}  {b / a:.2f}x", flush=True)

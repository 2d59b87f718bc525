# The folded bfloat16 network as selfplay.cpu_bf16 runs it (eager, channels-last), against the same network
# compiled by torch.compile (inductor, dynamic batch) and, where torchao is installed, quantized to int8
# (torchao's pt2e flow with its X86InductorQuantizer, calibrated on 1,024 positions of the carried window, then
# compiled); one torch thread, the variants alternating each round, positions/s of the network call alone.
#   python docs/performance/cpu-2026-11-25/compiled-network.py MODEL BATCH,BATCH,... ROUNDS
# Run from the repository root (int8 row: pip install torchao==0.18.0 into the environment first).
import copy
import glob
import sys
import time

import numpy as np
import torch

from zero.inference import fold_batchnorm
from zero.network import load_checkpoint, search_network
from zero.shards import read_shard

torch.set_num_threads(1)
model, batches, rounds = sys.argv[1], [int(b) for b in sys.argv[2].split(",")], int(sys.argv[3])
net = search_network(load_checkpoint(model)[0].eval(), 0.5, 10.0)
folded = fold_batchnorm(net).eval()
C = net.net.config.in_planes if hasattr(net, "net") else net.config.in_planes
shard = read_shard(sorted(glob.glob("campaigns/state/go-9.window/*.npz"))[0])
real = torch.from_numpy(np.unpackbits(shard.planes, axis=1)[:, : C * 81].reshape(-1, C, 9, 9).astype(np.float32))
cl = torch.channels_last


def rate(f, x, seconds=3.0):
    for _ in range(3):
        f(x)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        f(x)
        count += 1
    return count * x.shape[0] / (time.perf_counter() - start)


bf16 = copy.deepcopy(folded).to(torch.bfloat16).to(memory_format=cl)  # .to() changes a module in place
started = time.perf_counter()
compiled = torch.compile(bf16, dynamic=True)
with torch.inference_mode():
    compiled(real[:64].to(torch.bfloat16).contiguous(memory_format=cl))
print(f"torch {torch.__version__}; torch.compile's first call {time.perf_counter() - started:.1f} s")
int8 = None
try:
    from torchao.quantization.pt2e import move_exported_model_to_eval
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as xiq
except ImportError:
    print("torchao is not installed: no int8 row")
else:
    started = time.perf_counter()
    quantizer = xiq.X86InductorQuantizer().set_global(xiq.get_default_x86_inductor_quantization_config())
    example = real[:64].contiguous(memory_format=cl)
    with torch.no_grad():
        dim = torch.export.Dim("batch", min=2, max=4096)
        graph = torch.export.export(folded, (example,), dynamic_shapes=({0: dim},)).module()
        prepared = prepare_pt2e(graph, quantizer)
        for i in range(0, 1024, 64):
            prepared(real[i : i + 64].contiguous(memory_format=cl))
        int8 = torch.compile(move_exported_model_to_eval(convert_pt2e(prepared)))
        int8(example)
        ref, got = folded(real[:512]), int8(real[:512].contiguous(memory_format=cl))
    agree = float((ref[0].argmax(1) == got[0].argmax(1)).float().mean())
    print(f"int8: quantized and compiled in {time.perf_counter() - started:.1f} s; on 512 positions the top "
          f"policy move agrees in {agree:.1%}, value differs by {float((ref[1] - got[1]).abs().mean()):.4f} on average")
print("batch  round  eager-bf16  compiled-bf16  ratio" + ("  int8  ratio" if int8 is not None else ""))
with torch.inference_mode():
    for batch in batches:
        x = real[:batch].contiguous(memory_format=cl)
        xb = x.to(torch.bfloat16)
        for r in range(rounds):
            a, b = rate(bf16, xb), rate(compiled, xb)
            line = f"{batch:5d}  {r:5d}  {a:10.0f}  {b:13.0f}  {b / a:.2f}x"
            if int8 is not None:
                c = rate(int8, x)
                line += f"  {c:4.0f}  {c / a:.2f}x"
            print(line, flush=True)

# The folded network on the CPU at several batch sizes, one torch thread: channels-last eager (what
# fast_inference runs), torch.compile of it (inductor with freezing), and ONNX Runtime.
#   python network-runtimes.py BATCH,BATCH,... [ONNXRUNTIME_DIR]
# (ONNX Runtime and onnx from a pip --target directory; neither is a dependency of zero). Run from the
# repository root.
import copy, sys, time, warnings

import torch
import torch._inductor.config as inductor

from zero.inference import fold_batchnorm
from zero.network import load_checkpoint

warnings.filterwarnings("ignore")
torch.set_num_threads(1)
inductor.freezing = True
batches = [int(b) for b in sys.argv[1].split(",")]
net, _ = load_checkpoint("models/go-9.pt")
net.eval()
channels = next(m.in_channels for m in net.modules() if isinstance(m, torch.nn.Conv2d))
folded = fold_batchnorm(net)
cl_net = copy.deepcopy(folded).to(memory_format=torch.channels_last)
CL = torch.channels_last


def rate(f, x, seconds=4.0):
    with torch.inference_mode():
        for _ in range(3):
            f(x)
        n, t = 0, time.perf_counter()
        while time.perf_counter() - t < seconds:
            f(x)
            n += 1
        return n * len(x) / (time.perf_counter() - t)


session = None
if len(sys.argv) > 2:
    sys.path.insert(0, sys.argv[2])
    import onnxruntime as ort

    x = torch.randn(64, channels, 9, 9)
    torch.onnx.export(folded, x, "/tmp/zero-net.onnx", input_names=["x"], dynamic_axes={"x": {0: "n"}},
                      dynamo=False)
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    session = ort.InferenceSession("/tmp/zero-net.onnx", options, providers=["CPUExecutionProvider"])

print("batch  channels-last  torch.compile  onnxruntime  (positions/s)")
for batch in batches:
    x = torch.randn(batch, channels, 9, 9)
    eager = rate(lambda a: cl_net(a.contiguous(memory_format=CL)), x)
    compiled_net = torch.compile(cl_net, dynamic=False)
    compiled = rate(lambda a: compiled_net(a.contiguous(memory_format=CL)), x)
    onnx = rate(lambda a: session.run(None, {"x": a.numpy()}), x) if session else float("nan")
    print(f"{batch:5d}  {eager:13.0f}  {compiled:13.0f}  {onnx:11.0f}", flush=True)

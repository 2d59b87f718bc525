# The network alone on the CPU in each layout and runtime: python network-layouts.py THREADS BATCH [ONNXRUNTIME_DIR]
# (ONNX Runtime from a pip --target directory; it is not a dependency of zero). Run from the repository root.
import time, sys, torch, numpy as np
th=int(sys.argv[1]); B=int(sys.argv[2])
torch.set_num_threads(th)
from zero.network import load_checkpoint
from zero.inference import fold_batchnorm
net,meta=load_checkpoint('models/go-9.pt'); net.eval()
C=net.stem[0].in_channels if hasattr(net,'stem') else None
x=torch.randn(B, 0 if C is None else C, 9, 9) if C else None
if x is None:
    for m in net.modules():
        if isinstance(m, torch.nn.Conv2d): C=m.in_channels; break
    x=torch.randn(B,C,9,9)
def bench(f, name, secs=6):
    with torch.inference_mode():
        for _ in range(3): f(x)
        n=0; t=time.perf_counter()
        while time.perf_counter()-t<secs: f(x); n+=1
        dt=time.perf_counter()-t
    print(f"{name:28s} threads {th} batch {B}: {n*B/dt:8.0f} positions/s", flush=True)
    return n*B/dt
folded=fold_batchnorm(net)
r={}
r['eager']=bench(net,'eager')
r['folded']=bench(folded,'folded')
with torch.inference_mode():
    tr=torch.jit.freeze(torch.jit.trace(folded, x[:B]))
r['folded+frozen']=bench(tr,'folded+jit.trace+freeze')
with torch.inference_mode():
    tr2=torch.jit.freeze(torch.jit.trace(net.eval(), x[:B]))
r['eager-frozen']=bench(tr2,'eager net jit.freeze')
cl=folded.to(memory_format=torch.channels_last)
r['cl']=bench(lambda a: cl(a.contiguous(memory_format=torch.channels_last)),'folded channels_last')
try:
    sys.path.insert(0, sys.argv[3] if len(sys.argv) > 3 else '')
    import onnxruntime as ort
    torch.onnx.export(folded, x[:B], '/tmp/net.onnx', input_names=['x'], dynamic_axes={'x':{0:'n'}}, dynamo=False)
    so=ort.SessionOptions(); so.intra_op_num_threads=th; so.inter_op_num_threads=1
    s=ort.InferenceSession('/tmp/net.onnx', so, providers=['CPUExecutionProvider'])
    xn=x.numpy()
    r['ort']=bench(lambda a: s.run(None, {'x': xn}),'onnxruntime')
except Exception as e: print('ort failed', repr(e)[:300])

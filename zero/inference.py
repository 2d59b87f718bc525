"""Fast inference for the search: one call does the whole leaf evaluation on the network's device.

`fold_batchnorm` folds every batch norm of a ZeroNet into the convolution before
it (inference only: the running statistics become the convolution's scale and
bias), so a residual block is two convolutions and the network launches about half
the kernels. `LeafNet` runs a folded network the way NetworkEvaluator needs it:
the leaf's board symmetry applied to its input planes, the network, the
symmetry taken back off the policy logits and the softmax over the legal actions,
all in torch on the device. On CUDA each call is a replay of a CUDA graph captured
once per batch-size bucket (a batch is padded up to the next bucket), so a call
costs a few launches instead of one per kernel. On the CPU the same code runs eagerly,
its convolutions in channels-last layout.

Folding, the CPU's channels-last convolutions and float32 softmax change the arithmetic
(priors agree with the eager path to about 1e-6), so the evaluator takes this path only under the params switch
`fast_inference` (zero.config), and the off value keeps every shard's bytes. The network may run in bfloat16
(weights and activations; the softmax stays float32): on CUDA under `half_precision`, on the CPU under
`cpu_bf16`, which doubles a core's evaluations on CPUs with bfloat16 instructions (docs/performance.md).
"""

from __future__ import annotations

import copy
import functools
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

BUCKETS = (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


def _fold(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> nn.Conv2d:
    """A convolution with bias equal to bn(conv(x)) for the batch norm's running statistics."""
    scale = bn.weight.detach() / torch.sqrt(bn.running_var + bn.eps)
    fused = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                      conv.dilation, conv.groups, bias=True).to(conv.weight.device)
    bias = conv.bias.detach() if conv.bias is not None else torch.zeros_like(bn.running_mean)
    with torch.no_grad():
        fused.weight.copy_(conv.weight.detach() * scale[:, None, None, None])
        fused.bias.copy_((bias - bn.running_mean) * scale + bn.bias.detach())
    return fused


def fold_batchnorm(net: nn.Module) -> nn.Module:
    """An inference copy of `net` (a ZeroNet) with each BatchNorm2d folded into the Conv2d before it.

    The pairs are the residual blocks' (conv1, bn1), (conv2, bn2) and (pool_conv, pool_bn), and every
    nn.Sequential that starts Conv2d, BatchNorm2d (the stem and the heads). The copy is in eval mode
    and computes what `net.eval()` computes, up to float rounding.
    """
    folded = copy.deepcopy(net).eval()
    for module in folded.modules():
        for conv_name, bn_name in (("conv1", "bn1"), ("conv2", "bn2"), ("pool_conv", "pool_bn")):
            conv, bn = getattr(module, conv_name, None), getattr(module, bn_name, None)
            if isinstance(conv, nn.Conv2d) and isinstance(bn, nn.BatchNorm2d):
                setattr(module, conv_name, _fold(conv, bn))
                setattr(module, bn_name, nn.Identity())
        if isinstance(module, nn.Sequential):
            for i in range(len(module) - 1):
                if isinstance(module[i], nn.Conv2d) and isinstance(module[i + 1], nn.BatchNorm2d):
                    module[i] = _fold(module[i], module[i + 1])
                    module[i + 1] = nn.Identity()
    left = [name for name, m in folded.named_modules() if isinstance(m, nn.BatchNorm2d)]
    if left:
        raise ValueError(f"fold_batchnorm: no convolution before batch norm {', '.join(left)}")
    return folded


@functools.cache
def cpu_has_bfloat16() -> bool | None:
    """Whether this machine's CPU has bfloat16 instructions (avx512_bf16 or amx_bf16 on x86, bf16 on Arm), from
    /proc/cpuinfo's flags; None where there is no such file."""
    info = Path("/proc/cpuinfo")
    if not info.is_file():
        return None
    words = set(info.read_text(errors="replace").split())
    return bool(words & {"avx512_bf16", "amx_bf16", "bf16"})


@functools.cache
def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo's `model name`, else platform.processor(), else "unknown")."""
    import platform

    info = Path("/proc/cpuinfo")
    if info.is_file():
        for line in info.read_text(errors="replace").splitlines():
            if line.startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _on_cpu(section) -> bool:
    """Whether a stage's network runs on this machine's CPU (zero.network.pick_device of its device)."""
    from zero.network import pick_device

    return pick_device(section.device).type == "cpu"


def arithmetic(params) -> dict:
    """What a generation's stages compute in on this machine: the CPU, whether it has bfloat16 instructions,
    and for self-play, training and the gate the number format and layout of their network."""
    stages = {}
    for name in ("selfplay", "train", "gate"):
        section = getattr(params, name)
        if not _on_cpu(section):
            stages[name] = "cuda"
            continue
        bf16 = section.cpu_bf16
        layout = section.channels_last if name == "train" else section.fast_inference
        stages[name] = ("bfloat16" if bf16 else "float32") + (", channels-last" if layout else "")
    return {"cpu": cpu_model(), "bf16_instructions": cpu_has_bfloat16(), **stages}


def bf16_refusal(params) -> str | None:
    """Why params must not run here, when they ask for bfloat16 on a CPU without bfloat16 instructions: it runs
    emulated, several times slower than float32 (7.2x in self-play on an AMD EPYC with AVX2 alone). None when
    they can run as asked."""
    asked = [f"{name}.cpu_bf16" for name in ("selfplay", "train", "gate")
             if getattr(params, name).cpu_bf16 and _on_cpu(getattr(params, name))]
    if not asked or cpu_has_bfloat16() is not False:
        return None
    off = " ".join(f"{a}=false" for a in asked)
    return (f"{', '.join(asked)}: this CPU ({cpu_model()}) has no bfloat16 instructions (avx512_bf16, amx_bf16), so "
            f"bfloat16 would run emulated, several times slower than float32; run these params with {off} "
            f"(the same recipe in float32, up to rounding), or on a CPU that has them")


def bucket_for(n: int, buckets: tuple[int, ...] = BUCKETS) -> int:
    """The smallest bucket that holds a batch of n (n itself past the largest)."""
    for b in buckets:
        if n <= b:
            return b
    return n


class LeafNet:
    """A folded network that evaluates leaves on its device: symmetry, network, un-symmetry, masked softmax.

    Args:
        net: a ZeroNet (folded here; the original is not changed).
        perms: [S, A] action permutations (game.symmetries()), or None for none.
        device: the network's device.
        half: the network's weights and activations in bfloat16 (the softmax stays float32); on the CPU the
            params switch cpu_bf16, on CUDA half_precision.
        graphs: on CUDA, capture each bucket's call in a CUDA graph (False: eager, as on the CPU).

    `__call__(planes [n, C, H, W] uint8 or float, sym [n] int64 or None, legal [n, A] bool)` takes tensors on
    the device and returns (priors [n, A] float32 over the legal actions, uniform where none is legal;
    values [n] float32), on the device. With graphs the results are views of the bucket's static outputs,
    valid until the next call of the same bucket is enqueued (the caller copies them out on the stream).
    """

    def __init__(self, net: nn.Module, perms: np.ndarray | None, device: torch.device, half: bool = False,
                 graphs: bool | str = True):
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.half = half
        self.dtype = torch.bfloat16 if self.half else torch.float32
        if self.half and not self.cuda and cpu_has_bfloat16() is False:
            warnings.warn("cpu_bf16: this CPU has no bfloat16 instructions (avx512_bf16, amx_bf16): the network runs "
                          "emulated, likely slower than in float32", stacklevel=2)
        self.net = fold_batchnorm(net).to(self.device, self.dtype)  # bf16 weights: no autocast casts per call
        # On the CPU the convolutions run in channels-last layout (oneDNN's NHWC kernels): for b6c64 9x9 on
        # one core, self-play makes 1.29-1.38 times the evaluations a second (docs/performance.md).
        self.channels_last = not self.cuda
        if self.channels_last:
            self.net = self.net.to(memory_format=torch.channels_last)
        # "emulate": the bucketed static buffers of the graph path, replayed eagerly (a CPU stand-in for tests)
        self.graphs = "emulate" if graphs == "emulate" else bool(graphs) and self.cuda
        self.perms = self.inverse = None
        if perms is not None and len(perms) > 1:
            self.perms = torch.as_tensor(np.array(perms, np.int64), device=self.device)
            self.inverse = torch.as_tensor(np.argsort(perms, axis=1).astype(np.int64), device=self.device)
        self._graphs: dict[int, tuple] = {}  # bucket -> (replay, static inputs, static outputs)
        self.captures = 0

    def compute(self, planes: torch.Tensor, sym: torch.Tensor | None, legal: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """The eager computation (what a captured graph replays)."""
        x = planes.to(self.dtype)
        n, c, h, w = x.shape
        if self.inverse is not None and sym is not None:
            # transformed[..., perm[s, a]] = planes[..., a]  <=>  transformed = planes[..., inverse[s]]
            gather = self.inverse[sym][:, : h * w]
            x = torch.gather(x.reshape(n, c, h * w), 2, gather[:, None, :].expand(n, c, h * w)).reshape(n, c, h, w)
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        logits, value = self.net(x)
        logits = logits.float()
        if self.perms is not None and sym is not None:
            logits = torch.gather(logits, 1, self.perms[sym])
        any_legal = legal.any(dim=1, keepdim=True)
        masked = logits.masked_fill(~legal, float("-inf")).masked_fill(~any_legal, 0.0)
        priors = torch.softmax(masked, dim=1)
        return priors, value.float().reshape(n, -1).squeeze(1)  # [n], or [n, 2] with a value head beside

    def __call__(self, planes: torch.Tensor, sym: torch.Tensor | None, legal: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.inference_mode():
            if not self.graphs:
                return self.compute(planes, sym, legal)
            n = planes.shape[0]
            replay, inputs, outputs = self._graph(bucket_for(n), planes, legal)
            inputs[0][:n].copy_(planes)
            if sym is not None:
                inputs[1][:n].copy_(sym)
            inputs[2][:n].copy_(legal)
            replay()
            return outputs[0][:n], outputs[1][:n]

    def _graph(self, bucket: int, planes: torch.Tensor, legal: torch.Tensor) -> tuple:
        """One bucket's (replay, static inputs, static outputs), captured on first use. The rows of a
        bucket past a call's batch hold whatever an earlier call left there: each row is computed on
        its own (batch norm is folded), so they change nothing and their results are never read."""
        found = self._graphs.get(bucket)
        if found is not None:
            return found
        x = torch.zeros((bucket, *planes.shape[1:]), dtype=planes.dtype, device=self.device)
        sym = torch.zeros(bucket, dtype=torch.int64, device=self.device)
        mask = torch.ones((bucket, legal.shape[1]), dtype=torch.bool, device=self.device)
        use_sym = sym if self.perms is not None else None
        if self.graphs == "emulate":
            out = self.compute(x, use_sym, mask)

            def replay():
                for static, fresh in zip(out, self.compute(x, use_sym, mask)):
                    static.copy_(fresh)
        else:
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):
                for _ in range(2):
                    self.compute(x, use_sym, mask)
            torch.cuda.current_stream(self.device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = self.compute(x, use_sym, mask)
            replay = graph.replay
        self.captures += 1
        found = self._graphs[bucket] = (replay, (x, sym, mask), out)
        return found

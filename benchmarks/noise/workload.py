"""One measured run of a batched greedy-decoding workload on a random-initialised GPT-like decoder.

The shape follows how the runbook runs a model: a fixed request set, a client that keeps `concurrency`
requests in flight (a slot frees, the next request is sent), a warm-up pass over the requests that is not
scored, then the scored pass. The "server" is a plain decode loop with continuous batching over a
fixed-size KV cache: a new request is prefilled into a free slot, then every step decodes one token for
all slots (padded, fixed shape) and copies the tokens to the host, as a server does to stream or detokenise.
Output lengths are fixed per request (no EOS), so every run does the same work and makes the same tokens
unless a kernel is nondeterministic. Needs torch; nothing here reads the environment.
"""
from __future__ import annotations

import hashlib
import time
import zlib
from collections import deque
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .config import WorkloadConfig


@dataclass(frozen=True)
class PassResult:
    """One pass over the request set: what the benchmark client would print."""
    requests: int
    output_tokens: int
    duration_s: float
    throughput_rps: float
    tokens_per_s: float
    mean_latency_s: float
    p50_latency_s: float
    p95_latency_s: float
    token_sha256: str
    request_crc32: tuple[int, ...]  # per request, to count how many requests' tokens differ between passes


class Block(nn.Module):
    def __init__(self, d: int, heads: int, device, dtype):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d, device=device, dtype=dtype)
        self.qkv = nn.Linear(d, 3 * d, device=device, dtype=dtype)
        self.proj = nn.Linear(d, d, device=device, dtype=dtype)
        self.ln2 = nn.LayerNorm(d, device=device, dtype=dtype)
        self.fc1 = nn.Linear(d, 4 * d, device=device, dtype=dtype)
        self.fc2 = nn.Linear(4 * d, d, device=device, dtype=dtype)

    def _split(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        return q, k, v  # each [b, heads, t, head_dim]

    def _finish(self, x: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
        b, _, t, _ = attn.shape
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, -1))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    def prefill(self, x, cache_k, cache_v, slot: int):
        q, k, v = self._split(x)
        length = x.shape[1]
        cache_k[slot, :, :length] = k[0]
        cache_v[slot, :, :length] = v[0]
        return self._finish(x, F.scaled_dot_product_attention(q, k, v, is_causal=True))

    def decode(self, x, cache_k, cache_v, slots, positions, mask):
        q, k, v = self._split(x)
        cache_k[slots, :, positions] = k[:, :, 0]
        cache_v[slots, :, positions] = v[:, :, 0]
        return self._finish(x, F.scaled_dot_product_attention(q, cache_k, cache_v, attn_mask=mask))


class Decoder(nn.Module):
    """GPT-like decoder with learned positions and a per-slot KV cache (random weights, fixed seed)."""

    def __init__(self, cfg: WorkloadConfig, device: torch.device):
        super().__init__()
        dtype = getattr(torch, cfg.dtype)
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.d_model, device=device, dtype=dtype)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model, device=device, dtype=dtype)
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.n_heads, device, dtype) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model, device=device, dtype=dtype)
        self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False, device=device, dtype=dtype)
        head_dim = cfg.d_model // cfg.n_heads
        shape = (cfg.n_layers, cfg.concurrency, cfg.n_heads, cfg.max_len, head_dim)
        self.cache_k = torch.zeros(shape, device=device, dtype=dtype)
        self.cache_v = torch.zeros(shape, device=device, dtype=dtype)
        self.slots = torch.arange(cfg.concurrency, device=device)
        self.columns = torch.arange(cfg.max_len, device=device)

    def prefill(self, prompt: torch.Tensor, slot: int) -> torch.Tensor:
        """Prompt [length] into `slot`'s cache; returns the greedy next token (on device)."""
        positions = torch.arange(prompt.shape[0], device=prompt.device)
        x = (self.embed(prompt) + self.pos(positions))[None]
        for layer, block in enumerate(self.blocks):
            x = block.prefill(x, self.cache_k[layer], self.cache_v[layer], slot)
        return self.head(self.norm(x[0, -1])).argmax(-1)

    def decode(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """One token for every slot (idle slots compute padding); returns the greedy next tokens [slots]."""
        x = (self.embed(tokens) + self.pos(positions))[:, None]
        mask = (self.columns[None, :] <= positions[:, None])[:, None, None]  # [slots, 1, 1, max_len]
        for layer, block in enumerate(self.blocks):
            x = block.decode(x, self.cache_k[layer], self.cache_v[layer], self.slots, positions, mask)
        return self.head(self.norm(x[:, 0])).argmax(-1)


def make_requests(cfg: WorkloadConfig) -> list[tuple[np.ndarray, int]]:
    """The fixed request set: (prompt token ids, output length) per request, the same in every run."""
    rng = np.random.default_rng(cfg.seed)
    prompts = rng.integers(cfg.prompt_min, cfg.prompt_max + 1, size=cfg.requests)
    outputs = rng.integers(cfg.output_min, cfg.output_max + 1, size=cfg.requests)
    return [(rng.integers(0, cfg.vocab, size=int(p)), int(o)) for p, o in zip(prompts, outputs, strict=True)]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@torch.inference_mode()
def serve_pass(model: Decoder, requests: list[tuple[np.ndarray, int]], device: torch.device) -> PassResult:
    """Serve every request once with `concurrency` in flight; latency is send (slot granted) to last token."""
    cfg = model.cfg
    prompts = [torch.as_tensor(p, device=device) for p, _ in requests]
    queue = deque(range(len(requests)))
    owner = [-1] * cfg.concurrency  # request id per slot, -1 when free
    made = [0] * cfg.concurrency
    tokens = torch.zeros(cfg.concurrency, dtype=torch.long, device=device)
    positions = torch.zeros(cfg.concurrency, dtype=torch.long, device=device)
    sent = np.zeros(len(requests))
    latency = np.zeros(len(requests))
    outputs: list[list[int]] = [[] for _ in requests]
    _sync(device)
    start = time.perf_counter()
    while queue or any(r >= 0 for r in owner):
        for slot in range(cfg.concurrency):
            if owner[slot] < 0 and queue:
                rid = queue.popleft()
                sent[rid] = time.perf_counter()
                first = int(model.prefill(prompts[rid], slot))  # host copy: the server streams the token
                outputs[rid].append(first)
                owner[slot], made[slot] = rid, 1
                tokens[slot] = first
                positions[slot] = len(requests[rid][0])
                if made[slot] >= requests[rid][1]:
                    latency[rid] = time.perf_counter() - sent[rid]
                    owner[slot] = -1
        if not any(r >= 0 for r in owner):
            continue
        step = model.decode(tokens, positions).tolist()
        now = time.perf_counter()
        for slot, rid in enumerate(owner):
            if rid < 0:
                continue
            outputs[rid].append(step[slot])
            made[slot] += 1
            if made[slot] >= requests[rid][1]:
                latency[rid] = now - sent[rid]
                owner[slot] = -1
        tokens = torch.as_tensor(step, device=device)
        positions = torch.clamp(positions + 1, max=cfg.max_len - 1)  # idle slots park on the last column
    duration = time.perf_counter() - start
    digest = hashlib.sha256(np.concatenate([np.asarray(o, dtype=np.int64) for o in outputs]).tobytes())
    n_tokens = sum(len(o) for o in outputs)
    return PassResult(
        requests=len(requests), output_tokens=n_tokens, duration_s=duration,
        throughput_rps=len(requests) / duration, tokens_per_s=n_tokens / duration,
        mean_latency_s=float(latency.mean()), p50_latency_s=float(np.percentile(latency, 50)),
        p95_latency_s=float(np.percentile(latency, 95)), token_sha256=digest.hexdigest(),
        request_crc32=tuple(zlib.crc32(np.asarray(o, dtype=np.int64).tobytes()) for o in outputs))


def environment(device: torch.device) -> dict:
    """What the run was measured on, as torch sees it (the driver comes from nvidia-smi, in the parent)."""
    info = {"torch": torch.__version__, "torch_cuda": torch.version.cuda, "device_type": device.type}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(gpu_name=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1),
                    compute_capability=f"{props.major}.{props.minor}",
                    cudnn=torch.backends.cudnn.version())
    return info


def measure_run(cfg: WorkloadConfig, device_name: str, began: float) -> dict:
    """Everything one fresh process measures: setup since `began` (perf_counter), the warm-up pass, the scored pass."""
    device = torch.device(device_name)
    if device.type == "cpu":
        torch.set_num_threads(1)  # the smoke test shares two cores; one thread keeps it steady
    torch.manual_seed(cfg.seed)
    model = Decoder(cfg, device).eval()
    requests = make_requests(cfg)
    _sync(device)
    setup_s = time.perf_counter() - began
    warmup = serve_pass(model, requests, device)
    scored = serve_pass(model, requests, device)
    changed = sum(a != b for a, b in zip(warmup.request_crc32, scored.request_crc32, strict=True))
    warmup_fields = asdict(warmup)
    del warmup_fields["request_crc32"]  # only the scored pass's are kept: the JSON stays small
    return {"setup_s": setup_s, "warmup": warmup_fields, "scored": asdict(scored),
            "requests_changed_vs_warmup": changed, "environment": environment(device)}

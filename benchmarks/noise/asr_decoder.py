"""A Whisper-large-v3-shaped decoder serving transcriptions with continuous batching (plain torch, random weights).

Shapes are Whisper large-v3's decoder (transformers' WhisperConfig for openai/whisper-large-v3): 32 layers,
d_model 1280, 20 heads, FFN 5120, vocabulary 51866, 448 target positions, cross-attention over 1500 encoder
frames. Weights are random (fixed seed, no download); each request gets its own random "encoder output"
(the encoder is not run: its cost is one pass per request, the decoder's is one step per token). Greedy
decoding runs a fixed number of tokens per request, chosen from a hash of its transcript, so every run
does the same work.

The engine keeps `batch` slots with a static KV cache (self-attention: 448 positions; cross-attention:
1500 frames, computed once per request on admission). A scheduler thread admits waiting requests into
free slots, then runs one decode step for all slots (fixed shape, padded like a server's captured batch)
and copies the next tokens to the host, as a server does to detokenise. `graphs=True` captures that step
once with torch.cuda.CUDAGraph and replays it (what sglang does for decode); `graphs=False` runs it eagerly.
"""
from __future__ import annotations

import threading
import time
import zlib
from collections import deque
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

WHISPER_LARGE_V3 = {"layers": 32, "d_model": 1280, "heads": 20, "ffn": 5120, "vocab": 51866, "max_len": 448,
                    "frames": 1500}
FORCED = (50258, 50259, 50360, 50364)  # <|startoftranscript|> <|en|> <|transcribe|> <|notimestamps|>


def tokens_for(text: str, low: int = 16, spread: int = 48) -> int:
    """Output tokens of one request: fixed by its transcript, 16..63 (SeedTTS utterances are short)."""
    return low + zlib.crc32(text.encode()) % spread


@dataclass
class Request:
    tokens: int
    seed: int
    done: threading.Event = field(default_factory=threading.Event)
    output: list[int] = field(default_factory=list)


class Decoder:
    def __init__(self, batch: int, *, graphs: bool, device: str = "cuda", seed: int = 20261203,
                 shape: dict | None = None, slow: float = 0.0) -> None:
        s = {**WHISPER_LARGE_V3, **(shape or {})}
        self.s, self.batch, self.graphs, self.device = s, batch, graphs, device
        self.dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        d, h, layers = s["d_model"], s["heads"], s["layers"]
        self.dh = d // h
        torch.manual_seed(seed)

        def w(*shape: int) -> torch.Tensor:
            return torch.randn(*shape, device=device, dtype=self.dtype) * shape[0] ** -0.5

        self.embed = w(s["vocab"], d)
        self.pos_embed = w(s["max_len"], d)
        self.layers = [{name: w(d, d) for name in ("q", "k", "v", "o", "cq", "ck", "cv", "co")}
                       | {"fc1": w(d, s["ffn"]), "fc2": w(s["ffn"], d)} for _ in range(layers)]
        cache = (layers, batch, h, s["max_len"], self.dh)
        cross = (layers, batch, h, s["frames"], self.dh)
        self.k = torch.zeros(cache, device=device, dtype=self.dtype)
        self.v = torch.zeros(cache, device=device, dtype=self.dtype)
        self.ck = torch.zeros(cross, device=device, dtype=self.dtype)
        self.cv = torch.zeros(cross, device=device, dtype=self.dtype)
        self.tokens = torch.zeros(batch, device=device, dtype=torch.long)  # static inputs of the step
        self.pos = torch.zeros(batch, device=device, dtype=torch.long)
        self.next = torch.zeros(batch, device=device, dtype=torch.long)  # static output
        self.rows = torch.arange(batch, device=device)
        self.positions = torch.arange(s["max_len"], device=device)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.waiting: deque[Request] = deque()
        self.slots: list[Request | None] = [None] * batch
        self.host_tokens = [0] * batch  # what each slot decodes next, and at which position
        self.host_pos = [0] * batch
        self.cond = threading.Condition()
        self.ready = threading.Event()
        self.failed: BaseException | None = None
        self.steps = 0
        # A slower build for A/B checks (issue 37): after each step, sleep `slow` × that step's time, so
        # throughput drops by about slow / (1 + slow) (0.0309 -> about -3%) with the same kernels.
        self.slow = slow
        self.setup_s: dict[str, float] = {}

    # --- the model ---------------------------------------------------------------------------------

    def _norm(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (x.shape[-1],))

    def _step(self) -> None:
        b, h, dh = self.batch, self.s["heads"], self.dh
        x = self.embed[self.tokens] + self.pos_embed[self.pos]
        mask = (self.positions[None, :] <= self.pos[:, None])[:, None, None, :]
        for i, p in enumerate(self.layers):
            y = self._norm(x)
            q = (y @ p["q"]).view(b, h, 1, dh)
            self.k[i][self.rows, :, self.pos] = (y @ p["k"]).view(b, h, dh)
            self.v[i][self.rows, :, self.pos] = (y @ p["v"]).view(b, h, dh)
            a = F.scaled_dot_product_attention(q, self.k[i], self.v[i], attn_mask=mask)
            x = x + a.reshape(b, -1) @ p["o"]
            q = (self._norm(x) @ p["cq"]).view(b, h, 1, dh)
            a = F.scaled_dot_product_attention(q, self.ck[i], self.cv[i])
            x = x + a.reshape(b, -1) @ p["co"]
            x = x + F.gelu(self._norm(x) @ p["fc1"]) @ p["fc2"]
        logits = self._norm(x) @ self.embed.T
        self.next.copy_(logits.argmax(-1))

    def _admit(self, slot: int, request: Request) -> None:
        """Cross-attention keys and values of the request's (random) encoder output into the slot."""
        g = torch.Generator(device=self.device).manual_seed(request.seed)
        enc = torch.randn(self.s["frames"], self.s["d_model"], device=self.device, dtype=self.dtype, generator=g)
        for i, p in enumerate(self.layers):
            self.ck[i][slot] = (enc @ p["ck"]).view(-1, self.s["heads"], self.dh).transpose(0, 1)
            self.cv[i][slot] = (enc @ p["cv"]).view(-1, self.s["heads"], self.dh).transpose(0, 1)

    # --- serving -------------------------------------------------------------------------------------

    def start(self) -> Decoder:
        threading.Thread(target=self._serve, name="decoder", daemon=True).start()
        return self

    def generate(self, tokens: int, seed: int, timeout_s: float = 600.0) -> list[int]:
        request = Request(min(tokens, self.s["max_len"] - len(FORCED)), seed)
        with self.cond:
            self.waiting.append(request)
            self.cond.notify()
        if not request.done.wait(timeout_s):
            raise TimeoutError("decoder did not finish the request")
        if self.failed is not None:
            raise RuntimeError(f"decoder failed: {self.failed}")
        return request.output

    def _warm(self) -> None:
        began = time.perf_counter()
        for _ in range(3):  # kernel selection and allocator warm-up, on a side stream as graph capture wants
            self._step()
        torch.cuda.synchronize()
        self.setup_s["warm"] = time.perf_counter() - began
        if self.graphs:
            began = time.perf_counter()
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                self._step()
            torch.cuda.current_stream().wait_stream(stream)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self._step()
            torch.cuda.synchronize()
            self.setup_s["capture"] = time.perf_counter() - began

    def _serve(self) -> None:
        try:
            with torch.inference_mode():
                self._warm()
                self.ready.set()
                while True:
                    self._one_step()
        except BaseException as exc:  # reported to every waiting request, and by the server's health
            self.failed = exc
            for request in [*self.waiting, *(r for r in self.slots if r is not None)]:
                request.done.set()
            raise

    def _one_step(self) -> None:
        with self.cond:
            while not self.waiting and not any(self.slots):
                self.cond.wait()
            admitted = []
            for slot in range(self.batch):
                if self.slots[slot] is None and self.waiting:
                    self.slots[slot] = self.waiting.popleft()
                    admitted.append(slot)
        for slot in admitted:
            request = self.slots[slot]
            assert request is not None
            self._admit(slot, request)
            self.host_tokens[slot], self.host_pos[slot] = FORCED[0], 0
        began = time.perf_counter()
        self.tokens.copy_(torch.tensor(self.host_tokens))  # host to device each step, as a server does
        self.pos.copy_(torch.tensor(self.host_pos))
        if self.graph is not None:
            self.graph.replay()
        else:
            self._step()
        produced = self.next.tolist()  # to the host every step, as a server detokenises (a sync, as there)
        self.steps += 1
        if self.slow > 0:
            time.sleep(self.slow * (time.perf_counter() - began))
        for slot, request in enumerate(self.slots):
            if request is None:
                continue
            position = self.host_pos[slot]  # the position just decoded
            if position + 1 < len(FORCED):
                following = FORCED[position + 1]
            else:
                following = produced[slot]
                request.output.append(following)
            self.host_tokens[slot], self.host_pos[slot] = following, position + 1
            if len(request.output) >= request.tokens:
                self.slots[slot] = None
                self.host_tokens[slot], self.host_pos[slot] = 0, 0
                request.done.set()

"""TEST DOUBLE shared helpers for the stand-in sglang-omni checkout (not upstream code).

Stdlib only: the stand-in runs in the checkout's python, which on the GPU machine has no extra
packages and no network. The "audio" is a real 16 kHz mono WAV whose RIFF file carries the
reference transcript in an extra `txt ` chunk, so the stand-in server can "transcribe" it.

Knobs live in <checkout>/standin-knobs.json (see tests/standin/README.md).
"""
from __future__ import annotations

import fcntl
import http.client
import json
import os
import struct
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
KNOBS_FILE = CHECKOUT / "standin-knobs.json"
STATE_FILE = CHECKOUT / "standin-state.json"

# The real dataset sizes (runbook Step 3: 1088 2020 800 20 25); a knob can make them smaller.
REAL_COUNTS = {"seedtts_en": 1088, "seedtts_zh": 2020, "movies800times": 800, "aishell4_long": 20, "googletime": 25}


def timing_line(kind: str, start: float | None, end: float) -> str:
    """One machine-readable line for benchmarks/bench_run_overhead.py. `start` is taken on the program's first
    line, so interpreter start-up counts as gate overhead there (an upper bound, never flattering)."""
    return f"[standin-timing] {kind} process_start_epoch={start} end_epoch={end:.6f}"


def knobs() -> dict:
    try:
        return json.loads(KNOBS_FILE.read_text())
    except FileNotFoundError:
        return {}


def bump(counter: str) -> int:
    """Increment a named counter shared by all stand-in processes of this checkout; return the new value."""
    with open(STATE_FILE.with_suffix(".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            state = json.loads(STATE_FILE.read_text())
        except (FileNotFoundError, ValueError):
            state = {}
        state[counter] = state.get(counter, 0) + 1
        STATE_FILE.write_text(json.dumps(state))
        return state[counter]


def fault_active(section: dict, number: int) -> bool:
    """A fault section applies to every call, or only to call number `on_call` (1-based) when given."""
    on_call = section.get("on_call")
    return on_call is None or on_call == number


def count(key: str) -> int:
    return int(knobs().get("counts", {}).get(key, REAL_COUNTS[key]))


# --- audio ---------------------------------------------------------------------------------------

def make_wav(text: str, duration_s: float = 0.05, rate: int = 16000) -> bytes:
    frames = int(duration_s * rate)
    data = b"\0\0" * frames
    txt = text.encode("utf-8")
    if len(txt) % 2:
        txt += b"\0"
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"txt " + struct.pack("<I", len(txt)) + txt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def read_wav(blob: bytes) -> tuple[str, float]:
    """(transcript, duration_s) of a stand-in WAV. Raises ValueError for anything else."""
    if blob[:4] != b"RIFF" or blob[8:12] != b"WAVE":
        raise ValueError("not a WAV file")
    pos, text, rate, frames = 12, "", 16000, 0
    while pos + 8 <= len(blob):
        name, size = blob[pos:pos + 4], struct.unpack("<I", blob[pos + 4:pos + 8])[0]
        chunk = blob[pos + 8:pos + 8 + size]
        if name == b"fmt ":
            rate = struct.unpack("<I", chunk[4:8])[0]
        elif name == b"txt ":
            text = chunk.rstrip(b"\0").decode("utf-8")
        elif name == b"data":
            frames = size // 2
        pos += 8 + size + (size % 2)
    return text, frames / rate


# --- HTTP ----------------------------------------------------------------------------------------

def multipart(fields: dict, file_name: str, file_bytes: bytes, mime: str = "audio/wav") -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = []
    for key, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode())
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file_name}"\r\n'
                 f"Content-Type: {mime}\r\n\r\n".encode() + file_bytes + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def parse_multipart(body: bytes, content_type: str) -> tuple[dict, bytes | None]:
    boundary = content_type.split("boundary=", 1)[1].strip().strip('"').encode()
    fields, file_bytes = {}, None
    for part in body.split(b"--" + boundary):
        if b"\r\n\r\n" not in part:
            continue
        head, _, value = part.partition(b"\r\n\r\n")
        value = value[:-2] if value.endswith(b"\r\n") else value
        disposition = next((l for l in head.decode(errors="replace").split("\r\n")
                            if l.lower().startswith("content-disposition")), "")
        name = disposition.split('name="', 1)[1].split('"', 1)[0] if 'name="' in disposition else ""
        if name == "file":
            file_bytes = value
        elif name:
            fields[name] = value.decode("utf-8", errors="replace")
    return fields, file_bytes


def post_transcription(base_url: str, fields: dict, wav: bytes, file_name: str, timeout_s: float,
                       stream: bool, timings: list | None = None) -> tuple[int, str]:
    """POST /v1/audio/transcriptions; returns (http status, transcript or error text). Streamed, a successful
    request appends (time to first text, [gaps between text deltas]) in seconds to `timings`, as upstream's
    clients measure them (from just before the POST; per delta event as it arrives)."""
    body, ctype = multipart(fields, file_name, wav)
    headers = {"Content-Type": ctype}
    if stream:
        headers["x-sglang-omni-route-stream"] = "true"
    request = urllib.request.Request(base_url + "/v1/audio/transcriptions", data=body, headers=headers, method="POST")
    began = time.perf_counter()
    arrivals: list[float] = []
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            status = response.status
            if stream:
                lines = []
                for raw_line in iter(response.readline, b""):
                    line = raw_line.decode("utf-8")
                    if line.startswith("data: ") and '"transcript.text.delta"' in line:
                        arrivals.append(time.perf_counter())
                    lines.append(line)
                raw = "".join(lines)
            else:
                raw = response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, f"HTTP {exc.code}: {exc.read().decode('utf-8', errors='replace')[:200]}"
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        return 0, f"{type(exc).__name__}: {exc}"
    if stream:
        text, done, finished = "", False, False
        for line in raw.splitlines():
            if not line.startswith("data: "):
                continue
            payload = line[6:]
            if payload == "[DONE]":
                finished = True
                continue
            event = json.loads(payload)
            if event.get("type") == "transcript.text.done":
                text, done = event["text"], True
        if not (done and finished):
            return 0, "stream ended without done/[DONE]"
        if timings is not None and arrivals:
            timings.append((arrivals[0] - began, [b - a for a, b in zip(arrivals, arrivals[1:])]))
        return status, text
    if fields.get("response_format") == "text":
        return status, raw
    data = json.loads(raw)
    return status, data.get("text") or " ".join(s.get("text", "") for s in data.get("segments", []))


STREAM_KEYS = ("text_ttft_mean_s", "text_ttft_median_s", "text_ttft_p95_s", "text_ttft_p99_s", "inter_chunk_mean_s",
               "inter_chunk_p95_s", "inter_chunk_p99_s")


def stream_figures(ttfts: list, gaps: list) -> dict:
    """The clients' streaming aggregates (docs/upstream.md §2.1, §2.4) over the completed streamed requests: time to
    first text (mean, median, p95, p99) and the pooled gaps between text deltas (mean, p95, p99); {} without any."""
    import statistics
    if not ttfts:
        return {}

    def pct(values, q):
        ordered = sorted(values)
        position = q * (len(ordered) - 1)  # numpy's linear interpolation, as upstream's np.percentile
        low = int(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    pooled = gaps or [0.0]
    return {"text_ttft_mean_s": statistics.fmean(ttfts), "text_ttft_median_s": statistics.median(ttfts),
            "text_ttft_p95_s": pct(ttfts, 0.95), "text_ttft_p99_s": pct(ttfts, 0.99),
            "inter_chunk_mean_s": statistics.fmean(pooled), "inter_chunk_p95_s": pct(pooled, 0.95),
            "inter_chunk_p99_s": pct(pooled, 0.99)}


def edit_distance(ref: list, hyp: list) -> int:
    previous = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        current = [i]
        for j, h in enumerate(hyp, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (r != h)))
        previous = current
    return previous[-1]


def write_json(path: Path, doc) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, path)


class TqdmLine:
    """Progress lines in tqdm's format ("  45%|####      | 450/1000 [00:12<00:15, 36.50it/s]") on stderr,
    the way the upstream clients report progress; `gate run` reads the "N/M [" counter from the client log."""

    def __init__(self, total: int) -> None:
        import threading
        import time
        self.total = total
        self.done = 0
        self.began = time.monotonic()
        self._lock = threading.Lock()

    def update(self) -> None:
        import sys
        import time
        with self._lock:
            self.done += 1
            elapsed = max(time.monotonic() - self.began, 1e-6)
            pct = 100 * self.done // max(self.total, 1)
            bar = "#" * (pct // 10)
            sys.stderr.write(f"\r{pct:3d}%|{bar:<10}| {self.done}/{self.total} [{int(elapsed) // 60:02d}:"
                             f"{int(elapsed) % 60:02d}<00:00, {self.done / elapsed:.2f}it/s]")
            if self.done == self.total:
                sys.stderr.write("\n")
            sys.stderr.flush()


def client_delays(faults: dict) -> None:
    """Client knobs `delay_s` (sleep, then run normally: an orphaned client that writes late) and `hang`."""
    import time
    if faults.get("hang"):
        print("[standin] client knob hang: sleeping", flush=True)
        time.sleep(3600)
    if faults.get("delay_s"):
        print(f"[standin] client knob delay_s: sleeping {faults['delay_s']} s, then running", flush=True)
        time.sleep(float(faults["delay_s"]))

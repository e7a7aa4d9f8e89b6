"""TEST DOUBLE of `sgl-omni serve` (sglang-omni's ASR server). Not upstream code.

Speaks the real wire format (docs/upstream.md §6): GET /health (503 until ready, then 200
{"status": "healthy"}), GET /v1/models, multipart POST /v1/audio/transcriptions with
response_format json / text / verbose_json and SSE streaming. The transcript is read from the
stand-in WAV's `txt ` chunk; a few utterances get a deterministic word dropped so WER is not 0.
Honours SGLANG_OMNI_STRICT_PORT like upstream (docs/upstream.md §6.4). Where torch and CUDA exist and the knob
`gpu_mib` is set, it really holds that much GPU memory until it exits.

Fault knobs (section "server" of standin-knobs.json; each may carry "on_call": N to fire only on
the Nth server start): crash_at_start, never_healthy, start_delay_s, crash_after_requests,
port_taken, leave_child (child_setsid: in its own session; child_clear_env: and with an empty
environment, so it carries no trace of the gate), ignore_term, fail_every (every Nth transcription
answers HTTP 500), access_log (a uvicorn-style access line per request, /health probes included),
log_line (one line the server prints once it listens, e.g. its last words before a hang),
request_delay_s (every transcription takes that long, on every start), slow_request_s (added delay:
a slow server start, e.g. with on_call). Not a fault: decoder {"module_dir", "batch", "graphs", "slow"} decodes each
transcription with a Whisper-large-v3-shaped decoder on the GPU first (benchmarks/noise/asr_decoder.py).
"""
from __future__ import annotations

import time as _time

_T0 = _time.time()  # program start, for benchmarks/bench_run_overhead.py

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from benchmarks import _standin


def parse_args(argv):
    if not argv or argv[0] != "serve":
        print("usage: sgl-omni serve --model-path PATH [--model-name NAME] [--host H] [--port P] [overrides...]",
              file=sys.stderr)
        sys.exit(2)
    parser = argparse.ArgumentParser(prog="sgl-omni serve")
    parser.add_argument("--model-path", required=True)
    parser.add_argument("--model-name", default=None)
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8000)
    args, overrides = parser.parse_known_args(argv[1:])  # config overrides (--asr.engine.*), as upstream allows
    return args, overrides


def main(argv) -> int:
    args, overrides = parse_args(argv)
    start_number = _standin.bump("server_starts")
    section = _standin.knobs().get("server", {})
    faults = section if _standin.fault_active(section, start_number) else {}
    print(f"[standin] sgl-omni serve (TEST DOUBLE) start #{start_number} model={args.model_path} "
          f"name={args.model_name} port={args.port} overrides={overrides}", flush=True)
    if not os.path.isfile(os.path.join(args.model_path, "config.json")):
        print(f"OSError: {args.model_path} does not appear to have a file named config.json", flush=True)
        return 1
    if faults.get("ignore_term"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    elif faults.get("exit_linger_s"):
        signal.signal(signal.SIGTERM, lambda *a: _exit_lingering(float(faults["exit_linger_s"])))
    else:
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    strict = os.environ.get("SGLANG_OMNI_STRICT_PORT") == "1"
    if faults.get("port_taken"):
        if strict:
            raise RuntimeError(f"port {args.port} is already in use and SGLANG_OMNI_STRICT_PORT=1 forbids falling back")
    holder = None
    if faults.get("gpu_mib") or section.get("gpu_mib"):
        holder = _hold_gpu(int(faults.get("gpu_mib") or section.get("gpu_mib")))
    if faults.get("crash_at_start"):
        time.sleep(float(faults.get("crash_delay_s", 0.2)))
        print("Traceback (most recent call last):\n  ...\nRuntimeError: stand-in crash at start (knob crash_at_start)",
              flush=True)
        print(_standin.timing_line("server-exit", _T0, time.time()), flush=True)
        return 1

    decoder = _start_decoder(section["decoder"]) if section.get("decoder") else None
    ready_at = time.monotonic() + float(faults.get("start_delay_s", 0.0))
    state = {"requests": 0, "lock": threading.Lock()}
    model_name = args.model_name or args.model_path
    # knob drop_word {"<part of the model path>": share}: that share of utterances (chosen by a hash of the text,
    # the same in every run) lose one more word on this model only -- an injected accuracy regression
    drop_share = max([float(v) for k, v in section.get("drop_word", {}).items() if k.lower() in args.model_path.lower()],
                     default=0.0)
    chunk_interval = float(section.get("chunk_interval_s", 0.002))  # knob: seconds between streamed text deltas

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):  # keep server.log short
            pass

        def log_request(self, code="-", size="-"):
            if section.get("access_log"):  # like uvicorn's access log
                status = code.value if hasattr(code, "value") else code
                print(f'INFO:     {self.client_address[0]}:{self.client_address[1]} - "{self.requestline}" {status}',
                      flush=True)

        def _send(self, status: int, body, ctype="application/json"):
            data = body if isinstance(body, bytes) else (json.dumps(body) if not isinstance(body, str) else body).encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            healthy = (not faults.get("never_healthy") and time.monotonic() >= ready_at
                       and (decoder is None or decoder.ready.is_set()))
            if self.path == "/health":
                self._send(200 if healthy else 503, {"status": "healthy" if healthy else "unhealthy"})
            elif self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": model_name, "object": "model"}]})
            else:
                self._send(404, {"detail": "Not Found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(length)
            if self.path != "/v1/audio/transcriptions":
                self._send(404, {"detail": "Not Found"})
                return
            with state["lock"]:
                state["requests"] += 1
                number = state["requests"]
            delay = float(section.get("request_delay_s", 0)) + float(faults.get("slow_request_s", 0))
            if delay:
                time.sleep(delay)
            crash_after = faults.get("crash_after_requests")
            if crash_after is not None and number > int(crash_after):
                print(f"RuntimeError: CUDA error: an illegal memory access was encountered "
                      f"(stand-in knob crash_after_requests={crash_after})", flush=True)
                os._exit(1)
            fields, wav = _standin.parse_multipart(body, self.headers.get("Content-Type", ""))
            if not wav:
                self._send(400, {"error": {"message": "Uploaded audio file is empty"}})
                return
            fail_every = faults.get("fail_every")
            if fail_every and number % int(fail_every) == 0:
                self._send(500, {"error": {"message": "stand-in knob fail_every"}})
                return
            try:
                text, duration = _standin.read_wav(wav)
            except ValueError as exc:
                self._send(400, {"error": {"message": str(exc)}})
                return
            words = text.split(" ")
            if len(words) > 3 and len(text) % 7 == 0:  # a deterministic recognition error
                words = words[:-1]
            if len(words) > 1 and zlib.crc32(text.encode()) % 1000 < 1000 * drop_share:  # knob drop_word
                words = words[:-1]
            text = " ".join(words)
            if decoder is not None:  # knob decoder: really decode on the GPU before answering
                decoder.generate(decoder_tokens(text), seed=zlib.crc32(text.encode()))
            usage = {"type": "duration", "seconds": max(1, int(duration + 0.999))}
            if fields.get("stream") == "true":
                # One delta per word, each written and flushed `chunk_interval_s` apart (knob, default 2 ms), so
                # the client's time to first text and inter-chunk gaps are measured, as upstream's are.
                pieces = [w if k == 0 else " " + w for k, w in enumerate(text.split(" "))] or [""]
                events = [{"type": "transcript.text.delta", "delta": piece} for piece in pieces]
                events.append({"type": "transcript.text.done", "text": text, "usage": usage})
                chunks = [f"data: {json.dumps(e)}\n\n".encode() for e in events] + [b"data: [DONE]\n\n"]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(sum(len(c) for c in chunks)))
                self.end_headers()
                for k, chunk in enumerate(chunks):
                    if 0 < k < len(pieces):
                        time.sleep(chunk_interval)
                    self.wfile.write(chunk)
                    self.wfile.flush()
            elif fields.get("response_format") == "text":
                self._send(200, text, "text/plain")
            elif fields.get("response_format") == "verbose_json":
                self._send(200, {"task": "transcribe", "language": fields.get("language"), "duration": duration,
                                 "text": text, "segments": [{"id": 0, "start": 0.0, "end": duration, "text": text}],
                                 "usage": usage})
            else:
                self._send(200, {"text": text, "usage": usage})

    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 128  # uvicorn's backlog is 2048; socketserver's 5 resets bursts
    try:
        httpd = ThreadingHTTPServer((args.host, args.port), Handler)
    except OSError as exc:
        if strict:
            raise RuntimeError(f"port {args.port} is already in use and SGLANG_OMNI_STRICT_PORT=1 forbids "
                               f"falling back ({exc})") from None
        httpd = ThreadingHTTPServer((args.host, 0), Handler)
        print(f"WARNING: port {args.port} in use, serving on {httpd.server_address[1]}", flush=True)
    if faults.get("leave_child"):
        # A worker that ignores SIGTERM and keeps the listening socket (docs/upstream.md §8.3).
        gpu_mib = int(faults.get("gpu_mib") or section.get("gpu_mib") or 0)
        hold = (f"import torch; x = torch.ones({gpu_mib} * 2**20, dtype=torch.uint8, device='cuda'); "
                "torch.cuda.synchronize(); ") if gpu_mib and holder is not None else ""
        clear = bool(faults.get("child_clear_env"))
        child = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                                  f"signal.SIG_IGN); {hold}print('up', flush=True); time.sleep(3600)"],
                                 pass_fds=(httpd.fileno(),), stdout=subprocess.PIPE,
                                 start_new_session=bool(faults.get("child_setsid")) or clear,
                                 env={} if clear else None)
        child.stdout.readline()  # serve only once the child ignores SIGTERM (and holds its GPU memory)
        print(f"[standin] left a child process behind: pid {child.pid}", flush=True)
    print(f"[standin] listening on {args.host}:{httpd.server_address[1]}", flush=True)
    if faults.get("log_line"):
        print(faults["log_line"], flush=True)
    ready_epoch = time.time() + max(0.0, ready_at - time.monotonic())
    if not faults.get("never_healthy"):
        print(_standin.timing_line("server-ready", _T0, ready_epoch), flush=True)
    try:
        httpd.serve_forever(poll_interval=0.05)
    finally:
        del holder
    return 0


def _start_decoder(knob: dict):
    """Knob decoder {"module_dir": DIR, "batch": B, "graphs": bool}: a Whisper-large-v3-shaped decoder on the GPU
    (DIR/asr_decoder.py, the repository's benchmarks/noise) that every transcription waits for."""
    global decoder_tokens
    sys.path.insert(0, knob["module_dir"])
    import asr_decoder

    began = time.perf_counter()
    engine = asr_decoder.Decoder(int(knob.get("batch", 32)), graphs=bool(knob.get("graphs", True)),
                                 slow=float(knob.get("slow", 0.0))).start()
    decoder_tokens = asr_decoder.tokens_for

    def watch():
        engine.ready.wait(timeout=600)
        print(f"[standin] decoder batch={engine.batch} graphs={engine.graphs} ready after "
              f"{time.perf_counter() - began:.2f} s ({engine.setup_s})", flush=True)
        while engine.failed is None:
            time.sleep(0.2)
        print(f"RuntimeError: decoder failed: {engine.failed!r}", flush=True)
        os._exit(1)
    threading.Thread(target=watch, daemon=True).start()
    return engine


def decoder_tokens(text: str) -> int:  # replaced by asr_decoder.tokens_for once the decoder is loaded
    raise RuntimeError("no decoder")


def _exit_lingering(seconds: float) -> None:
    """Exit the way a CUDA process does: the main thread ends at once ("Z" in /proc) while another thread
    tears down for `seconds`; the process, its memory and its children's parentage last until then."""
    import ctypes

    threading.Thread(target=lambda: (time.sleep(seconds), os._exit(0))).start()
    ctypes.CDLL(None).pthread_exit(None)


def _hold_gpu(mib: int):
    try:
        import torch
    except ImportError:
        print("[standin] torch not available; gpu_mib ignored", flush=True)
        return None
    if not torch.cuda.is_available():
        print("[standin] CUDA not available; gpu_mib ignored", flush=True)
        return None
    tensor = torch.ones(mib * 2**20, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    print(f"[standin] holding {mib} MiB of GPU memory", flush=True)
    return tensor


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

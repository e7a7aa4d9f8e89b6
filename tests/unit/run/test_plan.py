"""The plan is the runbook: `gate run --dry-run` prints Steps 4-6 with exactly the runbook's flags."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from gate.formats.config import load_suite
from gate.formats.errors import SuiteError
from gate.runner.plan import Arm, Setup, expand, plan_run, run_order

# Copied verbatim from the maintainers' ASR benchmark runbook, Steps 5 and 6 (line continuations joined).
RUNBOOK_SERVERS = {
    "qwen3": ".venv/bin/sgl-omni serve --model-path $QWEN3_ASR --model-name Qwen/Qwen3-ASR-1.7B --port 8000",
    "whisper": ".venv/bin/sgl-omni serve --model-path $WHISPER --model-name openai/whisper-large-v3 --port 8000",
    "fun": ".venv/bin/sgl-omni serve --model-path $FUN_ASR --model-name FunAudioLLM/Fun-ASR-Nano-2512-hf --port 8000",
    "moss_td": ".venv/bin/sgl-omni serve --model-path $MOSS_TD --model-name OpenMOSS-Team/MOSS-Transcribe-Diarize "
               "--port 8000 --asr.engine.max_running_requests 16 --asr.engine.cuda_graph_max_bs 16 "
               "--mem-fraction-static 0.8",
}
_SEED = ("python -m benchmarks.eval.benchmark_asr_seedtts --port 8000 --model-path {mid} --lang {lang} "
         "--concurrencies 32 --repeats 1 --warmup --dataset-revision $SEEDTTS_REV --output $OUT/{m}/asr_{lang}.json")
_NO_BUDGET = ("python -c 'import sys, benchmarks.eval.benchmark_asr_transcribe_diarize as b; "
              "b.DEFAULT_MAX_NEW_TOKENS = None; sys.exit(b.main(sys.argv[1:]))' ")
RUNBOOK_CLIENTS = {
    **{f"{m}/asr_{lang}": _SEED.format(m=m, mid=mid, lang=lang)
       for m, mid in (("qwen3", "Qwen/Qwen3-ASR-1.7B"), ("whisper", "openai/whisper-large-v3"),
                      ("fun", "FunAudioLLM/Fun-ASR-Nano-2512-hf")) for lang in ("en", "zh")},
    "moss_td/movies800times": _NO_BUDGET + "--use-existing-server --port 8000 --dataset movies800times "
                              "--max-concurrency 16 --request-timeout-s 300 --output-dir $OUT/moss_td/movies800times",
    "moss_td/movies800times_stream": _NO_BUDGET + "--use-existing-server --port 8000 --dataset movies800times --stream "
                                     "--max-concurrency 16 --request-timeout-s 300 "
                                     "--output-dir $OUT/moss_td/movies800times_stream",
    "moss_td/aishell4_long": "python -m benchmarks.eval.benchmark_asr_transcribe_diarize --use-existing-server "
                             "--port 8000 --dataset aishell4_long --max-concurrency 16 "
                             "--output-dir $OUT/moss_td/aishell4_long",
    "moss_td/googletime": "python -m benchmarks.eval.benchmark_asr_transcribe_diarize --use-existing-server "
                          "--port 8000 --dataset googletime --max-concurrency 16 --output-dir $OUT/moss_td/googletime",
}
RUNBOOK_ENV = {"HF_HUB_OFFLINE": "1", "SGLANG_OMNI_STRICT_PORT": "1", "SGLANG_OMNI_TORCH_COMPILE_DEFAULT": "0",
               "SGLANG_OMNI_STARTUP_TIMEOUT": "1800", "TORCHINDUCTOR_CACHE_DIR": "/work/torchinductor"}

CHECKOUT = Path("/work/sglang-omni")
HF_HUB = Path("/root/.cache/huggingface/hub")


def runbook_argv(line: str, out: Path) -> list[str]:
    suite = load_suite()
    snapshots = {"$" + v: str(HF_HUB / suite.models[k].snapshot.split("{hf_hub}/", 1)[1])
                 for k, v in (("qwen3", "QWEN3_ASR"), ("whisper", "WHISPER"), ("fun", "FUN_ASR"), ("moss_td", "MOSS_TD"))}
    for var, value in {**snapshots, "$SEEDTTS_REV": "27f4c1adee83b5b29b7c4b375f6b976324bda308", "$OUT": str(out)}.items():
        line = line.replace(var, value)
    argv = shlex.split(line)
    if argv[0] == "python":  # the runbook runs with the venv activated; the gate names its python
        argv[0] = str(CHECKOUT / ".venv/bin/python")
    if argv[0] == ".venv/bin/sgl-omni":
        argv[0] = str(CHECKOUT / ".venv/bin/sgl-omni")
    return argv


def options(argv: list[str]) -> tuple[list[str], list[tuple[str, str | None]]]:
    """(positional head, sorted (flag, value) pairs): the order of flags does not change their meaning."""
    head, pairs, i = [], [], 0
    while i < len(argv) and not argv[i].startswith("--"):
        head.append(argv[i])
        i += 1
    while i < len(argv):
        flag = argv[i]
        value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else None
        pairs.append((flag, value))
        i += 2 if value is not None else 1
    return head, sorted(pairs, key=lambda p: (p[0], p[1] or ""))


@pytest.fixture
def plan():
    suite = load_suite()
    setup = Setup(out=Path("/work/results"), port=8000, hf_hub=HF_HUB, torchinductor_cache=Path("/work/torchinductor"))
    side = Arm("main", CHECKOUT, CHECKOUT / ".venv/bin/python")
    return plan_run(suite, setup, side, "1", tuple(suite.models))


def test_server_commands_are_the_runbooks(plan):
    assert [m.model for m in plan.models] == ["qwen3", "whisper", "fun", "moss_td"]
    for model in plan.models:
        assert list(model.server_argv) == runbook_argv(RUNBOOK_SERVERS[model.model], plan.run_dir)


def test_client_commands_have_exactly_the_runbooks_flags(plan):
    seen = set()
    for model in plan.models:
        for client in model.clients:
            wid = client.workload.id
            expected = runbook_argv(RUNBOOK_CLIENTS[wid], plan.run_dir)
            actual = list(client.argv)
            if client.workload.format == "seedtts":
                # The one addition to Step 5: per-utterance data for paired accuracy tests.
                raw = actual.index("--save-raw-dir")
                assert actual[raw + 1] == str(plan.run_dir / model.model / f"raw_{client.workload.lang}")
                del actual[raw:raw + 2]
            assert options(actual) == options(expected), wid
            seen.add(wid)
    assert seen == set(RUNBOOK_CLIENTS)


def test_environment_is_step_4(plan):
    # Step 4's variables, plus the hub cache the gate checked, so the server and clients load from it too
    assert dict(plan.environment) == {**RUNBOOK_ENV, "HF_HUB_CACHE": str(HF_HUB)}


def test_ab_order_is_warm_a_warm_b_then_a_b_b_a_a_b():
    a, b = Arm("A", Path("/a"), Path("/a/py")), Arm("B", Path("/b"), Path("/b/py"))
    order = run_order(("warm", "1", "2", "3"), (a, b), "warm")
    assert [(s.name, r) for s, r in order] == [("A", "warm"), ("B", "warm"), ("A", "1"), ("B", "1"), ("B", "2"),
                                               ("A", "2"), ("A", "3"), ("B", "3")]
    assert [r for _, r in run_order(("warm", "1"), (a,), "warm")] == ["warm", "1"]


def test_unknown_placeholder_names_where():
    with pytest.raises(SuiteError, match=r"server.command: unknown placeholder \{modle\}"):
        expand("{modle}", {"model": "x"}, where="server.command")


def test_dry_run_prints_every_command_in_order(bench):
    done = bench.run("--dry-run", "--label", "run-moss-asr", "--runs", "warm,1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    servers = [line for line in lines if line.startswith("setsid ")]
    assert len(servers) == 2 and all("MOSS-Transcribe-Diarize" in s for s in servers)
    client = "benchmark_asr_transcribe_diarize"  # the moss client module: 4 workloads x (warm, run1)
    assert sum(client in line for line in lines) == 8
    first_warm = lines.index(next(line for line in lines if "runwarm" in line))
    assert first_warm < lines.index(next(line for line in lines if "run1" in line))
    assert any(line.endswith("--exclude-editable > " + str(bench.out / "main/run1") + "/freeze.txt") for line in lines)
    assert not bench.out.exists(), "a dry run writes nothing"


def test_unknown_model_and_label_are_one_line_errors(bench):
    done = bench.run("--dry-run", "--models", "qwen4")
    assert done.returncode == 2 and done.stderr.startswith("gate: error: ") and "unknown model(s) qwen4" in done.stderr
    done = bench.run("--dry-run", "--label", "run-nothing")
    assert done.returncode == 2 and "none of run-nothing selects" in done.stderr
    assert "Traceback" not in done.stderr
    bad = "../x"
    done = bench.run("--dry-run", "--runs", f"warm,{bad}")
    assert done.returncode == 2 and f"{bad!r} is not a plain run name" in done.stderr

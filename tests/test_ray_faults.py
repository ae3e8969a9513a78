"""The Ray engine's failures end in one line and leave the output folder as it was (issue 38).

Each case is a real local Ray node started by a real process: ``citemark check
--engine ray`` run as a subprocess (a worker killed mid-shard; a full disk, a real
1 MiB tmpfs mounted when the test runs as root), or a driver script whose whole node
(GCS, raylet, workers) is killed while it waits on the plan. None may end in a
traceback or wait for ever, and the folder must keep the previous run's whole set,
with no parts folder and no temporary file left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from fake_openai import FakeOpenAI, run_cli

from citemark.reports import check_output_set

CONTEXT = "[doc-1] The late fee is 5% of the unpaid balance.\n"
REPLY = json.dumps(
    {
        "score": 3,
        "explanation": "Stated.",
        "verdicts": [{"occurrence": 1, "outcome": "supported", "context_span": "late fee is 5%"}],
    }
)
LOCAL_DISK_FULL = (
    "citemark: error: cannot read the input or write to --out: No space left on device"
)


def write_runs(path: Path, count: int, pad: int = 0) -> Path:
    rows = (
        json.dumps(
            {"id": f"q{n}", "answer": f"The fee is 5% [doc-1].{' ' * pad}", "context": CONTEXT}
        )
        for n in range(count)
    )
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def quiet_env(**extra: str) -> dict[str, str]:
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("RAY_", "CITEMARK_"))
    }
    env.update(extra)
    return env


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (Ray's GCS, raylet and workers below their driver)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            parents.setdefault(int(stat[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every entry of a folder (hidden ones included) with its bytes."""
    return {
        entry.name: entry.read_bytes() if entry.is_file() else b"<folder>"
        for entry in sorted(folder.iterdir())
    }


def previous_set(runs: Path, out: Path) -> dict[str, bytes]:
    """A whole set from an earlier local run in ``out``; its bytes."""
    done = run_cli("check", str(runs), "--out", str(out), "--quiet")
    assert 0 == done.returncode, done.stderr
    assert check_output_set(out).whole
    return snapshot(out)


def test_a_killed_worker_is_one_line_and_leaves_the_previous_set(tmp_path):
    """SIGKILL of the ShardChecker mid-shard: exit 2, one line, the old set untouched."""
    runs = write_runs(tmp_path / "runs.jsonl", 60)
    out = tmp_path / "out"
    before = previous_set(runs, out)
    with FakeOpenAI(lambda _prompt: REPLY, latency=0.2) as server:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "citemark",
                "check",
                str(runs),
                "--out",
                str(out),
                "--engine",
                "ray",
                "--ray-workers",
                "1",
                "--concurrency",
                "1",
                "--judge-model",
                "judge-1",
                "--judge-base-url",
                server.base_url,
                "--judge-api-key",
                "key",
                "--quiet",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=quiet_env(),
            cwd=tmp_path,
        )
        killed: list[int] = []

        def kill_the_worker() -> None:
            while process.poll() is None and not killed:
                if server.prompts:  # the worker is scoring its shard
                    for pid in descendants(process.pid):
                        if command_line(pid).startswith(b"ray::ShardChecker"):
                            os.kill(pid, signal.SIGKILL)
                            killed.append(pid)
                time.sleep(0.05)

        killer = threading.Thread(target=kill_the_worker, daemon=True)
        killer.start()
        try:
            stdout, stderr = process.communicate(timeout=240)
        finally:
            process.kill()
            killer.join(timeout=5)
    assert killed, "no worker was found to kill"
    assert 2 == process.returncode, stderr[-2000:]
    lines = stderr.splitlines()
    assert "Traceback" not in stderr
    assert [
        "citemark: error: a Ray worker died before shard 0 was done (killed, or out of memory)"
    ] == lines
    assert "" == stdout  # not even Ray's own notice of the dead worker
    assert before == snapshot(out)  # no file published, no parts folder, no temporary
    assert check_output_set(out).whole


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs, mounted for the test and unmounted after."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a 1 MiB tmpfs needs root; the disk-full case is not run")
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip("this machine refuses to mount a tmpfs; the disk-full case is not run")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_a_full_disk_under_ray_is_the_local_engines_one_line(small_disk, tmp_path):
    """ENOSPC in the workers' parts: the local engine's line, exit 2, nothing left behind."""
    runs = write_runs(tmp_path / "runs.jsonl", 4000, pad=200)  # rows.jsonl far above 1 MiB
    out = small_disk / "out"
    local = run_cli("check", str(runs), "--out", str(out), "--quiet")
    assert (2, [LOCAL_DISK_FULL]) == (local.returncode, local.stderr.splitlines())
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "citemark",
            "check",
            str(runs),
            "--out",
            str(out),
            "--engine",
            "ray",
            "--ray-workers",
            "1",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=quiet_env(),
        cwd=tmp_path,
        timeout=240,
        check=False,
    )
    assert 2 == done.returncode, done.stderr[-2000:]
    assert [LOCAL_DISK_FULL] == done.stderr.splitlines()
    assert "Traceback" not in done.stdout
    assert [] == list(out.iterdir())  # no parts folder, no temporary, nothing published


NODE_SCRIPT = r"""
import json, os, signal, sys, threading, time
from pathlib import Path

import ray

from citemark.ray import ScorerSpec, run_ray_check

runs, out = sys.argv[1], Path(sys.argv[2])
ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level="ERROR")


def descendants(root):
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            parents.setdefault(int(stat[1]), []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def planning():
    for pid in descendants(os.getpid()):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::_plan"):
                return True
        except OSError:
            pass
    return False


def kill_the_node():
    while not planning():  # the plan task waits on the FIFO: the driver waits on it
        time.sleep(0.05)
    for pid in descendants(os.getpid()):
        os.kill(pid, signal.SIGKILL)


threading.Thread(target=kill_the_node, daemon=True).start()
try:
    run_ray_check(runs, out, ScorerSpec(), workers=1, node_timeout=2.0)
except Exception as exc:
    found = {"type": type(exc).__name__, "reason": getattr(exc, "reason", None)}
    print(json.dumps({**found, "message": str(exc)}), flush=True)
os._exit(0)  # the node is gone: nothing is left for ray.shutdown to stop
"""


def test_a_dead_node_ends_the_drivers_wait_in_one_line(tmp_path):
    """GCS, raylet and workers killed while the driver waits: RayRunError within bounds.

    The plan task blocks on a FIFO no one writes, so the driver is waiting on it when
    the node dies. Before, ``ray.get`` waited for ever (nothing is left to report the
    task lost); now the driver notices the node no longer answers and ends after
    ``node_timeout`` (2 s here).
    """
    runs = tmp_path / "runs.fifo"
    os.mkfifo(runs)
    out = tmp_path / "out"
    before = previous_set(write_runs(tmp_path / "runs.jsonl", 3), out)
    script = tmp_path / "node.py"
    script.write_text(NODE_SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(runs), str(out)],
        capture_output=True,
        text=True,
        env=quiet_env(),
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    found = json.loads(done.stdout.splitlines()[-1])
    assert {
        "type": "RayRunError",
        "reason": "node_lost",
        "message": "the Ray node stopped answering for 2 s (its GCS or raylet)",
    } == found, done.stderr[-2000:]
    assert before == snapshot(out)

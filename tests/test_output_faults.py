"""Interrupted and failing runs leave no temporary file behind (issue 17, item 4).

A full disk is a real 64 KiB tmpfs, mounted when the test runs as root (skipped
otherwise, saying so); a killed run is a real ``citemark check`` subprocess sent
SIGKILL at seeded random moments (a bounded count); stale temporary files are real
files of AtomicFile's naming.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from fake_openai import run_cli

from citemark import write_report_atomically
from citemark.reports import check_output_set

ROW = {
    "answer": "The late fee is five percent [1].",
    "sources": [{"text": "The late fee is five percent of the balance.", "doc_id": "fees"}],
}


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KiB tmpfs, mounted for the test and unmounted after."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a 64 KiB tmpfs needs root; the disk-full case is not run")
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip("this machine refuses to mount a tmpfs; the disk-full case is not run")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_full_disk_leaves_no_temporary_file(full_disk):
    with pytest.raises(OSError, match="No space left") as info:
        write_report_atomically(full_disk / "report.json", b"x" * (1 << 20))

    assert info.value.errno is not None
    assert [] == leftovers(full_disk)
    assert [] == list(full_disk.iterdir())


def test_naive_close_then_unlink_leaves_the_file(full_disk):
    """The naive variant: close() raises again after the failed write, so unlink never runs."""
    descriptor, name = tempfile.mkstemp(prefix=".report.json.", suffix=".tmp", dir=full_disk)
    handle = os.fdopen(descriptor, "wb")
    with contextlib.suppress(OSError):
        for _ in range(1000):  # small writes, as rows.jsonl's are: some stay buffered
            handle.write(b"x" * 1000)
    try:
        with contextlib.suppress(OSError):
            handle.close()  # raises: the buffered bytes still do not fit
            Path(name).unlink()  # the old __exit__'s next step, never reached
        assert [Path(name).name] == leftovers(full_disk)
    finally:
        Path(name).unlink()


def test_check_on_a_full_disk_fails_cleanly(full_disk, tmp_path):
    runs = tmp_path / "runs.jsonl"
    runs.write_text((json.dumps(ROW) + "\n") * 2000, encoding="utf-8")

    done = run_cli("check", str(runs), "--out", str(full_disk / "out"))

    assert 0 != done.returncode
    assert [] == leftovers(full_disk / "out")


def test_stale_temporaries_of_citemark_naming_are_removed(tmp_path):
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    stale = [".rows.jsonl.ab12cd34.tmp", ".report.json.zz_9yy8x.tmp", ".report.html.q1w2e3r4.tmp"]
    kept = [".notes.tmp", "rows.jsonl.ab12cd34.tmp", ".rows.jsonl.tmp"]
    for name in stale + kept:
        (out / name).write_bytes(b"half a run")

    done = run_cli("check", str(runs), "--out", str(out))

    assert 0 == done.returncode, done.stderr
    assert sorted(kept) == leftovers(out)


def consistent(out: Path) -> bool:
    """Whether report.json's recorded digests match the files beside it."""
    files = json.loads((out / "report.json").read_bytes())["check"]["files"]
    return all(
        hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
        for name, digest in files.items()
    )


def truly_whole(out: Path) -> bool:
    """The oracle check_output_set is held to: every digest matches, every file names the run."""
    if not (out / "report.json").exists():
        return False
    report = json.loads((out / "report.json").read_bytes())
    run_id = report["run_id"]
    named = set(report["check"]["files"])
    present = {"rows.jsonl", "report.html"} & {p.name for p in out.iterdir()}
    if not present <= named or not all((out / name).exists() for name in named):
        return False
    rows = (out / "rows.jsonl").read_text(encoding="utf-8").splitlines()
    page = (out / "report.html").read_text(encoding="utf-8")
    return (
        consistent(out)
        and {json.loads(line)["run_id"] for line in rows} == {run_id}
        and f'<meta name="citemark-run-id" content="{run_id}">' in page
    )


def test_kill_at_random_moments_leaves_whole_files_and_the_next_run_cleans_up(tmp_path):
    """SIGKILL at 5 seeded moments: each folder is whole or told mixed; a later run cleans up."""
    runs = tmp_path / "runs.jsonl"
    runs.write_text((json.dumps(ROW) + "\n") * 20_000, encoding="utf-8")
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEMARK_")}
    command = [sys.executable, "-m", "citemark", "check", str(runs), "--out", str(out)]
    moments = random.Random(17).sample(  # noqa: S311 - a seeded test schedule
        [0.4, 0.7, 1.0, 1.3, 1.6, 2.0, 2.5, 2.9, 3.2, 3.6], 5
    )
    kills = []
    for delay in moments:
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        if (out / "rows.jsonl").exists():
            for line in (out / "rows.jsonl").read_text(encoding="utf-8").splitlines():
                json.loads(line)
        if (out / "report.json").exists():
            json.loads((out / "report.json").read_bytes())  # whole JSON
        # Whether what is left is one run's whole set, check_output_set says rightly.
        found = check_output_set(out)
        assert truly_whole(out) == found.whole, found
        kills.append(process.returncode)
        if not found.whole:
            assert found.report == "missing" or found.problems

    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)

    assert 0 == done.returncode, done.stderr
    assert [] == leftovers(out)
    assert {"report.json", "report.html", "rows.jsonl"} == {p.name for p in out.iterdir()}
    assert consistent(out)
    assert check_output_set(out).whole
    assert -signal.SIGKILL in kills  # at least one kill interrupted a run

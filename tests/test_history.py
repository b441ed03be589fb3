"""The history store under concurrent writers (separate processes, released at the same moment)
on SQLite and on a real PostgreSQL, and `bakeoff history` reading it back."""

import json
import os
import subprocess
import sys
import time
from datetime import UTC

import pytest

from kernel_bakeoff.tasks.history import records

from .conftest import ROOT, cli_in_process
from .test_service import postgres  # noqa: F401  (the module's PostgreSQL server)

WRITERS, RUNS_EACH = 6, 4

WRITER = """
import sys, time, uuid
from datetime import datetime, timezone
from kernel_bakeoff.tasks.history.records import CandidateOut, RunOut, TimingOut, record
url, who, runs, start = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
while time.time() < start:
    time.sleep(0.005)
for i in range(runs):
    cands = [
        CandidateOut(name=f"{who}-c{j}", language="torch", mode="optimize", source="torch",
                     status="winner" if j == 0 else "passed", verdict="PASSED", accepted=j == 0,
                     speedup=1.0 + j, path="/nowhere",
                     timings=[TimingOut(workload=w, status="PASSED", clock="host",
                                        median_ms=0.1 * (j + 1), spread_ms=0.01)
                              for w in ("a", "b")])
        for j in range(3)
    ]
    record(RunOut(id=str(uuid.uuid4()), kernel="concurrent", kind="bakeoff", mode="bakeoff",
                  kernel_path="k", run_dir=f"/runs/{who}/{i}", task_dir="t", oracle_sha256="o",
                  recorded_at=datetime.now(timezone.utc), host=who, device="cpu", arch="cpu",
                  code_version="v", winner=f"{who}-c0", winner_speedup=1.0,
                  candidates=cands), url)
print("ok", who)
"""


def write_concurrently(url: str):
    start = time.time() + 3.0  # every writer imported and waiting by then
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, url, f"w{k}", str(RUNS_EACH), str(start)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(WRITERS)
    ]
    outs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-1500:] for o in outs]
    found = records.runs(url, "concurrent")
    assert len(found) == WRITERS * RUNS_EACH
    assert len({r.run_dir for r in found}) == WRITERS * RUNS_EACH
    for r in found:  # each run whole: its own candidates, each with both timings
        assert [c.name for c in r.candidates] == [f"{r.host}-c{j}" for j in range(3)]
        assert all([t.workload for t in c.timings] == ["a", "b"] for c in r.candidates)
        assert r.accepted.name == f"{r.host}-c0"
    return found


def test_concurrent_writers_on_sqlite(tmp_path, monkeypatch, capfd):
    monkeypatch.delenv("BAKEOFF_HISTORY_URL", raising=False)
    url = records.history_url(tmp_path / "runs")
    assert url.endswith("runs/history.sqlite")
    write_concurrently(url)

    proc = cli_in_process(
        capfd, "history", "concurrent", "--runs-root", str(tmp_path / "runs"), "--json"
    )
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    assert len(listed) == WRITERS * RUNS_EACH and listed[0]["winner"].endswith("-c0")
    proc = cli_in_process(capfd, "history", "concurrent", "--runs-root", str(tmp_path / "runs"))
    assert proc.returncode == 0 and proc.stdout.count("bakeoff") >= WRITERS * RUNS_EACH
    missing = cli_in_process(
        capfd, "history", "nothing-like-it", "--runs-root", str(tmp_path / "runs")
    )
    assert missing.returncode == 0 and "no recorded runs" in missing.stdout


@pytest.mark.slow
def test_concurrent_writers_on_postgresql(postgres):  # noqa: F811
    # Prefect's own URL form (asyncpg) names the database; the store reaches it with psycopg2.
    url = postgres["url"]
    assert url.startswith("postgresql+asyncpg://")
    found = write_concurrently(url)
    assert {r.host for r in found} == {f"w{k}" for k in range(WRITERS)}


def test_a_store_made_before_a_column_was_added_gets_it(tmp_path, monkeypatch):
    import sqlite3
    from datetime import datetime

    from kernel_bakeoff.tasks.history import schema

    def run(rid: str, spread: float | None) -> records.RunOut:
        timing = records.TimingOut(
            workload="w", status="PASSED", median_ms=1.0, baseline_ms=2.0, baseline_spread_ms=spread
        )
        cand = records.CandidateOut(
            name="c", language="torch", mode="optimize", source="torch", status="winner",
            verdict="PASSED", accepted=True, timings=[timing],
        )  # fmt: skip
        return records.RunOut(
            id=rid, kernel="old", kind="bakeoff", mode="optimize", kernel_path="k", run_dir=rid,
            task_dir="t", oracle_sha256="o", recorded_at=datetime.now(UTC), host="h",
            device="cpu", arch="cpu", code_version="v", winner="c", candidates=[cand],
        )  # fmt: skip

    path = tmp_path / "history.sqlite"
    url = f"sqlite:///{path}"
    records.record(run("before", None), url)
    schema._engines.pop(schema.normalise_url(url)).dispose()
    with sqlite3.connect(path) as db:  # the store as it was made before the column
        db.execute("ALTER TABLE bakeoff_timings DROP COLUMN baseline_spread_ms")
    records.record(run("after", 0.1), url)
    spreads = {r.id: r.accepted.timings[0].baseline_spread_ms for r in records.runs(url, "old")}
    assert spreads == {"before": None, "after": 0.1}

"""The device pool: detection, visible-devices variables, flock leases across threads and
processes, and a killed holder giving its device back."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.tasks.check.gpu_pool import (
    DevicePool,
    Devices,
    cpu_slot_count,
    overlapping,
    resolve,
    visible_ids,
)
from kernel_bakeoff.tasks.models.run import PoolConfig

from .conftest import ROOT


def cpu_pool(tmp_path, n=2, mode="pool"):
    return DevicePool(Devices("cpu", tuple(f"cpu{i}" for i in range(n))), mode, tmp_path)


def test_visible_ids_follow_the_variables_already_set():
    assert visible_ids("cuda", 4, {}) == ["0", "1", "2", "3"]
    assert visible_ids("cuda", 2, {"CUDA_VISIBLE_DEVICES": "2,3"}) == ["2", "3"]
    # ROCm: HIP indexes inside the ROCR-visible set; CUDA_VISIBLE_DEVICES is its alias.
    assert visible_ids(
        "rocm", 2, {"ROCR_VISIBLE_DEVICES": "4,5,6", "HIP_VISIBLE_DEVICES": "1,2"}
    ) == [
        "5",
        "6",
    ]
    assert visible_ids("rocm", 2, {"CUDA_VISIBLE_DEVICES": "6,7"}) == ["6", "7"]
    assert visible_ids("rocm", 8, {"ROCR_VISIBLE_DEVICES": "3"}) == ["3"]


def test_lease_env_names_the_device_for_each_vendor():
    assert Devices("cuda", ("0", "1")).env_for("1")["CUDA_VISIBLE_DEVICES"] == "1"
    rocm = Devices("rocm", ("0", "5")).env_for("5")
    assert rocm["ROCR_VISIBLE_DEVICES"] == "5" and rocm["HIP_VISIBLE_DEVICES"] == "0"
    cpu = Devices("cpu", ("cpu0", "cpu1")).env_for("cpu1")
    assert cpu["BAKEOFF_DEVICE"] == "cpu1" and cpu["CUDA_VISIBLE_DEVICES"] == ""
    assert int(cpu["OMP_NUM_THREADS"]) >= 1 and cpu["TRITON_INTERPRET"] == "1"


def test_a_triton_kernel_is_checked_on_a_cpu_lease_without_triton_interpret_set(
    tmp_path, monkeypatch
):
    """A flow run that a worker started has no `bakeoff run` to set TRITON_INTERPRET: the
    lease's environment carries it. Found with `benchmarks/multi_gpu_service.py` on CPU slots,
    where every Triton check had failed with "0 active drivers"."""
    from kernel_bakeoff.scripts.check import check
    from kernel_bakeoff.scripts.verdict import Status
    from kernel_bakeoff.tasks.check.freezing import freeze_isolated

    from .agent_kernels import tiny_softmax

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    pool = PoolConfig(cpu_slots=1, lock_dir=str(tmp_path / "locks"))
    example = tiny_softmax(tmp_path / "softmax_triton")  # the example, its workloads smaller
    task = freeze_isolated(example, tmp_path / "task", pool)
    env = Devices("cpu", ("cpu0",)).env_for("cpu0")
    # fresh interpreters: a warm server forked from a process that had the variable set
    verdict = check(task, example / "kernel.py", device_env=env, samples=5, warm=False)
    assert verdict.status is Status.PASSED, verdict.reason


def test_devices_that_do_not_exist_are_refused(monkeypatch):
    monkeypatch.setenv("BAKEOFF_CPU_SLOTS", "2")
    found = resolve(PoolConfig())
    if found.kind == "cpu":
        assert found.ids == ("cpu0", "cpu1")
    with pytest.raises(BadInput, match="device 97 does not exist"):
        resolve(PoolConfig(gpu_ids=["97"]))
    with pytest.raises(BadInput, match="twice"):
        resolve(PoolConfig(gpu_ids=[found.ids[0], found.ids[0]]))
    with pytest.raises(BadInput, match="at least 1"):
        cpu_slot_count(0)


def test_pool_gives_each_thread_its_own_device_and_waits_when_all_are_busy(tmp_path):
    pool = cpu_pool(tmp_path, n=2)
    held, release, events = [], threading.Event(), []

    def lane(name):
        with pool.lease(name) as lease:
            events.append(("got", name, lease.device, time.monotonic()))
            held.append(lease.device)
            release.wait(10)
        events.append(("gave", name, lease.device, time.monotonic()))

    threads = [threading.Thread(target=lane, args=(f"lane{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    while len(held) < 2:
        time.sleep(0.01)
    assert sorted(held) == ["cpu0", "cpu1"]
    third = threading.Thread(target=lane, args=("lane2",))
    third.start()
    time.sleep(0.3)
    assert len(held) == 2, "a third lane got a device while both were held"
    release.set()
    for t in [*threads, third]:
        t.join(10)
    got_third = next(e for e in events if e[:2] == ("got", "lane2"))
    freed = [e for e in events if e[0] == "gave" and e[2] == got_third[2] and e[1] != "lane2"]
    assert freed and freed[0][3] <= got_third[3]


def test_pin_mode_gives_lane_i_device_i(tmp_path):
    pool = cpu_pool(tmp_path, n=2, mode="pin")
    with pool.lease("a", pin_index=1) as lease:
        assert lease.device == "cpu1"
        cancel = threading.Event()
        threading.Timer(0.3, cancel.set).start()
        with pytest.raises(TimeoutError):  # lane 3 is pinned to the same, busy, device
            with pool.lease("b", pin_index=3, cancel=cancel):
                pass
        with pool.lease("c", pin_index=2) as other:
            assert other.device == "cpu0"
    assert lease.end is not None and lease.end >= lease.start


def test_killed_holder_gives_its_device_back(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BAKEOFF_LOCK_DIR": str(tmp_path)}
    holder = subprocess.Popen(
        [sys.executable, "-m", "kernel_bakeoff.tasks.check.gpu_pool", "--cpu-slots", "1", "hold"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "holding cpu0"
        pool = cpu_pool(tmp_path, n=1)
        assert pool.holders()["cpu0"]["pid"] == holder.pid
        cancel = threading.Event()
        threading.Timer(0.3, cancel.set).start()
        with pytest.raises(TimeoutError):
            with pool.lease("waits", cancel=cancel):
                pass
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        # taken, not waited for: a deadline (an event, not this machine's pace) stops a wait
        gave_up = threading.Event()
        deadline = threading.Timer(60, gave_up.set)
        deadline.start()
        try:
            with pool.lease("after the kill", cancel=gave_up) as lease:
                assert lease.device == "cpu0"
        finally:
            deadline.cancel()
        assert pool.holders() == {"cpu0": None}
    finally:
        holder.kill()
        holder.wait()


def test_the_journal_records_every_lease_given_back_and_finds_overlaps(tmp_path):
    pool = cpu_pool(tmp_path, n=2)

    def lane(name):
        with pool.lease(name):
            time.sleep(0.05)

    threads = [threading.Thread(target=lane, args=(f"lane{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    records = pool.leases()
    assert sorted(r["label"] for r in records) == [f"lane{i}" for i in range(6)]
    assert {r["device"] for r in records} == {"cpu0", "cpu1"}
    assert overlapping(records) == []  # six lanes, two devices: never two on one at once

    def at(second: int) -> str:
        return f"2026-12-02T12:00:0{second}+00:00"

    a, b, c = (dict(records[0], start=at(s), end=at(e)) for s, e in [(1, 5), (2, 3), (4, 6)])
    found = {(x["start"], y["start"]) for x, y in overlapping([a, b, c])}
    assert found == {(at(1), at(2)), (at(1), at(4))}  # c overlaps a, which ends after b does

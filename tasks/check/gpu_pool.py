"""Which device a lane runs on: detection, and an allocator on flock-ed lock files.

One lock file per device in a host-wide directory. A lane holds an exclusive `flock` on its
device's file for as long as it runs; the kernel drops the lock when the holder's file
descriptor closes, including when the process is killed, so a crashed or killed lane never
leaks its device. Threads of one process contend too (each lease opens its own descriptor).

A lane hands its subprocesses the lease's environment, which names the device in the
visible-devices variables: CUDA_VISIBLE_DEVICES on NVIDIA; ROCR_VISIBLE_DEVICES (physical id)
with HIP_VISIBLE_DEVICES=0 and CUDA_VISIBLE_DEVICES=0 on ROCm, because HIP indexes inside
the ROCR-visible set. Hosts without GPUs get CPU slots (`cpu0`, `cpu1`, ...), so the same code
runs every bake-off on a laptop or in CI.

Every lease given back is appended to the lock directory's journal (`leases.jsonl`: device,
label, host, pid, start, end), so who held which device when can be read afterwards, across
bake-offs (`overlapping` finds two holders of one device at once; a holder killed before it
gave its device back leaves no line).

    python -m kernel_bakeoff.tasks.check.gpu_pool status            # who holds which device on this host
    python -m kernel_bakeoff.tasks.check.gpu_pool hold 0            # keep device 0 for yourself until Ctrl-C
    python -m kernel_bakeoff.tasks.check.gpu_pool leases            # the journal: leases given back, oldest first
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.tasks.models.run import Lease, PoolConfig
from kernel_bakeoff.tasks.run.settings import current, enter

MAX_DEFAULT_CPU_SLOTS = 8
JOURNAL = "leases.jsonl"


@dataclass(frozen=True)
class Devices:
    kind: str  # "cuda", "rocm" or "cpu"
    ids: tuple[str, ...]

    def env_for(self, device: str) -> dict[str, str]:
        """The environment a lane's subprocesses get for `device`."""
        env = {"BAKEOFF_DEVICE": device}
        if self.kind == "cuda":
            env["CUDA_VISIBLE_DEVICES"] = device
        elif self.kind == "rocm":
            env.update(ROCR_VISIBLE_DEVICES=device, HIP_VISIBLE_DEVICES="0")
            env["CUDA_VISIBLE_DEVICES"] = "0"
        else:
            env["CUDA_VISIBLE_DEVICES"] = ""
            # Triton runs only under its interpreter without a GPU. `bakeoff run` set this for
            # the whole process; a run started by a worker had no one to set it, and every
            # Triton kernel failed ("0 active drivers").
            env["TRITON_INTERPRET"] = "1"
            threads = max(1, (os.cpu_count() or 1) // max(1, len(self.ids)))
            env["OMP_NUM_THREADS"] = str(threads)
        return env


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def _select(base: list[str] | None, var: str, env) -> list[str] | None:
    chosen = _split(env.get(var))
    if chosen is None:
        return base
    if base is None:
        return chosen
    return [base[int(i)] for i in chosen if i.isdigit() and int(i) < len(base)]


def visible_ids(kind: str, count: int, env=os.environ) -> list[str]:
    """Device ids in the host's own numbering, honouring visible-devices variables already set."""
    if kind == "rocm":
        # HIP selects inside the ROCR-visible set; it reads CUDA_VISIBLE_DEVICES only as an
        # alias when HIP_VISIBLE_DEVICES is unset.
        ids = _split(env.get("ROCR_VISIBLE_DEVICES"))
        hip_var = "HIP_VISIBLE_DEVICES" if "HIP_VISIBLE_DEVICES" in env else "CUDA_VISIBLE_DEVICES"
        ids = _select(ids, hip_var, env)
    else:
        ids = _split(env.get("CUDA_VISIBLE_DEVICES"))
    return ids if ids is not None else [str(i) for i in range(count)]


def _gpu_kind_and_count() -> tuple[str, int]:
    try:
        import torch
    except ImportError:
        return "cpu", 0
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return "cpu", 0
    return ("rocm" if torch.version.hip else "cuda"), torch.cuda.device_count()


def cpu_slot_count(requested: int | None = None) -> int:
    if requested is not None:
        if requested < 1:
            raise BadInput("cpu_slots", f"must be at least 1, got {requested}")
        return requested
    if (given := current().cpu_slots) is not None:  # validated there: at least 1
        return given
    return max(1, min(MAX_DEFAULT_CPU_SLOTS, os.cpu_count() or 1))


def detect(cpu_slots: int | None = None) -> Devices:
    """The devices of this host: GPUs when torch sees any, otherwise CPU slots."""
    kind, count = _gpu_kind_and_count()
    if kind == "cpu":
        return Devices("cpu", tuple(f"cpu{i}" for i in range(cpu_slot_count(cpu_slots))))
    return Devices(kind, tuple(visible_ids(kind, count)))


def resolve(config: PoolConfig) -> Devices:
    """Detected devices, narrowed to `config.gpu_ids`; an id that does not exist is BadInput."""
    if config.gpu_ids is not None and not config.gpu_ids:
        raise BadInput("gpu_ids", "is empty; leave it out to use every device of this host")
    found = detect(config.cpu_slots)
    if config.gpu_ids is None:
        return found
    wanted = [str(i).strip() for i in config.gpu_ids]
    missing = [i for i in wanted if i not in found.ids]
    if missing:
        what = "GPU" if found.kind != "cpu" else "CPU slot (this host has no GPU)"
        raise BadInput(
            "gpu_ids",
            f"device {', '.join(missing)} does not exist; this host's {what} ids are "
            f"{', '.join(found.ids)}",
        )
    if len(set(wanted)) != len(wanted):
        raise BadInput("gpu_ids", f"names a device twice: {', '.join(wanted)}")
    return Devices(found.kind, tuple(wanted))


def default_lock_dir() -> Path:
    return current().lock_dir


def host_name() -> str:
    return current().host


def _now() -> datetime:
    return datetime.now(UTC)


class DevicePool:
    """Leases devices of one host to lanes, one lane per device, across threads and processes."""

    def __init__(self, devices: Devices, mode: str = "pool", lock_dir: Path | None = None):
        if mode not in ("pool", "pin"):
            raise BadInput("gpu_mode", f"unknown mode {mode!r}; use pool or pin")
        self.devices = devices
        self.mode = mode
        self.lock_dir = Path(lock_dir) if lock_dir else default_lock_dir()

    @classmethod
    def from_config(cls, config: PoolConfig) -> DevicePool:
        return cls(resolve(config), config.gpu_mode, config.lock_dir and Path(config.lock_dir))

    def lock_path(self, device: str) -> Path:
        return self.lock_dir / f"{self.devices.kind}-{re.sub(r'[^A-Za-z0-9_.-]', '_', device)}.lock"

    def _choices(self, pin_index: int | None) -> list[str]:
        ids = list(self.devices.ids)
        if self.mode == "pin" and pin_index is not None:
            return [ids[pin_index % len(ids)]]
        return ids

    def _try_lock(self, device: str, label: str) -> int | None:
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path(device), os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        holder = {"label": label, "pid": os.getpid(), "host": host_name(), "since": _now()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder, default=str).encode(), 0)
        return fd

    def _acquire(self, choices, label, poll_s, cancel) -> tuple[str, int]:
        while True:
            for device in choices:
                fd = self._try_lock(device, label)
                if fd is not None:
                    return device, fd
            if cancel is None:
                time.sleep(poll_s)
            elif cancel.wait(poll_s):
                raise TimeoutError(f"gave up waiting for a device for {label}")

    @contextmanager
    def lease(
        self,
        label: str,
        pin_index: int | None = None,
        poll_s: float = 0.05,
        cancel: threading.Event | None = None,
    ) -> Iterator[Lease]:
        """Wait for a free device (or the pinned one), hold it for the `with` block."""
        device, fd = self._acquire(self._choices(pin_index), label, poll_s, cancel)
        lease = Lease(
            device=device,
            env=self.devices.env_for(device),
            host=host_name(),
            pid=os.getpid(),
            start=_now(),
        )
        try:
            yield lease
        finally:
            lease.end = _now()
            self._journal(label, lease)  # before the unlock: the next holder's start is later
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _journal(self, label: str, lease: Lease) -> None:
        record = {"label": label, **lease.model_dump(mode="json", exclude={"env"})}
        try:  # one write of one line with O_APPEND: lines of concurrent writers never mix
            fd = os.open(self.lock_dir / JOURNAL, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            try:
                os.write(fd, (json.dumps(record) + "\n").encode())
            finally:
                os.close(fd)
        except OSError:
            pass  # the journal is a record, never a reason to keep a device

    def leases(self) -> list[dict]:
        """The journal's records, oldest first (lines a reader cannot parse are skipped)."""
        try:
            lines = (self.lock_dir / JOURNAL).read_text().splitlines()
        except OSError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return sorted(out, key=lambda r: r["start"])

    def holders(self) -> dict[str, dict | None]:
        """Device -> holder record for held devices, None for free ones (probes without waiting)."""
        out = {}
        for device in self.devices.ids:
            fd = self._try_lock(device, "probe")
            if fd is not None:
                os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
                out[device] = None
                continue
            try:
                out[device] = json.loads(self.lock_path(device).read_text() or "{}")
            except (OSError, json.JSONDecodeError):
                out[device] = {}
        return out


def overlapping(records: list[dict]) -> list[tuple[dict, dict]]:
    """Pairs of journal records that held one device of one host at the same time."""
    by_device: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        by_device.setdefault((r["host"], r["device"]), []).append(r)
    pairs = []
    for held in by_device.values():
        held.sort(key=lambda r: r["start"])
        latest = None  # the record ending last among those started so far
        for r in held:
            if latest and datetime.fromisoformat(r["start"]) < datetime.fromisoformat(
                latest["end"]
            ):
                pairs.append((latest, r))
            if latest is None or r["end"] > latest["end"]:
                latest = r
    return pairs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernel_bakeoff.tasks.check.gpu_pool", description=__doc__
    )
    parser.add_argument("--lock-dir", help="lock directory (default $BAKEOFF_LOCK_DIR)")
    parser.add_argument("--cpu-slots", type=int, help="CPU slots on a host without GPUs")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("status", help="show which device is held by whom")
    sub.add_parser("leases", help="the journal of leases given back, oldest first")
    hold = sub.add_parser("hold", help="hold a device until interrupted (or --seconds)")
    hold.add_argument("device", nargs="?", help="device id (default: any free one)")
    hold.add_argument("--seconds", type=float, help="release after this long")
    args = parser.parse_args(argv)
    try:
        enter()  # this command is an entry point too: its settings, read once
        ids = [args.device] if getattr(args, "device", None) else None
        pool = DevicePool.from_config(
            PoolConfig(gpu_ids=ids, cpu_slots=args.cpu_slots, lock_dir=args.lock_dir)
        )
    except BadInput as exc:
        print(f"gpu_pool: error: {exc}", file=sys.stderr)
        return 2
    if args.command == "status":
        for device, holder in pool.holders().items():
            print(f"{device:<8} {'free' if holder is None else json.dumps(holder)}")
        return 0
    if args.command == "leases":
        for r in pool.leases():
            print(f"{r['host']} {r['device']:<8} {r['start']} -> {r['end']}  {r['label']}")
        return 0
    with pool.lease(f"manual hold by pid {os.getpid()}") as lease:
        print(f"holding {lease.device}", flush=True)
        try:
            time.sleep(args.seconds if args.seconds is not None else 10**9)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The device clock's gate accounting, on a simulated device (no GPU here): a `Clock` whose
events, synchronise and flushes are a model of one stream, so what the clock charges can be
checked against what the model's device did. (Work left running past the end event is read
from the device trace instead: tests/test_stream_audit.py.)

The case that mattered on the H200: the gate's 256 MiB flushes ran a few per cent slower in the
sampling loop than in the calibration burst, and the gate is several times a short call, so a
fixed expectation charged honest calls for it. The gate's reference is now run beside each
sample. A candidate's side-stream work that overlaps the gate still makes the gate longer than
its reference, and is still charged."""

from __future__ import annotations

import pytest

from kernel_bakeoff.scripts.timing import Clock


class Device:
    """One stream of a model device: work runs back to back; an event's time is the end of
    the work queued before it. `flush_ms` is one flush's device time; `beside_gate_ms`, set by
    a candidate's call, is work it ran on a side stream during the gate (the gate's last event
    lands that much later)."""

    def __init__(self, flush_ms: float):
        self.t = 0.0
        self.flush_ms = flush_ms
        self.last_event = None

    def event(self, enable_timing=True):
        return Event()

    def record(self, ev) -> None:
        ev.t = self.t
        self.last_event = ev

    def flush(self) -> None:
        self.t += self.flush_ms

    def run(self, ms: float, beside_gate_ms: float = 0.0) -> None:
        if beside_gate_ms:  # the start event, recorded just before the call, came later
            self.last_event.t += beside_gate_ms
            self.t += beside_gate_ms
        self.t += ms


class Event:
    t = 0.0


def clock_on(device: Device) -> Clock:
    clock = Clock("cpu")
    clock.kind = "cuda_event"
    clock._sync = lambda: None
    clock._event = device.event
    clock._record = device.record
    clock._elapsed = lambda a, b: b.t - a.t
    clock._query = lambda ev: False  # the host always queued the call in time
    return clock


@pytest.mark.parametrize("slower", [1.0, 1.03, 1.10])
def test_an_honest_call_is_not_charged_for_a_gate_that_runs_slower_than_calibrated(slower):
    dev = Device(flush_ms=0.065)
    clock = clock_on(dev)
    clock.calibrate(dev.flush, host_call_ms=0.5)  # a compiled call's host cost: a long gate
    assert clock.gate >= 8
    dev.flush_ms *= slower  # the sampling loop's flushes, slower than the calibration's
    _, ms, _ = clock.time(lambda: dev.run(0.18), (), dev.flush)
    assert clock.gate_excess_ms == pytest.approx(0.0, abs=1e-9) and ms == pytest.approx(0.18)
    # the old fixed expectation would have charged most of the slowdown
    expected = clock.gate * 0.065 + clock.gate_tolerance_ms
    assert clock.gate_run_ms - expected == pytest.approx(clock.gate * 0.065 * (slower - 1))


def test_work_a_call_runs_beside_the_gate_is_charged():
    dev = Device(flush_ms=0.065)
    clock = clock_on(dev)
    clock.calibrate(dev.flush, host_call_ms=0.5)
    dev.flush_ms *= 1.03
    _, ms, _ = clock.time(lambda: dev.run(0.05, beside_gate_ms=0.13), (), dev.flush)
    assert clock.gate_excess_ms == pytest.approx(0.13)
    assert ms == pytest.approx(0.18)


def test_the_reference_is_the_same_gate_and_its_time_is_the_harnesss():
    dev = Device(flush_ms=0.065)
    clock = clock_on(dev)
    clock.calibrate(dev.flush, host_call_ms=0.2)
    flushes = []
    clock.time(lambda: dev.run(0.1), (), lambda: (flushes.append(1), dev.flush()))
    # lead-in + gate before the call, lead-in + gate again for the reference
    assert len(flushes) == 2 * (1 + clock.gate)
    assert clock.gate_ref_ms == pytest.approx(clock.gate_run_ms)

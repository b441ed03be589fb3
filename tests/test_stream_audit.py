"""The stream audit (no GPU here): its reading of a profiler trace (the device work a call
launched, found through the runtime calls inside its annotation, against the marker launched
after its end event), what it does with a trace that lacks samples, and where the clock puts
the annotation and the marker."""

import json

import pytest

from kernel_bakeoff.scripts.stream_audit import Missing, StreamAudit, overhangs
from kernel_bakeoff.scripts.timing import Clock


def trace(k: int, t0: float, side_end: float) -> list[dict]:
    """Sample `k`: host annotations for the call and the marker, a launch in each, the call's
    kernel on the caller's stream (7) and one on a side stream (13) ending at `side_end` us
    after t0; the marker starts 50 us after t0."""
    c1, c2, c3 = 3 * k + 1, 3 * k + 2, 3 * k + 3
    return [
        {"cat": "user_annotation", "name": f"call {k}", "ts": t0, "dur": 20.0},
        {
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "ts": t0 + 5,
            "args": {"correlation": c1},
        },
        {
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "ts": t0 + 10,
            "args": {"correlation": c2},
        },
        {"cat": "user_annotation", "name": f"marker {k}", "ts": t0 + 25, "dur": 5.0},
        {
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "ts": t0 + 27,
            "args": {"correlation": c3},
        },
        {"cat": "kernel", "ts": t0 + 30, "dur": 15.0, "args": {"correlation": c1, "stream": 7}},
        {
            "cat": "kernel",
            "ts": t0 + 31,
            "dur": side_end - 31,
            "args": {"correlation": c2, "stream": 13},
        },
        {"cat": "kernel", "ts": t0 + 50, "dur": 1.0, "args": {"correlation": c3, "stream": 7}},
    ]


def test_work_done_before_the_marker_overhangs_nothing():
    assert overhangs(trace(0, 0.0, 45.0) + trace(1, 1000.0, 49.0)) == {0: 0.0, 1: 0.0}


def test_work_past_the_marker_is_read_in_ms():
    hangs = overhangs(trace(1, 1000.0, 1050.0) + trace(0, 0.0, 70.0))
    assert hangs == pytest.approx({0: 0.020, 1: 1.0})


def test_a_sample_without_its_marker_is_left_out():
    events = [e for e in trace(0, 0.0, 70.0) if e.get("name") != "marker 0"]
    assert overhangs(events + trace(1, 1000.0, 45.0)) == {1: 0.0}


def test_a_call_that_launched_nothing_overhangs_nothing():
    events = [e for e in trace(0, 0.0, 70.0) if e.get("cat") != "kernel" or e["ts"] >= 50]
    assert overhangs(events) == {0: 0.0}


def test_launches_outside_every_annotation_belong_to_no_sample():
    stray = [  # a launch after the marker's window (the harness's own), its kernel much later
        {"cat": "cuda_runtime", "ts": 40.0, "args": {"correlation": 99}},
        {"cat": "kernel", "ts": 60.0, "dur": 500.0, "args": {"correlation": 99, "stream": 13}},
    ]
    assert overhangs(trace(0, 0.0, 45.0) + stray) == {0: 0.0}


def test_work_the_call_wraps_in_an_annotation_of_its_own_is_still_the_calls():
    events = trace(0, 0.0, 45.0)
    # inside its call, the candidate opens "marker 0" around a launch of hidden work
    events += [
        {"cat": "user_annotation", "name": "marker 0", "ts": 12.0, "dur": 4.0},
        {"cat": "cuda_runtime", "ts": 14.0, "args": {"correlation": 77}},
        {"cat": "kernel", "ts": 32.0, "dur": 1018.0, "args": {"correlation": 77, "stream": 13}},
    ]
    assert overhangs(events) == pytest.approx({0: 1.0})


def test_an_annotation_around_the_harnesss_leaves_their_samples_missing():
    events = trace(0, 0.0, 45.0) + trace(1, 1000.0, 45.0)
    events.append({"cat": "user_annotation", "name": "call 99", "ts": 990.0, "dur": 500.0})
    assert overhangs(events) == {0: 0.0}  # sample 1 is missing: the check is FLAGGED


class Recorded:
    """A finished profiler whose chrome trace is `events`."""

    def __init__(self, events):
        self.events = events

    def export_chrome_trace(self, path):
        with open(path, "w") as f:
            json.dump({"traceEvents": self.events}, f)


def audit_with(events) -> StreamAudit:
    audit = StreamAudit("cpu")
    audit._prof = Recorded(events)
    return audit


def test_the_audit_reads_the_kept_samples_and_leaves_no_file(tmp_path):
    audit = audit_with(trace(0, 0.0, 45.0) + trace(1, 1000.0, 1050.0) + trace(2, 2000.0, 45.0))
    assert audit.read(tmp_path, [1, 2]) == pytest.approx([1.0, 0.0])  # 0 was retaken
    assert list(tmp_path.iterdir()) == []


def test_a_sample_missing_from_the_trace_is_named():
    with pytest.raises(Missing) as lost:
        audit_with(trace(0, 0.0, 45.0)).read(__import__("pathlib").Path("/tmp"), [0, 1])
    assert lost.value.missing == [1] and not lost.value.none
    with pytest.raises(Missing) as lost:
        audit_with([]).read(__import__("pathlib").Path("/tmp"), [0])
    assert lost.value.none  # nothing of the harness's: the profiler recorded nothing


@pytest.mark.parametrize("device, enabled", [("cpu", True), ("cuda", False)])
def test_where_nothing_is_audited_nothing_is_read(tmp_path, device, enabled):
    audit = StreamAudit(device, enabled=enabled)  # the host clock; the frozen baseline
    assert not audit.on
    audit.warm()
    with audit:
        with audit.call() as k:
            pass
        audit.mark(k)
    assert audit.read(tmp_path, [k]) is None


class Audit:
    """Records the order of the clock's annotation, end event and marker."""

    def __init__(self, log):
        self.log, self.n = log, 0

    def call(self):
        import contextlib

        @contextlib.contextmanager
        def window():
            self.log.append(f"call {self.n}")
            self.n += 1
            yield self.n - 1

        return window()

    def mark(self, k):
        self.log.append(f"marker {k}")


def test_the_clock_annotates_the_call_and_marks_after_the_end_event():
    log = []
    clock = Clock("cpu")
    clock.kind = "cuda_event"
    clock._sync = lambda: None
    clock._event = lambda enable_timing=True: object()
    clock._record = lambda ev: log.append("event")
    clock._elapsed = lambda a, b: 0.1
    clock._query = lambda ev: False
    clock.audit = Audit(log)
    clock.time(lambda: log.append("fn"), ())
    clock.time(lambda: log.append("fn"), ())
    # gate, start, [call: fn], end, marker; twice, numbered in turn
    assert log == ["event", "event", "call 0", "fn", "event", "marker 0"] + [
        "event",
        "event",
        "call 1",
        "fn",
        "event",
        "marker 1",
    ]
    assert clock.sample_id == 1

"""benchmarks/stream_audit_study.py's reading of a profiler trace (no GPU here): the device work
a call launched, found through the runtime calls inside its annotation, against the marker
launched after its end event."""

from benchmarks.stream_audit_study import overhangs


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
    assert overhangs(trace(0, 0.0, 45.0) + trace(1, 1000.0, 49.0)) == [0.0, 0.0]


def test_work_past_the_marker_is_read_in_ms():
    hangs = overhangs(trace(0, 0.0, 70.0) + trace(1, 1000.0, 1050.0))
    assert hangs == [0.020, 1.0]


def test_a_sample_without_its_marker_is_left_out():
    events = [e for e in trace(0, 0.0, 70.0) if e.get("name") != "marker 0"]
    assert overhangs(events + trace(1, 1000.0, 45.0)) == [0.0]

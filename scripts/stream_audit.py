"""Work a timed call left running on any stream, read on the device's clock.

Device events time the caller's stream: work a call launched on a stream the caller's stream
never waits for can still be running at the end event. So each timed sample runs under the
profiler (CUPTI through torch.profiler; roctracer on ROCm), whose trace carries every kernel,
copy and fill the device ran, with its stream, its start and end on the device's clock, and the
runtime call that launched it. The call runs inside a host annotation "call K"; right after its
end event the harness launches a marker kernel on the caller's stream inside "marker K". A
sample's overhang is how long after the marker started the last device work the call launched
ended, at least 0; it is added to the sample. An honest call's overhang is 0 (its work is done
when the caller's stream reaches the marker), so nothing is charged for host jitter.

On the H200 the overhang matched the work left on a side stream and read 0 for honest calls,
and the profiler barely moved event-timed medians (docs/studies/h200_figures.md, "Stream
audit"). The profiler's first start in a process takes seconds, so `warm` starts it on a thread
of its own while the candidate loads and compiles.
"""

from __future__ import annotations

import bisect
import json
import threading
from contextlib import contextmanager
from pathlib import Path

DEVICE_WORK = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCHES = ("cuda_runtime", "cuda_driver")


def overhangs(events: list[dict], device_us: dict[str, float] | None = None) -> dict[int, float]:
    """Sample K -> ms from the start of marker K's device work to the end of the last device
    work call K launched (at least 0; 0 for a call that launched none), for every K whose
    marker is in the trace. A device activity belongs to the annotation whose window holds the
    runtime call that launched it (matched by correlation id; a CUDA graph's kernels carry
    their launch's). Only outermost windows count: the harness's follow one another, so a
    window inside another was opened by the candidate during its call (a `marker K` of its own
    around its hidden work would otherwise take that work out of the call), and one around
    the harness's leaves their markers without work, so those samples are missing.
    `device_us`, if given, gets the device time (us) of the timed calls' work per kernel name
    (copies and fills by their kind): which kernels did the call's work on the device."""
    launched_at = {}
    for e in events:
        if e.get("cat") in LAUNCHES and "correlation" in (e.get("args") or {}):
            launched_at[e["args"]["correlation"]] = e["ts"]
    windows = []
    for lo, hi, name in sorted(
        (e["ts"], e["ts"] + e.get("dur", 0.0), e["name"])
        for e in events
        if e.get("cat") == "user_annotation" and _sample_of(e.get("name", "")) is not None
    ):
        if not windows or lo > windows[-1][1]:
            windows.append((lo, hi, name))
    starts = [lo for lo, _, _ in windows]
    spans: dict[str, list[tuple[float, float]]] = {}
    for e in events:
        if e.get("cat") not in DEVICE_WORK:
            continue
        at = launched_at.get((e.get("args") or {}).get("correlation"))
        if at is None:
            continue
        i = bisect.bisect_right(starts, at) - 1
        if i >= 0 and at <= windows[i][1]:
            spans.setdefault(windows[i][2], []).append((e["ts"], e["ts"] + e.get("dur", 0.0)))
            if windows[i][2].startswith("call ") and device_us is not None:
                name = e.get("name", "?") if e.get("cat") == "kernel" else e.get("cat", "?")
                device_us[name] = device_us.get(name, 0.0) + e.get("dur", 0.0)
    found = {}
    for name, marker in spans.items():
        if not name.startswith("marker "):
            continue
        k = _sample_of(name)
        work = spans.get(f"call {k}", [])
        last = max((end for _, end in work), default=None)
        first = min(start for start, _ in marker)
        found[k] = 0.0 if last is None else max(0.0, last - first) / 1e3  # us -> ms
    return found


def _sample_of(name: str) -> int | None:
    kind, _, k = name.partition(" ")
    return int(k) if kind in ("call", "marker") and k.isdigit() else None


class Missing(Exception):
    """The trace lacks samples the harness timed; `none` when it holds none of them."""

    def __init__(self, missing: list[int], none: bool):
        super().__init__(f"samples {missing} are not in the device trace")
        self.missing, self.none = missing, none


class StreamAudit:
    """The profiler around a workload's timed samples; a no-op on the host clock and where not
    `enabled` (the frozen baseline: the user's own code, and an honest call's overhang is 0).

    Use: `warm()` once early; `with audit:` around calibration and the timed samples; inside,
    `with audit.call() as k:` around each call and `audit.mark(k)` right after its end event;
    then `audit.read(where, ids)` for the kept samples' overhangs in ms."""

    def __init__(self, device: str, enabled: bool = True):
        self.on = enabled and device != "cpu"
        self._warming: threading.Thread | None = None
        self._prof = None
        self._next = 0
        if not self.on:
            return
        import torch
        from torch.profiler import ProfilerActivity, profile, record_function

        self._profile, self._annotate = profile, record_function
        self._activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
        self._marker = torch.zeros(1, device=device)

    def warm(self) -> None:
        """Start the profiler once, empty, on a thread: its first start sets up CUPTI."""
        if self.on and self._warming is None:
            self._warming = threading.Thread(target=self._start_stop, daemon=True)
            self._warming.start()

    def close(self) -> None:
        """Wait for the warm-up (a process must not exit while the profiler starts)."""
        if self._warming is not None:
            self._warming.join()

    def _start_stop(self) -> None:
        with self._profile(activities=self._activities):
            pass

    def __enter__(self) -> StreamAudit:
        if self.on:
            if self._warming is not None:
                self._warming.join()
            self._prof = self._profile(activities=self._activities)
            self._prof.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._prof is not None:
            self._prof.__exit__(*exc)

    @contextmanager
    def call(self):
        k, self._next = self._next, self._next + 1
        if not self.on:
            yield k
            return
        with self._annotate(f"call {k}"):
            yield k

    def mark(self, k: int) -> None:
        if self.on:
            with self._annotate(f"marker {k}"):
                self._marker.add_(1)

    def read(self, where: Path, ids: list[int]) -> list[float] | None:
        """Overhang (ms) of each sample in `ids`, from the trace of the last `with` block; None
        where nothing was audited. Raises `Missing` for samples the trace does not hold."""
        if self._prof is None:
            return None
        path = where / "device_trace.json"
        self._prof.export_chrome_trace(str(path))
        try:
            events = json.loads(path.read_text()).get("traceEvents", [])
        finally:
            path.unlink(missing_ok=True)
        self._prof = None
        self.kernel_us: dict[str, float] = {}
        hangs = overhangs(events, self.kernel_us)
        missing = [k for k in ids if k not in hangs]
        if missing:
            raise Missing(missing, none=not hangs)
        return [hangs[k] for k in ids]

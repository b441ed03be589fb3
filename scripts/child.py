"""The candidate's process: load it, call it on fresh inputs, time it, write down what it returned.

Run by the judge as `python -m kernel_bakeoff.scripts.child CHILD.json MARKER_FD DEAL_FD` in its own session, scratch
directory and scrubbed environment. It holds no secrets and no reference answer; the judge trusts
none of what it writes (see scripts/protocol.py). The timing functions and the harness's own
functions are captured before the candidate is imported; replacing any of them afterwards is
reported as FLAGGED.
"""

from __future__ import annotations

import gc
import os
import sys
import time
import traceback
import types
from contextlib import contextmanager
from pathlib import Path

_NOW_NS = time.perf_counter_ns  # captured before any candidate code runs
ROTATE = 2  # timed calls cycle through this many sets of input buffers
WARM_CLOCKS_S = 0.1  # GPU clocks ramp up from idle; the first samples must not see them low
WARM_CLOCKS_MAX_CALLS = 10_000
HARNESS = "kernel_bakeoff.scripts"  # the harness's package: its functions must not be replaced
OOM_WORDS = ("out of memory", "can't allocate memory", "cannot allocate memory")
_WRITE = os.write
_READ = os.read
_REPLACE = os.replace

import faulthandler  # noqa: E402

import torch  # noqa: E402  (after the captures above)

from kernel_bakeoff.scripts import (  # noqa: E402
    compare,
    launches,
    protocol,
    sandbox,
    settle,
    stream_audit,
    tensorfile,
    timing,
)
from kernel_bakeoff.scripts.arch import detect, flush_bytes  # noqa: E402
from kernel_bakeoff.scripts.fingerprint import device_kind  # noqa: E402
from kernel_bakeoff.scripts.formats import module_for  # noqa: E402
from kernel_bakeoff.scripts.reference import values_only  # noqa: E402
from kernel_bakeoff.scripts.smclock import SmClock  # noqa: E402
from kernel_bakeoff.scripts.torch_work import Tally  # noqa: E402
from kernel_bakeoff.scripts.verdict import Status  # noqa: E402


class Results:
    """Writes result files atomically and marker lines on the judge's pipe; `dealt` reads a
    timed sample's input seed from the judge (scripts/protocol.py, "dealt samples")."""

    def __init__(self, root: Path, marker_fd: int, deal_fd: int | None = None):
        self.root = root
        self.marker_fd = marker_fd
        self.deal_fd = deal_fd

    def dealt(self, index: int, k: int) -> int:
        """Ask the judge for sample k's seed and wait for it: the judge's clock for the sample
        starts when it answers and stops when `done` arrives with the outputs' projections."""
        self.marker(f"ready {index} {k}")
        data = b""
        while len(data) < 8:
            more = _READ(self.deal_fd, 8 - len(data))
            if not more:
                raise Failure(Status.HARNESS_ERROR, "the judge stopped dealing samples")
            data += more
        return int.from_bytes(data, "little")

    def write(self, name: str, model) -> None:
        tmp = self.root / f".{name}.tmp"
        tmp.write_text(model.model_dump_json())
        _REPLACE(tmp, self.root / name)

    def marker(self, line: str) -> None:
        _WRITE(self.marker_fd, (line + "\n").encode())


class Guard:
    """Identity of every timing and harness function, taken before the candidate is imported."""

    TIME = ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns")
    TORCH = ("save", "equal", "randn", "empty", "use_deterministic_algorithms")
    TENSOR = ("clone", "detach", "cpu", "copy_", "to", "reshape", "contiguous", "view", "fill_")
    CUDA = ("synchronize", "Event", "current_stream", "_sleep")
    EVENT = ("record", "elapsed_time", "synchronize")
    PROFILER = ("start", "stop", "__enter__", "__exit__", "export_chrome_trace")

    def __init__(self, device: str):
        items = [(f"time.{n}", time, n) for n in self.TIME]
        items += [(f"os.{n}", os, n) for n in ("write", "replace")]
        items += [(f"torch.{n}", torch, n) for n in self.TORCH]
        items += [(f"torch.Tensor.{n}", torch.Tensor, n) for n in self.TENSOR]
        if device != "cpu":
            items += [(f"torch.cuda.{n}", torch.cuda, n) for n in self.CUDA]
            items += [(f"torch.cuda.Event.{n}", torch.cuda.Event, n) for n in self.EVENT]
            profile, annotate = torch.profiler.profile, torch.autograd.profiler.record_function
            items += [(f"torch.profiler.profile.{n}", profile, n) for n in self.PROFILER]
            items += [
                (f"torch.profiler.record_function.{n}", annotate, n)
                for n in ("__enter__", "__exit__")
            ]
        for modname, module in list(sys.modules.items()):
            if modname in ("__main__", HARNESS) or modname.startswith(HARNESS + "."):
                items += self._module_items(modname, module)
        self._items = [
            (label, owner, name, *self._identity(owner, name)) for label, owner, name in items
        ]

    @staticmethod
    def _module_items(modname: str, module) -> list:
        found = []
        for attr, value in list(vars(module).items()):
            if not (callable(value) or isinstance(value, types.ModuleType)):
                continue  # data (counters, caches) may change honestly
            found.append((f"{modname}.{attr}", module, attr))
            if isinstance(value, type) and value.__module__ == module.__name__:
                found += [
                    (f"{modname}.{attr}.{m}", value, m)
                    for m, v in vars(value).items()
                    if callable(v) and not m.startswith("__")
                ]
        return found

    @staticmethod
    def _identity(owner, name: str):
        value = getattr(owner, name, None)
        return value, getattr(value, "__code__", None)

    def changed(self) -> str | None:
        for label, owner, name, value, code in self._items:
            now, now_code = self._identity(owner, name)
            if now is not value or now_code is not code:
                return label
        return None


# torch.use_deterministic_algorithms also imports Inductor (seconds); the switch it sets is this.
_set_deterministic = getattr(torch._C, "_set_deterministic_algorithms", None) or (
    torch.use_deterministic_algorithms
)


@contextmanager
def poisoned_allocations():
    """torch.empty and friends return NaN (floats) or the largest value (ints) while inside."""
    was = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.utils.deterministic.fill_uninitialized_memory = True
    _set_deterministic(True, warn_only=True)
    try:
        yield
    finally:
        _set_deterministic(was, warn_only=warn_only)
        torch.utils.deterministic.fill_uninitialized_memory = fill


@contextmanager
def no_collector():
    """Python's cyclic garbage collector off while samples are timed (as `timeit` has it): a
    collection lands wherever the allocations tip it, in a call or in the harness's work
    around it, which the judge's clock counts (scripts/judge_clock.py)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # No gc.collect() here: a full collection of a process holding torch took 0.1-0.3 s
        # on this 2-core CPU, once per workload in each of a check's two processes; what the
        # samples left is collected when the collector next runs by its own thresholds.
        if was:
            gc.enable()


class Failure(Exception):
    """A verdict reached in the child: the candidate failed (never a pass)."""

    def __init__(self, status, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _chain(exc: BaseException) -> list[BaseException]:
    seen = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def _says_it_all(exc: BaseException) -> bool:
    """A BadInput with nothing behind it (raised `from None`, no cause) is its own one-line
    reason: a traceback of the harness's frames would bury it."""
    alone = exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)
    return type(exc).__name__ == "BadInput" and alone


def classify(exc: BaseException, loading: bool):
    """COMPILE_ERROR for what failed to build or import, RUNTIME_ERROR for what failed to run."""
    chain = _chain(exc)
    compile_like = any(
        isinstance(e, (SyntaxError, ImportError))
        or (type(e).__name__ == "CompilationError" and type(e).__module__.startswith("triton"))
        for e in chain
    )
    message = str(exc) if type(exc).__name__ == "BadInput" else f"{type(exc).__name__}: {exc}"
    message = message.strip()[:800]
    if compile_like or loading:
        return (
            Status.COMPILE_ERROR,
            f"{'loading' if loading else 'calling'} the candidate: {message}",
        )
    if any(w in str(e).lower() for e in chain for w in OOM_WORDS):
        return Status.RUNTIME_ERROR, f"out of memory: {message}"
    return Status.RUNTIME_ERROR, f"the call raised {message}"


class Runner:
    def __init__(self, request, results: Results, fn, clock, flusher, device, sm_clock, audit):
        self.request = request
        self.audit = audit
        self.sm_clock = sm_clock
        self.results = results
        self.fn = fn
        self.clock = clock
        self.flush = flusher
        self.device = device
        self.spec = request.spec
        self.fmt = module_for(self.spec.format)
        self.src_dir = Path(request.src_dir)
        self.spent_ns = 0
        self.launched: list[str] = []  # Triton kernels its checked calls launched
        self.extensions: list[str] = []  # and compiled extension functions they called
        self.work = Tally()  # torch work beside its Triton kernels (scripts/torch_work.py)
        self.saw_triton = False  # an earlier workload's checked calls launched Triton

    def inputs(self, workload, seed: int) -> list:
        return list(self.fmt.make_inputs(self.spec, self.src_dir, workload, seed, self.device))

    def run(self, work, *args, counted: bool = True):
        """Run candidate code: its exceptions become a Failure. With `counted`, its time is the
        candidate's own (its timed calls, and its first call, which compiles); other calls the
        harness makes (more trials, warm-up, wall-clock blocks) are the harness's cost."""
        t0 = _NOW_NS()
        try:
            return work(*args)
        except (Exception, SystemExit) as exc:
            traceback.print_exc()
            raise Failure(*classify(exc, loading=False)) from exc
        finally:
            if counted:
                self.spent_ns += _NOW_NS() - t0

    def checked_call(self, args):
        # Once a checked call launched Triton, the next ones are observed for torch work
        # beside it (not the first: a candidate without Triton pays nothing for the mode).
        observed = self.saw_triton or bool(self.launched)
        with poisoned_allocations(), launches.counting(self.launched, self.extensions):
            result = self.work.observe(self.fn, args) if observed else self.fn(*args)
            self.clock.sync()
        return result

    def warm_clocks(self, args) -> None:
        """On a GPU, keep calling for WARM_CLOCKS_S so clocks leave idle (a fraction of the busy
        clock: docs/studies/h200_figures.md) before the first sample."""
        if self.clock.kind == "host":
            return
        t0 = _NOW_NS()
        for _ in range(WARM_CLOCKS_MAX_CALLS):
            if _NOW_NS() - t0 >= WARM_CLOCKS_S * 1e9:
                break
            self.plain_calls(args, 1)

    def host_cost_ms(self, args, count: int = 3) -> float:
        """The host's time to queue one call, taken while the device still works on the calls
        before (no waiting on it, unless the candidate synchronises itself)."""
        t0 = _NOW_NS()
        for _ in range(count):
            self.fn(*args)
        t1 = _NOW_NS()
        self.clock.sync()
        return (t1 - t0) / 1e6 / count

    def queued_calls(self, args, count: int, label: str) -> None:
        """`plain_calls`, with a marker once the host has queued them (before the sync)."""
        for _ in range(count):
            self.fn(*args)
        self.results.marker(f"queued {label}")
        self.clock.sync()

    def plain_calls(self, args, count: int) -> None:
        for _ in range(count):
            self.fn(*args)
        self.clock.sync()

    def outputs(self, result, what: str) -> list:
        self.structure = compare.structure(result)  # the judge compares it with the reference's
        outs = compare.as_outputs(result)
        for i, out in enumerate(outs):
            problem = compare.type_problem(out, self.device)
            if problem:
                raise Failure(Status.INCORRECT_DTYPE, f"{what}: output {i} {problem}")
        return outs

    def snapshot(self, outs: list) -> list:
        return [o.detach().clone() for o in outs]

    def check_after(self, args, before, outs, snaps, what: str) -> None:
        """Inputs unchanged; outputs unchanged since the call returned (nothing still writing)."""
        for i, (now, was) in enumerate(zip(args, before)):
            if isinstance(was, torch.Tensor) and not compare.same_bits(now, was):
                name = self.spec.inputs[i].name if i < len(self.spec.inputs) else f"#{i}"
                raise Failure(Status.FLAGGED, f"{what}: the call wrote to its input {name!r}")
        for i, (out, snap) in enumerate(zip(outs, snaps)):
            if not compare.same_bits(out, snap):
                raise Failure(
                    Status.FLAGGED,
                    f"{what}: output {i} changed after the call returned "
                    "(work still running outside the call)",
                )

    @staticmethod
    def refill(slots: list[list], k: int, fresh: list) -> list:
        """Sample k's inputs in the buffers of sample k - ROTATE: the same addresses and shapes
        with new values, so memoising on either returns a stale answer that the judge sees."""
        if len(slots) < ROTATE:
            slots.append(fresh)
            return fresh
        args = [
            a.copy_(f) if isinstance(a, torch.Tensor) else f
            for a, f in zip(slots[k % ROTATE], fresh)
        ]
        slots[k % ROTATE] = args
        return args

    def keep(self, args) -> list:
        return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]

    def first_calls(self, wl, seeds) -> None:
        """What a torch.compile candidate compiles in a check, and nothing after: for a timed
        workload one plain call, then (every workload) one call under the trials' poisoned
        allocations, whose deterministic mode Dynamo guards on and compiles again for."""
        if wl.timed:
            self.run(self.plain_calls, self.inputs(wl, seeds.warmup_seed), 1)
        if seeds.trial_seeds:
            self.run(self.checked_call, self.inputs(wl, seeds.trial_seeds[0]))

    def workload(self, index: int, seeds):
        wl = self.spec.workload(seeds.name)
        if self.request.checked_only:  # a quick check: trials only, whatever the size
            wl = wl.model_copy(update={"timed": False})
        record = protocol.ChildWorkload(workload=wl.name)
        shapes = None
        if self.request.precompile:
            self.first_calls(wl, seeds)
            return record
        if wl.timed:
            # The candidate's first call (its own time: a torch.compile candidate compiles and
            # autotunes here) comes before the trials, outside their poisoned allocations.
            # Compiled first under the trials' deterministic mode, Inductor kept that mode's
            # one untuned reduction config for the graph compiled after it, the one timed:
            # max-autotune LayerNorm read far slower that way (docs/studies/h200_figures.md).
            # Trials still get poisoned allocations.
            self.run(self.plain_calls, self.inputs(wl, seeds.warmup_seed), 1)
        for t, seed in enumerate(seeds.trial_seeds):
            what = f"trial {t + 1}"
            args = self.inputs(wl, seed)
            before = self.keep(args)
            outs = self.outputs(self.run(self.checked_call, args, counted=t == 0), what)
            snaps = self.snapshot(outs)
            root = self.results.root
            saved = [
                tensorfile.save(root, protocol.output_file(index, t, j), s)
                for j, s in enumerate(snaps)
            ]
            self.check_after(args, before, outs, snaps, what)
            record.trials.append(saved)
            record.structure = record.structure or self.structure
            shapes = [tuple(s.shape) for s in snaps]
        # Which kernels ran goes to the judge on the marker channel, once: a results file
        # can be rewritten after this (at exit), a second line on the channel is seen.
        line = launches.record_line(index, self.launched, self.extensions, self.work.summary())
        self.results.marker(line)
        self.saw_triton = self.saw_triton or bool(self.launched)
        self.launched, self.extensions, self.work = [], [], Tally()
        if not wl.timed:  # a size checked for correctness only (scripts/sizes.py)
            return record
        args = self.inputs(wl, seeds.warmup_seed)
        # warm-up as the samples are taken, until they settle (scripts/settle.py)
        call, least = (lambda: self.plain_calls(args, 1)), max(1, self.request.warmup - 1)
        self.run(settle.warm, call, self.flush, least, counted=False)
        self.run(self.warm_clocks, args, counted=False)
        with self.audit, no_collector():  # the profiler's trace: the call's work on every stream
            self.clock.calibrate(self.flush, self.run(self.host_cost_ms, args, counted=False))
            ids = self.timed_samples(index, wl, seeds, record, shapes)
        try:
            hangs = self.audit.read(self.results.root, ids)
        except stream_audit.Missing as lost:
            if lost.none:  # not even the harness's own markers: the profiler recorded nothing
                raise Failure(
                    Status.HARNESS_ERROR,
                    "the profiler's device trace held none of the harness's markers "
                    "(no CUPTI or roctracer?), so work left on other streams went unchecked",
                ) from None
            raise Failure(
                Status.FLAGGED,
                f"timed calls {[k + 1 for k in lost.missing]} are missing from the device trace "
                "(the profiler was stopped or its records dropped during the calls)",
            ) from None
        if hangs is not None:
            line = launches.device_line(index, self.audit.kernel_us)
            self.results.marker(line)  # which kernels did the device's work, on the channel
            record.overhang_ms = hangs
            record.samples_ms = [s + h for s, h in zip(record.samples_ms, hangs)]
        record.wall_calls = timing.wall_calls(record.samples_ms, record.host_ms)
        args = self.inputs(wl, seeds.wall_seed)
        for block in range(self.request.wall_blocks):  # timed by the judge, from these markers
            self.clock.sync()
            self.results.marker(f"begin {index} {block}")
            self.run(self.queued_calls, args, record.wall_calls, f"{index} {block}", counted=False)
            self.results.marker(f"end {index} {block}")
        return record

    def timed_samples(
        self, index: int, wl, seeds, record: protocol.ChildWorkload, shapes
    ) -> list[int]:
        """The timed calls, each checked as it returns; the audit's numbers of the samples kept."""
        projectors = None
        slots: list[list] = []  # input buffers reused in turn, refilled with fresh values
        ids = []
        for k in range(seeds.dealt):
            what = f"timed call {k + 1}"
            seed = self.results.dealt(index, k)  # the judge's clock starts here
            args = self.refill(slots, k, self.inputs(wl, seed))
            before = self.keep(args)
            result, ms, host_ms = self.run(self.clock.time, self.fn, args, self.flush)
            self.spent_ns -= self.clock.before_ns  # the flush is the harness's time
            ids.append(self.clock.sample_id)
            record.host_gap_ms.append(self.clock.host_gap_ms)
            record.host_call_ms.append(self.clock.host_call_ms)
            record.gate_flushes.append(self.clock.gate)
            if self.clock.gate_ref_ms is not None:
                record.gate_ms.append(self.clock.gate_run_ms)
                record.gate_ref_ms.append(self.clock.gate_ref_ms)
                record.gate_excess_ms.append(self.clock.gate_excess_ms)
            record.host_bound += int(self.clock.early)
            record.sm_clock_mhz.append(self.sm_clock())
            outs = self.outputs(result, what)
            snaps = self.snapshot(outs)
            shapes = shapes or [tuple(s.shape) for s in snaps]  # a timing-only run has no trials
            if [tuple(s.shape) for s in snaps] != shapes:
                raise Failure(
                    Status.INCORRECT_SHAPE, f"{what}: output shapes differ from the trials'"
                )
            if projectors is None:
                projectors = [
                    compare.Projector(seeds.projection_seed + j, self.device)
                    for j in range(len(snaps))
                ]
            record.projections.append([p(s) for s, p in zip(snaps, projectors)])
            self.results.marker(protocol.done_line(index, k, record.projections[-1]))  # stops
            self.check_after(args, before, outs, snaps, what)
            record.samples_ms.append(ms)
            record.host_ms.append(host_ms)
        return ids


def main(argv: list[str]) -> int:
    sandbox.confine_self()
    faulthandler.enable()  # a crash leaves its Python stack in the output tail
    request = protocol.ChildRequest.model_validate_json(Path(argv[0]).read_text())
    results = Results(Path(request.results), int(argv[1]), int(argv[2]) if argv[2:] else None)
    device = device_kind()
    clock = timing.Clock(device, _NOW_NS)
    flushed = flush_bytes(detect())
    flusher = timing.Flusher(device, flushed)
    # Candidates' streams are audited; the frozen baseline's are not (the user's own code): the
    # profiler's first start (seconds) has no compile to hide behind in its process.
    audited = request.candidate is not None and not request.precompile
    audit = stream_audit.StreamAudit(device, enabled=audited)
    if audit.on:
        clock.audit = audit
        audit.warm()  # the profiler's first start takes seconds: beside the load and compile
    sm_clock = SmClock()  # None on every read without an NVIDIA device
    spec = request.spec
    fmt = module_for(spec.format)
    values_only(device)  # as in the judge's reference
    launches.install_extensions()  # before the candidate binds load_inline / load, or triton
    guard = Guard(device)
    hello = protocol.ChildHello(device=device, clock=clock.kind, flush_bytes=flushed)
    results.write(protocol.HELLO, hello)
    t0 = _NOW_NS()
    try:
        src = Path(request.src_dir)
        if request.candidate is None:
            fn = fmt.load_callable(spec, src, spec.entry, device)
        else:
            fn = fmt.load_callable(spec, src, spec.entry, device, candidate=Path(request.candidate))
    except (Exception, SystemExit) as exc:
        if not _says_it_all(exc):
            traceback.print_exc()
        status, reason = classify(exc, loading=True)
        results.write(protocol.FATAL, protocol.ChildError(status=status, reason=reason))
        audit.close()
        return 0
    load_s = (_NOW_NS() - t0) / 1e9
    results.write(protocol.HELLO, hello.model_copy(update={"load_s": load_s}))
    runner = Runner(request, results, fn, clock, flusher, device, sm_clock, audit)
    for index, seeds in enumerate(request.workloads):
        results.marker(f"start {index}")
        runner.spent_ns = 0
        try:
            record = runner.workload(index, seeds)
        except Failure as failure:
            record = protocol.ChildWorkload(
                workload=seeds.name,
                error=protocol.ChildError(status=failure.status, reason=failure.reason),
            )
        except Exception as exc:  # outside the calls, e.g. making inputs in a broken process
            traceback.print_exc()
            reason = (
                f"the candidate's process failed outside its calls: {type(exc).__name__}: {exc}"
            )
            record = protocol.ChildWorkload(
                workload=seeds.name,
                error=protocol.ChildError(status=Status.RUNTIME_ERROR, reason=reason[:800]),
            )
        record.candidate_s = runner.spent_ns / 1e9
        patched = guard.changed() or launches.intact()
        if patched:
            reason = f"the candidate replaced {patched}, which the harness uses"
            results.write(protocol.FATAL, protocol.ChildError(status=Status.FLAGGED, reason=reason))
            return 0
        results.write(protocol.workload_file(index), record)
    audit.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

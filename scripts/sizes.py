"""Sizes the user did not list: correctness-only workloads, added at freeze.

A winner is applied to real code that calls it at other sizes than the ones it was timed at. At
freeze, the input's format proposes other sizes (`other_sizes(spec, src_dir)` in its module: for a
KernelBench problem the leading dimension halved, doubled and made odd; for an op.toml spec the
first input's first named dimension of the first workload, likewise) and the reference is called
at each, on inputs drawn as every check draws them, with uninitialised memory reading NaN. A size
is kept only if the reference returns tensors whose values are all finite there (what it raises
on, or leaves unwritten, is not a size it accepts). Kept sizes become untimed workloads
(`Workload.timed = False`): every check runs the candidate's trials there and compares them in
full with the reference, a mismatch refuses the candidate like any workload, and they take no
part in timing or speedups. Every size tried is recorded in `OpSpec.sizes_probed`, with the
reason for each one not kept.

The probe runs in a boxed process of its own (forked warm where it can be), started afresh after
a size fails (a kernel that faults at an odd size must neither take the freeze with it nor leave
a broken device context to the next size); on an accelerator it stops at the first failure.

`python -m kernel_bakeoff.scripts.sizes SPEC.json SRC_DIR ANSWERS.jsonl` is that process: it probes the spec's
untimed workloads not yet answered in ANSWERS.jsonl, one JSON line each, and stops after a failure
when on an accelerator.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from kernel_bakeoff.scripts import box, forkserver, sandbox
from kernel_bakeoff.scripts.fingerprint import device_kind
from kernel_bakeoff.scripts.spec import OpSpec, SizeProbe, Workload

MAX_INPUT_BYTES = 2 << 30  # a size larger than the listed one is not tried above this (memory)
PROBE_SEED = 1234  # fixed: freezing the same input twice proposes and keeps the same sizes
PROBE_TIMEOUT_S = 300.0  # one probe process; a size it hangs at is recorded and skipped


def add_other_sizes(
    spec: OpSpec, src_dir: Path, device: str | None = None, isolated: bool | None = None
) -> OpSpec:
    """`spec` with the other sizes its reference accepts appended as untimed workloads, and
    every size tried in `sizes_probed`. A format without `other_sizes` gets none."""
    # torch, through scripts.formats: a second on this module's import (0.1 s without)
    from kernel_bakeoff.scripts.formats import module_for

    propose = getattr(module_for(spec.format), "other_sizes", None)
    if propose is None:
        return spec
    device = device or device_kind()
    variants = list(propose(spec, Path(src_dir)))
    refused: dict[str, str] = {}
    for v in variants:
        if v.larger and v.input_bytes is not None and v.input_bytes > MAX_INPUT_BYTES:
            refused[v.workload.name] = (
                f"not tried: its inputs would take {v.input_bytes / 2**30:.3g} GiB, "
                f"over the {MAX_INPUT_BYTES / 2**30:.3g} GiB allowed a larger size"
            )
    tried = [v.workload for v in variants if v.workload.name not in refused]
    if tried:
        candidate = spec.model_copy(update={"workloads": [*spec.workloads, *tried]})
        # The reference is user code: it runs in the sandbox (scripts/isolation.py), as every
        # check does, never in the freezing process, where it could read the orchestrator's
        # environment. `isolated=False` is for tests that probe without secrets around.
        isolated = True if isolated is None else isolated
        probe = _probe_isolated if isolated else _probe_here
        answers = probe(candidate, Path(src_dir), device)
        for w in tried:
            reason = answers.get(w.name, "the probe gave no answer")
            if reason is not None:
                refused[w.name] = reason
    probes = [
        SizeProbe(
            workload=v.workload.name,
            checked=v.workload.name not in refused,
            reason=refused.get(v.workload.name),
        )
        for v in variants
    ]
    kept = [w for w in tried if w.name not in refused]
    return spec.model_copy(update={"workloads": [*spec.workloads, *kept], "sizes_probed": probes})


def drop(spec: OpSpec, reasons: dict[str, str]) -> OpSpec:
    """`spec` without the untimed workloads named in `reasons`, recorded as not checked."""
    probes = [
        p.model_copy(update={"checked": False, "reason": reasons[p.workload]})
        if p.workload in reasons
        else p
        for p in spec.sizes_probed
    ]
    workloads = [w for w in spec.workloads if w.timed or w.name not in reasons]
    return spec.model_copy(update={"workloads": workloads, "sizes_probed": probes})


def describe(spec: OpSpec) -> str:
    """One line: which sizes are checked, which were not and why."""
    checked = [p.workload for p in spec.sizes_probed if p.checked]
    skipped = [f"{p.workload} ({p.reason})" for p in spec.sizes_probed if not p.checked]
    parts = [f"also checked at {', '.join(checked)}" if checked else "no other size checked"]
    if skipped:
        parts.append(f"not at {'; '.join(skipped)}")
    return "; ".join(parts)


# The probe itself.


def probe_one(fmt, spec: OpSpec, src_dir: Path, fn, wl: Workload, device: str) -> str | None:
    """None if the reference accepts size `wl`, else why not."""
    import torch

    # torch, as above: this runs only in the probe's process
    from kernel_bakeoff.scripts import compare
    from kernel_bakeoff.scripts.child import poisoned_allocations

    try:
        inputs = fmt.make_inputs(spec, src_dir, wl, PROBE_SEED, device)
        with torch.no_grad(), poisoned_allocations():
            outs = compare.as_outputs(fn(*inputs))
            if device != "cpu":
                torch.cuda.synchronize()
    except (Exception, SystemExit) as exc:
        return f"the reference raised {type(exc).__name__}: {str(exc).strip()[:300]}"
    for i, out in enumerate(outs):
        if not isinstance(out, torch.Tensor):
            return f"the reference's output {i} is a {type(out).__name__}, not a tensor"
        if (out.dtype.is_floating_point or out.dtype.is_complex) and not bool(
            torch.isfinite(out).all()
        ):
            return f"the reference's output {i} holds NaN/Inf there (unwritten or undefined)"
    return None


def _probe_here(
    spec: OpSpec, src_dir: Path, device: str, stop_on_failure: bool = False, write=None
):
    # torch, through scripts.formats: a second on this module's import (0.1 s without)
    from kernel_bakeoff.scripts.formats import module_for

    fmt = module_for(spec.format)
    answers: dict[str, str | None] = {}
    loading = None  # why the reference did not load, if it did not
    try:
        fn = fmt.load_callable(spec, src_dir, spec.reference_entry, device)
    except (Exception, SystemExit) as exc:
        fn, loading = None, f"loading the reference raised {type(exc).__name__}: {exc}"[:300]
    for wl in spec.workloads:
        if wl.timed:
            continue
        answers[wl.name] = loading if fn is None else probe_one(fmt, spec, src_dir, fn, wl, device)
        if write is not None:
            write(wl.name, answers[wl.name])
        if answers[wl.name] is not None and stop_on_failure and fn is not None:
            break
    return answers


def _probe_isolated(spec: OpSpec, src_dir: Path, device: str) -> dict[str, str | None]:
    """Probe in fresh processes: one runs until a size fails, the next takes the rest. Each is
    forked by the warm server the freeze's checks use (scripts/forkserver.py: torch already
    imported, no device touched, so every fork starts with a clean device context), else
    started as `python -m kernel_bakeoff.scripts.sizes`."""
    answers: dict[str, str | None] = {}
    names = [w.name for w in spec.workloads if not w.timed]
    env = sandbox.judge_env()
    with tempfile.TemporaryDirectory(prefix="bakeoff-sizes-") as tmp:
        work = Path(tmp)
        (work / "spec.json").write_text(spec.model_dump_json())
        out = work / "answers.jsonl"
        out.touch()
        argv = [str(work / "spec.json"), str(src_dir), str(out)]
        launch = dict(
            env=env,
            cwd=work,
            log_path=work / "probe.log",
            timeout_s=PROBE_TIMEOUT_S,
            box=box.plan(read=[src_dir], write=[work], cwd=str(work)),
        )
        while len(answers) < len(names):
            finished = forkserver.run_module("kernel_bakeoff.scripts.sizes", argv, **launch)
            before = len(answers)
            answers.update(_read_answers(out, names))
            if len(answers) == before:  # it ended before answering the next size
                name = next(n for n in names if n not in answers)
                how = f"ran past {PROBE_TIMEOUT_S:g} s" if finished.timed_out else finished.how
                answers[name] = f"the reference's process {how}"
                _append(out, name, answers[name])
    return answers


def _read_answers(path: Path, names: list[str]) -> dict[str, str | None]:
    found = {}
    for line in path.read_text().splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue  # a line cut short by a crash
        if item.get("workload") in names:
            found[item["workload"]] = item.get("reason")
    return found


def _append(path: Path, name: str, reason: str | None) -> None:
    with open(path, "a") as f:
        f.write(json.dumps({"workload": name, "reason": reason}) + "\n")
        f.flush()
        os.fsync(f.fileno())


def main(argv: list[str]) -> int:
    spec = OpSpec.model_validate_json(Path(argv[0]).read_text())
    src_dir, out = Path(argv[1]), Path(argv[2])
    done = _read_answers(out, [w.name for w in spec.workloads])
    rest = [w for w in spec.workloads if w.timed or w.name not in done]
    todo = spec.model_copy(update={"workloads": rest})
    device = device_kind()
    write = lambda name, reason: _append(out, name, reason)  # noqa: E731
    _probe_here(todo, src_dir, device, stop_on_failure=device != "cpu", write=write)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

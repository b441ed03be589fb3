"""Steps that must import user code outside a check, run in the sandbox instead of here.

Reading an input's op spec imports it (a KernelBench problem's `get_inputs`, a native op's
reference), the Triton tuner reads a kernel's launch surface by importing its file, and aiter's
backend records an op's GEMMs by running it on meta tensors. That
code is untrusted (the input kernel is the user's, candidates are a model's): it runs in a
process of its own with a scrubbed environment, in its own namespaces (`scripts.isolation`),
under a deadline, and answers in JSON, validated here. Nothing of the orchestrator's memory
comes along: the process is forked by the warm server (which never held a credential) or
starts fresh.

    python -m kernel_bakeoff.scripts.untrusted REQUEST.json ANSWER.json      (what the sandbox runs)
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
import tempfile
from pathlib import Path

from kernel_bakeoff.scripts import box, forkserver, sandbox
from kernel_bakeoff.scripts.candidate_build import fit_step
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.fingerprint import device_kind

REPO_ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 600.0
_spec_cache: dict[tuple, tuple] = {}


def call(step: str, where: str, timeout_s: float = TIMEOUT_S, read=(), write=(), **kwargs):
    """Run `STEPS[step](**kwargs)` (or the "module:function" `step` names) in the sandbox and return its JSON answer; BadInput as raised
    there, or naming `where` when the step crashed or ran out of time. The box (scripts/box.py)
    reads the paths in `read` and writes its own work directory and those in `write`."""
    workdir = Path(tempfile.mkdtemp(prefix="bakeoff-untrusted-"))
    try:
        request, answer, log = workdir / "request.json", workdir / "answer.json", workdir / "log"
        sandbox.write_new(request, json.dumps({"step": step, "kwargs": kwargs}))
        argv = [str(request), str(answer)]
        plan = box.plan(read=read, write=[workdir, *write], cwd=str(workdir))
        how = dict(
            env=sandbox.judge_env(), cwd=workdir, log_path=log, timeout_s=timeout_s, box=plan
        )
        finished = forkserver.run_module("kernel_bakeoff.scripts.untrusted", argv, **how)
        if finished.timed_out:
            raise BadInput(where, f"reading it did not finish within {timeout_s:g} s")
        if finished.returncode != 0 or not answer.is_file():
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
            how = box.reason(finished.returncode or 0) or finished.how  # a bound of its box
            raise BadInput(where, f"reading it {how}: {' '.join(tail)[:300]}")
        data = json.loads(answer.read_text())
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    for name, level, message in data.get("logs", []):  # its warnings, said here as there
        logging.getLogger(name).log(level, "%s", message)
    if "bad_input" in data:
        raise BadInput(*data["bad_input"])
    return data["ok"]


def _fingerprint(path: Path) -> tuple:
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files[:2000])


def _input_root(path: Path) -> Path:
    """What the box reads to load `path`: a trace set's definition file needs the whole set (its
    workloads, solutions and tensor files sit beside `definitions/`); anything else, itself."""
    path = path.resolve()
    for parent in path.parents:
        if (parent / "definitions").is_dir() and (parent / "workloads").is_dir():
            return parent
    return path


def load_spec(path: Path, **options):
    """`scripts.formats.load_spec`, run in the sandbox: (OpSpec, source_dir)."""
    # start-up: torch and pydantic, which `import scripts.untrusted` (each step's box) skips
    from kernel_bakeoff.scripts.formats import detect_format
    from kernel_bakeoff.scripts.spec import OpSpec

    path = Path(path)
    detect_format(path)  # a missing path or an unknown layout: said here, without a process
    given = {k: v for k, v in options.items() if v is not None}
    key = (str(path.resolve()), tuple(sorted(given.items())), _fingerprint(path))
    if key not in _spec_cache:
        # start-up: torch, which the package scripts.formats brings, as above
        from kernel_bakeoff.scripts.formats.staging import scratch_dir

        keep = scratch_dir("spec")  # what the format writes there dies with its process
        found = {"src": ""}
        try:
            found = call(  # absolute: the sandbox runs in a directory of its own
                "load_spec",
                str(path),
                read=[_input_root(path)],
                write=[keep],
                path=str(path.resolve()),
                options=given,
                keep=str(keep),
            )
        finally:
            if Path(found["src"]) != keep:  # nothing staged there: not left empty in /tmp
                shutil.rmtree(keep, ignore_errors=True)
        _spec_cache[key] = (OpSpec.model_validate(found["spec"]), Path(found["src"]))
    return _spec_cache[key]


def _load_spec_step(path: str, options: dict, keep: str) -> dict:
    # torch: this step needs it, the other steps do not
    from kernel_bakeoff.scripts.formats import load_spec as load
    from kernel_bakeoff.scripts.formats.staging import _made

    spec, src = load(Path(path), **options)
    if Path(src) in _made:  # a scratch directory of this process: removed when it exits
        shutil.copytree(src, keep, dirs_exist_ok=True)
        src = keep
    return {"spec": spec.model_dump(mode="json"), "src": str(src)}


def _oracle_step(spec: dict, src_dir: str, sizes: bool, probe: bool) -> dict:
    # torch and pydantic: this step needs them, the other steps do not
    from kernel_bakeoff.scripts.oracle_probe import probe as probe_oracle
    from kernel_bakeoff.scripts.sizes import add_other_sizes
    from kernel_bakeoff.scripts.spec import Degenerate, OpSpec

    op = OpSpec.model_validate(spec)
    if probe:  # first: a reference with no finite output is refused before sizes are tried
        found = probe_oracle(op, Path(src_dir), device_kind())
        op = op.model_copy(
            update={"degenerate": Degenerate.model_validate(found) if found else None}
        )
    if sizes:
        op = add_other_sizes(op, Path(src_dir))
    return op.model_dump(mode="json")


def prepare_oracle(spec, src_dir: Path, sizes: bool = True, probe: bool = True):
    """In one sandboxed process (each costs seconds to start): `scripts.oracle_probe.probe`,
    which runs the reference on several draws (`spec.degenerate` set; BadInput for a reference
    with no finite output), then `scripts.sizes.add_other_sizes`, which imports the input (a
    KernelBench problem is run on the meta device to see what its sizes change)."""
    # start-up: pydantic (0.08 s), which this module, started for every boxed step, skips
    from kernel_bakeoff.scripts.spec import OpSpec

    if not (sizes or probe):
        return spec
    data = call(
        "prepare_oracle",
        str(src_dir),
        read=[src_dir],
        spec=spec.model_dump(mode="json"),
        src_dir=str(src_dir),
        sizes=sizes,
        probe=probe,
    )
    return OpSpec.model_validate(data)


# The harness's own steps. A caller on the orchestration side names its own step as
# "package.module:function" (its backends read a kernel's launch surface, trace it, record its
# GEMMs): the harness runs it in the box without importing the orchestration side itself, so
# the wall between the two holds in the source (tests/test_import_walls.py).
STEPS = {
    "load_spec": _load_spec_step,
    "prepare_oracle": _oracle_step,
    "candidate_fit": fit_step,
}


def _step(name: str):
    if name in STEPS:
        return STEPS[name]
    module, sep, function = name.partition(":")
    # only the backends' own steps: the name travels on a command line, and nothing else of
    # the project is meant to run in this child
    if not sep or not module.startswith("kernel_bakeoff.tasks.backends."):
        raise KeyError(f"no step {name!r}")
    import importlib

    return getattr(importlib.import_module(module), function)


class _Kept(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.records: list[list] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append([record.name, record.levelno, record.getMessage()])


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[0]).read_text())
    kept = _Kept()
    logging.getLogger().addHandler(kept)
    try:
        answer = {"ok": _step(request["step"])(**request["kwargs"])}
    except BadInput as exc:
        answer = {"bad_input": [exc.where, exc.what]}
    answer["logs"] = kept.records[:50]
    sandbox.write_new(Path(argv[1]), json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

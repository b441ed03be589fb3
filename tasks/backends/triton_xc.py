"""Cross-compile a Triton kernel for a GPU this box does not have (gfx942, gfx950, sm_90) and
report what came out: the matrix instructions used and the register / spill counts.

Triton compiles for any target without a device, but not under TRITON_INTERPRET=1: callers
that run with the interpreter on (tests, CPU lanes) use `cross_compile_in_child`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGETS = {
    "gfx942": ("hip", "gfx942", 64),
    "gfx950": ("hip", "gfx950", 64),
    "sm_90": ("cuda", 90, 32),
}
_MATRIX = {
    "hip": re.compile(r"\bv_mfma_\w+"),
    "cuda": re.compile(r"\b(?:wgmma\.mma_async|mma\.sync)[\w.]*"),
}


@dataclass
class XcReport:
    target: str
    ok: bool
    error: str = ""
    matrix_instructions: dict[str, int] = field(default_factory=dict)
    n_regs: int | None = None
    n_spills: int | None = None
    shared: int | None = None
    asm_kinds: list[str] = field(default_factory=list)


def amd_registers(amdgcn: str) -> tuple[int | None, int | None]:
    """(VGPRs, spilled registers) from the kernel metadata the AMD backend writes into amdgcn."""
    vgpr = re.search(r"\.vgpr_count:\s+(\d+)", amdgcn)
    spills = [int(x) for x in re.findall(r"\.[sv]gpr_spill_count:\s+(\d+)", amdgcn)]
    return (int(vgpr.group(1)) if vgpr else None), (sum(spills) if spills else None)


def nvidia_registers(ptx: str, arch: int = 90) -> tuple[int | None, int | None]:
    """(registers, bytes spilled) as ptxas -v reports them for the PTX."""
    from triton.backends.nvidia.compiler import get_ptxas  # the ptxas Triton itself compiles with

    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(ptx)
        suffix = "a" if arch >= 90 else ""
        cmd = [get_ptxas(arch).path, "-v", f"--gpu-name=sm_{arch}{suffix}", str(src)]
        done = subprocess.run(
            cmd + ["-o", str(Path(d) / "k.cubin")], capture_output=True, text=True
        )
    log = done.stdout + done.stderr
    regs = re.search(r"Used (\d+) registers", log)
    spills = [int(x) for x in re.findall(r"(\d+) bytes spill (?:stores|loads)", log)]
    return (int(regs.group(1)) if regs else None), (sum(spills) if spills else None)


def cross_compile(fn, signature: dict, constexprs: dict, target: str, **options) -> XcReport:
    """Compile the jit function `fn` for `target` (a key of TARGETS); never raises."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    backend, arch, warp = TARGETS[target]
    try:
        src = ASTSource(fn=fn, signature=signature, constexprs=constexprs)
        kernel = triton.compile(src, target=GPUTarget(backend, arch, warp), options=options)
    except Exception as exc:
        return XcReport(target=target, ok=False, error=f"{type(exc).__name__}: {exc}"[:2000])
    asm = kernel.asm
    text = asm.get("amdgcn") if backend == "hip" else asm.get("ptx")
    found: dict[str, int] = {}
    for name in _MATRIX[backend].findall(text or ""):
        found[name] = found.get(name, 0) + 1
    regs, spills = amd_registers(text) if backend == "hip" else nvidia_registers(text, arch)
    return XcReport(
        target=target,
        ok=True,
        matrix_instructions=found,
        n_regs=regs,
        n_spills=spills,
        shared=getattr(kernel.metadata, "shared", None),
        asm_kinds=sorted(asm),
    )


def cross_compile_in_child(
    file: Path, kernel: str, signature: dict, constexprs: dict, targets: list[str], **options
) -> list[XcReport]:
    """cross_compile in a child process without TRITON_INTERPRET, for each target."""
    request = {
        "file": str(file),
        "kernel": kernel,
        "signature": signature,
        "constexprs": constexprs,
        "targets": targets,
        "options": options,
    }
    # here: the child (`_child`, in the box) imports this module too, and needs none of these
    from kernel_bakeoff.scripts import box
    from kernel_bakeoff.scripts.isolation import wrap
    from kernel_bakeoff.scripts.sandbox import scrub_env

    # It imports the kernel's file: in the box (scripts/box.py), the file read-only, a
    # scratch directory of its own for Triton's cache.
    env = {k: v for k, v in scrub_env(os.environ).items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    with tempfile.TemporaryDirectory(prefix="bakeoff-xc-") as scratch:
        env.update(HOME=scratch, TMPDIR=scratch, TRITON_CACHE_DIR=f"{scratch}/triton")
        plan = box.plan(read=[Path(file).resolve()], write=[scratch], cwd=scratch)
        done = subprocess.run(
            wrap([sys.executable, "-m", "kernel_bakeoff.tasks.backends.triton_xc"], env, plan),
            input=json.dumps(request),
            capture_output=True,
            text=True,
            env=env,
            cwd=scratch,
            timeout=600,
        )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        err = (done.stderr or done.stdout)[-2000:]
        return [
            XcReport(target=t, ok=False, error=f"child exited {done.returncode}: {err}")
            for t in targets
        ]
    return [XcReport(**json.loads(ln)) for ln in lines]


def _child() -> int:
    from kernel_bakeoff.scripts.program import import_file  # here: brings torch, for the child only

    request = json.loads(sys.stdin.read())
    module = import_file(Path(request["file"]), "cross-compile")
    fn = getattr(module, request["kernel"])
    while hasattr(fn, "fn") and not hasattr(fn, "arg_names"):  # unwrap autotune / heuristics
        fn = fn.fn
    for target in request["targets"]:
        report = cross_compile(
            fn, request["signature"], request["constexprs"], target, **request["options"]
        )
        print(json.dumps(asdict(report)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_child())

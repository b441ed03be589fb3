"""Can the fork server import Dynamo and Inductor for its forks? Timed on a GPU, variant by variant.

    python3 -m benchmarks.fork_import_study [--json OUT]

A torch.compile candidate's process spent 8-10 s of every check importing Dynamo and Inductor
(its `load_s` in the eb6e84f H200 record: layernorm, four compiled candidates, about 35 s of a
202 s bake-off). The fork server imports only torch, because importing them there made every
fork fail to use the device (`scripts/forkserver.py`). Each variant runs in a fresh interpreter:
it imports what the variant says, forks, and in the fork initialises the
device and compiles and runs a small function. Variants:

- `torch`: torch only (the fork server today);
- `inductor`: torch, `torch._dynamo` and `torch._inductor.compile_fx`;
- `inductor-traced`: the same, naming the `torch.cuda` functions and CUDA entry points the
  imports called (the tracing slows them: its import time is not the import's);
- `inductor-nvml`: the same with PYTORCH_NVML_BASED_CUDA_CHECK=1 (availability asked of NVML);
- `inductor-nvml-reset`: the same, and the fork forgets torch's cached device count first;
- `torch-isolated`, `inductor-nvml-isolated`: the fork enters the sandbox's namespaces
  (`scripts.isolation.enter`, as a judge does) and forks again, and that process (as a
  candidate's) uses the device.

- `inductor-nvml-isolated-closed`: the same, and the candidate's process closes every
  descriptor but its output, as `scripts.sandbox.fork_module` does, with CUDA_VISIBLE_DEVICES=0
  as a lease sets it;
- `inductor-nvml-shutdown-isolated-closed`: the same, with NVML shut down in the parent after
  the import (torch's NVML count initialises it and never shuts it down).

Found on an H200 (2026-12-02): `inductor` poisons every fork (Inductor's `is_available()` at
import); `inductor-nvml` works one fork deep (1.8 s to the first compiled result, against
16.4 s for `torch`) and through the namespaces (3.2 s), but checks forked that way through the
judge failed "Invalid device id" (and the judge warned "Can't initialize NVML"). Not the
descriptors `fork_module` closes: `inductor-nvml-isolated-closed` (1.9 s) and
`inductor-nvml-shutdown-isolated-closed` (1.7 s) both reached the device. Still untried: the
judge's own second entry into namespaces (the candidate's process nests a user namespace in the
judge's) and the fork server started with the lease's environment.

Prints one JSON line per variant and a table: import seconds, whether the device was initialised
in the parent, what the fork saw, and the fork's seconds to its first compiled result.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

VARIANTS = (
    "torch",
    "inductor",
    "inductor-traced",
    "inductor-nvml",
    "inductor-nvml-reset",
    "torch-isolated",
    "inductor-nvml-isolated",
    "inductor-nvml-isolated-closed",
    "inductor-nvml-shutdown-isolated-closed",
)
CUDA_ENTRIES = ("_cuda_getDeviceCount", "_cuda_init", "_cuda_getDevice", "_cuda_setDevice")


def timed_import(modules: list[str], trace: bool) -> tuple[float, list[str]]:
    """Import `modules`; with `trace`, name each torch.cuda function (classes left out) and CUDA
    entry point called, once, with its caller."""
    import traceback

    seen: dict[str, str] = {}

    def hook(frame, event, arg):
        if event == "c_call" and getattr(arg, "__name__", "") in CUDA_ENTRIES:
            name = f"torch._C.{arg.__name__}"
        elif (
            event == "call"
            and frame.f_code.co_filename.endswith(os.path.join("torch", "cuda", "__init__.py"))
            and frame.f_code.co_name[:1].islower()
        ):
            name = f"torch.cuda.{frame.f_code.co_name}"
        else:
            return
        if name not in seen:
            caller = traceback.extract_stack(frame.f_back, limit=1)[0]
            seen[name] = (
                f"{name} from {caller.filename.split('site-packages/')[-1]}:{caller.lineno}"
            )

    t0 = time.monotonic()
    sys.setprofile(hook if trace else None)
    try:
        for m in modules:
            __import__(m)
    finally:
        sys.setprofile(None)
    return time.monotonic() - t0, list(seen.values())


def in_fork(reset: bool) -> dict:
    import torch

    if reset:
        torch.cuda._cached_device_count = None
    out: dict = {"bad_fork": torch.cuda._is_in_bad_fork()}
    t0 = time.monotonic()
    try:
        out["available"] = torch.cuda.is_available()
        out["count"] = torch.cuda.device_count()
        x = torch.randn(4096, 4096, device="cuda")
        torch.cuda.synchronize()
        out["device_s"] = time.monotonic() - t0
        fn = torch.compile(lambda t: torch.nn.functional.layer_norm(t, t.shape[-1:]), dynamic=False)
        t1 = time.monotonic()
        y = fn(x)
        torch.cuda.synchronize()
        out["compile_s"] = time.monotonic() - t1
        out["ok"] = bool(torch.isfinite(y).all())
    except Exception as exc:  # what the fork met is the finding
        out["error"] = f"{type(exc).__name__}: {exc}"[:300]
    out["fork_s"] = time.monotonic() - t0
    return out


def variant(name: str) -> dict:
    modules = ["torch"]
    if name.startswith("inductor"):
        modules += ["torch._dynamo", "torch._inductor.compile_fx"]
    seconds, calls = timed_import(modules, trace=name.endswith("traced"))
    import torch

    if "shutdown" in name:
        _shut_nvml_down()

    row = {
        "variant": name,
        "import_s": seconds,
        "parent_initialised": torch.cuda.is_initialized(),
        "cuda_calls": calls,
    }
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        if "isolated" in name:
            from scripts import isolation

            why = isolation.enter()
            if os.fork() != 0:  # the judge's place: it waits for the candidate's
                os.wait()
                os._exit(0)
            if why:
                os.write(write, json.dumps({"error": f"not isolated: {why}"}).encode())
                os._exit(0)
        if name.endswith("closed"):
            os.environ["CUDA_VISIBLE_DEVICES"] = "0"
            os.closerange(3, write)
            os.closerange(write + 1, 1 << 16)
        os.write(write, json.dumps(in_fork(name.endswith("reset"))).encode())
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 16):
        data += chunk
    os.waitpid(pid, 0)
    row["fork"] = json.loads(data or b"{}")
    return row


def _shut_nvml_down() -> None:
    """nvmlShutdown until NVML says it is not initialised (each nvmlInit counts once)."""
    import ctypes

    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return
    for _ in range(64):
        if nvml.nvmlShutdown() != 0:
            return


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="fork_import_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("--json")
    ap.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)  # one, in this process
    args = ap.parse_args(argv)
    if args.variant:
        print(json.dumps(variant(args.variant)), flush=True)
        return 0
    rows = []
    for name in VARIANTS:
        env = dict(os.environ)
        env.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
        if "nvml" in name:
            env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
        argv_ = [sys.executable, "-m", "benchmarks.fork_import_study", "--variant", name]
        p = subprocess.run(argv_, capture_output=True, text=True, env=env, timeout=300)
        line = next((x for x in p.stdout.splitlines() if x.startswith("{")), None)
        row = json.loads(line) if line else {"variant": name, "error": p.stderr[-600:]}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print("\n| variant | import s | parent initialised | fork: available, count | fork: first compiled result s | fork error |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        f = r.get("fork", {})
        print(f"| {r['variant']} | {r.get('import_s', 0):.2f} | {r.get('parent_initialised')} | "
              f"{f.get('available')}, {f.get('count')} | {f.get('compile_s', 0):.2f} | "
              f"{f.get('error', r.get('error', ''))[:120]} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The tools a role may call, confined to its lane workspace.

File tools resolve every path (symlinks included) and refuse anything outside the workspace, the
frozen task and the oracle's reference sources, `.git`, and writes to the read-only parts. The
command tool runs in the workspace with an environment built from nothing but PATH, a private
HOME and TMPDIR and the Triton interpreter switch: no credentials, no Prefect settings, no key
(which is not in this process's environment either: `settings.take_key`). It has a deadline,
after which its whole process group is killed. `check` hands a candidate to the lane's check
function (the harness's `check` entry point) and answers with the verdict and its receipt.

Every input is validated against its tool's pydantic model (the schema the model is shown is
made from it) and refused over `INPUT_CHARS`; a refusal, a bad input, an unknown tool or a tool
that fails comes back as an error result the model reads, never as an exception that ends the
lane (`LaneTools.call`). The Messages driver keeps no oversized input in the conversation.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kernel_bakeoff.scripts import box, isolation
from kernel_bakeoff.tasks.agents.nofollow import Moved
from kernel_bakeoff.tasks.agents.profile import digest
from kernel_bakeoff.tasks.agents.quick import quick_text
from kernel_bakeoff.tasks.agents.transcript import BudgetSpent, redact
from kernel_bakeoff.tasks.agents.workspace import READ_ONLY_TOP, Workspace
from kernel_bakeoff.tasks.check.deadline import DeadlineExceeded
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult

PASSED_ON_ENV = ("PATH", "LANG", "LC_ALL", "TRITON_INTERPRET")
# What of the lane's device environment (tasks/check/gpu_pool.py) a command gets: the device, and
# the interpreter switch without one. Nothing else of the pool's.
DEVICE_ENV = (
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "TRITON_INTERPRET",
    "OMP_NUM_THREADS",
)
INPUT_CHARS = 256_000  # one tool call's input (a kernel source is a few thousand)


class Refused(Exception):
    """A tool call that is not allowed; its message goes back to the model as an error."""


class _Input(BaseModel):
    """A tool's input: exactly these fields, of exactly these types (no coercion of "soon")."""

    model_config = ConfigDict(extra="forbid", strict=True)


class ListFiles(_Input):
    path: str = "."


class ReadFile(_Input):
    path: str
    offset: int = Field(0, ge=0)


class WriteFile(_Input):
    path: str
    content: str


class RunCommand(_Input):
    command: str
    timeout_s: float | None = Field(None, gt=0)


class Check(_Input):
    path: str
    name: str
    changed: str
    expected: str


class QuickCheck(_Input):
    path: str


class Profile(_Input):
    path: str
    workload: str


TOOLS: dict[str, tuple[type[_Input], str]] = {
    "list_files": (ListFiles, "List files under a workspace directory."),
    "read_file": (ReadFile, "Read a text file in the workspace."),
    "write_file": (
        WriteFile,
        "Create or replace a text file under candidates/ (or elsewhere writable in the workspace).",
    ),
    "run_command": (
        RunCommand,
        "Run a shell command in the workspace (no network credentials, a deadline).",
    ),
    "check": (
        Check,
        "Check and time a candidate (a file or directory in the op's format) with the harness "
        "against the frozen baseline. Answers with the verdict per workload and a receipt; "
        "cite the receipt for any number you report.",
    ),
    "quick_check": (
        QuickCheck,
        "Check a draft for correctness only: the harness runs it at the small sizes against the "
        "hidden reference, one trial each, untimed. Cheap, with its own allowance apart from the "
        "timed checks; its answer is advice (no receipt, no speedup, never a verdict).",
    ),
    "profile": (
        Profile,
        "Profile a candidate on one workload: a digest of its top kernels (share of the time, "
        "bandwidth and compute against the device's peaks, occupancy, the limiting unit) from "
        "ncu on NVIDIA, rocprofv3 on ROCm, torch.profiler without a GPU. Untimed; not a verdict.",
    ),
}


def _schema(name: str, limit: int) -> dict:
    model, description = TOOLS[name]
    schema = model.model_json_schema()
    schema.pop("title", None)
    return {
        "name": name,
        "description": f"{description} An input over {limit} characters is refused.",
        "input_schema": schema,
    }


def input_size(arguments) -> int:
    """Characters of a tool call's input as the model sent it (its JSON)."""
    return len(json.dumps(arguments, default=str))


def validation_line(exc: ValidationError) -> str:
    """Pydantic's errors in one line each: field, what is wrong (never the whole input)."""
    parts = []
    for e in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(x) for x in e["loc"]) or "(input)"
        parts.append(f"{where}: {e['msg']}")
    return "; ".join(parts)


class LaneTools:
    def __init__(
        self,
        ws: Workspace,
        check_fn: Callable[[CandidateRef], CandidateResult] | None,
        *,
        language: str,
        mode: str,
        allowance: Callable[[], int],
        command_timeout_s: float,
        output_chars: int,
        device_env: dict[str, str] | None = None,
        origin: str = "model",
        input_chars: int = INPUT_CHARS,
        quick=None,
        remaining: Callable[[], float] = lambda: float("inf"),
        device_lock=None,
        on_checked: Callable[[CandidateResult], None] | None = None,
    ):
        self.ws = ws
        self.check_fn = check_fn
        self.language = language
        self.mode = mode
        self.allowance = allowance  # checks this round may still make
        self.command_timeout_s = command_timeout_s
        self.output_chars = output_chars
        self.device_env = dict(device_env or {})
        self.origin = origin
        self.input_chars = input_chars
        self.checked_this_call: list[dict] = []
        self.quick = quick  # tasks.agents.quick.QuickChecks, or None: no quick check here
        self.remaining = remaining  # seconds left of the role's deadline
        self.device_lock = device_lock or threading.Lock()  # the lane's device, one use at once
        self.on_checked = on_checked  # told of every result the record took (the lane loop)

    def names(self) -> list[str]:
        without = set() if self.check_fn is not None else {"check", "profile"}
        if self.quick is None:
            without.add("quick_check")
        return [n for n in TOOLS if n not in without]

    def schemas(self) -> list[dict]:
        return [_schema(n, self.input_chars) for n in self.names()]

    def call(self, name: str, arguments) -> tuple[str, bool]:
        """A tool's answer, or the error the model reads: no input and no failure of a tool
        ends the lane (only a spent budget or deadline does, as BudgetSpent)."""
        if name not in self.names():
            return f"unknown tool {str(name)[:80]!r}; the tools are {', '.join(self.names())}", True
        size = input_size(arguments)
        if size > self.input_chars:
            return (
                f"refused: the input of {name} is {size} characters, over the limit of "
                f"{self.input_chars} for one tool call (it is not kept in the conversation)"
            ), True
        try:
            args = TOOLS[name][0].model_validate(arguments)
        except ValidationError as exc:
            return f"bad arguments for {name}: {validation_line(exc)}", True
        handler = getattr(self, f"tool_{name}")
        try:
            return self._cut(redact(handler(**args.model_dump()))), False
        except BudgetSpent:
            raise
        except Refused as exc:
            return f"refused: {exc}", True
        except Exception as exc:  # a tool's own failure is the model's to read, not the lane's
            return self._cut(redact(f"{name} failed: {type(exc).__name__}: {exc}")), True

    def _cut(self, text: str) -> str:
        if len(text) <= self.output_chars:
            return text
        half = self.output_chars // 2
        return f"{text[:half]}\n... [{len(text) - 2 * half} characters cut] ...\n{text[-half:]}"

    # -- confinement ---------------------------------------------------------------------------

    def resolve(self, path: str, *, write: bool = False) -> Path:
        root = self.ws.root
        target = Path(path) if Path(path).is_absolute() else root / path
        real = Path(os.path.realpath(target))
        for bad in self.ws.forbidden():
            if real == bad or bad in real.parents:
                raise Refused(f"{path}: the oracle's reference sources are not readable here")
        if real != root and root not in real.parents:
            raise Refused(f"{path}: outside the workspace {root}")
        top = real.relative_to(root).parts[:1]
        if top and top[0] == ".git":
            raise Refused(f"{path}: the workspace's git repository is the flow's")
        if write and (not top or top[0] in READ_ONLY_TOP):
            raise Refused(f"{path}: read-only (write under candidates/)")
        return real

    # -- the tools -----------------------------------------------------------------------------

    def tool_list_files(self, path: str = ".") -> str:
        base = self.resolve(path)
        rows = []
        for p in sorted(base.rglob("*")):
            rel = p.relative_to(self.ws.root)
            if rel.parts[0] in (".git", ".home", ".tmp") or "__pycache__" in rel.parts:
                continue
            rows.append(f"{rel}{'/' if p.is_dir() else ''}")
        return "\n".join(rows[:500]) or "(empty)"

    def tool_read_file(self, path: str, offset: int = 0) -> str:
        real = self.resolve(path)
        if not real.is_file():
            raise Refused(f"{path}: not a file")
        return real.read_text(errors="replace")[int(offset) :]

    def tool_write_file(self, path: str, content: str) -> str:
        real = self.resolve(path, write=True)
        real.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        fd = os.open(real, flags, 0o644)
        with os.fdopen(fd, "w") as f:
            f.write(content)
        return f"wrote {len(content)} characters to {real.relative_to(self.ws.root)}"

    def command_env(self) -> dict[str, str]:
        """Nothing of this process's environment but PATH and the locale; the lane's device
        (and, without a GPU, Triton's interpreter switch); `python3` first on PATH is the
        harness's own interpreter, with the torch and Triton candidates are checked with (the
        box binds its prefix read-only)."""
        env = {k: os.environ[k] for k in PASSED_ON_ENV if k in os.environ}
        for d in (".home", ".tmp"):
            (self.ws.root / d).mkdir(exist_ok=True)
        env.update(HOME=str(self.ws.root / ".home"), TMPDIR=str(self.ws.root / ".tmp"))
        env.update({k: v for k, v in self.device_env.items() if k in DEVICE_ENV})
        here = os.path.dirname(sys.executable)
        env["PATH"] = os.pathsep.join([here, env.get("PATH") or "/usr/bin:/bin"])
        return env

    def tool_run_command(self, command: str, timeout_s: float | None = None) -> str:
        limit = min(float(timeout_s or self.command_timeout_s), self.command_timeout_s)

        # In the box (scripts/box.py): the workspace writable but its read-only top entries,
        # nothing else of the host (the run, the frozen task, credentials, the network).
        frozen = [self.ws.root / name for name in READ_ONLY_TOP]
        plan = box.plan(write=[self.ws.root], frozen=frozen, cwd=str(self.ws.root))
        proc = subprocess.Popen(
            isolation.wrap(["/bin/sh", "-c", command], os.environ, plan),
            cwd=self.ws.root,
            env=self.command_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            out, _ = proc.communicate(timeout=limit)
            status = f"exit status {proc.returncode}"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            status = f"killed after its {limit:g} s deadline (its process group with it)"
        return f"{status}\n{out.decode(errors='replace')}"

    def tool_check(self, path: str, name: str, changed: str, expected: str) -> str:
        if self.allowance() <= 0:
            raise Refused("no checks left in this round's budget; submit your answer")
        source = self.resolve(path)
        if not source.exists():
            raise Refused(f"{path}: no such file or directory")
        name = self.ws.unique_name(name)
        try:
            snap = self.ws.snapshot(source, name)
        except Moved as exc:
            raise Refused(
                f"{path}: changed while it was being copied for the check ({exc})"
            ) from None
        ref = CandidateRef(
            name=name,
            language=self.language,
            mode=self.mode,
            path=str(snap),
            origin=self.origin,
            params={"source": source.relative_to(self.ws.root).as_posix()},
        )
        try:
            result = self.check_fn(ref)
        except DeadlineExceeded as exc:
            raise BudgetSpent(str(exc)) from None
        entry = self.ws.record(result, changed, expected)
        self.checked_this_call.append(entry)
        if self.on_checked is not None:
            self.on_checked(result)
        return verdict_text(result, entry["receipt"])

    def tool_quick_check(self, path: str) -> str:

        source = self.resolve(path)
        if not source.exists():
            raise Refused(f"{path}: no such file or directory")
        if self.remaining() <= 0:
            raise BudgetSpent("the role's deadline passed")
        try:
            verdict = self.quick(source, self.remaining())
        except ValueError as exc:  # the allowance is spent
            raise Refused(str(exc)) from None
        return quick_text(verdict, self.quick.left())

    def tool_profile(self, path: str, workload: str) -> str:
        source = self.resolve(path)
        if not source.exists():
            raise Refused(f"{path}: no such file or directory")
        with self.device_lock:
            return digest(
                self.ws.task_dir, source, workload, self.command_env(), self.device_env, path
            )


def verdict_text(result: CandidateResult, receipt: str) -> str:
    v = result.verdict
    lines = [f"candidate {result.candidate.name}: {v.status.value}"]
    if v.speedup is not None:
        lines[0] += f", speedup {v.speedup:.4f}x over the frozen baseline (geometric mean)"
    if v.reason:
        lines.append(f"reason: {v.reason}")
    for w in v.workloads:
        t = w.timing
        timing = f" median {t.median_ms:.4g} ms, spread {t.spread_ms:.3g} ms" if t else ""
        speed = f", {w.speedup:.4f}x" if w.speedup is not None else ""
        error = (
            f", error {w.max_rel_error:.2e} (tolerance {w.tolerance:.0e})"
            if w.max_rel_error is not None and w.tolerance
            else ""
        )
        lines.append(f"- {w.workload}: {w.status.value}{speed}{timing}{error}")
        if w.reason:
            lines.append(f"  {w.reason}")
    if result.candidate.language == "triton":
        ran = ", ".join(v.triton_kernels) or "none"
        lines.append(f"Triton kernels launched in its checked calls: {ran}")
        shares = [w.torch_work.share for w in v.workloads if w.torch_work is not None]
        if shares:  # the language rule's other measure (tasks/check/language_rule.py)
            lines.append(f"torch work beside them: {max(shares):.0%} of the call's input elements")
    elif result.candidate.language in ("cuda", "hip"):
        ran = ", ".join(v.extension_calls) or "none"
        lines.append(f"its compiled functions called in its checked calls: {ran}")
    if v.output_tail.strip() and not v.passed:
        lines.append("output (last lines):\n" + "\n".join(v.output_tail.splitlines()[-30:]))
    lines.append(f"receipt: {receipt}")
    return "\n".join(lines)

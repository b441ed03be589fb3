"""The tools a role may call, confined to its lane workspace.

File tools resolve every path (symlinks included) and refuse anything outside the workspace, the
frozen task and the oracle's reference sources, `.git`, and writes to the read-only parts. The
command tool runs in the workspace with an environment built from nothing but PATH, a private
HOME and TMPDIR and the Triton interpreter switch: no credentials, no Prefect settings, no key
(which is not in this process's environment either: `settings.take_key`). It has a deadline,
after which its whole process group is killed. `check` hands a candidate to the lane's check
function (the harness's `check` entry point) and answers with the verdict and its receipt.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from tasks.agents.profile import profile
from tasks.agents.transcript import BudgetSpent, redact
from tasks.agents.workspace import READ_ONLY_TOP, Workspace
from tasks.models import CandidateRef, CandidateResult

PASSED_ON_ENV = ("PATH", "LANG", "LC_ALL", "TRITON_INTERPRET")


class Refused(Exception):
    """A tool call that is not allowed; its message goes back to the model as an error."""


def _schema(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {
        "name": name,
        "description": description,
        "input_schema": {"type": "object", "properties": properties, "required": required},
    }


S = {"type": "string"}
TOOL_SCHEMAS = [
    _schema("list_files", "List files under a workspace directory.", {"path": S}, []),
    _schema(
        "read_file",
        "Read a text file in the workspace.",
        {"path": S, "offset": {"type": "integer"}},
        ["path"],
    ),
    _schema(
        "write_file",
        "Create or replace a text file under candidates/ (or elsewhere writable in the workspace).",
        {"path": S, "content": S},
        ["path", "content"],
    ),
    _schema(
        "run_command",
        "Run a shell command in the workspace (no network credentials, a deadline).",
        {"command": S, "timeout_s": {"type": "number"}},
        ["command"],
    ),
    _schema(
        "check",
        "Check and time a candidate (a file or directory in the op's format) with the harness "
        "against the frozen baseline. Answers with the verdict per workload and a receipt; "
        "cite the receipt for any number you report.",
        {"path": S, "name": S, "changed": S, "expected": S},
        ["path", "name", "changed", "expected"],
    ),
    _schema(
        "profile",
        "Profile a candidate on one workload (ncu on NVIDIA, rocprofv3 on ROCm).",
        {"path": S, "workload": S},
        ["path", "workload"],
    ),
]


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
        self.checked_this_call: list[dict] = []

    def schemas(self) -> list[dict]:
        names = {"check", "profile"} if self.check_fn is not None else set()
        return [s for s in TOOL_SCHEMAS if s["name"] not in {"check", "profile"} - names]

    def call(self, name: str, arguments: dict) -> tuple[str, bool]:
        handler = getattr(self, f"tool_{name}", None)
        if handler is None or name not in {s["name"] for s in self.schemas()}:
            return f"unknown tool {name!r}", True
        try:
            return self._cut(redact(handler(**arguments))), False
        except Refused as exc:
            return f"refused: {exc}", True
        except TypeError as exc:
            return f"bad arguments for {name}: {exc}", True
        except OSError as exc:
            return f"{type(exc).__name__}: {exc}", True

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
        env = {k: os.environ[k] for k in PASSED_ON_ENV if k in os.environ}
        for d in (".home", ".tmp"):
            (self.ws.root / d).mkdir(exist_ok=True)
        env.update(HOME=str(self.ws.root / ".home"), TMPDIR=str(self.ws.root / ".tmp"))
        env.setdefault("PATH", "/usr/bin:/bin")
        return env

    def tool_run_command(self, command: str, timeout_s: float | None = None) -> str:
        limit = min(float(timeout_s or self.command_timeout_s), self.command_timeout_s)
        from scripts import box, isolation

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
        snap = self.ws.snapshot(source, name)
        ref = CandidateRef(
            name=name,
            language=self.language,
            mode=self.mode,
            path=str(snap),
            origin=self.origin,
            params={"source": source.relative_to(self.ws.root).as_posix()},
        )
        from tasks.agents.wrapper import DeadlineExceeded

        try:
            result = self.check_fn(ref)
        except DeadlineExceeded as exc:
            raise BudgetSpent(str(exc)) from None
        entry = self.ws.record(result, changed, expected)
        self.checked_this_call.append(entry)
        return verdict_text(result, entry["receipt"])

    def tool_profile(self, path: str, workload: str) -> str:
        source = self.resolve(path)
        return profile(self.ws.task_dir, source, workload, self.command_env(), self.device_env)


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
    if v.output_tail.strip() and not v.passed:
        lines.append("output (last lines):\n" + "\n".join(v.output_tail.splitlines()[-30:]))
    lines.append(f"receipt: {receipt}")
    return "\n".join(lines)

"""oracle_freezer: an op spec for a kernel directory that has none, then Freeze as usual.

The kernel's sources are copied into a workspace (the model reads them with the file tools and
may run commands there, writes nothing); its SpecDraft answer is written as `op.toml` beside a
copy of the sources in `out`, and loaded by the native format's own loader before it is
accepted: an answer the loader refuses goes back to the model once with the loader's error.
The input directory itself is never changed.

`spec_for` is the one place that decides what Freeze reads: the freeze flow (flows/freeze.py)
calls it, so `bakeoff run`, the bakeoff flow called from Python and a deployment's run all get
it, and `bakeoff freeze` (no Prefect) calls it too. `SpecSource` is what a run records of it
(`RUN_DIR/op_spec.json`): the input as given, which a winner is applied to, apart from the
staged copy that Freeze read.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from scripts.errors import BadInput

if TYPE_CHECKING:  # the agent runtime loads only when a spec is written
    from tasks.agents.outputs import SpecDraft
    from tasks.agents.settings import AgentSettings
    from tasks.agents.tools import LaneTools

IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".git")
RECORD = "op_spec.json"  # in a run directory: where its input's spec came from


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def spec_toml(draft: SpecDraft) -> str:
    data = draft.model_dump(mode="json", exclude_none=True)
    lines = [f"{k} = {_toml_value(data[k])}" for k in ("name", "kind", "language", "entry")]
    lines += [f"{k} = {_toml_value(data[k])}" for k in ("reference", "flops") if k in data]
    for table in ("inputs", "workloads"):
        for row in data[table]:
            lines += ["", f"[[{table}]]"]
            lines += [f"{k} = {_toml_value(v)}" for k, v in row.items() if v not in ({}, None)]
    if data.get("tolerance"):
        lines += ["", "[tolerance]"] + [f"{k} = {v!r}" for k, v in data["tolerance"].items()]
    return "\n".join(lines) + "\n"


class _SourcesOnly:
    """What LaneTools needs of a workspace, for a plain copy of the sources (nothing forbidden
    but what lies outside it; nothing writable: the answer is the output)."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self.task_dir = self.root / ".no-task"

    def forbidden(self) -> list[Path]:
        return []


def write_spec(
    kernel_dir: Path, out: Path, work: Path, settings: AgentSettings | None = None
) -> Path:
    """Ask oracle_freezer for the spec of `kernel_dir`; return `out` (sources + op.toml)."""
    from scripts.untrusted import load_spec  # the draft imports the user's kernel: boxed
    from tasks.agents.loop import SYSTEM, drive
    from tasks.agents.outputs import SpecDraft
    from tasks.agents.settings import AgentSettings
    from tasks.agents.tools import LaneTools
    from tasks.agents.transcript import Ledger
    from tasks.agents.wrapper import render_prompt

    settings = settings or AgentSettings.from_env()
    kernel_dir, out, work = Path(kernel_dir), Path(out), Path(work)
    workspace = work / "workspace"
    shutil.rmtree(workspace, ignore_errors=True)
    shutil.copytree(kernel_dir, workspace, ignore=IGNORED)
    tools = LaneTools(
        _SourcesOnly(workspace),
        None,
        language="",
        mode="",
        allowance=lambda: 0,
        command_timeout_s=settings.command_timeout_s,
        output_chars=settings.tool_output_chars,
        input_chars=settings.tool_input_chars,
    )
    staged = work / "staged"

    def loads(draft: SpecDraft) -> None:
        shutil.rmtree(staged, ignore_errors=True)
        shutil.copytree(kernel_dir, staged, ignore=IGNORED)
        (staged / "op.toml").write_text(spec_toml(draft))
        try:
            load_spec(staged)
        except BadInput as exc:
            raise ValueError(f"the spec loader refused it: {exc}") from None

    ledger = Ledger(work / "transcripts", settings)
    transcript = ledger.open("oracle_freezer")
    try:
        drive(
            settings,
            transcript=transcript,
            system=SYSTEM,
            prompt=render_prompt("oracle_freezer", {}),
            tools=_NoWrite(tools),
            output=SpecDraft,
            accept=loads,
        )
    except Exception as exc:
        transcript.close(f"failed: {exc}")
        raise
    transcript.close("answered")
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(staged, out)
    return out


class _NoWrite:
    def __init__(self, tools: LaneTools):
        self.tools = tools

    def schemas(self) -> list[dict]:
        return [s for s in self.tools.schemas() if s["name"] != "write_file"]

    def call(self, name: str, arguments: dict) -> tuple[str, bool]:
        if name == "write_file":
            return "refused: oracle_freezer writes nothing; submit the spec instead", True
        return self.tools.call(name, arguments)


# --- Freeze's hook: every entry point on a directory without a spec


def needs_spec(path: Path) -> bool:
    """A directory that no input format reads (no op.toml, not a KernelBench .py, not a trace
    set): the case where oracle_freezer writes the spec."""
    from scripts.formats import detect_format

    path = Path(path)
    if not path.is_dir():
        return False
    try:
        detect_format(path)
    except BadInput:
        return True
    return False


def no_spec_here(path: Path) -> BadInput:
    return BadInput(
        str(path),
        "no op spec here (no op.toml, not a KernelBench problem, not a trace set): write "
        "op.toml, or set ANTHROPIC_API_KEY to have the oracle_freezer role write one",
    )


def sources_key(kernel_dir: Path) -> str:
    """A short hash of a directory's files: names its staged copy, and the run directory of an
    input that has no spec yet (tasks/run_store.py), before the model has written one."""
    import hashlib

    from scripts import manifest

    files = manifest.build(Path(kernel_dir))
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:12]


def staging_for(kernel_dir: Path, root: Path) -> Path:
    """`root/specs/<dir name>-<hash of its sources>`: the same sources reuse the written spec,
    so a resumed run freezes the same oracle instead of asking the model again."""
    return Path(root) / "specs" / f"{Path(kernel_dir).resolve().name}-{sources_key(kernel_dir)}"


def spec_for(kernel_path: Path, root: Path) -> tuple[Path, str]:
    """The path to freeze and what was done to get it: the input itself when a format reads it;
    else, with a model configured, a copy of it with the op.toml oracle_freezer wrote (under
    `root/specs/`); else BadInput naming the directory and what is missing."""
    from tasks.agents.settings import model_configured

    kernel_path = Path(kernel_path)
    if not needs_spec(kernel_path):
        return kernel_path, ""
    if not model_configured():
        raise no_spec_here(kernel_path)
    staging = staging_for(kernel_path, root)
    written = staging / "input"
    if (written / "op.toml").is_file():
        return written, f"no op spec in {kernel_path}: reusing {written / 'op.toml'}"
    write_spec(kernel_path, written, staging / "work")
    return written, (
        f"no op spec in {kernel_path}: oracle_freezer wrote {written / 'op.toml'} "
        f"(the input is unchanged; transcript in {staging / 'work' / 'transcripts'})"
    )


class SpecSource(BaseModel):
    """What Freeze read for an input, as a run records it (`RUN_DIR/op_spec.json`)."""

    input: str  # the kernel path as given: the original, which a winner is applied to
    frozen_from: str  # the input itself, or the staged copy holding the op.toml the model wrote
    said: str = ""  # the line spec_for returned ("" when the input has a spec of its own)

    @property
    def written(self) -> bool:
        return Path(self.frozen_from) != Path(self.input)


def source_for(kernel_path: str, root: str) -> SpecSource:
    path, said = spec_for(Path(kernel_path), Path(root))
    return SpecSource(input=str(kernel_path), frozen_from=str(path), said=said)


def record_in(run_dir: Path, source: SpecSource) -> str:
    """Keep a written spec in the run directory (`op.toml`, `op_spec.json`); the line to say."""
    from tasks.run_store import write_json

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(source.frozen_from) / "op.toml", run_dir / "op.toml")
    write_json(run_dir / RECORD, source)
    return f"{source.said}; kept as {run_dir / 'op.toml'}"


def recorded(run_dir: Path) -> SpecSource | None:
    """The run's record of a spec oracle_freezer wrote for its input (None: the input had one)."""
    path = Path(run_dir) / RECORD
    return SpecSource.model_validate_json(path.read_text()) if path.is_file() else None

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

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.op_toml import spec_toml
from kernel_bakeoff.tasks.agents.conversation import talk
from kernel_bakeoff.tasks.agents.outputs import SpecDraft
from kernel_bakeoff.tasks.agents.prompts import render_prompt
from kernel_bakeoff.tasks.agents.settings import AgentSettings, model_configured
from kernel_bakeoff.tasks.agents.tools import LaneTools
from kernel_bakeoff.tasks.agents.transcript import Ledger
from kernel_bakeoff.tasks.run.input_identity import (
    SpecSource,
    needs_spec,
    no_spec_here,
    sources_key,
)

if TYPE_CHECKING:  # the agent runtime loads only when a spec is written
    from kernel_bakeoff.tasks.agents.outputs import SpecDraft
    from kernel_bakeoff.tasks.agents.settings import AgentSettings
    from kernel_bakeoff.tasks.agents.tools import LaneTools

IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".git")


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
    from kernel_bakeoff.scripts.untrusted import (
        load_spec,  # the draft imports the user's kernel: boxed
    )

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
    talk(
        settings,
        ledger,
        "oracle_freezer",
        prompt=render_prompt("oracle_freezer", {}),
        tools=_NoWrite(tools),
        output=SpecDraft,
        accept=loads,
    )
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


def staging_for(kernel_dir: Path, root: Path) -> Path:
    """`root/specs/<dir name>-<hash of its sources>`: the same sources reuse the written spec,
    so a resumed run freezes the same oracle instead of asking the model again."""
    return Path(root) / "specs" / f"{Path(kernel_dir).resolve().name}-{sources_key(kernel_dir)}"


def spec_for(kernel_path: Path, root: Path) -> tuple[Path, str]:
    """The path to freeze and what was done to get it: the input itself when a format reads it;
    else, with a model configured, a copy of it with the op.toml oracle_freezer wrote (under
    `root/specs/`); else BadInput naming the directory and what is missing."""

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


def source_for(kernel_path: str, root: str) -> SpecSource:
    path, said = spec_for(Path(kernel_path), Path(root))
    return SpecSource(input=str(kernel_path), frozen_from=str(path), said=said)

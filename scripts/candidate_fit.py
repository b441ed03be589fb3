"""Whether a candidate handed to `bakeoff check` can be built for its problem at all.

Asked before anything is frozen or timed: a candidate written for another problem (its
`ModelNew` takes other constructor arguments), a directory without the file the format reads,
or a file of another format is the user's mistake, said in one line naming the candidate and
the problem (exit 2), not a table of failed workloads. Only the KernelBench format is asked
here; the others' candidates are read by the check as before.

What can be read from the text (the file the format reads, its syntax, a top-level `ModelNew`)
is read here without running it. The constructor's arguments need the candidate imported and
the problem's `get_init_inputs()` run: both are untrusted code, so that part runs in the box
(`scripts.candidate_build`, run by `scripts.untrusted` as step "candidate_fit"), never
in this process.
"""

from __future__ import annotations

import json
from pathlib import Path

from kernel_bakeoff.scripts import manifest, untrusted
from kernel_bakeoff.scripts.candidate_build import unfit as _unfit
from kernel_bakeoff.scripts.formats import detect_format
from kernel_bakeoff.scripts.program import top_level_names

MANIFEST = "MANIFEST.json"


def problem_of(task_or_kernel: Path) -> tuple[str, Path]:
    """(format, the problem's file) of a frozen task or of a kernel not yet frozen (for a format
    other than KernelBench, the file is not used). Reads no user code."""
    path = Path(task_or_kernel)
    if (path / MANIFEST).is_file():  # a frozen task: its spec says the format and entry file
        manifest.verify(path)  # a damaged task is its own one line, before any of it is read
        spec = json.loads((path / "spec.json").read_text())
        entry = str(spec.get("entry", "")).partition(":")[0]
        return spec.get("format", ""), path / "baseline_src" / entry
    fmt = detect_format(path)
    return fmt, path


def refuse_unfit(task_or_kernel: Path, candidate: Path) -> None:
    """BadInput naming `candidate` and the problem when the candidate cannot be built for it."""
    fmt, problem = problem_of(task_or_kernel)
    if fmt != "kernelbench":
        return
    shown = Path(task_or_kernel)
    path = kernelbench_file(Path(candidate), problem.name, shown)
    try:
        names = top_level_names(path.read_text(errors="replace"))
    except SyntaxError as exc:
        raise _unfit(path, shown, f"not valid Python (line {exc.lineno}: {exc.msg})") from None
    if names is not None and "ModelNew" not in names:
        raise _unfit(path, shown, "defines no class ModelNew (a KernelBench candidate's model)")
    untrusted.call(
        "candidate_fit",
        str(path),
        read=[Path(candidate).resolve(), problem.resolve()],
        problem=str(problem.resolve()),
        candidate=str(path.resolve()),
        shown_problem=str(shown),
        shown_candidate=str(path),
    )


def kernelbench_file(candidate: Path, problem_name: str, shown: Path) -> Path:
    """The file a KernelBench candidate is read from: the `.py` itself, or in a directory the
    file named like the problem's (`matmul_gelu.py` for `matmul_gelu.py`), as the check reads
    it (scripts/formats/kernelbench.py, load_callable)."""
    if candidate.is_dir():
        path = candidate / problem_name
        if not path.is_file():
            raise _unfit(
                candidate,
                shown,
                f"a KernelBench candidate directory is read through its {problem_name} (named "
                "like the problem's file); it has none",
            )
        return path
    if candidate.suffix != ".py":
        raise _unfit(
            candidate,
            shown,
            "a KernelBench candidate is a .py defining ModelNew (or a directory holding one "
            f"named {problem_name})",
        )
    return candidate

"""The opening of a bake-off: a request checked against this host before anything starts, its
run directory resolved and locked, its input frozen. It happens once: `bakeoff run` opens in the
CLI's process (its freeze runs beside Prefect's start-up) and hands its flow the `Opened` run;
a deployment's flow run, or a flow called with a plain request, opens itself.

`tasks.models.request` holds what a request is (its fields check themselves); here is what needs
more than one field, or the host: the languages its backends run, the input on disk, the devices
and the settings read from the environment. Above tasks/ because it asks the backends and the
check room, which themselves import the request's models.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel

from kernel_bakeoff.scripts.arch import cpu_llc_bytes
from kernel_bakeoff.scripts.check import default_samples
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.tasks.check.gpu_pool import resolve
from kernel_bakeoff.tasks.models.request import BakeoffRequest
from kernel_bakeoff.tasks.run.directory import default_run_dir
from kernel_bakeoff.tasks.run.input_identity import Frozen
from kernel_bakeoff.tasks.run.lock import held_here


class Opened(BaseModel):
    """A bake-off opened in this process: its request validated, its run directory (absolute)
    locked by this process, its input frozen (None while a model has its op spec to write: the
    flow's freeze phase asks it)."""

    request: BakeoffRequest
    run_dir: str
    frozen: Frozen | None = None


def run_dir_of(req: BakeoffRequest) -> Path:
    """The run directory of a validated request, absolute."""
    given = req.run_dir or default_run_dir(
        Path(req.kernel_path), Path(req.runs_root), req.mode, req.target_language
    )
    return Path(given).resolve()


def check_opened(opened: Opened) -> Opened:
    """`opened` as a flow was handed it: a flow's parameters are whatever its caller typed (a
    UI's form too), so the lock must be this process's and the frozen task must verify."""
    if not held_here(Path(opened.run_dir)):
        raise BadInput(
            "opened",
            f"{opened.run_dir} is not locked by this process: an opened run comes from "
            "`bakeoff run` in the same process; pass the request alone",
        )
    if opened.frozen is not None:
        again = Frozen.read(Path(opened.frozen.task_dir), opened.frozen.source)
        if again.oracle_sha256 != opened.frozen.oracle_sha256:
            raise BadInput("opened", f"{opened.frozen.task_dir} is not the task that was frozen")
    return opened


def _languages() -> list[str]:
    from kernel_bakeoff.tasks.backends import (
        languages,  # here: 3 s of imports `bakeoff run --help` skips
    )

    return [lang.lower() for lang in languages()]


def _known_language(field: str, value: str, known: list[str]) -> str:
    lang = value.strip().lower()
    if lang not in known:
        raise BadInput(field, f"unknown backend {value!r}; known: {', '.join(known)}")
    return lang


def validate(req: BakeoffRequest) -> BakeoffRequest:
    """Return the request normalised, or raise BadInput naming the first thing wrong with it.

    The fields checked themselves when the request was made (`parse_request`); here is what
    needs more than one field, or the host: known languages, the input, the devices."""
    mode = req.mode
    known = _languages()
    backends = None
    if req.backends is not None:
        backends = [_known_language("backends", b, known) for b in req.backends if b.strip()]
    target = req.target_language
    if target is not None:
        target = _known_language("target_language", target, known)
    if req.target_language is not None and mode != "author":
        raise BadInput("target_language", f"applies only to --mode author (this is --mode {mode})")
    if backends and mode != "bakeoff":
        raise BadInput("backends", f"applies only to --mode bakeoff (this is --mode {mode})")
    if not Path(req.kernel_path).exists():
        raise BadInput(req.kernel_path, "no such file or directory")
    if req.dispatch == "local":
        # (a bad BAKEOFF_* setting of ours was said by the entry point: tasks/run/settings.py)
        resolve(req.pool)  # raises for ids that do not exist here
        default_samples()  # and for a BAKEOFF_SAMPLES under the reviewer's least
        cpu_llc_bytes()  # and for a BAKEOFF_CPU_LLC_MIB that is not a size
    # Absolute: the run records it, and `bakeoff apply` finds the input's repository by it,
    # from whatever directory (or other clone) apply is called.
    kernel_path = os.path.abspath(req.kernel_path)
    return req.model_copy(
        update={
            "backends": backends,
            "target_language": target,
            "kernel_path": kernel_path,
        }
    )

"""A frozen baseline that every speedup may divide by: re-timed while it is noisy, and not timed
beside the product's own start-up where that could move it.

The frozen median is the one denominator of a run (README, "Reading the numbers"). Frozen on a
busy machine its spread can be many times what the reviewer accepts of a candidate (101% of
its median in one quickstart, issue #40), and a run that reuses the task reused the noise. So
every freeze a run makes or reuses goes through `retime_while_noisy` before any candidate
races: a bounded number of new freezes (`BAKEOFF_RETIME_TRIES`, default 2), each said in one
line, and what is still noisy after them said as a warning (the report says it too): re-timed
or said, never kept silently.

On a GPU host `bakeoff run` starts Prefect's server and the warm fork server beside the freeze
(flows/prefect_workarounds.py, flows/live.py): host work beside device timing, harmless unless
the kernel is host-bound, when the host's pace is what is timed. `host_bound` reads that from
the frozen figures, and `bakeoff run` then times the baseline again once the start-up is over.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from kernel_bakeoff.scripts.baseline import FrozenBaseline
from kernel_bakeoff.tasks.check.standing import baseline_stats, noisy_baseline
from kernel_bakeoff.tasks.run.settings import current

TRIES_VAR = "BAKEOFF_RETIME_TRIES"
# The host's time to queue one call at this fraction of the device's time for it, or more: the
# host's pace shows in the samples (the gate that holds the device covers only so much).
HOST_SHARE = 0.5


def tries() -> int:
    return current().retime_tries  # a bad value is BadInput there, said at the entry point


def unfreeze(task: Path) -> None:
    """Remove a frozen task directory (read-only by design) so that it can be frozen again."""
    for d in [task, *(p for p in task.rglob("*") if p.is_dir())]:
        d.chmod(0o700)
    shutil.rmtree(task)


def retime_while_noisy(
    task: Path,
    refreeze: Callable[[], object],
    say: Callable[[str], object],
    most: int | None = None,
) -> str | None:
    """Freeze `task` again (`refreeze`, after it is removed) while its baseline is noisy, at most
    `most` times (default `tries()`), saying each; the noisy line still true after them, said as
    a warning, or None when the baseline is quiet."""
    most = tries() if most is None else most
    noisy = noisy_baseline(task)
    # The quietest freeze so far is kept aside: a later one may come out noisier (a quickstart
    # here froze at 77%, 29%, then 79% of its median), and the run keeps the least noisy.
    kept = task.with_name(task.name + ".quietest")
    if kept.exists():  # left by a run that was stopped while re-timing
        unfreeze(kept)
    for n in range(1, most + 1):
        if not noisy:
            break
        say(f"{noisy}; re-timing it ({n} of {most}, {TRIES_VAR})")
        if not kept.exists() or _spread(task) < _spread(kept):
            if kept.exists():
                unfreeze(kept)
            shutil.copytree(task, kept, symlinks=True)
        unfreeze(task)
        refreeze()
        noisy = noisy_baseline(task)
        if not noisy:
            say(f"re-timed: the frozen baseline's spread is within bounds now ({task})")
    if kept.exists():
        if noisy and _spread(kept) < _spread(task):
            unfreeze(task)
            kept.rename(task)
            noisy = noisy_baseline(task)
            say(f"kept the quietest of the freezes: {_spread(task):.0%} of its median")
        else:
            unfreeze(kept)
    if noisy:
        times = "once" if most == 1 else f"{most} times"
        after = f" after re-timing it {times}" if most else f" ({TRIES_VAR}=0: not re-timed)"
        say(f"warning: {noisy}{after}; the report says so beside every speedup")
    return noisy


def _spread(task: Path) -> float:
    """The frozen baseline's widest relative spread over its timed workloads."""
    return max(baseline_stats(task)[1].values(), default=0.0)


def host_bound(task: Path) -> list[str]:
    """The frozen baseline's timed workloads whose samples the host's pace reached: samples in
    which the device waited on the host, or a host that takes `HOST_SHARE` of the device's time
    to queue a call."""
    base = FrozenBaseline.read(Path(task))
    found = []
    for name, wl in base.workloads.items():
        queued = wl.host_call_ms or 0.0
        if wl.host_bound_samples > 0 or queued >= HOST_SHARE * wl.median_ms:
            found.append(name)
    return found

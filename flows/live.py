"""`bakeoff run`: the whole bake-off in this process, on Prefect's embedded server.

The request is checked and the kernel frozen before Prefect starts, so bad input costs one
line and no server. The flow then runs in a thread while a rich progress display follows the
run directory's progress files (one row per lane: device, candidates checked, best speedup,
state); the ranking table (or, with --json, the result for machines) comes last.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from kernel_bakeoff.flows import phases
from kernel_bakeoff.flows.opening import Opened, run_dir_of, validate
from kernel_bakeoff.flows.prefect_workarounds import (
    start_beside_freeze,
    subflows_without_heartbeats,
)
from kernel_bakeoff.flows.run_table import lane_lines, ranking_table, short, winner_line
from kernel_bakeoff.scripts.isolation import refusal, warning
from kernel_bakeoff.tasks.check.freezing import freeze_isolated
from kernel_bakeoff.tasks.check.gpu_pool import resolve
from kernel_bakeoff.tasks.check.quiet_baseline import host_bound, retime_while_noisy, unfreeze
from kernel_bakeoff.tasks.models.progress import LaneProgress
from kernel_bakeoff.tasks.models.request import BakeoffRequest
from kernel_bakeoff.tasks.models.run import Report
from kernel_bakeoff.tasks.run.directory import LaneStore, RunStore, write_json
from kernel_bakeoff.tasks.run.input_identity import Frozen, SpecSource, needs_spec, no_spec_here
from kernel_bakeoff.tasks.run.key import model_configured
from kernel_bakeoff.tasks.run.lock import run_lock
from kernel_bakeoff.tasks.run.settings import enter

POLL_S = 0.25
TIMELINE = "cli_timeline.json"


def process_started() -> float | None:
    """When this process started (Linux: /proc), as a Unix time; None where unknown."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def result_json(report: Report) -> dict:
    """What `bakeoff run --json` prints: enough for a script to act on without the files."""
    return {
        "run_dir": report.run_dir,
        "report": report.report_path,
        "html": report.html_path,
        "kernel": report.kernel,
        "mode": report.mode,
        "oracle_sha256": report.oracle_sha256,
        "baseline_ms": report.baseline_ms,
        "candidates": [
            r.model_dump(mode="json", exclude={"rank", "margin"}) | {"rank": r.rank}
            for r in report.rows
        ],
        "lanes": [
            {
                "key": lane.key,
                "language": lane.language,
                "mode": lane.mode,
                "status": lane.status,
                "reason": lane.reason,
                "reused": lane.reused,
                "candidates": len(lane.candidates),
                "device": lane.lease.device if lane.lease else None,
                "lease_start": lane.lease.start.isoformat() if lane.lease else None,
                "lease_end": lane.lease.end.isoformat() if lane.lease and lane.lease.end else None,
            }
            for lane in report.lanes
        ],
        "winner": report.winner.model_dump(mode="json") if report.winner else None,
        "warnings": report.warnings,
        "baseline_disagrees": report.measurement.get("baseline_disagrees"),
        # model claims not borne out by the record: ignored, or corrected by the verdict
        "claims": [{"lane": k} | c.model_dump(mode="json") for k, c in report.noted_claims()],
        "judged": len(report.judged()),  # 0: no verdict, and the exit status is 1
    }


# A lane in one of these states has ended: its row stops spinning.
ENDED = ("completed", "cut", "failed", "skipped", "reused")


class LaneSpinner(SpinnerColumn):
    """A spinner only while the lane is under way; an ended lane (a skipped one too) shows none."""

    def render(self, task):
        if str(task.fields.get("state", "")).split(":")[0] in ENDED:
            return self.finished_text
        return super().render(task)


class LaneRows:
    """Keeps one progress row per lane in step with the lanes' progress files."""

    def __init__(self, progress: Progress, store: RunStore, say=None):
        self.progress = progress
        self.store = store
        self.say = say  # where the display does not redraw (a pipe, a log): one line a change
        self.said: dict[str, str] = {}
        self.phase = progress.add_task("freeze", total=None, device="", best="", state="")
        self.rows: dict[str, int] = {}

    def refresh(self) -> None:
        run = self.store.progress()
        phase = run.phase or "freeze"
        if run.spec and self.said.get("spec") != run.spec:  # oracle_freezer's spec
            self.said["spec"] = run.spec
            self.progress.console.print(run.spec, soft_wrap=True)
        state = ""
        if phase == "discover":  # its checks, as they finish, and the one under way
            info = LaneStore(self.store.discover_dir).read_progress()
            done, now_checking = info.evaluated or 0, info.current
            state = f"{done} checked" + (f", checking {now_checking}" if now_checking else "")
        self.progress.update(self.phase, description=f"[bold]{phase}", state=state)
        self._say("phase", f"{phase}" + (f": {state}" if state else ""))
        for key in run.lanes:
            info = self.store.lane(key).read_progress()
            if info.attempt != run.attempt:
                info = LaneProgress()  # left by an earlier run
            budget = info.budget or 1
            done = info.evaluated or 0
            best = info.best_speedup
            state = info.state or "starting"
            if state == "skipped" and info.reason:
                state = f"skipped: {short(info.reason, 60)}"
            fields = {
                "description": f"{key} ({info.mode or ''})",
                "total": max(budget, done),
                "completed": done,
                "device": info.device or "",
                "best": f"best {best:.3f}x" if best else "",
                "state": state,
            }
            self._say(
                key, f"lane {key}: {fields['state']}, {done}/{budget} checked {fields['best']}"
            )
            if key not in self.rows:
                self.rows[key] = self.progress.add_task(**fields)
            else:
                self.progress.update(self.rows[key], **fields)
        if phase == "done":
            self.progress.update(self.phase, total=1, completed=1)

    def _say(self, what: str, line: str) -> None:
        if self.say is not None and self.said.get(what) != line:
            self.said[what] = line
            self.say(f"{time.strftime('%H:%M:%S')} {line.strip()}")


def warm_fork_server(devices, on_cpu: bool = False) -> bool:
    """Start the fork server for the checks on the pool's first device (Discover's, where the
    pool is free) without waiting for it; not on a CPU-only host unless `on_cpu`. True if
    started (or already running). Beside the freeze, on a GPU host only: its import of torch
    (seconds, docs/studies/h200_figures.md) was the first check's time."""
    if devices.kind == "cpu" and not on_cpu:
        return False
    from kernel_bakeoff.scripts.check import warm_up  # here: torch, on a GPU host only

    warm_up(devices.env_for(devices.ids[0]))
    return True


def _run_flow(opened: Opened, out: dict) -> None:
    try:  # the import too: a dependency missing on a host is the error to say, not a KeyError
        from kernel_bakeoff.flows.bakeoff import (
            bakeoff,  # here: Prefect's flows, once the display is up
        )

        with subflows_without_heartbeats():  # the embedded server lives and dies with us
            if opened.request.rounds > 1:
                from kernel_bakeoff.flows.campaign import (
                    campaign,  # here: as the bake-off's flow above
                )

                out["report"] = campaign(opened.request, opened=opened)
            else:
                out["report"] = bakeoff(opened.request, opened=opened)
    except BaseException as exc:  # handed to the main thread
        out["error"] = exc


def _print_extras(console, report: Report, req: BakeoffRequest) -> None:
    """The campaign's ledger and the apply's outcome, when asked for (flows/campaign.py,
    tasks/apply/)."""
    # here: the apply's modules load git, which a run without --apply never needs
    from kernel_bakeoff.tasks.apply.command import describe
    from kernel_bakeoff.tasks.apply.hook import RESULT
    from kernel_bakeoff.tasks.apply.winner import ApplyResult

    if req.rounds > 1:
        console.print(f"campaign ledger: {Path(req.run_dir or report.run_dir).parent.parent}")
    applied = Path(report.run_dir) / RESULT
    if req.apply_to_original and applied.is_file():
        console.print(describe(ApplyResult.model_validate_json(applied.read_text())))


def run(
    request: BakeoffRequest,
    as_json: bool = False,
    debug: bool = False,
) -> int:
    """A noisy frozen baseline is re-timed before any candidate races against it
    (tasks/check/quiet_baseline.py)."""
    enter()  # the BAKEOFF_* settings, read once: a bad value is one line, before any work
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")  # else Prefect prints its usage notice mid-display
    # Prefect waits 20 s for its temporary server: on a 2-core host still busy after the freeze,
    # a fresh clone's first `./quickstart.sh` failed there ("Timed out while attempting to
    # connect to ephemeral Prefect API server"); the start alone took 19.8 s on a quiet one.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    if not debug:  # the display and the UI carry what Prefect would print on the console
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
    req = validate(request)

    specless = needs_spec(Path(req.kernel_path))  # the flow's freeze phase has the spec written
    if specless:
        if not model_configured():  # one line, before any server starts
            raise no_spec_here(Path(req.kernel_path))
    run_dir = run_dir_of(req)
    console = Console(stderr=as_json)
    if not console.is_terminal:
        console.width = 140  # a log file or a pipe: room for the ranking table

    if refused := refusal():  # the box cannot be made here: untrusted code is not run
        console.print(f"[bold red]bakeoff: {refused}[/]")
        return 2
    unsafe = warning()  # BAKEOFF_ISOLATION=none: candidates are out of their box
    if unsafe:
        console.print(f"[bold red]{unsafe}[/]")
    with run_lock(run_dir):  # a second bake-off here stops before it writes anything
        return _run_locked(req, run_dir, specless, as_json, console)


def _quiet_at_freeze(
    req: BakeoffRequest, task: Path, console: Console, beside_startup: bool = False
) -> None:
    """Before any candidate races: a host-bound baseline timed beside the product's own start-up
    (a GPU host) timed again after it, and a noisy one re-timed (tasks/check/quiet_baseline.py)."""

    def refreeze() -> None:
        freeze_isolated(Path(req.kernel_path), task, req.pool)

    def say(line: str) -> None:
        console.print(line, soft_wrap=True)

    bound = host_bound(task) if beside_startup else []
    if bound:
        say(
            f"re-timing the frozen baseline: it is host-bound ({', '.join(bound)}) and was "
            "timed while Prefect's server and the warm fork server started on this host"
        )
        unfreeze(task)
        refreeze()
    retime_while_noisy(task, refreeze, say)


def _run_locked(
    req: BakeoffRequest,
    run_dir: Path,
    specless: bool,
    as_json: bool,
    console: Console,
) -> int:
    freezing = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    # where the time outside the flow's phases goes: RUN/cli_timeline.json, Unix times
    marks = {"process": process_started(), "freeze": time.time()}
    devices = resolve(req.pool)
    server_started = start_beside_freeze(devices.kind)
    # what started beside the freeze: the fork server, and on a GPU host Prefect's server
    # unless one is configured (start_beside_freeze's own rule)
    beside = warm_fork_server(devices) or (
        devices.kind != "cpu" and not os.environ.get("PREFECT_API_URL")
    )
    say = None if console.is_terminal else console.print  # no spinner there: plain lines
    doing = f"freezing {req.kernel_path}: checking and timing the baseline"
    if specless:  # the flow freezes, once oracle_freezer has written the spec
        doing = f"{req.kernel_path} has no op spec: the oracle_freezer role writes one first"
    if say:
        say(f"{time.strftime('%H:%M:%S')} {doing}")
    with freezing:  # checking and timing the baseline: seconds, a minute or more for big ones
        freezing.add_task(doing, total=None)
        if not specless:
            freeze_isolated(Path(req.kernel_path), run_dir / "task", req.pool)
    marks["frozen"] = time.time()
    server_started()
    if not specless:  # after the start-up: a baseline timed again is timed without it beside
        _quiet_at_freeze(req, run_dir / "task", console, beside_startup=beside)
        marks["quiet"] = time.time()
    marks["server"] = time.time()
    if req.agents:  # the operator's drop-ins: the model's room checks them (first Prefect import)
        from kernel_bakeoff.tasks.engine.model_room import (
            model_room,  # here: the request is good by now
        )

        model_room("check_agents")(req.agents)
    # the run handed to the flow as opened here: it neither validates, locks nor freezes again
    here = req.model_copy(update={"run_dir": str(run_dir)})
    frozen = None
    if not specless:  # else the flow's freeze phase has oracle_freezer write the spec first
        kernel = str(Path(req.kernel_path).resolve())
        source = SpecSource(input=kernel, frozen_from=kernel)
        frozen = Frozen.read(run_dir / "task", source)
    opened = Opened(request=here, run_dir=str(run_dir), frozen=frozen)
    out: dict = {}
    worker = threading.Thread(target=_run_flow, args=(opened, out), name="bakeoff", daemon=True)
    store = RunStore(run_dir)
    earlier = store.progress()  # how an earlier run of this directory ended: said if resumed
    if earlier.phase == "starting" and earlier.previous is not None:
        earlier = earlier.previous  # `bakeoff run` marked it: the one before counts
    store.set_phase("starting", reset=True, previous=earlier)
    if earlier.unfinished and not req.fresh:
        console.print(
            f"resuming: the last run here stopped in phase {earlier.phase!r}; "
            "lanes that finished are reused"
        )
    columns = (
        LaneSpinner(),
        TextColumn("{task.description:<22}"),
        BarColumn(bar_width=20),
        MofNCompleteColumn(),
        TextColumn("{task.fields[device]:<7}"),
        TextColumn("{task.fields[best]:<13}"),
        TextColumn("{task.fields[state]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=as_json) as progress:
        rows = LaneRows(progress, store, say)
        worker.start()
        while worker.is_alive():
            rows.refresh()
            time.sleep(POLL_S)
        rows.refresh()
    marks["flow_done"] = time.time()
    write_json(run_dir / TIMELINE, marks)
    if "error" in out:
        raise out["error"]
    report: Report = out["report"]
    # exit 1 when nothing was judged: "no winner" there would report a contest that never ran
    status = 0 if report.judged() else 1
    if as_json:
        print(json.dumps(result_json(report), indent=1))
        return status
    if report.measurement.get("baseline_disagrees"):  # first: every speedup below depends on it
        console.print(f"warning: {report.measurement['baseline_disagrees']}", soft_wrap=True)
    console.print(ranking_table(report))
    for line in lane_lines(report):
        console.print(line, soft_wrap=True)
    if report.measurement.get("baseline_noisy"):
        console.print(f"warning: {report.measurement['baseline_noisy']}", soft_wrap=True)
    if report.winner:
        console.print(winner_line(report), soft_wrap=True)
    else:
        console.print(phases.winner_line(report), soft_wrap=True)
    for line in report.warnings:  # the box's own line says WARNING already, in red
        console.print(f"[bold red]{line}[/]" if line.startswith("WARNING") else f"warning: {line}")
    console.print(f"report: {report.report_path}")
    console.print(f"html report: {report.html_path}")
    _print_extras(console, report, req)
    return status

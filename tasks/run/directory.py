"""The run directory: where every candidate, verdict, timing, log and lane result lives.

    runs/<op>-<input hash>/
      task/                       the frozen oracle (one per input; never re-frozen by a re-run)
      progress.json               phase of the current invocation, read by `bakeoff run`'s display
      discover/                   plan.json, results/, work/
      lanes/<key>/                lane_result.json, progress.json, lane.log, sheet.md,
                                  results/NNN-<candidate>.json, checks/<candidate>/, work/, roles/
      report.md, report.json

A lane's result is reused by a later run only when its cache key matches: the oracle hash, the
frozen task's manifest (so the same baseline measurement), the lane's configuration and the
code version all go into it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

from kernel_bakeoff.scripts import manifest
from kernel_bakeoff.tasks.models.plan import CandidateResult
from kernel_bakeoff.tasks.models.progress import LaneProgress, RunProgress
from kernel_bakeoff.tasks.models.run import LaneConfig, LaneResult
from kernel_bakeoff.tasks.run.atomic_json import write_json  # noqa: F401  (the store's writer, named here too)
from kernel_bakeoff.tasks.run.input_identity import needs_spec, sources_key

ROOT = Path(__file__).resolve().parents[2]
CODE_DIRS = ("flows", "tasks", "scripts", "templates", "roles")
CODE_SUFFIXES = (".py", ".md", ".j2")


def _sha(data: str) -> str:
    return hashlib.sha256(data.encode()).hexdigest()


@lru_cache(maxsize=1)
def code_version() -> str:
    """Hash of the code that produces results: any edit to it invalidates reused lanes."""
    h = hashlib.sha256()
    for top in CODE_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix in CODE_SUFFIXES and "__pycache__" not in path.parts:
                h.update(path.relative_to(ROOT).as_posix().encode() + b"\0")
                h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def input_key(kernel_path: Path) -> tuple[str, str]:
    """(op name, short hash of the input's spec and sources): names the run directory. A
    directory without a spec (its spec is written in the freeze phase, tasks/agents/freezer.py)
    is named for itself and its sources until then: the run directory is known before."""
    from kernel_bakeoff.scripts.untrusted import load_spec  # imports the input in the sandbox

    if needs_spec(Path(kernel_path)):
        return Path(kernel_path).resolve().name, sources_key(Path(kernel_path))
    spec, src = load_spec(Path(kernel_path))
    files = manifest.build(src)
    # Not manifest.cache_key: this names run directories already on disk, and a re-run of the
    # same input must find its run (and its frozen baseline) again.
    return spec.name, _sha(spec.model_dump_json() + json.dumps(files, sort_keys=True))[:12]


def default_run_dir(
    kernel_path: Path,
    runs_root: Path = Path("runs"),
    mode: str = "optimize",
    target_language: str | None = None,
) -> Path:
    """`runs/<op>-<mode>[-<target>]-<input hash>`: runs of one input in different modes (or an
    author run in another language) never share a directory, a report or a lane."""
    name, key = input_key(kernel_path)
    kind = mode if mode != "author" or not target_language else f"author-{target_language}"
    return Path(runs_root) / f"{name}-{kind}-{key}"


def task_identity(task_dir: Path) -> str:
    """Hash of the frozen task's manifest: oracle plus the baseline measurement it holds."""
    return _sha((Path(task_dir) / manifest.MANIFEST).read_text())[:16]


def lane_cache_key(config: LaneConfig, agent: str | None) -> str:
    """The key a lane's result is reused by; `agent` is the model that drives the lanes here
    (`tasks.agents.settings.agent_identity`, None without one): a lane the model drove is not
    the search's, nor skipped."""
    payload = config.model_dump(
        mode="json", exclude={"run_dir", "task_dir", "attempt", "pin_index", "pool"}
    )
    payload["task"] = task_identity(Path(config.task_dir))
    payload["code"] = code_version()
    payload["agent"] = agent
    return manifest.cache_key(payload, 24)


def _checked(model, fields: dict) -> dict:
    """`fields` validated as `model`'s (a name it lacks or a value of the wrong type raises):
    `model_copy(update=...)` alone would take them unchecked."""
    checked = model.model_validate(fields)
    return {name: getattr(checked, name) for name in fields}


def now() -> datetime:
    return datetime.now(UTC)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return None


class RunStore:
    def __init__(self, run_dir: Path):
        self.root = Path(run_dir)

    @property
    def task_dir(self) -> Path:
        return self.root / "task"

    @property
    def discover_dir(self) -> Path:
        return self.root / "discover"

    def lane(self, key: str) -> LaneStore:
        return LaneStore(self.root / "lanes" / key)

    def set_phase(self, phase: str, reset: bool = False, **fields) -> None:
        """The run's current phase, and `fields` of RunProgress; `phase_started` keeps when each
        phase of this attempt began (where a bake-off's time went)."""
        current = RunProgress() if reset else self.progress()
        stamp = now()
        started = {**current.phase_started, phase: stamp}
        update = {**fields, "phase": phase, "updated": stamp, "phase_started": started}
        write_json(
            self.root / "progress.json", current.model_copy(update=_checked(RunProgress, update))
        )

    def progress(self) -> RunProgress:
        return RunProgress.model_validate(read_json(self.root / "progress.json") or {})


class LaneStore:
    """Files of one lane. Thread-safe for the appends a lane makes while it runs."""

    def __init__(self, lane_dir: Path):
        self.root = Path(lane_dir)
        self._lock = threading.Lock()

    result_path = property(lambda self: self.root / "lane_result.json")
    progress_path = property(lambda self: self.root / "progress.json")
    log_path = property(lambda self: self.root / "lane.log")
    work_dir = property(lambda self: self.root / "work")
    roles_dir = property(lambda self: self.root / "roles")

    def check_dir(self, candidate: str) -> Path:
        return self.root / "checks" / candidate

    def reusable(self, cache_key: str) -> LaneResult | None:
        """A completed (or skipped) result of an earlier run with the same key; failed ones re-run."""
        data = read_json(self.result_path)
        if not data:
            return None
        result = LaneResult.model_validate(data)
        # a skip is as good as a finish for the same key: the key names the model, if any
        if result.cache_key == cache_key and result.status in ("completed", "cut", "skipped"):
            return result
        return None

    def load_result(self) -> LaneResult | None:
        data = read_json(self.result_path)
        return LaneResult.model_validate(data) if data else None

    def write_result(self, result: LaneResult) -> None:
        write_json(self.result_path, result)

    def save_candidate(self, result: CandidateResult) -> int:
        with self._lock:
            results = self.root / "results"
            index = len(list(results.glob("*.json"))) if results.is_dir() else 0
            write_json(results / f"{index:03d}-{result.candidate.name}.json", result)
            return index + 1

    def saved_candidates(self) -> list[CandidateResult]:
        results = self.root / "results"
        if not results.is_dir():
            return []
        return [
            CandidateResult.model_validate_json(p.read_text())
            for p in sorted(results.glob("*.json"))
        ]

    def clear(self) -> None:
        """Forget an earlier attempt's result, results and progress before a new attempt.

        The result goes first: an attempt killed half-way must not leave an earlier completed
        result behind for a later run to reuse over files this attempt has since rewritten.
        """
        self.result_path.unlink(missing_ok=True)
        for p in sorted((self.root / "results").glob("*.json")):
            p.unlink()
        self.progress_path.unlink(missing_ok=True)

    def progress(self, **fields) -> None:
        """Set `fields` of the lane's LaneProgress."""
        with self._lock:
            update = _checked(LaneProgress, {**fields, "updated": now()})
            write_json(self.progress_path, self.read_progress().model_copy(update=update))

    def read_progress(self) -> LaneProgress:
        return LaneProgress.model_validate(read_json(self.progress_path) or {})

    def log(self, line: str) -> None:
        with self._lock:
            self.root.mkdir(parents=True, exist_ok=True)
            with open(self.log_path, "a") as f:
                f.write(f"{now().strftime('%H:%M:%S.%f')[:-3]} {line}\n")

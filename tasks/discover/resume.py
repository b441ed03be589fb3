"""Discover killed half-way keeps what it finished: each check it completed is saved under
`discover/results/`; a new Discover with the same key takes a saved result for a candidate whose
name, settings and files are unchanged instead of checking it again."""

from __future__ import annotations

from pathlib import Path

from kernel_bakeoff.scripts import manifest
from kernel_bakeoff.tasks.check.evaluate import Evaluator
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult
from kernel_bakeoff.tasks.run.directory import LaneStore

KEY_FILE = "key.txt"


def fingerprint(ref: CandidateRef) -> str | None:
    """Scoped by the Discover key (task, settings, code version), so the candidate alone:
    its name, settings and files."""
    path = Path(ref.path)
    if not path.exists():
        return None
    what = ref.model_dump(mode="json", include={"name", "language", "mode", "env", "params"})
    return manifest.cache_key([what, manifest.files_of(path)])


def finished_checks(store: LaneStore, key: str) -> dict[str, CandidateResult]:
    """The checks an interrupted Discover with this key finished (before `store.clear()`)."""
    try:
        if (store.root / KEY_FILE).read_text().strip() != key:
            return {}
    except OSError:
        return {}
    found = {}
    for result in store.saved_candidates():
        mark = fingerprint(result.candidate)
        if mark is not None:
            found[mark] = result
    return found


class ResumingEvaluator(Evaluator):
    """Discover's `check_fn`: a finished check of an interrupted run is taken as it was; the
    progress file names the candidate being checked (the live display shows it)."""

    def __init__(self, *args, earlier: dict[str, CandidateResult], key: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.earlier = earlier
        self.store.root.mkdir(parents=True, exist_ok=True)
        (self.store.root / KEY_FILE).write_text(key)

    def check(self, ref, deadline) -> CandidateResult:
        found = self.earlier.pop(fingerprint(ref) or "", None)
        if found is not None:
            count = self.store.save_candidate(found)
            self.store.progress(evaluated=count, current="")
            self.log(f"kept {ref.name} from the interrupted run: {found.verdict.status.value}")
            return found
        self.store.progress(current=ref.name)
        result = super().check(ref, deadline)
        self.store.progress(current="")
        return result

"""A lane's memory across rounds: what each round starts from.

Each round's conversations begin with the best candidate so far (its source copied into the
workspace as `candidates/best/`, its verdict, its profile digest), the lessons and next ideas of
every earlier round, and the dead ends: candidates that failed, or passed no faster than the
baseline or the best. It is kept by the trusted side in `lanes/<key>/memory.json`, outside the
workspace, and goes into `agent.json` and, for a win, the archive entry (`knowledge.write_card`).

Trust: the best, its verdict and the dead ends come from the record (`Workspace.results()`),
never from an answer; lessons and ideas are the model's words, kept as notes (bounded in size),
and never a number anyone acts on. The digest is a profiler's reading of the candidate.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pydantic import BaseModel, Field

from kernel_bakeoff.tasks.agents.digest import Digest, limiter, render
from kernel_bakeoff.tasks.agents.tools import verdict_text
from kernel_bakeoff.tasks.models.plan import CandidateResult
from kernel_bakeoff.tasks.run.directory import write_json

NOTE_CHARS = 400  # one lesson or idea as kept
NOTES_KEPT = 24  # the most recent lessons and ideas the prompt carries


class RoundNote(BaseModel):
    round: int
    conversation: int
    directive: str = ""
    summary: str = ""
    lessons: list[str] = Field(default_factory=list)
    next_idea: str = ""


class MemoryRecord(BaseModel):
    best: str | None = None
    best_speedup: float | None = None
    best_digest: str = ""
    rounds: list[RoundNote] = Field(default_factory=list)
    dead_ends: list[str] = Field(default_factory=list)


def _cut(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 3] + "..."


class LaneMemory:
    def __init__(self, lane_dir: Path):
        self.path = Path(lane_dir) / "memory.json"
        self.record = MemoryRecord()
        self.best: CandidateResult | None = None
        self.digest: Digest | None = None

    def note(self, round_: int, conversation: int, directive: str, answer) -> None:
        self.record.rounds.append(
            RoundNote(
                round=round_,
                conversation=conversation,
                directive=_cut(directive),
                summary=_cut(answer.summary),
                lessons=[_cut(x) for x in answer.lessons[:8]],
                next_idea=_cut(answer.next_idea),
            )
        )
        self.save()

    def learn_from_record(self, ws, best: CandidateResult | None) -> None:
        """Dead ends, from the record: every checked candidate that is not the best and did not
        beat it, with what the model said it changed."""
        changed = {e["candidate"]: e.get("changed", "") for e in ws.receipts()}
        ends = []
        for r in ws.results():
            v, name = r.verdict, r.candidate.name
            if best is not None and name == best.candidate.name:
                continue
            what = f" (changed: {_cut(changed.get(name, ''))[:160]})" if changed.get(name) else ""
            if not v.passed:
                ends.append(f"{name}: {v.status.value}: {_cut(v.reason or '')[:200]}{what}")
            elif v.speedup is None or v.speedup <= 1.0:
                shown = "-" if v.speedup is None else f"{v.speedup:.3f}x"
                ends.append(f"{name}: passed at {shown}, no faster than the frozen baseline{what}")
            elif best is not None and v.speedup <= (best.verdict.speedup or 0):
                ends.append(f"{name}: passed at {v.speedup:.3f}x, below the best{what}")
        self.record.dead_ends = ends
        self.save()

    def set_best(self, best: CandidateResult, digest: Digest | str | None) -> None:
        self.best = best
        self.digest = digest if isinstance(digest, Digest) else None
        self.record.best = best.candidate.name
        self.record.best_speedup = best.verdict.speedup
        if isinstance(digest, Digest):
            self.record.best_digest = render(digest)
        else:
            self.record.best_digest = str(digest or "")
        self.save()

    def start_from_best(self, ws) -> str | None:
        """Copy the best candidate's checked snapshot (the record's copy) into the workspace
        as `candidates/best/`, writable: the round's starting point. Its workspace path."""
        if self.best is None:
            return None
        dest = ws.root / "candidates" / "best"
        if dest.exists():
            shutil.rmtree(dest)
        src = Path(self.best.candidate.path)
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
        for p in [dest, *dest.rglob("*")]:
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        return "candidates/best/"

    def text(self) -> str:
        """What the prompt of every conversation of the next round carries."""
        if self.best is None and not self.record.rounds and not self.record.dead_ends:
            return ""
        lines = ["## The lane's memory (kept by the flow; numbers from the record only)"]
        if self.best is not None:
            lines += [
                "",
                f"Best so far: {self.best.candidate.name} at {self.best.verdict.speedup:.3f}x; "
                "its source is in `candidates/best/` (a copy to edit). Its verdict:",
                verdict_text(self.best, "(held by the flow)"),
            ]
            if self.record.best_digest:
                lines += ["", "Its profile digest:", self.record.best_digest]
        notes = self.record.rounds[-NOTES_KEPT:]
        lessons = [f"- round {n.round}.{n.conversation}: {x}" for n in notes for x in n.lessons]
        ideas = [f"- round {n.round}.{n.conversation}: {n.next_idea}" for n in notes if n.next_idea]
        if lessons:
            lines += ["", "Lessons of earlier rounds:", *lessons]
        if ideas:
            lines += ["", "Next ideas earlier rounds proposed:", *ideas]
        if self.record.dead_ends:
            lines += ["", "Dead ends (checked, and no better):"]
            lines += [f"- {x}" for x in self.record.dead_ends[-NOTES_KEPT:]]
        return "\n".join(lines)

    def save(self) -> None:
        write_json(self.path, self.record)


GENERAL = [
    "Start from the simplest correct version of the op in the lane's language, then tune its "
    "block sizes for these workloads.",
    "Cut memory traffic: fuse every pass over the data into one kernel so each byte is read "
    "and written once.",
    "Change the parallel decomposition: how many rows or tiles each program handles, and how "
    "many programs run.",
]
BY_LIMITER = {
    "memory": [
        "The top kernel is memory-bound: cut the bytes it moves (fuse passes, keep data in "
        "registers or shared memory, avoid re-reading inputs).",
        "The top kernel is memory-bound: make every access coalesced and vectorised, and size "
        "blocks so the loads stream at full width.",
        "The top kernel is memory-bound: fewer, larger programs (several rows or tiles each) to "
        "amortise index math and launch cost.",
    ],
    "compute": [
        "The top kernel is compute-bound: move the math onto the matrix units (tensor cores, "
        "MFMA) at the op's precision (split precision for fp32).",
        "The top kernel is compute-bound: raise arithmetic intensity with larger tiles and "
        "reuse of each loaded tile.",
        "The top kernel is compute-bound: remove redundant math (hoist, strength-reduce, "
        "cheaper exp/rsqrt forms within the tolerance).",
    ],
    "latency": [
        "No unit of the top kernel is busy: give the device more parallel work (more programs, "
        "more warps, higher occupancy).",
        "No unit of the top kernel is busy: fuse the kernels into one launch and cut "
        "synchronisation and launch overhead.",
        "No unit of the top kernel is busy: pipeline loads ahead of use (more stages, software "
        "prefetch) to hide memory latency.",
    ],
}


def directives(digest: Digest | None, n: int) -> list[str]:
    """N different directions for a round's N conversations, from the best's profile digest:
    what its top kernel is limited by decides the family; without a digest, general ones."""
    family, lead = GENERAL, ""
    if digest is not None and digest.rows:
        top = digest.rows[0]
        kind = limiter(top, digest.peak_bandwidth).split(" ")[0]
        share = 100 * top.time_us / digest.total_us if digest.total_us else 0.0
        lead = f"The best's top kernel `{top.name}` takes {share:.0f}% of its profiled time. "
        family = BY_LIMITER.get(kind, GENERAL)
    return [lead + family[i % len(family)] for i in range(n)]

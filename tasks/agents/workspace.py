"""The lane workspace: where a model writes candidates, and the ledger of what the harness said.

    lanes/<key>/work/            the workspace (a git repository, one commit per checked candidate)
      TASK.md                    the task sheet (templates/agent_task.md.j2)
      oracle/                    spec.json and the incumbent's sources, read-only; the oracle's
                                 reference file (when it is not the incumbent) is not copied
      knowledge/                 the cards that fit the language and architecture, read-only
      starts/                    earlier winning variants of the same op, read-only
      candidates/                the model's (optimize: candidates/incumbent/ is a copy to edit)
      ITERATIONS.md              one row per checked candidate, written by the flow
    lanes/<key>/work.git/               the workspace's git directory (tasks/agents/lanegit.py)
    lanes/<key>/snapshots/NNN-<name>/   what was checked, frozen at the moment of the check
    lanes/<key>/receipts.json           one receipt per check: hashes of verdict, oracle, candidate
    lanes/<key>/receipt.key             the lane's secret for receipts (0600)

The record of a lane's checks is the trusted side's, outside the workspace: the verdicts the
check function returned (held in this object for the lane's own run, and saved by the Evaluator
under `lanes/<key>/results/`), and receipts.json. A receipt is an HMAC, with the lane's key, of
the candidate's name, the verdict's bytes, the oracle and the candidate's bytes: a verdict file
or receipt rewritten by anyone without the key matches nothing (`verify`). The workspace holds
only copies for the model to read (ITERATIONS.md, the tools' answers). A number in a role's
answer counts only when its receipt matches, and the lane's candidates, its best and all that is
derived from them come from the record, never from the model.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import stat
import threading
from pathlib import Path

from kernel_bakeoff.scripts import manifest
from kernel_bakeoff.scripts.spec import OpSpec
from kernel_bakeoff.tasks.agents.lanegit import LaneGit
from kernel_bakeoff.tasks.agents.nofollow import Moved, copy_below
from kernel_bakeoff.tasks.agents.sheet import measured_facts
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult
from kernel_bakeoff.tasks.report.render import render
from kernel_bakeoff.tasks.run.directory import read_json, write_json

READ_ONLY_TOP = ("oracle", "knowledge", "starts", "TASK.md", "ITERATIONS.md", "bin", ".git")
IGNORE = ".home/\n.tmp/\n__pycache__/\n*.pyc\n.git\n"
RECEIPT_CHARS = 20


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tree_sha(path: Path) -> str:
    path = Path(path)
    if path.is_file():
        return sha256_bytes(path.read_bytes())
    return sha256_bytes(json.dumps(manifest.build(path), sort_keys=True).encode())


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name.strip())[:60].strip("._") or "candidate"


def _read_only(root: Path) -> None:
    for p in [root, *root.rglob("*")] if root.is_dir() else [root]:
        mode = p.stat().st_mode
        p.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _copy(src: Path, dst: Path, skip: set[str] = frozenset()) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for p in sorted(Path(src).rglob("*")):
        rel = p.relative_to(src)
        if rel.as_posix() in skip or "__pycache__" in rel.parts:
            continue
        if p.is_dir():
            (dst / rel).mkdir(parents=True, exist_ok=True)
        elif p.is_file() and not p.is_symlink():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dst / rel)


def _remove_tree(root: Path) -> None:
    """`root` removed, its directories opened first: copies of the frozen task's read-only ones
    (a snapshot of a candidate) stop anyone but root from unlinking what they hold."""
    for p in [root, *root.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)
    shutil.rmtree(root)


class Workspace:
    def __init__(self, root: Path, lane_dir: Path, task_dir: Path, spec: OpSpec, oracle: str):
        self.root = Path(root).resolve()
        self.lane_dir = Path(lane_dir).resolve()
        self.task_dir = Path(task_dir).resolve()
        self.spec = spec
        self.oracle_sha256 = oracle
        self.receipts_path = self.lane_dir / "receipts.json"
        self.key_path = self.lane_dir / "receipt.key"
        self.snapshots = self.lane_dir / "snapshots"
        self._lock = threading.Lock()
        self.git = LaneGit(self.lane_dir / "work.git", self.root)
        self._held: dict[str, CandidateResult] = {}  # receipt -> what the check returned
        self._entries: list[dict] = []  # the receipts made in this run, in order
        self._reserved: set[str] = set()  # names handed to checks still running
        self._snapshots = 0

    # -- making it ---------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        root: Path,
        lane_dir: Path,
        task_dir: Path,
        *,
        spec: OpSpec,
        oracle: str,
        sheet: dict,
        cards: list[Path],
        starts: list[Path],
        mode: str,
    ) -> Workspace:
        root = Path(root)
        if root.exists():
            _remove_tree(root)
        root.mkdir(parents=True)
        ws = cls(root, lane_dir, task_dir, spec, oracle)
        for stale in (ws.receipts_path, ws.key_path):
            stale.unlink(missing_ok=True)
        for stale_dir in (ws.snapshots, ws.git.git_dir):
            if stale_dir.exists():
                _remove_tree(stale_dir)
        ws.lane_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(ws.key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
        src = ws.task_dir / "baseline_src"
        oracle_dir = ws.root / "oracle"
        _copy(src, oracle_dir, skip=ws.reference_files())
        shutil.copyfile(ws.task_dir / "spec.json", oracle_dir / "spec.json")
        for card in cards:
            (ws.root / "knowledge").mkdir(exist_ok=True)
            shutil.copyfile(card, ws.root / "knowledge" / card.name)
        for start in starts:
            _copy(start, ws.root / "starts" / start.name)
        (ws.root / "candidates").mkdir()
        if mode == "optimize":
            _copy(src, ws.root / "candidates" / "incumbent", skip=ws.reference_files())
        # here: scripts.freeze brings torch, a second of import this module's callers skip
        from kernel_bakeoff.scripts.freeze import load_task

        facts = measured_facts(ws.task_dir, spec, load_task(ws.task_dir)[2], cards)
        (ws.root / "TASK.md").write_text(render("agent_task.md.j2", **(facts | sheet)))
        (ws.root / "ITERATIONS.md").write_text(
            "# Iterations\n\n| # | candidate | changed | expected | measured | receipt |\n"
            "| --- | --- | --- | --- | --- | --- |\n"
        )
        for top in ("oracle", "knowledge", "starts"):
            if (ws.root / top).exists():
                _read_only(ws.root / top)
        ws.git.init()
        (ws.git.git_dir / "info").mkdir(exist_ok=True)
        (ws.git.git_dir / "info" / "exclude").write_text(IGNORE)
        ws.commit("workspace: task sheet, oracle copy, knowledge cards, starting points")
        return ws

    @staticmethod
    def reference_of(spec: OpSpec) -> set[str]:
        """Files of baseline_src that are the oracle's reference and not the incumbent."""
        ref_file = spec.reference_entry.partition(":")[0]
        return set() if ref_file == spec.entry.partition(":")[0] else {ref_file}

    def reference_files(self) -> set[str]:
        return self.reference_of(self.spec)

    def forbidden(self) -> list[Path]:
        """Real paths no tool may read: the frozen task, and its reference sources."""
        found = [self.task_dir]
        found += [(self.task_dir / "baseline_src" / f).resolve() for f in self.reference_files()]
        return found

    # -- git and the iterations log ----------------------------------------------------------

    def commit(self, message: str) -> str:
        return self.git.commit(message)

    def history(self) -> list[str]:
        return self.git.subjects()

    # -- checks and receipts ------------------------------------------------------------------

    def receipts(self) -> list[dict]:
        """The receipts of the lane's checks: the ones this object made, in the lane's own run
        (the file is their copy); read from receipts.json afterwards."""
        if self._entries:
            return list(self._entries)
        return (read_json(self.receipts_path) or {}).get("receipts", [])

    def checked(self) -> int:
        return len(self.receipts())

    def unique_name(self, wanted: str) -> str:
        """A name no check of the lane has, nor one running beside it (parallel conversations
        may ask for the same name at once); reserved until the lane ends."""
        with self._lock:
            taken = {r["candidate"] for r in self.receipts()} | self._reserved
            name, n = safe_name(wanted), 2
            while name in taken:
                name, n = f"{safe_name(wanted)}-{n}", n + 1
            self._reserved.add(name)
            return name

    def snapshot(self, source: Path, name: str) -> Path:
        """Copy what is about to be checked out of the model's reach."""
        with self._lock:
            index = max(self._snapshots, self.checked())
            self._snapshots = index + 1
        dest = self.snapshots / f"{index:03d}-{name}"
        if not Path(source).is_dir():
            dest.mkdir(parents=True)
        # Copied from the workspace's root without following a link: the model may swap a
        # directory for one after its path was resolved (tasks/agents/nofollow.py).
        target = dest if Path(source).is_dir() else dest / self.spec.entry.partition(":")[0]
        try:
            copy_below(self.root, Path(source), target)
        except Moved:
            shutil.rmtree(dest, ignore_errors=True)
            raise
        _read_only(dest)
        return dest

    def _key(self) -> bytes | None:
        try:
            return self.key_path.read_bytes() or None
        except OSError:
            return None

    def _sign(self, name: str, verdict_sha: str, candidate_sha: str) -> str | None:
        key = self._key()
        if key is None:
            return None
        message = f"{name}:{verdict_sha}:{self.oracle_sha256}:{candidate_sha}".encode()
        return hmac.new(key, message, hashlib.sha256).hexdigest()[:RECEIPT_CHARS]

    @staticmethod
    def verdict_sha(result: CandidateResult) -> str:
        """The hash of a result as the record holds it (canonical JSON, not a file's layout)."""
        return sha256_bytes(result.model_dump_json().encode())

    def record(self, result: CandidateResult, changed: str, expected: str) -> dict:
        """Receipt for the result the check function returned (the Evaluator saved it under
        results/); the result itself is held as the record of this lane; commit it."""
        with self._lock:
            name = result.candidate.name
            saved = sorted((self.lane_dir / "results").glob(f"*-{name}.json"))[-1]
            verdict_sha = self.verdict_sha(result)
            candidate_sha = tree_sha(Path(result.candidate.path))
            receipt = self._sign(name, verdict_sha, candidate_sha)
            if receipt is None:
                raise RuntimeError(f"the lane's receipt key {self.key_path} is gone")
            self._held[receipt] = result
            v = result.verdict
            measured = v.status.value + (f" {v.speedup:.3f}x" if v.speedup is not None else "")
            row = [str(self.checked() + 1), name, changed, expected, measured, receipt]
            cells = [c.replace("|", "/").replace("\n", " ")[:200] for c in row]
            with open(self.root / "ITERATIONS.md", "a") as f:
                f.write("| " + " | ".join(cells) + " |\n")
            entry = {
                "receipt": receipt,
                "candidate": name,
                "result_file": str(saved),
                "verdict_sha256": verdict_sha,
                "oracle_sha256": self.oracle_sha256,
                "candidate_sha256": candidate_sha,
                "changed": cells[2],  # what the model said it changed (a note, for memory)
            }
            message = f"check {row[0]} {name}: {measured} (receipt {receipt})\n\n"
            message += f"changed: {changed}\nexpected: {expected}\n"
            entry["commit"] = self.commit(message)
            self._entries.append(entry)
            write_json(self.receipts_path, {"receipts": self._entries})
            return entry

    def verify(self, receipt: str | None, candidate: str | None = None) -> CandidateResult | None:
        """The verdict a receipt stands for, from the record; None if it does not match
        (unknown receipt, another candidate, a verdict file, receipt or snapshot changed since,
        a receipt not made with this lane's key)."""
        if not isinstance(receipt, str):
            return None
        held = self._held.get(receipt)
        if held is not None:  # this lane's own run: what the check function returned
            if candidate is not None and held.candidate.name != candidate:
                return None
            path = Path(held.candidate.path)
            entry = next((e for e in self.receipts() if e["receipt"] == receipt), None)
            if entry is not None and tree_sha(path) != entry["candidate_sha256"]:
                return None
            return held
        for entry in self.receipts():
            if entry["receipt"] != receipt:
                continue
            if candidate is not None and entry["candidate"] != candidate:
                return None
            return self._from_disk(entry)
        return None

    def _from_disk(self, entry: dict) -> CandidateResult | None:
        """A receipt's verdict read back from the saved file, re-hashed and re-signed."""
        saved = Path(entry["result_file"])
        try:
            result = CandidateResult.model_validate_json(saved.read_text())
        except (OSError, ValueError):
            return None
        if result.candidate.name != entry["candidate"]:
            return None
        verdict_sha = self.verdict_sha(result)
        candidate_sha = tree_sha(Path(result.candidate.path))
        signed = self._sign(entry["candidate"], verdict_sha, candidate_sha)
        if signed is None or not hmac.compare_digest(signed, str(entry["receipt"])):
            return None
        if result.verdict.oracle_sha256 not in ("", self.oracle_sha256):
            return None
        return result

    def results(self) -> list[CandidateResult]:
        """Every checked candidate, from the record: in the lane's own run the results its
        checks returned, later the saved ones whose receipts still match."""
        if self._held:
            return list(self._held.values())
        found = [self.verify(e["receipt"]) for e in self.receipts()]
        return [r for r in found if r is not None]

    def best(self) -> CandidateResult | None:
        passed = [r for r in self.results() if r.verdict.passed and r.verdict.speedup]
        return max(passed, key=lambda r: r.verdict.speedup, default=None)

    def patch(self, result: CandidateResult) -> str:
        """Unified diff of a candidate against the input kernel's sources."""
        return candidate_diff(self.task_dir, self.spec, result)

    def ref(self, name: str, path: Path, language: str, mode: str, origin: str) -> CandidateRef:
        return CandidateRef(name=name, language=language, mode=mode, path=str(path), origin=origin)


def candidate_diff(task_dir: Path, spec: OpSpec, result: CandidateResult) -> str:
    """Unified diff of a candidate (a file or a directory) against the input kernel's sources,
    the oracle's reference left out."""
    import difflib

    src = Path(task_dir) / "baseline_src"
    cand = Path(result.candidate.path)
    entry = spec.entry.partition(":")[0]

    def files(root: Path) -> set[str]:
        return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}

    names = files(src) | ({entry} if cand.is_file() else files(cand))
    lines = []
    for name in sorted(names - Workspace.reference_of(spec)):
        if "__pycache__" in name or name.endswith(".pyc"):
            continue
        a = src / name
        b = cand if cand.is_file() and name == entry else cand / name
        old = a.read_text(errors="replace").splitlines(True) if a.is_file() else []
        new = b.read_text(errors="replace").splitlines(True) if b.is_file() else []
        lines += difflib.unified_diff(old, new, f"input/{name}", f"{result.candidate.name}/{name}")
    return "".join(lines)

"""The lane workspace: where a model writes candidates, and the ledger of what the harness said.

    lanes/<key>/work/            the workspace (a git repository, one commit per checked candidate)
      TASK.md                    the task sheet (templates/agent_task.md.j2)
      oracle/                    spec.json and the incumbent's sources, read-only; the oracle's
                                 reference file (when it is not the incumbent) is not copied
      knowledge/                 the cards that fit the language and architecture, read-only
      starts/                    earlier winning variants of the same op, read-only
      candidates/                the model's (optimize: candidates/incumbent/ is a copy to edit)
      ITERATIONS.md              one row per checked candidate, written by the flow
    lanes/<key>/snapshots/NNN-<name>/   what was checked, frozen at the moment of the check
    lanes/<key>/receipts.json           one receipt per check: hashes of verdict, oracle, candidate

A receipt binds a verdict file on disk to the oracle and to the candidate's bytes; a number in a
role's answer counts only when its receipt matches (`verify`), and the lane's candidates are
read back from the verdict files, never from the model.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import stat
import threading
from pathlib import Path

import git

from scripts import manifest
from scripts.spec import OpSpec
from tasks.models import CandidateRef, CandidateResult
from tasks.render import render
from tasks.run_store import read_json, write_json

READ_ONLY_TOP = ("oracle", "knowledge", "starts", "TASK.md", "ITERATIONS.md", "bin", ".git")
IGNORE = ".home/\n.tmp/\n__pycache__/\n*.pyc\n"


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


class Workspace:
    def __init__(self, root: Path, lane_dir: Path, task_dir: Path, spec: OpSpec, oracle: str):
        self.root = Path(root).resolve()
        self.lane_dir = Path(lane_dir).resolve()
        self.task_dir = Path(task_dir).resolve()
        self.spec = spec
        self.oracle_sha256 = oracle
        self.receipts_path = self.lane_dir / "receipts.json"
        self.snapshots = self.lane_dir / "snapshots"
        self._lock = threading.Lock()
        self.repo = git.Repo(self.root) if (self.root / ".git").is_dir() else None

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
            for p in [root, *root.rglob("*")]:
                if p.is_dir() and not p.is_symlink():
                    p.chmod(0o755)
            shutil.rmtree(root)
        root.mkdir(parents=True)
        ws = cls(root, lane_dir, task_dir, spec, oracle)
        for stale in (ws.receipts_path,):
            stale.unlink(missing_ok=True)
        if ws.snapshots.exists():
            shutil.rmtree(ws.snapshots)
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
        (ws.root / "TASK.md").write_text(render("agent_task.md.j2", **sheet))
        (ws.root / "ITERATIONS.md").write_text(
            "# Iterations\n\n| # | candidate | changed | expected | measured | receipt |\n"
            "| --- | --- | --- | --- | --- | --- |\n"
        )
        (ws.root / ".gitignore").write_text(IGNORE)
        for top in ("oracle", "knowledge", "starts"):
            if (ws.root / top).exists():
                _read_only(ws.root / top)
        ws.repo = git.Repo.init(ws.root)
        with ws.repo.config_writer() as config:
            config.set_value("user", "name", "kernel-bakeoff lane")
            config.set_value("user", "email", "lane@kernel-bakeoff.invalid")
            config.set_value("commit", "gpgsign", "false")
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
        self.repo.git.add("-A")
        self.repo.index.commit(message)
        return self.repo.head.commit.hexsha

    def history(self) -> list[str]:
        return [c.message.splitlines()[0] for c in self.repo.iter_commits()][::-1]

    # -- checks and receipts ------------------------------------------------------------------

    def receipts(self) -> list[dict]:
        return (read_json(self.receipts_path) or {}).get("receipts", [])

    def checked(self) -> int:
        return len(self.receipts())

    def unique_name(self, wanted: str) -> str:
        taken = {r["candidate"] for r in self.receipts()}
        name, n = safe_name(wanted), 2
        while name in taken:
            name, n = f"{safe_name(wanted)}-{n}", n + 1
        return name

    def snapshot(self, source: Path, name: str) -> Path:
        """Copy what is about to be checked out of the model's reach."""
        dest = self.snapshots / f"{self.checked():03d}-{name}"
        if Path(source).is_dir():
            _copy(source, dest)
        else:
            dest.mkdir(parents=True)
            shutil.copyfile(source, dest / self.spec.entry.partition(":")[0])
        _read_only(dest)
        return dest

    def record(self, result: CandidateResult, changed: str, expected: str) -> dict:
        """Receipt for a check whose result the Evaluator saved under results/; commit it."""
        with self._lock:
            name = result.candidate.name
            saved = sorted((self.lane_dir / "results").glob(f"*-{name}.json"))[-1]
            verdict_sha = sha256_bytes(saved.read_bytes())
            candidate_sha = tree_sha(Path(result.candidate.path))
            receipt = sha256_bytes(f"{verdict_sha}:{self.oracle_sha256}:{candidate_sha}".encode())[
                :20
            ]
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
            }
            message = f"check {row[0]} {name}: {measured} (receipt {receipt})\n\n"
            message += f"changed: {changed}\nexpected: {expected}\n"
            entry["commit"] = self.commit(message)
            receipts = self.receipts() + [entry]
            write_json(self.receipts_path, {"receipts": receipts})
            return entry

    def verify(self, receipt: str | None, candidate: str | None = None) -> CandidateResult | None:
        """The verdict a receipt stands for, re-read and re-hashed from disk; None if it does
        not match (unknown receipt, other candidate, a verdict file or snapshot changed since)."""
        for entry in self.receipts():
            if entry["receipt"] != receipt:
                continue
            if candidate is not None and entry["candidate"] != candidate:
                return None
            saved = Path(entry["result_file"])
            if not saved.is_file() or sha256_bytes(saved.read_bytes()) != entry["verdict_sha256"]:
                return None
            result = CandidateResult.model_validate_json(saved.read_text())
            if result.verdict.oracle_sha256 not in ("", self.oracle_sha256):
                return None
            if tree_sha(Path(result.candidate.path)) != entry["candidate_sha256"]:
                return None
            return result
        return None

    def results(self) -> list[CandidateResult]:
        """Every checked candidate, read back from its verdict file through its receipt."""
        found = [self.verify(e["receipt"]) for e in self.receipts()]
        return [r for r in found if r is not None]

    def best(self) -> CandidateResult | None:
        passed = [r for r in self.results() if r.verdict.passed and r.verdict.speedup]
        return max(passed, key=lambda r: r.verdict.speedup, default=None)

    def patch(self, result: CandidateResult) -> str:
        """Unified diff of a candidate against the input kernel's sources."""
        import difflib

        src = self.task_dir / "baseline_src"
        cand = Path(result.candidate.path)
        lines = []
        names = {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()}
        names |= {p.relative_to(cand).as_posix() for p in cand.rglob("*") if p.is_file()}
        for name in sorted(names - self.reference_files()):
            if "__pycache__" in name:
                continue
            a, b = src / name, cand / name
            old = a.read_text(errors="replace").splitlines(True) if a.is_file() else []
            new = b.read_text(errors="replace").splitlines(True) if b.is_file() else []
            lines += difflib.unified_diff(
                old, new, f"input/{name}", f"{result.candidate.name}/{name}"
            )
        return "".join(lines)

    def ref(self, name: str, path: Path, language: str, mode: str, origin: str) -> CandidateRef:
        return CandidateRef(name=name, language=language, mode=mode, path=str(path), origin=origin)

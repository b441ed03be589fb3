"""What earlier searches learned, per op (oracle hash), device (arch) and language: a small JSON
store, one file per triple, holding each config's best score. Warm starts read the best ones.

A score here is the geometric mean of median ms (`tasks.search.score.geomean_ms`), lower is
better, never a speedup: the oracle hash leaves out the baseline's timings, so speedups from two
freezes of one oracle divide by different figures while ms compare."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from kernel_bakeoff.tasks.search.space import key


class History:
    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, oracle: str, arch: str, language: str) -> Path:
        return self.root / f"{oracle[:16]}__{arch}__{language}.json"

    def load(self, oracle: str, arch: str, language: str) -> list[dict]:
        p = self.path(oracle, arch, language)
        if not p.is_file():
            return []
        try:
            data = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            return []  # a damaged store costs a warm start, nothing else
        if data.get("oracle_sha256") != oracle or data.get("arch") != arch:
            return []
        return [e for e in data.get("entries", []) if isinstance(e.get("config"), dict)]

    def best(self, oracle: str, arch: str, language: str, k: int = 3) -> list[dict]:
        scored = [e for e in self.load(oracle, arch, language) if e.get("score") is not None]
        return [e["config"] for e in sorted(scored, key=lambda e: e["score"])[:k]]

    def record(
        self, oracle: str, arch: str, language: str, results: list[tuple[dict, float | None]]
    ):
        """Merge (config, score) pairs in, keeping each config's best score; atomic write."""
        entries = {key(e["config"]): e for e in self.load(oracle, arch, language)}
        now = time.strftime("%Y-%m-%dT%H:%M:%S")
        for config, score in results:
            old = entries.get(key(config))
            if old is None or (
                score is not None and (old["score"] is None or score < old["score"])
            ):
                entries[key(config)] = {"config": config, "score": score, "when": now}
        data = {
            "oracle_sha256": oracle,
            "arch": arch,
            "language": language,
            "entries": sorted(
                entries.values(), key=lambda e: (e["score"] is None, e["score"] or 0)
            ),
        }
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.root, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path(oracle, arch, language))

"""A sha256 manifest over a frozen task directory; checked before every use."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from kernel_bakeoff.scripts.errors import BadInput

MANIFEST = "MANIFEST.json"


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(root: Path, every: bool = False) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if every or (p.name != MANIFEST and not name.endswith(".pyc")):
                out.append(p)
    return out


def build(root: Path, every: bool = False) -> dict[str, str]:
    """sha256 of each file under `root` by relative path; __pycache__ never, and with `every`
    False (a frozen task) neither MANIFEST.json nor .pyc files."""
    root = Path(root)
    return {p.relative_to(root).as_posix(): _digest(p) for p in _files(root, every)}


def files_of(path: Path, every: bool = False) -> dict[str, str]:
    """`build` for a directory; a single file's sha256 under its own name."""
    path = Path(path)
    return build(path, every) if path.is_dir() else {path.name: _digest(path)}


def cache_key(payload, chars: int | None = None) -> str:
    """The one way a key is made of what decides a result: sha256 of `payload` as JSON with
    sorted keys (first `chars` hex digits). Files go in as `files_of` gives them, with the
    settings and the code version beside, so equal keys mean the same result (the oracle hash,
    the lane and Discover caches, a check's identity, an interrupted Discover's fingerprints)."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:chars]


IDENTITY = ("baseline_src/", "spec.json")


def oracle_hash(files: dict[str, str]) -> str:
    """Hash of what defines the oracle (sources and spec), not of measurements that vary per run."""
    return cache_key({k: v for k, v in files.items() if k.startswith(IDENTITY)})


def write(root: Path) -> str:
    """Write the manifest, make everything read-only, and return the oracle hash."""
    root = Path(root)
    files = build(root)
    oracle = oracle_hash(files)
    (root / MANIFEST).write_text(
        json.dumps({"oracle_sha256": oracle, "files": files}, indent=1, sort_keys=True) + "\n"
    )
    no_write = ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    for p in _files(root) + [root / MANIFEST]:
        p.chmod(p.stat().st_mode & no_write)
    for dirpath, _, _ in os.walk(root, topdown=False):
        Path(dirpath).chmod(Path(dirpath).stat().st_mode & no_write)
    return oracle


def read(root: Path) -> dict:
    """The manifest of `root` as written, or BadInput saying why it cannot be one (missing,
    truncated, not JSON, fields of the wrong kind)."""
    root = Path(root)
    mpath = root / MANIFEST
    if not mpath.is_file():
        raise BadInput(
            str(root), "not a frozen task directory (no MANIFEST.json); run `bakeoff freeze` first"
        )
    try:
        recorded = json.loads(mpath.read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadInput(
            str(mpath), f"not a manifest (unreadable JSON: {exc}); freeze again"
        ) from None
    files = recorded.get("files") if isinstance(recorded, dict) else None
    oracle = recorded.get("oracle_sha256") if isinstance(recorded, dict) else None
    if not (
        isinstance(files, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
        and isinstance(oracle, str)
    ):
        raise BadInput(
            str(mpath), "not a manifest (needs 'files' and 'oracle_sha256'); freeze again"
        )
    return recorded


def verify(root: Path) -> str:
    """Return the oracle hash, re-derived from the files as they are now, or raise BadInput
    naming the first file that changed (the manifest itself included: its recorded oracle id
    must be the one its file digests give)."""
    root = Path(root)
    recorded = read(root)
    now = build(root)
    for name, digest in recorded["files"].items():
        if name not in now:
            raise BadInput(
                str(root / name), "frozen file is missing: the oracle was changed; freeze again"
            )
        if now[name] != digest:
            raise BadInput(
                str(root / name), "frozen file was modified: the oracle was changed; freeze again"
            )
    extra = sorted(set(now) - set(recorded["files"]))
    if extra:
        raise BadInput(
            str(root / extra[0]), "file added after freezing: the oracle was changed; freeze again"
        )
    oracle = oracle_hash(now)
    if recorded["oracle_sha256"] != oracle:
        raise BadInput(
            str(root / MANIFEST),
            "its oracle_sha256 is not the one its files give: the manifest was changed; "
            "freeze again",
        )
    return oracle

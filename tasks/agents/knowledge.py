"""Knowledge cards: the curated ones that fit a lane, and the learned ones that grow on wins.

A card is markdown with a front matter of `key: value` lines between `---` lines: `languages`
and `archs` (comma-separated, or `any`), `topics`. `knowledge/learned/` is ADD-only: one card
per measured win (a file is never overwritten), ratios and no wall-clock times, and beside it
`archive/<op>/<receipt>/` keeps the winning variant's sources with its lessons, the starting
points of later lanes of the same op.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kernel_bakeoff.tasks.agents.outputs import LearnedCard

ROOT = Path(__file__).resolve().parents[2]
KNOWLEDGE = ROOT / "knowledge"
FAMILIES = {"sm_90": "hopper", "sm_100": "blackwell", "gfx942": "cdna3", "gfx950": "cdna4"}


def front_matter(path: Path) -> dict[str, list[str]]:
    lines = Path(path).read_text().splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    meta = {}
    for line in lines[1:]:
        if line.strip() == "---":
            break
        key, _, value = line.partition(":")
        meta[key.strip()] = [v.strip().lower() for v in value.split(",") if v.strip()]
    return meta


def _fits(meta: dict, language: str, arch: str) -> bool:
    langs, archs = meta.get("languages", ["any"]), meta.get("archs", ["any"])
    if "any" not in langs and language.lower() not in langs:
        return False
    if arch == "cpu":  # a development box: the language's cards for every architecture
        return True
    return "any" in archs or arch in archs or FAMILIES.get(arch, "") in archs


def learned_dir(setting: str | None) -> Path:
    return Path(setting) if setting else KNOWLEDGE / "learned"


def cards_for(language: str, arch: str, learned: Path, op: str | None = None) -> list[Path]:
    """Curated cards that fit the lane's language and architecture, then the learned ones."""
    curated = [p for p in sorted(KNOWLEDGE.glob("*.md")) if p.name != "README.md"]
    found = [p for p in curated if _fits(front_matter(p), language, arch)]
    for p in sorted(q for q in Path(learned).glob("*.md") if q.name != "README.md"):
        meta = front_matter(p)
        if _fits(meta, language, arch) or (op and op.lower() in meta.get("op", [])):
            found.append(p)
    return found


def starts_for(op: str, learned: Path) -> list[Path]:
    """Earlier winning variants of the same op (the reference archive), newest last."""
    archive = Path(learned) / "archive" / op
    return sorted(p for p in archive.glob("*") if p.is_dir()) if archive.is_dir() else []


def write_card(
    learned: Path,
    card: LearnedCard,
    *,
    op: str,
    kind: str,
    language: str,
    arch: str,
    receipt: str,
    ratios: dict[str, float | None],
    overall: float,
    source: Path,
    memory: dict | None = None,
) -> Path:
    """Add one learned card and archive the variant; never overwrite what is there. `memory`:
    the lane's memory across rounds (tasks/agents/memory.py), kept in the archive entry."""
    learned = Path(learned)
    learned.mkdir(parents=True, exist_ok=True)
    path = learned / f"{op}-{language}-{arch}-{receipt}.md"
    ratio_lines = [f"- {name}: {r:.3f}x" for name, r in ratios.items() if r is not None]
    body = [
        "---",
        f"languages: {language}",
        f"archs: {arch}",
        f"op: {op}",
        f"topics: {kind}",
        f"receipt: {receipt}",
        "---",
        f"# {card.title}",
        "",
        f"Variant: {card.identity}",
        f"Change against the input: {card.delta}",
        f"Measured by the harness (speedup over the frozen input, {arch}): {overall:.3f}x overall",
        *ratio_lines,
        "",
        "## Lessons",
        *[f"- {x}" for x in card.lessons],
    ]
    for title, items in (
        ("Pitfalls met", card.pitfalls),
        ("Dead ends", card.dead_ends),
        ("Open directions", card.open_directions),
    ):
        if items:
            body += ["", f"## {title}", *[f"- {x}" for x in items]]
    with open(path, "x") as f:  # ADD-only
        f.write("\n".join(body) + "\n")
    archived = learned / "archive" / op / receipt
    if not archived.exists():
        shutil.copytree(source, archived, ignore=shutil.ignore_patterns("__pycache__"))
        for p in [archived, *archived.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        lessons = card.model_dump() | {"ratios": ratios, "overall": overall, "language": language}
        if memory:  # each round's lessons and next ideas, and the dead ends, as the lane kept them
            lessons["lane_memory"] = {k: memory.get(k) for k in ("rounds", "dead_ends")}
        (archived / "LESSONS.json").write_text(json.dumps(lessons, indent=1) + "\n")
    return path

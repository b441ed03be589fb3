"""A two-round campaign on a real Prefect server: one frozen baseline for both rounds, the
second round's lanes seeded with the first round's best variant, the ledger in the run
directory saying whether each round improved."""

import json
import os
from pathlib import Path

import pytest

from .campaign_doubles import SEEN

pytestmark = pytest.mark.slow


def test_second_round_starts_from_the_first_rounds_best(campaign_run):
    root, final = campaign_run
    ledger = json.loads((root / "campaign.json").read_text())
    first, second = ledger["rounds"]
    assert first["seed"] is None and first["best"] and first["improved"]
    best = first["best"]
    assert best["round"] == 1 and best["name"].startswith("torch-lean")

    seen = [
        json.loads((root / "rounds" / n / "lanes/torch/work" / SEEN).read_text())
        for n in ("01", "02")
    ]
    assert "name" not in seen[0] and seen[0]["history_dir"] == str(root / "search-history")
    assert (seen[1]["name"], seen[1]["path"], seen[1]["round"]) == (best["name"], best["path"], 1)
    assert second["seed"]["name"] == best["name"]

    # both rounds timed against the one frozen baseline
    for n in ("01", "02"):
        link = root / "rounds" / n / "task"
        assert link.is_symlink() and link.resolve() == (root / "task").resolve()
    if not second["improved"]:
        assert "did not improve" in second["note"] and ledger["best"]["round"] == 1
    else:
        assert ledger["best"]["round"] == 2
    assert "did not improve" in (root / "campaign.md").read_text() or second["improved"]
    assert Path(final.run_dir).parent == root / "rounds"
    assert os.path.isfile(root / "archive.json")


def test_a_round_that_does_not_beat_the_best_by_its_spread_says_so():
    from kernel_bakeoff.tasks.campaign import RoundEntry, Variant, improves, note_for

    def variant(speedup, margin, round_no):
        return Variant(
            op="op",
            oracle_sha256="o",
            arch="cpu",
            name=f"v{round_no}",
            language="torch",
            mode="optimize",
            path="/p",
            speedup=speedup,
            margin=margin,
            round=round_no,
        )

    best = variant(1.50, 0.05, 1)
    assert improves(variant(1.60, 0.05, 2), best)  # 1.60 > 1.50 * 1.05
    within = variant(1.55, 0.05, 2)
    assert not improves(within, best)  # faster, but not beyond its own spread
    note = note_for(RoundEntry(round=2, run_dir="r", best=within, improved=False), best)
    assert note.startswith("did not improve") and "round 1" in note
    empty = note_for(RoundEntry(round=2, run_dir="r"), best)
    assert "did not improve" in empty
    assert improves(variant(0.9, 0.1, 1), None)  # the first best is whatever round 1 found

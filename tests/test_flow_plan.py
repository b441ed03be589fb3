"""Which lanes a request gets, what is refused before anything starts, and who may win."""

import json
import shutil

import pytest

from kernel_bakeoff.flows.opening import validate
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.verdict import Status, Timing, Verdict, WorkloadVerdict
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult, DiscoverPlan, PlanEntry
from kernel_bakeoff.tasks.models.request import parse_request, resolve_lanes
from kernel_bakeoff.tasks.models.run import LaneResult, Review
from kernel_bakeoff.tasks.report.ranking import rank

from .conftest import EXAMPLES


def plan(*entries):
    return DiscoverPlan(baseline_ms={"w": 1.0}, plan=[PlanEntry(**e) for e in entries])


def keys(lanes):
    return [(lane.key, lane.language, lane.mode) for lane in lanes]


def test_input_language_always_competes_first_and_backends_only_add():
    p = plan({"language": "cuda", "mode": "author"})
    lanes, _ = resolve_lanes("triton", "bakeoff", backends=["hip", "triton"], plan=p)
    assert keys(lanes) == [("triton", "triton", "optimize"), ("hip", "hip", "author")]
    lanes, _ = resolve_lanes("Triton", "bakeoff", backends=["cuda"], plan=p)
    assert keys(lanes)[0] == ("triton", "triton", "optimize")


def test_backend_takes_its_mode_from_the_plan():
    p = plan({"language": "hip", "mode": "optimize"})
    lanes, _ = resolve_lanes("triton", "bakeoff", backends=["hip"], plan=p)
    assert keys(lanes)[1] == ("hip", "hip", "optimize")


def test_plan_decides_without_backends_deduplicated_with_mode_keys():
    p = plan(
        {"language": "triton", "mode": "author"},
        {"language": "triton", "mode": "optimize"},
        {"language": "hip", "mode": "author"},
        {"language": "hip", "mode": "author"},
    )
    lanes, warnings = resolve_lanes("triton", "bakeoff", plan=p)
    assert keys(lanes) == [
        ("triton_optimize", "triton", "optimize"),
        ("triton_author", "triton", "author"),
        ("hip", "hip", "author"),
    ]
    assert warnings == []


def test_plan_entry_without_language_is_the_inputs_with_a_warning():
    p = plan({"mode": "author"}, {"language": " ", "mode": "author"})
    lanes, warnings = resolve_lanes("torch", "bakeoff", plan=p)
    assert keys(lanes) == [
        ("torch_optimize", "torch", "optimize"),
        ("torch_author", "torch", "author"),
    ]
    assert len(warnings) == 1 and "2 Discover plan entries" in warnings[0]
    assert "'torch'" in warnings[0]


def test_single_lane_modes():
    assert keys(resolve_lanes("torch", "optimize")[0]) == [("torch", "torch", "optimize")]
    lanes, _ = resolve_lanes("torch", "author", target_language="triton")
    assert keys(lanes) == [("triton", "triton", "author")]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"mode": "turbo"}, "mode: unknown mode 'turbo'"),
        ({"backends": ["fortran"]}, "backends: unknown backend 'fortran'"),
        ({"target_language": "cobol"}, "target_language: unknown backend 'cobol'"),
        ({"budget": 0}, "budget: must be at least 1, got 0"),
        ({"gpu_ids": ["97"]}, "gpu_ids: device 97 does not exist"),
        ({"gpu_mode": "spread"}, "gpu_mode: unknown gpu_mode 'spread'; use pool or pin"),
        ({"dispatch": "carrier-pigeon"}, "dispatch: unknown dispatch"),
        ({"kernel_path": "no/such/kernel"}, "no/such/kernel: no such file or directory"),
    ],
)
def test_bad_requests_are_refused_with_one_line(change, message):
    fields = {"kernel_path": str(EXAMPLES / "rmsnorm_torch"), **change}
    with pytest.raises(BadInput) as info:  # the field's own check, or the host's (validate)
        validate(parse_request(fields))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_good_request_is_normalised():
    req = validate(
        parse_request(
            {
                "kernel_path": str(EXAMPLES / "rmsnorm_torch"),
                "mode": " BakeOff",
                "backends": ["Triton"],
            }
        )
    )
    assert req.mode == "bakeoff" and req.backends == ["triton"]


# --- ranking -----------------------------------------------------------------------------


def timing(median, spread):
    return Timing(
        clock="host",
        sample_count=10,
        median_ms=median,
        min_ms=median,
        max_ms=median + spread,
        spread_ms=spread,
        samples_ms=[median] * 10,
    )


def result(name, speedup, status=Status.PASSED, spread=0.01, mode="optimize", lang="torch"):
    if status is not Status.PASSED:
        verdict = Verdict(
            candidate=name, oracle_sha256="x", device="cpu", status=status, reason="r"
        )
    else:
        wls = [
            WorkloadVerdict(
                workload=w,
                status=status,
                timing=timing(1.0 / speedup, spread / speedup),
                baseline_ms=1.0,
                speedup=speedup,
            )
            for w in ("a", "b")
        ]
        verdict = Verdict(
            candidate=name,
            oracle_sha256="x",
            device="cpu",
            status=status,
            workloads=wls,
            speedup=speedup,
        )
    ref = CandidateRef(name=name, language=lang, mode=mode, path=f"/runs/{name}")
    return CandidateResult(candidate=ref, verdict=verdict)


def lane(key, results, review, status="completed"):
    return LaneResult(
        key=key,
        language=key,
        mode="optimize",
        status=status,
        reason="" if status == "completed" else "reviewer: no valid answer",
        cache_key="k",
        candidates=results,
        review=review,
    )


@pytest.fixture
def task_dir(tmp_path):
    """A task directory's baseline.json and spec.json: 1 ms per workload, 2% spread."""
    shutil.copy(EXAMPLES / "rmsnorm_torch" / "op.toml", tmp_path / "op.toml")
    samples = [0.99, 1.0, 1.0, 1.01] * 5
    baseline = {"workloads": {w: {"median_ms": 1.0, "samples_ms": samples} for w in ("a", "b")}}
    (tmp_path / "baseline.json").write_text(json.dumps(baseline))
    spec = {"name": "rmsnorm", "entry": "kernel.py:rmsnorm", "language": "torch"}
    (tmp_path / "spec.json").write_text(
        json.dumps({**spec, "workloads": [{"name": "a"}, {"name": "b"}]})
    )
    return tmp_path


def test_only_an_accepted_candidate_beyond_the_spread_wins(task_dir):
    lanes = [
        lane(
            "torch",
            [result("t-fast", 1.5), result("t-slow", 1.2)],
            Review(candidate="t-fast", decision="accepted"),
        ),
        lane(
            "triton",
            [result("tr-flagged", 3.0)],
            Review(candidate="tr-flagged", decision="flagged", reasons=["spread"]),
        ),
        lane(
            "hip",
            [result("hip-wrong", 9.0, Status.INCORRECT_NUMERICAL)],
            Review(candidate=None, decision="nothing-to-review"),
        ),
        lane("cuda", [result("cuda-fast", 4.0)], None, status="failed"),
    ]
    rows, winner = rank(lanes, None, task_dir)
    by_name = {r.name: r for r in rows}
    assert winner is not None and winner.name == "t-fast" and winner.status == "winner"
    assert by_name["tr-flagged"].status == "flagged"
    assert by_name["hip-wrong"].status == "INCORRECT_NUMERICAL"
    assert by_name["cuda-fast"].status == "lane-failed"
    assert by_name["t-slow"].status == "passed"
    # every candidate: figures that stand, fastest first, then doubted ones, then failures
    assert [r.name for r in rows] == ["t-fast", "t-slow", "cuda-fast", "tr-flagged", "hip-wrong"]
    assert by_name["t-fast"].speedups == pytest.approx({"a": 1.5, "b": 1.5})


def test_no_winner_when_the_best_is_within_the_spread(task_dir):
    noisy = result("noisy", 1.05, spread=0.2)
    rows, winner = rank(
        [lane("torch", [noisy], Review(candidate="noisy", decision="accepted"))], None, task_dir
    )
    assert winner is None
    assert rows[0].status == "within-spread" and rows[0].margin > 0.05


def test_a_steadier_candidate_of_the_lane_wins_when_the_accepted_one_is_within_the_spread(
    task_dir,
):
    wobbly, steady = result("wobbly", 1.2, spread=0.2), result("steady", 1.15)
    review = Review(candidate="wobbly", decision="accepted")
    rows, winner = rank([lane("torch", [wobbly, steady], review)], None, task_dir)
    by_name = {r.name: r for r in rows}
    assert by_name["wobbly"].status == "within-spread"
    assert winner is not None and winner.name == "steady"
    assert "wobbly, the reviewed one, did not beat the spread" in winner.detail
    flagged = Review(candidate="wobbly", decision="flagged", reasons=["spread"])
    _, none = rank([lane("torch", [wobbly, steady], flagged)], None, task_dir)
    assert none is None  # only a lane whose reviewer accepted something falls back


def test_reviewer_passes_over_a_noisy_fastest_candidate_to_a_clean_one(task_dir):
    from kernel_bakeoff.tasks.check.judgement import review_candidates

    noisy, clean, slow = result("noisy", 3.0, spread=1.0), result("clean", 2.0), result("slow", 1.5)
    review = review_candidates([slow, noisy, clean])
    assert review.decision == "accepted" and review.candidate == "clean"
    assert list(review.flagged) == ["noisy"] and "busy or unstable" in review.flagged["noisy"][0]

    rows, winner = rank([lane("torch", [slow, noisy, clean], review)], None, task_dir)
    by_name = {r.name: r for r in rows}
    assert winner is not None and winner.name == "clean"
    assert by_name["noisy"].status == "flagged" and by_name["slow"].status == "passed"


def test_reviewer_flags_when_every_passed_candidate_is_noisy():
    from kernel_bakeoff.tasks.check.judgement import review_candidates

    review = review_candidates([result("n1", 3.0, spread=1.0), result("n2", 2.0, spread=1.0)])
    assert review.decision == "flagged" and review.candidate == "n1"
    assert set(review.flagged) == {"n1", "n2"}

"""The judge apart from the candidate (tests/corpus/judge/): the ways a candidate once turned a
bad answer into a good number, each tried for real through the product's check paths, each
refused. As root here (the box runs as nobody); `test_the_corpus_as_an_ordinary_user` in
tests/test_box_hostile.py runs the verdict writer and the clock forger as an ordinary user.
"""

from functools import partial
from pathlib import Path

import pytest

from kernel_bakeoff.scripts import isolation, judge_clock, tensorfile, untrusted_file
from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.freeze import freeze, measure_baseline
from kernel_bakeoff.scripts.protocol import SavedTensor
from kernel_bakeoff.scripts.verdict import Status
from kernel_bakeoff.tasks.check.evaluate import evaluate
from kernel_bakeoff.tasks.models.plan import CandidateRef

from .conftest import ROOT, run_cli

CORPUS = ROOT / "tests" / "corpus" / "judge"
HONEST = ROOT / "tests" / "corpus" / "honest" / "rounding.py"
SMALL = {"samples": 5, "warmup": 1, "trials": 1}

boxed = pytest.mark.skipif(
    isolation.refusal() is not None, reason=f"no box here: {isolation.refusal()}"
)


@pytest.fixture(scope="module")
def task(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("judge") / "task"
    measure = partial(measure_baseline, samples=5, warmup=1, trials=1)
    return freeze(ROOT / "tests" / "corpus" / "rmsnorm_op", out, measure=measure)


@boxed
def test_a_verdict_writer_reaches_nothing_of_the_judge(task, tmp_path):
    """Through the evaluator a lane uses (whose retry once went to a weaker judge)."""
    ref = CandidateRef(
        name="writer", language="torch", mode="optimize", path=str(CORPUS / "verdict_writer.py")
    )
    result = evaluate.fn(str(task), ref, {}, 120.0, 5, str(tmp_path / "work"))
    verdict = result.verdict
    assert verdict.status not in (Status.PASSED, Status.HARNESS_ERROR), verdict.reason
    assert "PLANTED" in verdict.output_tail, verdict.output_tail
    # What it wrote above its scratch directory landed in its box's own tmpfs: on the host,
    # the judge's work directory and everything above it hold none of it.
    for name in ("shlex.py", "cProfile.py", ".verdict.json.tmp", "sitecustomize.py"):
        for where in (tmp_path / "work" / "first", tmp_path / "work", tmp_path, Path("/tmp")):
            assert not (where / name).exists(), where / name


@boxed
def test_a_forged_clock_is_caught_by_the_judges_own(task):
    """`bakeoff check`: correct, 10 ms of sleep a call, samples shrunk to 0.01 ms at exit."""
    done = run_cli(
        "check", str(task), str(CORPUS / "clock_forger.py"), "--json",
        env={"BAKEOFF_SAMPLES": "5"},
    )  # fmt: skip
    assert '"status": "FLAGGED"' in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert "judge's own clock" in done.stdout


@boxed
def test_an_honest_slow_candidate_is_not_taken_for_a_forger(task):
    slow = CORPUS / "honest_sleeper.py"
    verdict = check(task, slow, timeout_s=120, **SMALL)
    assert verdict.status is Status.PASSED, (verdict.reason, verdict.output_tail)
    timing = verdict.workloads[0].timing
    assert timing.clock_least_ms is not None and timing.median_ms >= 3.0
    assert timing.judge_span_ms > timing.min_ms


@boxed
def test_a_clock_bound_tripped_once_is_judged_again_with_fresh_seeds(task, tmp_path):
    """A loaded host lengthens honest spans too: a check whose only fault is the clock bound
    runs again (scripts/judge.py `run`), and the run that holds is the verdict."""
    verdict = check(
        task, CORPUS / "forges_once.py", cache_dir=tmp_path / "cache", timeout_s=120, **SMALL
    )
    assert verdict.status is Status.PASSED, (verdict.status, verdict.reason)
    assert verdict.harness_phases.get("clock_retries") == 1.0, verdict.harness_phases
    assert all(w.timing.median_ms > 0.01 for w in verdict.workloads if w.timing), verdict


@boxed
def test_the_run_again_starts_fresh_processes_after_two_openmp_threads_judged(tmp_path):
    """A run again forked from the judge after it had judged with OpenMP's threads (a lease's
    OMP_NUM_THREADS=2, a reference large enough to run in parallel): both children hung after
    their hello until the deadline, and an honest candidate came out TIMEOUT (CI, 3608b9c)."""
    measure = partial(measure_baseline, samples=5, warmup=1, trials=1)
    wide = freeze(ROOT / "examples" / "rmsnorm_torch", tmp_path / "task", measure=measure)
    verdict = check(
        wide,
        CORPUS / "forges_once.py",
        cache_dir=tmp_path / "cache",
        timeout_s=60,
        device_env={"OMP_NUM_THREADS": "2"},
        **SMALL,
    )
    # what the run again is for, not its figure: its processes ran to their end (a loaded
    # host may still trip the bound for this 25 ms workload's honest reruns, as CI's did)
    assert verdict.status in (Status.PASSED, Status.FLAGGED), (verdict.status, verdict.reason)
    assert "did not finish" not in (verdict.reason or ""), verdict.reason
    assert verdict.harness_phases.get("clock_retries", 0) >= 1, verdict.harness_phases
    assert verdict.harness_phases["candidate_process_s"] < 50, verdict.harness_phases
    assert all(w.timing.median_ms > 0.01 for w in verdict.workloads if w.timing), verdict


@boxed
def test_ending_a_sample_early_on_the_channel_is_flagged(task):
    verdict = check(task, CORPUS / "early_end.py", timeout_s=120, **SMALL)
    assert verdict.status is Status.FLAGGED, (verdict.status, verdict.reason)


@boxed
def test_a_trapped_results_directory_is_the_candidates_failure(task):
    verdict = check(task, CORPUS / "results_trap.py", timeout_s=120, **SMALL)
    assert verdict.status is Status.FLAGGED, (verdict.status, verdict.reason)
    assert "unusable" in verdict.reason or "altered" in verdict.reason, verdict.reason


@boxed
def test_no_candidate_writes_into_the_baselines_cache_or_a_later_check(
    task, tmp_path, own_compile_caches
):
    base = tmp_path / "compile-cache" / "baseline"
    first = check(
        task,
        CORPUS / "cache_poisoner.py",
        cache_dir=tmp_path / "compile-cache" / "poisoner",
        baseline_cache_dir=base,
        timeout_s=120,
        **SMALL,
    )
    assert first.status is Status.PASSED, (first.reason, first.output_tail)
    reached = [ln for ln in first.output_tail.splitlines() if ln.startswith("POISONED")]
    own = str(tmp_path / "compile-cache" / "poisoner")
    assert reached and reached[0] in ("POISONED []", f"POISONED [{own!r}]"), reached
    assert [p.parent for p in tmp_path.rglob("POISONED")] in ([], [Path(own)])
    after = check(
        task,
        HONEST,
        cache_dir=tmp_path / "compile-cache" / "honest",
        baseline_cache_dir=base,
        timeout_s=120,
        **SMALL,
    )
    assert after.status is Status.PASSED, (after.reason, after.output_tail)


def test_the_dealer_deals_each_sample_once_and_in_order():
    dealer = judge_clock.Dealer([[11, 12], [21]])
    assert dealer.answer("ready 0 1") is None  # before sample 0 ended
    assert dealer.answer("ready 0 0") == (11).to_bytes(8, "little")
    assert dealer.answer("ready 0 0") is None  # a second ask gets nothing
    assert dealer.answer("ready 0 1") is None  # sample 0 has not ended
    assert dealer.answer("done 0 0 [[1, 2, 3, 4]]") is None
    assert dealer.answer("ready 0 1") == (12).to_bytes(8, "little")
    assert dealer.answer("ready 1 0") == (21).to_bytes(8, "little")
    assert dealer.answer("ready 2 0") is None and dealer.answer("ready 1 1") is None


def test_the_least_median_is_half_the_shortest_span_left_after_the_harness():
    part, noise = judge_clock.harness_part([5.0, 5.2, 4.8, 9.0], [1.0, 1.1, 0.9, 1.0])
    assert part == pytest.approx(3.9) and noise == pytest.approx(8.0 - 3.9)
    least = judge_clock.least_median([9.8, 30.0, 31.0], part)
    assert least == pytest.approx(0.5 * (9.8 - 2 * 3.9 - 2.0))


def test_a_saved_dtype_never_reaches_a_lookup_on_torch(tmp_path):
    (tmp_path / "o.bin").write_bytes(b"\0" * 16)
    for dtype in ("_dynamo", "nn", "Tensor", "ops"):
        got = tensorfile.load(tmp_path, SavedTensor(file="o.bin", shape=[4], dtype=dtype))
        assert isinstance(got, str), dtype
    ok = tensorfile.load(tmp_path, SavedTensor(file="o.bin", shape=[4], dtype="float32"))
    assert not isinstance(ok, str) and ok.sum() == 0


def test_untrusted_files_are_read_only_as_regular_files(tmp_path):
    import os

    (tmp_path / "real").write_bytes(b"abc")
    os.symlink(tmp_path / "real", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    assert untrusted_file.read_bytes(tmp_path / "real", 10) == b"abc"
    for name in ("link", "fifo"):
        with pytest.raises(untrusted_file.Unusable):
            untrusted_file.read_bytes(tmp_path / name, 10)
    with pytest.raises(untrusted_file.Unusable, match="more than 2"):
        untrusted_file.read_bytes(tmp_path / "real", 2)


def test_a_checked_path_swapped_for_a_link_is_not_followed(tmp_path):
    """tool_check resolves the model's path, then copies it: a directory swapped for a link in
    between (the model acts in its workspace meanwhile) is refused, not followed."""
    from kernel_bakeoff.tasks.agents.nofollow import Moved, copy_below

    root, outside = tmp_path / "ws", tmp_path / "oracle"
    (root / "candidates" / "a").mkdir(parents=True)
    (root / "candidates" / "a" / "kernel.py").write_text("mine")
    (root / "candidates" / "a" / "escape").symlink_to(outside)
    outside.mkdir()
    (outside / "kernel.py").write_text("the reference")
    copy_below(root, root / "candidates" / "a", tmp_path / "snap")
    assert (tmp_path / "snap" / "kernel.py").read_text() == "mine"
    assert not list((tmp_path / "snap").rglob("kernel.py"))[1:]  # nothing through the link
    (root / "candidates" / "a").rename(root / "candidates" / "b")
    (root / "candidates" / "a").symlink_to(outside)  # the swap after resolving
    with pytest.raises(Moved):
        copy_below(root, root / "candidates" / "a", tmp_path / "snap2")
    with pytest.raises(Moved):
        copy_below(root, root / "candidates" / "a" / "kernel.py", tmp_path / "snap3.py")
    assert not (tmp_path / "snap2" / "kernel.py").exists() and not (tmp_path / "snap3.py").exists()


def test_a_check_flagged_by_the_judges_clocks_alone_is_run_again():
    """The judge runs a check again when its clocks are all that flagged it: its bound on the
    samples, or the back-to-back blocks' wall clock, which a loaded host trips for an honest
    process too (CI at 0f4c983: 4.4 ms a call timed, 16.0 ms seen back to back). A flag of
    another kind (the physical floor, a wrong output) is not run again."""
    from kernel_bakeoff.scripts.judge import _only_the_clock
    from kernel_bakeoff.scripts.timing import wall_problem
    from kernel_bakeoff.scripts.verdict import Timing, Verdict, WorkloadVerdict

    samples = [4.2, 4.4, 4.5, 4.3, 4.4]
    timing = Timing(clock="host", sample_count=5, median_ms=4.4, min_ms=4.2, max_ms=4.5,
                    spread_ms=0.1, samples_ms=samples, wall_ms_per_call=16.0)  # fmt: skip
    walled = wall_problem(timing)
    assert walled and "wall clock saw 16" in walled

    def verdict(status, reason, t=timing):
        w = WorkloadVerdict(workload="w", status=status, reason=reason, timing=t)
        return Verdict(candidate="c", oracle_sha256="0" * 64, device="cpu", status=status,
                       reason=reason, workloads=[w])  # fmt: skip

    assert _only_the_clock(verdict(Status.FLAGGED, walled))
    assert not _only_the_clock(verdict(Status.FLAGGED, "measured 0.001 ms, below the floor"))
    assert not _only_the_clock(verdict(Status.INCORRECT_NUMERICAL, "max error 1.0"))
    quiet = timing.model_copy(update={"wall_ms_per_call": 4.6})
    assert wall_problem(quiet) is None
    assert not _only_the_clock(verdict(Status.FLAGGED, walled, quiet))

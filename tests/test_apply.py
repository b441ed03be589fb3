"""Applying a winner to a real git repository in a temporary directory: a clean apply on a new
branch (the user's branch, tree and files untouched), a three-way merge when the original moved
on, a dirty tree refused, a conflict leaving the repository exactly as it was, an env-tuned
winner written as its deployable config, and `bakeoff apply RUN_DIR`."""

import shutil
import subprocess
from pathlib import Path

import git
import pytest

from kernel_bakeoff.scripts.check import check
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.frozen_task import FrozenTask
from kernel_bakeoff.tasks.apply.winner import apply_winner
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult
from kernel_bakeoff.tasks.models.run import CandidateRow, LaneResult, Report, Review
from kernel_bakeoff.tasks.run.directory import write_json

from .conftest import EXAMPLES, cli_in_process

OLD = "    return x * torch.rsqrt(variance + eps) * weight\n"
NEW = "    return x * weight * torch.rsqrt(variance + eps)\n"


@pytest.fixture(scope="module")
def checked(frozen_rmsnorm, tmp_path_factory):
    """A candidate that differs from the baseline in its last line, checked by the harness."""
    cand = tmp_path_factory.mktemp("cand") / "reordered"
    shutil.copytree(frozen_rmsnorm / "baseline_src", cand)
    for p in [cand, *cand.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    kernel = cand / "kernel.py"
    kernel.write_text(kernel.read_text().replace(OLD, NEW))
    verdict = check(frozen_rmsnorm, cand, samples=5)
    assert verdict.passed, verdict.reason
    return cand, verdict


def make_repo(root: Path) -> git.Repo:
    repo = git.Repo.init(root, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "tester")
        cw.set_value("user", "email", "tester@example.invalid")
    shutil.copytree(EXAMPLES / "rmsnorm_torch", root / "kernels" / "rmsnorm")
    (root / "kernels" / "rmsnorm" / "NOTES.md").write_text("kept: not in any candidate\n")
    repo.index.add(["kernels"])
    repo.index.commit("the kernel")
    return repo


def report_for(repo_root: Path, task: Path, ref: CandidateRef, verdict, run_dir: Path) -> Report:
    result = CandidateResult(candidate=ref, verdict=verdict)
    row = CandidateRow(
        rank=1,
        name=ref.name,
        language=ref.language,
        mode=ref.mode,
        source="torch",
        status="winner",
        speedup=verdict.speedup,
        speedups={w.workload: w.speedup for w in verdict.workloads if not w.checked_only},
        margin=0.05,
        path=ref.path,
    )
    lane = LaneResult(
        key="torch",
        language="torch",
        mode="optimize",
        status="completed",
        cache_key="k",
        candidates=[result],
        review=Review(candidate=ref.name, decision="accepted"),
    )
    return Report(
        kernel_path=str(repo_root / "kernels" / "rmsnorm"),
        kernel="rmsnorm",
        mode="optimize",
        run_dir=str(run_dir),
        task_dir=str(task),
        oracle_sha256=FrozenTask.open(task).oracle_sha256,
        baseline_ms={w.workload: w.baseline_ms for w in verdict.workloads if not w.checked_only},
        rows=[row],
        winner=row,
        lanes=[lane],
    )


def state(repo: git.Repo) -> tuple:
    """Everything a user would notice: branches and where they point, HEAD, status, files."""
    files = {
        p.relative_to(repo.working_tree_dir).as_posix(): p.read_bytes()
        for p in Path(repo.working_tree_dir).rglob("*")
        if p.is_file() and ".git" not in p.parts
    }
    heads = {h.name: h.commit.hexsha for h in repo.heads}
    return heads, repo.active_branch.name, repo.git.status("--porcelain"), files


def source_report(tmp_path, frozen_rmsnorm, checked):
    repo = make_repo(tmp_path / "repo")
    cand, verdict = checked
    ref = CandidateRef(name="reordered", language="torch", mode="optimize", path=str(cand))
    return repo, report_for(tmp_path / "repo", frozen_rmsnorm, ref, verdict, tmp_path / "run")


def test_clean_apply_goes_on_a_new_branch_with_its_evidence(tmp_path, frozen_rmsnorm, checked):
    repo, report = source_report(tmp_path, frozen_rmsnorm, checked)
    before = state(repo)
    done = apply_winner(report)
    assert done.status == "committed" and done.kind == "source-patch", done.reason
    assert done.files == ["kernels/rmsnorm/kernel.py"] and done.three_way == []
    # only a branch was added; the user's branch, status and files are as they were
    assert state(repo) == ({**before[0], done.branch: done.commit}, *before[1:])
    commit = repo.commit(done.branch)
    assert commit.parents[0].hexsha == before[0]["main"]
    tree = commit.tree / "kernels" / "rmsnorm"
    assert NEW in (tree / "kernel.py").data_stream.read().decode()
    assert (tree / "NOTES.md").data_stream.read() == b"kept: not in any candidate\n"
    message = commit.message
    for w in report.winner.speedups:
        assert f"{w}: {report.winner.speedups[w]:.3f}x" in message
    assert report.oracle_sha256 in message and str(tmp_path / "run") in message
    assert "clock host" in message and "Device:" in message
    assert "Also right at sizes not listed: tokens_256@T=128, tokens_256@T=512" in message

    again = apply_winner(report)  # a second apply never moves the first branch
    assert again.branch == done.branch + "-2" and repo.commit(done.branch) == commit


def test_a_winner_is_applied_only_against_the_oracle_it_was_judged_on(
    tmp_path, frozen_rmsnorm, checked
):
    repo, report = source_report(tmp_path, frozen_rmsnorm, checked)
    before = state(repo)
    other = report.model_copy(update={"oracle_sha256": "ab" * 32})  # frozen again since
    with pytest.raises(BadInput, match="frozen task is oracle .* not the abababababab"):
        apply_winner(other)
    assert state(repo) == before


def test_three_way_merge_when_the_original_moved_on(tmp_path, frozen_rmsnorm, checked):
    repo, report = source_report(tmp_path, frozen_rmsnorm, checked)
    kernel = Path(repo.working_tree_dir) / "kernels" / "rmsnorm" / "kernel.py"
    kernel.write_text(kernel.read_text().replace("eps: float = 1e-6", "eps: float = 1e-5"))
    repo.index.add([str(kernel)])
    repo.index.commit("a later edit near the winner's change")
    done = apply_winner(report)
    assert done.status == "committed" and done.three_way == ["kernels/rmsnorm/kernel.py"]
    merged = (repo.commit(done.branch).tree / "kernels/rmsnorm/kernel.py").data_stream.read()
    assert "eps: float = 1e-5" in merged.decode() and NEW in merged.decode()


def test_dirty_tree_is_refused_and_left_alone(tmp_path, frozen_rmsnorm, checked):
    repo, report = source_report(tmp_path, frozen_rmsnorm, checked)
    notes = Path(repo.working_tree_dir) / "kernels" / "rmsnorm" / "NOTES.md"
    notes.write_text("work in progress\n")
    before = state(repo)
    done = apply_winner(report)
    assert done.status == "refused" and "uncommitted changes" in done.reason
    assert "NOTES.md" in done.reason and state(repo) == before


def test_conflict_leaves_the_repository_as_it_was(tmp_path, frozen_rmsnorm, checked):
    repo, report = source_report(tmp_path, frozen_rmsnorm, checked)
    kernel = Path(repo.working_tree_dir) / "kernels" / "rmsnorm" / "kernel.py"
    kernel.write_text(
        kernel.read_text().replace(OLD, "    return (x * torch.rsqrt(variance + eps)) * weight\n")
    )
    repo.index.add([str(kernel)])
    repo.index.commit("the same line, changed otherwise")
    before = state(repo)
    worktrees = repo.git.worktree("list")
    done = apply_winner(report)
    assert done.status == "conflict" and "kernels/rmsnorm/kernel.py conflicts" in done.reason
    assert "repository is as it was" in done.reason
    assert state(repo) == before and repo.git.worktree("list") == worktrees


def test_env_tuned_winner_is_written_as_its_deployable_config(tmp_path, frozen_rmsnorm, checked):
    repo = make_repo(tmp_path / "repo")
    cand, verdict = checked
    tuned = tmp_path / "lane" / "tunableop"
    tuned.mkdir(parents=True)
    (tuned / "tunableop_results0.csv").write_text("Validator,PT_VERSION,2.13.0\nGemmTunableOp,x\n")
    ref = CandidateRef(
        name="tunableop",
        language="torch",
        mode="tuned-env",
        path=str(cand),
        origin="tunableop",
        env={
            "PYTORCH_TUNABLEOP_ENABLED": "1",
            "PYTORCH_TUNABLEOP_TUNING": "0",
            "PYTORCH_TUNABLEOP_FILENAME": str(tuned / "tunableop_results%d.csv"),
        },
        artifacts=[str(tuned / "tunableop_results0.csv")],
    )
    report = report_for(tmp_path / "repo", frozen_rmsnorm, ref, verdict, tmp_path / "run")
    done = apply_winner(report)
    assert done.status == "committed" and done.kind == "env-config", done.reason
    where = "kernels/rmsnorm/bakeoff-tuned/tunableop/"
    assert done.files == [where + n for n in ("tunableop_results0.csv", "env.sh", "env.json")]
    tree = repo.commit(done.branch).tree
    assert (tree / "kernels/rmsnorm/kernel.py").data_stream.read() == (
        EXAMPLES / "rmsnorm_torch" / "kernel.py"
    ).read_bytes()  # no source change for an env winner

    checkout = tmp_path / "checkout"
    repo.git.worktree("add", str(checkout), done.branch)
    env_sh = checkout / where / "env.sh"
    printed = subprocess.run(
        ["bash", "-c", f'source "{env_sh}" && echo "$PYTORCH_TUNABLEOP_FILENAME"'],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert printed == str((checkout / where / "tunableop_results%d.csv").resolve())
    assert (checkout / where / "tunableop_results0.csv").read_text().startswith("Validator")


def test_bakeoff_apply_command(tmp_path, frozen_rmsnorm, checked, capfd):
    from kernel_bakeoff.flows.cli import main

    repo, report = source_report(tmp_path, frozen_rmsnorm, checked)
    run_dir = tmp_path / "run"
    write_json(run_dir / "report.json", report)
    proc = cli_in_process(capfd, "apply", str(run_dir), "--branch", "perf/rmsnorm")
    assert proc.returncode == 0, proc.stderr
    assert "on new branch perf/rmsnorm" in proc.stdout and "perf/rmsnorm" in repo.heads

    assert main(["apply", str(run_dir), "--branch", "perf/rmsnorm"]) == 2
    assert "a branch of that name exists" in capfd.readouterr().err
    write_json(run_dir / "report.json", report.model_copy(update={"winner": None}))
    assert main(["apply", str(run_dir)]) == 1
    assert "no winner" in capfd.readouterr().out
    assert main(["apply", str(tmp_path / "nowhere")]) == 2
    assert "no report.json" in capfd.readouterr().err


def test_apply_targets_the_inputs_repository_from_anywhere(
    tmp_path, frozen_rmsnorm, checked, capfd
):
    """Called from inside another clone, apply still branches the repository holding the input
    (the run records its absolute path); a run that recorded a relative one names no repository
    and is refused with one line unless --repo says which."""
    repo, report = source_report(tmp_path, frozen_rmsnorm, checked)
    other = git.Repo.clone_from(repo.working_tree_dir, tmp_path / "other-clone")
    run_dir = tmp_path / "run"
    write_json(run_dir / "report.json", report)
    done = cli_in_process(
        capfd, "apply", str(run_dir), "--branch", "perf/here", cwd=tmp_path / "other-clone"
    )
    assert done.returncode == 0, done.stderr
    assert "perf/here" in repo.heads and "perf/here" not in other.heads

    relative = report.model_copy(update={"kernel_path": "kernels/rmsnorm"})
    write_json(run_dir / "report.json", relative)
    done = cli_in_process(capfd, "apply", str(run_dir), cwd=tmp_path / "other-clone")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "relative kernel path" in done.stderr and "--repo" in done.stderr
    assert [h.name for h in other.heads] == ["main"]


def test_a_request_records_an_absolute_kernel_path(tmp_path, monkeypatch):
    from kernel_bakeoff.flows.opening import validate
    from kernel_bakeoff.tasks.models.request import BakeoffRequest

    shutil.copytree(EXAMPLES / "rmsnorm_torch", tmp_path / "rmsnorm")
    monkeypatch.chdir(tmp_path)
    req = validate(BakeoffRequest(kernel_path="rmsnorm"))
    assert req.kernel_path == str(tmp_path / "rmsnorm")

"""A commit on a new branch of a repository, made in a scratch worktree with gitpython.

The user's working tree, index, HEAD and current branch are never touched: the change is made in
a temporary `git worktree` of HEAD, committed there, the new branch pointed at that commit, and
the scratch worktree removed. Each changed file goes in by a plain patch (frozen baseline ->
candidate) when it applies; otherwise by a three-way merge (`git merge-file`: HEAD's file, the
frozen baseline as the base, the candidate). If any file conflicts, or a new file would replace
a different one, nothing is committed and no branch is made: the repository is as it was.
"""

from __future__ import annotations

import difflib
import shutil
import tempfile
from pathlib import Path
from typing import Literal

import git
from pydantic import BaseModel, Field

from kernel_bakeoff.scripts.errors import BadInput

IDENTITY = {"user.name": "kernel-bakeoff", "user.email": "kernel-bakeoff@localhost"}


class FileChange(BaseModel):
    path: str  # relative to the repository root
    new: str
    base: str | None = None  # the file when frozen (None: a new file)


class BranchResult(BaseModel):
    status: Literal["committed", "refused", "conflict"]
    reason: str = ""
    branch: str | None = None
    commit: str | None = None
    files: list[str] = Field(default_factory=list)
    three_way: list[str] = Field(default_factory=list)  # files that needed the merge


def open_repo(path: Path) -> git.Repo:
    try:
        return git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise BadInput(str(path), "not inside a git repository (give --repo)") from None


def free_branch(repo: git.Repo, wanted: str, explicit: bool) -> str:
    names = {h.name for h in repo.heads}
    if wanted not in names:
        return wanted
    if explicit:
        raise BadInput(wanted, "a branch of that name exists; nothing is overwritten")
    n = 2
    while f"{wanted}-{n}" in names:
        n += 1
    return f"{wanted}-{n}"


def _patch(change: FileChange) -> str:
    old = (change.base or "").splitlines(keepends=True)
    new = change.new.splitlines(keepends=True)
    src = f"a/{change.path}" if change.base is not None else "/dev/null"
    out = [f"diff --git a/{change.path} b/{change.path}\n"]
    if change.base is None:
        out.append("new file mode 100644\n")
    for line in difflib.unified_diff(old, new, src, f"b/{change.path}"):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _put(wt: git.Repo, root: Path, change: FileChange) -> str | None:
    """Write one change into the scratch worktree: "patch", "three-way", or None (conflict)."""
    target = root / change.path
    if change.base is None:
        if target.exists() and target.read_text() != change.new:
            return None  # a new file would replace a different one
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(change.new)
        return "patch"
    if not target.is_file():
        return None  # the file was removed or moved since the freeze
    patch = Path(tempfile.mkstemp(suffix=".patch")[1])
    try:
        patch.write_text(_patch(change))
        wt.git.apply(str(patch))
        return "patch"
    except git.GitCommandError:
        pass
    finally:
        patch.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        base, theirs = Path(tmp) / "base", Path(tmp) / "theirs"
        base.write_text(change.base)
        theirs.write_text(change.new)
        try:
            merged = wt.git.merge_file(
                "-p", str(target), str(base), str(theirs), strip_newline_in_stdout=False
            )
        except git.GitCommandError:
            return None  # exit status > 0: conflicts
    target.write_text(merged)
    return "three-way"


def commit_on_new_branch(
    repo: git.Repo, branch: str, changes: list[FileChange], message: str
) -> BranchResult:
    if repo.is_dirty(index=True, working_tree=True, untracked_files=False):
        dirty = sorted(
            {d.a_path for d in repo.index.diff(None)} | {d.a_path for d in repo.index.diff("HEAD")}
        )
        return BranchResult(
            status="refused",
            reason=f"the working tree of {repo.working_tree_dir} has uncommitted changes "
            f"({', '.join(dirty[:5])}); commit or stash them first; nothing was changed",
        )
    if not changes:
        return BranchResult(status="refused", reason="the winner changes no file")
    scratch = Path(tempfile.mkdtemp(prefix="bakeoff-apply-")) / "wt"
    repo.git.worktree("add", "--detach", str(scratch), "HEAD")
    try:
        wt = git.Repo(scratch)
        three_way = []
        for change in changes:
            how = _put(wt, scratch, change)
            if how is None:
                return BranchResult(
                    status="conflict",
                    reason=f"{change.path} conflicts with the repository's HEAD; no branch was "
                    "made and the repository is as it was",
                    files=[c.path for c in changes],
                )
            if how == "three-way":
                three_way.append(change.path)
        wt.git.add("--", *[c.path for c in changes])
        config = repo.config_reader()
        identity = [
            arg
            for key, value in IDENTITY.items()
            if not config.has_option(*key.split("."))
            for arg in ("-c", f"{key}={value}")
        ]
        wt.git.execute(["git", *identity, "commit", "-q", "-F", "-"], istream=_stdin(message))
        sha = wt.head.commit.hexsha
        repo.create_head(branch, sha)
        return BranchResult(
            status="committed",
            branch=branch,
            commit=sha,
            files=[c.path for c in changes],
            three_way=three_way,
        )
    finally:
        repo.git.worktree("remove", "--force", str(scratch))
        shutil.rmtree(scratch.parent, ignore_errors=True)


def _stdin(text: str):
    f = tempfile.TemporaryFile()
    f.write(text.encode())
    f.seek(0)
    return f

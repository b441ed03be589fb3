"""Git as the trusted side's tool: the lane workspace's history, kept where the model cannot write.

The repository's git directory is `lanes/<key>/work.git`, outside the workspace, and every
command names it and the work tree explicitly (`--git-dir`, `--work-tree`): a `.git` the model
plants in the workspace is neither read nor added. Each command runs with no system or global
configuration, a HOME of its own, and on the command line no hooks (`core.hooksPath=/dev/null`),
no fsmonitor, no attributes or excludes file beyond the workspace's `.gitignore`, no signing;
the git directory's own config is rewritten here before every command and holds nothing else. Filters and
diff drivers named in a `.gitattributes` of the workspace need a config entry to run, and none
exists; aliases are never used. A planted `post-commit` hook therefore runs at no commit.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

IDENTITY = ("kernel-bakeoff lane", "lane@kernel-bakeoff.invalid")
SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "commit.gpgSign=false",
    "gc.auto=0",
    "protocol.allow=never",
    f"user.name={IDENTITY[0]}",
    f"user.email={IDENTITY[1]}",
)


CONFIG = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n"


class LaneGit:
    def __init__(self, git_dir: Path, work_tree: Path):
        self.git_dir = Path(git_dir)
        self.work_tree = Path(work_tree)

    def env(self) -> dict[str, str]:
        home = self.git_dir.parent / ".git-home"
        home.mkdir(parents=True, exist_ok=True)
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
        }

    def reset_config(self) -> None:
        """The git directory's config and attributes as this module wrote them, before every
        command: whatever else put a filter, an include or an alias there is gone."""
        (self.git_dir / "config").write_text(CONFIG)
        (self.git_dir / "info" / "attributes").unlink(missing_ok=True)

    def run(self, *args: str, stdin: str | None = None, init: bool = False) -> str:
        if not init:
            self.reset_config()
        command = ["git"]
        if not init:  # `git init` refuses a work tree beside a bare directory it makes
            command += [f"--git-dir={self.git_dir}", f"--work-tree={self.work_tree}"]
        for setting in SAFE_CONFIG:
            command += ["-c", setting]
        done = subprocess.run(
            [*command, *args],
            cwd=self.git_dir.parent if init else self.work_tree,
            env=self.env(),
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"git {args[0]} failed: {done.stderr.strip()[-500:]}")
        return done.stdout

    def init(self) -> None:
        self.git_dir.parent.mkdir(parents=True, exist_ok=True)
        self.run("init", "-q", "--bare", str(self.git_dir), init=True)
        for hook in (self.git_dir / "hooks").glob("*"):  # samples only; none is ever run
            hook.unlink()

    def commit(self, message: str) -> str:
        self.run("add", "-A", "--", ".")
        self.run("commit", "-q", "--allow-empty", "--no-verify", "-F", "-", stdin=message)
        return self.run("rev-parse", "HEAD").strip()

    def subjects(self) -> list[str]:
        """The first line of every commit, oldest first."""
        return self.run("log", "--reverse", "--format=%s").splitlines()

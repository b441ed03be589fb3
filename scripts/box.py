"""The box: the one policy for everything untrusted the product runs.

Candidates' checks (with the judge's import of the frozen baseline), the user's kernels imported
to load a spec, discover a Triton surface or size the inputs, C++ extension builds (they run in
the candidate's process) and the model's run-command tool all enter the box that `plan` describes,
in a fork (`isolation.enter`, for warm starts) or by exec (`isolation.wrap`). This module says
WHAT the box is; `scripts/isolation.py` makes it (and imports nothing of this project, so that a
fresh interpreter can make it quickly from the plan given on its command line).

- Network: a network namespace of its own (only a loopback of its own, down unless the plan
  asks for it up: `loopback`, for processes of one box that talk to each other).
- Identity: when the orchestrator is root, the host uid and gid `BOX_UID` (nobody); otherwise the
  orchestrator's own uid, in a user namespace that maps nothing else.
- File system: an allow-list on an empty root. Read-only: the system directories, the
  interpreter (prefixes and sys.path), this repository's code (never its `runs/`), and what the
  caller names in `read` (the frozen task, the candidate's source). Writable: what the caller
  names in `write` (the check's work directory, the compilers' caches, the model's workspace);
  `frozen` paths inside those stay read-only (a workspace's `.git`). A fresh /proc, a minimal
  /dev with the GPU nodes, /sys read-only, /tmp and /dev/shm of their own. Nothing else of the
  host exists in there: home configuration, credentials, the history store, other runs.
- Environment: `allowed_env`.
- Resources: `Bounds` (memory, processes, scratch) and the caller's deadline.
"""

from __future__ import annotations

import glob
import os
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from kernel_bakeoff.scripts.errors import BadInput

REPO_ROOT = Path(__file__).resolve().parent.parent
BOX_UID = 65534  # nobody/nogroup: what untrusted code runs as when the orchestrator is root
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
DEVICE_NODES = ("/dev/nvidia*", "/dev/kfd", "/dev/dri")  # bound in when present
DEV_FILES = ("null", "zero", "full", "random", "urandom", "tty")
# The repository's code as the interpreter imports it; runs/, .git and docs stay outside.
CODE_FILES = ("pyproject.toml",)

# Defaults, overridable by the environment (README, "The frozen task directory").
DEFAULTS = {"BAKEOFF_BOX_MEMORY_GB": 8.0, "BAKEOFF_BOX_PROCS": 512, "BAKEOFF_BOX_SCRATCH_GB": 10.0}

# Exit statuses that only the box's trusted relay uses (the code's own are mapped to 1).
EXIT_MEMORY, EXIT_PROCS, EXIT_SCRATCH, EXIT_BROKEN = 90, 91, 92, 70
RESERVED = (EXIT_MEMORY, EXIT_PROCS, EXIT_SCRATCH, EXIT_BROKEN)

# Environment: names passed as they are, and prefixes of names a kernel, a compiler or a
# device runtime reads. Anything else (credentials, database URLs, Prefect's settings, the
# orchestrator's own configuration) never enters.
ENV_NAMES = {
    "PATH",
    "HOME",
    "TMPDIR",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "USER",
    "LOGNAME",
    "SHELL",
    "PWD",
    "CC",
    "CXX",
    "CFLAGS",
    "CXXFLAGS",
    "LDFLAGS",
    "MAX_JOBS",
    "XDG_CACHE_HOME",
    "BAKEOFF_ISOLATION",
    "BAKEOFF_WARM_START",
    "BAKEOFF_PRELOAD_COMPILER",
    "BAKEOFF_CPU_LLC_MIB",  # the CPU cache the harness flushes (scripts/arch.py)
    "BAKEOFF_SETTLE_S",  # the warm-up's bound beyond its fixed count (scripts/settle.py)
    "BAKEOFF_TEST_COMPILE_CACHE",  # the test suite's shared compiler cache (scripts/judge.py)
    *DEFAULTS,
}
ENV_PREFIXES = (
    "LC_",
    "PYTHON",
    "PYTORCH_",
    "TORCH",
    "TRITON_",
    "CUDA",
    "CUBLAS",
    "CUDNN",
    "NVIDIA_",
    "NCCL_",
    "HIP",
    "ROCM",
    "ROCR_",
    "HSA_",
    "AMD_",
    "OMP_",
    "KMP_",
    "GOMP_",
    "MKL_",
    "OPENBLAS_",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
)
_NEVER = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "URL", "DSN")


def allowed_env(env) -> dict[str, str]:
    """The part of `env` that may enter the box (see ENV_NAMES, ENV_PREFIXES)."""
    out = {}
    for name, value in env.items():
        upper = name.upper()
        if any(word in upper for word in _NEVER):
            continue
        if name in ENV_NAMES or upper.startswith(ENV_PREFIXES):
            out[name] = value
    return out


@dataclass(frozen=True)
class Bounds:
    memory_bytes: int
    procs: int
    scratch_bytes: int

    @classmethod
    def from_env(cls, env=None) -> Bounds:
        env = os.environ if env is None else env
        values = {}
        for name, default in DEFAULTS.items():
            raw = env.get(name, "")
            try:
                values[name] = float(raw) if raw.strip() else float(default)
            except ValueError:
                values[name] = float(default)  # a typo must not remove the bound
        return cls(
            memory_bytes=int(values["BAKEOFF_BOX_MEMORY_GB"] * 2**30),
            procs=max(8, int(values["BAKEOFF_BOX_PROCS"])),
            scratch_bytes=int(values["BAKEOFF_BOX_SCRATCH_GB"] * 2**30),
        )


def gib(n: int) -> str:
    return f"{n / 2**30:g} GiB"


def reason(code: int, bounds: Bounds | None = None) -> str | None:
    """The candidate's failure that a reserved exit status of a box stands for, else None."""
    b = bounds or Bounds.from_env()
    return {
        EXIT_MEMORY: f"exceeded the {gib(b.memory_bytes)} memory bound (BAKEOFF_BOX_MEMORY_GB)",
        EXIT_PROCS: f"exceeded the {b.procs} process bound (BAKEOFF_BOX_PROCS)",
        EXIT_SCRATCH: f"exceeded the {gib(b.scratch_bytes)} scratch bound (BAKEOFF_BOX_SCRATCH_GB)",
    }.get(code)


def _code_paths() -> list[str]:
    """This repository's packages and the files the interpreter reads of it."""
    out = [str(p) for p in sorted(REPO_ROOT.iterdir()) if (p / "__init__.py").is_file()]
    return out + [str(REPO_ROOT / f) for f in CODE_FILES if (REPO_ROOT / f).is_file()]


def _interpreter_paths() -> list[str]:
    """The interpreter and what it imports from, never a directory that holds this repository
    (its runs/) or a home directory as a whole."""
    home = Path(os.path.expanduser("~")).resolve()
    tmp = Path(tempfile.gettempdir()).resolve()
    prefixes = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)]
    found = list(prefixes)
    # sys.path[0] is the directory of the script that started this process (or its working
    # directory): not the interpreter's, and it may be /tmp or a home's folder of anything.
    tail = sys.path[1:] if sys.path and not sys.flags.safe_path else sys.path
    found += [p for p in tail if p and os.path.isdir(p)]
    out = []
    for p in found:
        real = Path(p).resolve()
        if real == Path("/") or real in (home, *home.parents) or real == REPO_ROOT:
            continue
        if real == tmp or real in tmp.parents:  # the host's temporary files, other boxes' too
            continue
        if real in REPO_ROOT.parents:
            continue
        out.append(str(real))
    return out


def plan(
    read=(),
    write=(),
    frozen=(),
    cwd: str | None = None,
    bounds: Bounds | None = None,
    loopback: bool = False,
    nested: bool = False,
) -> dict:
    """The box, as `isolation.enter` makes it: mounts in order (later ones over earlier ones),
    the identity, the bounds, and the writable paths whose size is bounded. `nested`: made
    even by a process already in a box (the candidate's box inside its judge's: the judge's
    files are not in it)."""
    mounts: list[list[str]] = []
    for top in SYSTEM:
        if os.path.islink(top):
            mounts.append(["symlink", os.readlink(top), top])
        elif os.path.isdir(top):
            mounts.append(["ro", top, top])
    for path in [*_interpreter_paths(), *_code_paths(), *map(str, read)]:
        mounts.append(["ro", os.path.realpath(path), os.path.realpath(path)])
    for path in map(str, write):
        mounts.append(["rw", os.path.realpath(path), os.path.realpath(path)])
    for path in map(str, frozen):
        if os.path.exists(path):
            mounts.append(["ro", os.path.realpath(path), os.path.realpath(path)])
    if problem := unreadable(map(str, read)):
        raise BadInput(*problem)
    mounts.append(["ro", "/sys", "/sys"])
    devices = [f"/dev/{n}" for n in DEV_FILES]
    for pattern in DEVICE_NODES:
        devices += sorted(glob.glob(pattern))
    b = bounds or Bounds.from_env()
    present = [d for d in devices if os.path.exists(d)]
    return {
        # What this user cannot reach is not bound (nor needed: its interpreter runs).
        "mounts": [m for m in _dedup(mounts) if m[0] == "symlink" or os.access(m[1], os.R_OK)],
        "devices": present,
        "groups": _device_groups(present) if os.geteuid() == 0 else [],
        "uid": BOX_UID if os.geteuid() == 0 else os.geteuid(),
        "gid": BOX_UID if os.geteuid() == 0 else os.getegid(),
        "bounds": asdict(b),
        "watch": [os.path.realpath(p) for p in map(str, write)],
        "cwd": os.path.realpath(cwd) if cwd else None,
        "loopback": bool(loopback),
        "nested": bool(nested),
    }


def unreadable(paths) -> tuple[str, str] | None:
    """As root, the first of `paths` (bound read-only into a box) that the box's uid cannot
    read, with the line that says so: the box never changes a mode of the host's files."""
    if os.geteuid() != 0:
        return None  # the box runs as this user, who reads them as before
    for path in paths:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        wanted = 0o001 if os.path.isdir(path) else 0o004  # a directory: entered by name
        if mode & wanted != wanted:
            return path, (
                f"is not readable by the box's user (uid {BOX_UID}, mode {mode & 0o777:o}): "
                f"untrusted code runs as that user and the box changes no file's mode; make it "
                f"readable (chmod o+rX {path})"
            )
    return None


def _dedup(mounts: list[list[str]]) -> list[list[str]]:
    """Read-only paths already inside an earlier read-only one are not bound twice (a
    writable one between them keeps its own)."""
    out: list[list[str]] = []
    for m in mounts:
        covered = any(
            o[0] == "ro" and (m[1] == o[1] or m[1].startswith(o[1].rstrip("/") + "/")) for o in out
        )
        if m[0] == "ro" and covered and not any(o[0] == "rw" for o in out if o[1] in m[1]):
            continue
        out.append(m)
    return out


def _device_groups(devices: list[str]) -> list[int]:
    """The groups that own the GPU nodes (AMD's `render` and `video` for /dev/kfd and
    /dev/dri): as root the box's uid gets them, the only groups it has."""
    gids = set()
    for dev in devices:
        nodes = [dev] + (glob.glob(f"{dev}/*") if os.path.isdir(dev) else [])
        for node in nodes:
            try:
                gid = os.stat(node).st_gid
            except OSError:
                continue
            if gid not in (0, BOX_UID):
                gids.add(gid)
    return sorted(gids)

"""aiter's GEMM tuning files: the untuned shape CSV its gradlib tuner reads, the tuned CSV it
writes (deployed through AITER_CONFIG_GEMM_BF16), the tuner command line, and the log lines that
prove in a candidate's own output that the tuned configuration was used."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

UNTUNED_COLUMNS = ("M", "N", "K", "bias", "dtype", "outdtype", "scaleAB", "bpreshuffle")
TUNED_KEY = ("gfx", "cu_num", *UNTUNED_COLUMNS)
TUNED_RESULT = ("libtype", "solidx", "splitK", "us", "kernelName", "err_ratio", "tflops", "bw")
CONFIG_ENV = "AITER_CONFIG_GEMM_BF16"
LOG_ENV = "AITER_LOG_TUNED_CONFIG"
ENGAGED = "is tuned on cu_num"
MISSED = "not found tuned config in"
_INTS = ("M", "N", "K", "cu_num", "solidx", "splitK")
_FLOATS = ("us", "err_ratio", "tflops", "bw")
_BOOLS = ("bias", "scaleAB", "bpreshuffle")


class CsvError(ValueError):
    pass


def _cell(value) -> str:
    return str(bool(value)) if isinstance(value, bool) else str(value)


def write_untuned(path: Path, rows: list[dict]) -> Path:
    """One row per distinct shape, in aiter's column order (booleans as True/False)."""
    seen, out = set(), []
    for r in rows:
        missing = [c for c in UNTUNED_COLUMNS if c not in r]
        if missing:
            raise CsvError(f"a GEMM row lacks {missing}")
        k = tuple(_cell(r[c]) for c in UNTUNED_COLUMNS)
        if k not in seen:
            seen.add(k)
            out.append(k)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(UNTUNED_COLUMNS)
        w.writerows(out)
    return path


def _typed(name: str, text: str):
    if name in _BOOLS:
        if text not in ("True", "False", "1", "0", "true", "false"):
            raise CsvError(f"column {name}: {text!r} is not a boolean")
        return text in ("True", "1", "true")
    if name in _INTS:
        return int(float(text)) if text != "" else None
    if name in _FLOATS:
        return float(text) if text != "" else None
    return text


def read_rows(path: Path, required: tuple[str, ...]) -> list[dict]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise CsvError(f"{path}: columns {missing} missing (has {reader.fieldnames})")
        return [{k: _typed(k, v) for k, v in row.items()} for row in reader]


def read_untuned(path: Path) -> list[dict]:
    return read_rows(path, UNTUNED_COLUMNS)


def read_tuned(path: Path) -> list[dict]:
    return read_rows(path, (*TUNED_KEY, "libtype", "solidx"))


def uncovered(tuned: list[dict], shapes: list[dict], gfx: str, cu_num: int) -> list[dict]:
    """Shapes with no tuned row for this device (aiter would fall back to its default)."""
    have = {
        tuple(_cell(r[c]) for c in TUNED_KEY)
        for r in tuned
        if r["gfx"] == gfx and r["cu_num"] == cu_num
    }
    return [
        s for s in shapes if (gfx, str(cu_num), *(_cell(s[c]) for c in UNTUNED_COLUMNS)) not in have
    ]


def tuner_script(aiter_root: Path) -> Path:
    return Path(aiter_root) / "gradlib" / "gradlib" / "gemm_tuner.py"


def tuner_command(aiter_root: Path, untuned: Path, tuned: Path, python: str = sys.executable):
    """gradlib's bf16 GEMM tuner on one GPU; dtypes come from the CSV (no --indtype)."""
    script = tuner_script(aiter_root)
    cmd = [python, str(script), "--input_file", str(untuned), "--tuned_file", str(tuned)]
    return cmd + ["--mp", "1"], script.parent


def engagement(output: str) -> tuple[int, int]:
    """(tuned hits, misses) that aiter logged with AITER_LOG_TUNED_CONFIG=1."""
    return output.count(ENGAGED), output.count(MISSED)

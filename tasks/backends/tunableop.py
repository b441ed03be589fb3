"""GEMM libraries through PyTorch's TunableOp (rocBLAS/hipBLASLt on ROCm, cuBLAS/cuBLASLt on
CUDA): tune the op's plain-torch GEMMs offline on the frozen workloads, then offer the op with
the tuned results file as an env-tuned candidate."""

from __future__ import annotations

from pathlib import Path

import torch

from kernel_bakeoff.scripts.spec import OpKind, OpSpec
from kernel_bakeoff.tasks.backends import offline_run, wrappers
from kernel_bakeoff.tasks.backends.base import Backend, BuildContext, write_candidate
from kernel_bakeoff.tasks.backends.source import torch_entry
from kernel_bakeoff.tasks.models.plan import CandidateRef

RESULTS = "tunableop_results%d.csv"
TUNE_TIMEOUT_S = 900.0


def tuning_env(results: Path) -> dict[str, str]:
    return {
        "PYTORCH_TUNABLEOP_ENABLED": "1",
        "PYTORCH_TUNABLEOP_TUNING": "1",
        "PYTORCH_TUNABLEOP_FILENAME": str(results),
    }


def tuned_env(results: Path) -> dict[str, str]:
    """Use the tuned solutions; tune nothing new inside the timed candidate."""
    return {**tuning_env(results), "PYTORCH_TUNABLEOP_TUNING": "0"}


class TunableOp(Backend):
    name = "tunableop"
    language = "torch"

    def unavailable_reason(self) -> str | None:
        if not torch.cuda.is_available():
            return "TunableOp tunes GPU GEMM libraries; no GPU is visible"
        if not hasattr(torch.cuda, "tunable"):
            return f"torch {torch.__version__} has no torch.cuda.tunable"
        return None

    def cannot_build(self, spec: OpSpec) -> str | None:
        if spec.kind is not OpKind.gemm:
            return f"TunableOp tunes GEMMs; this op is {spec.kind.value}"
        return None

    def candidates(self, ctx: BuildContext) -> list[CandidateRef]:
        entry = torch_entry(ctx.spec, ctx.baseline_src)
        if entry is None:
            return []
        out_dir = ctx.workdir / "tunableop"
        out_dir.mkdir(parents=True, exist_ok=True)
        results = out_dir / RESULTS
        code = offline_run.run(
            ctx.task_dir, entry, tuning_env(results), TUNE_TIMEOUT_S, out_dir / "tune.log"
        )
        files = sorted(str(p) for p in out_dir.glob("tunableop_results*.csv"))
        if code != 0 or not files:
            raise RuntimeError(
                f"TunableOp tuning exited {code} with {len(files)} result files; see {out_dir}/tune.log"
            )
        path = write_candidate(ctx, "tunableop", wrappers.reexport(ctx, entry, self.name))
        return [
            CandidateRef(
                name="tunableop",
                language=self.language,
                mode="tuned-env",
                path=str(path),
                env=tuned_env(results),
                origin=self.name,
                params={"source": entry},
                artifacts=files,
            )
        ]


BACKEND = TunableOp()

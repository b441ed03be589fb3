"""AMD aiter / Composable Kernel tuned GEMMs on ROCm, tuned offline on the frozen shapes.

Steps: record the op's bf16/fp16 GEMMs on meta tensors (in the box: that runs the user's op),
write aiter's untuned CSV, run gradlib's tuner, check the tuned CSV covers them, and offer the
op with its GEMMs routed to `aiter.tuned_gemm.tgemm` as a `tuned-env` candidate
(AITER_CONFIG_GEMM_BF16 = the tuned CSV, AITER_LOG_TUNED_CONFIG = 1). `engaged(result)` confirms
from the candidate's own output that aiter used the tuned rows; Discover keeps it as the env
candidate only then.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import torch

from kernel_bakeoff.scripts import sandbox
from kernel_bakeoff.scripts.spec import OpKind, OpSpec
from kernel_bakeoff.tasks.backends import aiter_csv, gemm_shapes, wrappers
from kernel_bakeoff.tasks.backends.aiter_route import ROUTED_DTYPES
from kernel_bakeoff.tasks.backends.base import Backend, BuildContext, write_candidate
from kernel_bakeoff.tasks.backends.source import torch_entry
from kernel_bakeoff.tasks.models.plan import CandidateRef, CandidateResult

ROUTE = Path(__file__).with_name("aiter_route.py")
TUNE_TIMEOUT_S = 1800.0


def aiter_root() -> Path | None:
    spec = importlib.util.find_spec("aiter")
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).resolve().parent.parent


class AiterGemm(Backend):
    name = "aiter"
    language = "aiter"

    def unavailable_reason(self) -> str | None:
        if not torch.version.hip:
            return "aiter runs on ROCm; torch is not a ROCm build"
        if not torch.cuda.is_available():
            return "no ROCm device is visible"
        root = aiter_root()
        if root is None:
            return "aiter is not installed (pip install -e .[amd])"
        if not aiter_csv.tuner_script(root).is_file():
            return f"aiter's gradlib tuner not found at {aiter_csv.tuner_script(root)}"
        return None

    def cannot_build(self, spec: OpSpec) -> str | None:
        if spec.kind is not OpKind.gemm:
            return f"aiter's tuned GEMMs apply to GEMM ops; this op is {spec.kind.value}"
        names = {str(d).removeprefix("torch.") for d in ROUTED_DTYPES}
        if not any(i.dtype in names for i in spec.inputs) and spec.format == "native":
            return "aiter's tuned GEMMs take bf16/fp16 operands; this op has none"
        return None

    def candidates(self, ctx: BuildContext) -> list[CandidateRef]:
        entry = torch_entry(ctx.spec, ctx.baseline_src)
        if entry is None:
            return []
        shapes = gemm_shapes.record(ctx, entry)
        if not shapes:
            return []
        out = ctx.workdir / "aiter"
        untuned = aiter_csv.write_untuned(out / "bf16_untuned_gemm.csv", shapes)
        tuned = out / "bf16_tuned_gemm.csv"
        cmd, cwd = aiter_csv.tuner_command(aiter_root(), untuned, tuned)
        # aiter's own tuner (a library's code, not the user's: it reads only the shapes'
        # CSV) runs outside the box, as its JIT builds write into aiter's install; it gets
        # the box's environment all the same, never a credential.
        with open(out / "tune.log", "w") as log:
            done = subprocess.run(
                cmd,
                cwd=cwd,
                env=sandbox.scrub_env(os.environ),
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=TUNE_TIMEOUT_S,
            )
        if done.returncode != 0 or not tuned.is_file():
            raise RuntimeError(f"aiter's tuner exited {done.returncode}; see {out}/tune.log")
        missing = aiter_csv.uncovered(
            aiter_csv.read_tuned(tuned), shapes, ctx.arch.arch, ctx.arch.compute_units
        )
        if len(missing) == len(shapes):
            raise RuntimeError(f"the tuned CSV covers none of the {len(shapes)} GEMM shapes")
        text = wrappers.routed(ctx, entry, ROUTE.name, "AiterGemm", self.name)
        path = write_candidate(ctx, "aiter-tuned-gemm", text)
        shutil.copy2(ROUTE, path / ROUTE.name)
        return [
            CandidateRef(
                name="aiter-tuned-gemm",
                language=self.language,
                mode="tuned-env",
                path=str(path),
                env={aiter_csv.CONFIG_ENV: str(tuned), aiter_csv.LOG_ENV: "1"},
                origin=self.name,
                params={"source": entry, "shapes": len(shapes), "uncovered": len(missing)},
                artifacts=[str(tuned), str(untuned)],
            )
        ]

    @staticmethod
    def engaged(result: CandidateResult) -> bool:
        hits, _ = aiter_csv.engagement(result.verdict.output_tail)
        return hits > 0


BACKEND = AiterGemm()

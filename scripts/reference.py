"""The reference answers, computed in the judge's process after the candidate's process is gone.

Nothing the candidate did to its own process can reach them, and they never exist in a file or in
memory the candidate could read. Bytecode and kernel caches that a candidate could have planted
are not used: imports of the oracle's sources and Triton/Inductor compiles use fresh directories.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import torch

from kernel_bakeoff.scripts import compare, tensorfile
from kernel_bakeoff.scripts.errors import BadInput
from kernel_bakeoff.scripts.formats import module_for
from kernel_bakeoff.scripts.protocol import SavedTensor
from kernel_bakeoff.scripts.spec import OpSpec


def private_caches(root: Path) -> None:
    """Point bytecode and kernel caches of this process at directories made just now."""
    fresh = Path(tempfile.mkdtemp(prefix="judge-cache-", dir=root))
    sys.pycache_prefix = str(fresh / "pycache")
    sys.dont_write_bytecode = True
    os.environ["TRITON_CACHE_DIR"] = str(fresh / "triton")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(fresh / "inductor")


def values_only(device: str) -> None:
    """How torch runs in the judge's reference and the candidate's process alike: values, not
    autograd graphs, and on a CPU one intra-op thread unless OMP_NUM_THREADS says otherwise. A
    host clock on a shared machine varies least on one thread, and two OpenMP threads on a host
    whose other core is busy spin against each other (the judge's reference took 1.2-1.9 s a
    check instead of 0.3 s at a load of 3 on two cores: docs/harness.md)."""
    torch.set_grad_enabled(False)
    if device == "cpu" and "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(1)


class Reference:
    def __init__(self, spec: OpSpec, src_dir: Path, device: str):
        values_only(device)
        self.spec = spec
        self.src_dir = Path(src_dir)
        self.device = device
        self.where = f"reference {spec.reference_entry}"
        self.fmt = module_for(spec.format)
        try:
            self.fn = self.fmt.load_callable(spec, self.src_dir, spec.reference_entry, device)
        except BadInput:
            raise
        except Exception as exc:
            raise BadInput(self.where, f"loading it raised {type(exc).__name__}: {exc}") from exc
        self._projectors: dict[tuple[int, int], compare.Projector] = {}
        self.structure: str | None = None  # of the last call (scripts/compare.structure)

    def inputs(self, workload, seed: int) -> list:
        return list(self.fmt.make_inputs(self.spec, self.src_dir, workload, seed, self.device))

    def outputs(self, workload, seed: int) -> tuple[list, list[torch.Tensor]]:
        """(inputs, reference outputs) for the inputs drawn from `seed`."""
        inputs = self.inputs(workload, seed)
        try:
            result = self.fn(*inputs)
            self.structure = compare.structure(result)
            refs = compare.as_outputs(result)
        except Exception as exc:
            raise BadInput(
                f"{self.where}, workload {workload.name!r}",
                f"the reference raised {type(exc).__name__}: {exc}",
            ) from exc
        for i, ref in enumerate(refs):
            if not isinstance(ref, torch.Tensor):
                raise BadInput(self.where, f"output {i} is a {type(ref).__name__}, not a tensor")
        if self.device != "cpu":
            torch.cuda.synchronize()
        return inputs, refs

    def projector(self, seed: int, output: int) -> compare.Projector:
        """The child's projections of output `output`, drawn from the same seed."""
        key = (seed, output)
        if key not in self._projectors:
            self._projectors[key] = compare.Projector(seed + output, self.device)
        return self._projectors[key]


def nbytes(values) -> int:
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def load_outputs(root: Path, saved: list[SavedTensor]) -> list[torch.Tensor] | str:
    """The outputs a trial saved, or why they cannot be used (the files are the candidate's)."""
    outputs = []
    for item in saved:
        tensor = tensorfile.load(root, item)
        if isinstance(tensor, str):
            return f"its saved outputs are unusable ({tensor})"
        outputs.append(tensor)
    return outputs

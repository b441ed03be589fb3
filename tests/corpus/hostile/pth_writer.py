"""class: persistence in the harness's interpreter. Writes a .pth file into every site-packages
directory it can find and a module into the harness's package; computes honestly.
Outcome: the interpreter and the repository's code are read-only in the box.
"""

import os
import site
import sys
from pathlib import Path

import torch

NAME = os.environ["HOSTILE_NAME"]
targets = {*site.getsitepackages(), *(p for p in sys.path if p.endswith("site-packages"))}
targets.add(str(Path(torch.__file__).parent.parent))
for d in sorted(targets):
    try:
        Path(d, f"{NAME}.pth").write_text("import os; os.system('touch /tmp/pwned')\n")
        print("WROTE", d)
    except OSError as exc:
        print("refused", d, exc)
try:
    from kernel_bakeoff import scripts

    Path(scripts.__file__).with_name(f"{NAME}.py").write_text("print('pwned')\n")
    print("WROTE the harness's package")
except OSError as exc:
    print("refused the harness's package:", exc)


def rmsnorm(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight

"""kernel-bakeoff's one import name: `kernel_bakeoff.flows`, `kernel_bakeoff.tasks` and
`kernel_bakeoff.scripts`.

The design card keeps flows/, tasks/ and scripts/ at the repository's top level, but installed
under those bare names they would collide with any other distribution's `tasks` or `scripts`
package. setup.py installs them under this package instead (its `package_dir`); in a checkout,
or an editable install, they are found beside this folder, at the repository's root.
"""

from pathlib import Path

_here = Path(__file__).resolve().parent
if not (_here / "tasks").is_dir():  # a checkout: the three folders sit at the root, beside us
    __path__.append(str(_here.parent))

"""Writing a JSON file so that a reader never sees half of it.

Its own module because both the run store and the input's identity (tasks/run/input_identity.py,
which the store imports) write run files this way.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pydantic import BaseModel


def write_json(path: Path, data) -> None:
    """Write atomically, so a reader (the live display, a resumed run) never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = (
        data.model_dump_json(indent=1)
        if isinstance(data, BaseModel)
        else json.dumps(data, indent=1, default=str)
    )
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        f.write(text + "\n")
    os.replace(tmp, path)

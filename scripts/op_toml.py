"""Writing `op.toml`, the native format's spec file (scripts/formats/native.py reads it and
shows its layout). Kept out of scripts/formats/, whose package imports torch: the oracle_freezer
role writes a spec from the orchestrator, which does not load torch for it."""

from __future__ import annotations

import tomli_w
from pydantic import BaseModel


def spec_toml(spec: BaseModel) -> str:
    """The `op.toml` text of a model with op.toml's fields (the oracle_freezer's SpecDraft), as
    the native loader reads it back; unset fields, empty values and an empty tolerance table are
    left out."""
    data = spec.model_dump(mode="json", exclude_none=True)
    for table in ("inputs", "workloads"):
        data[table] = [{k: v for k, v in row.items() if v not in ({}, None)} for row in data[table]]
    if not data.get("tolerance"):
        data.pop("tolerance", None)
    return tomli_w.dumps(data)

"""The base of every role's inputs model (a module of its own: the registry declares roles
with it and the request validates into it, and neither imports the other for it)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class RoleInputs(BaseModel):
    """The objects a role works from; a role with none declares this model as it is."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    def __getitem__(self, key: str) -> Any:
        if key not in type(self).model_fields:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key) if key in type(self).model_fields else default

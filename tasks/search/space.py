"""A configuration space: named parameters with finite value lists, and a validity rule.

Configs are plain dicts of JSON values so they can be recorded, cached and written into
candidate sources as literals. `key(config)` is their canonical identity.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Param:
    name: str
    values: tuple

    def __post_init__(self):
        if not self.values:
            raise ValueError(f"parameter {self.name!r} has no values")
        if len(set(map(_key_value, self.values))) != len(self.values):
            raise ValueError(f"parameter {self.name!r} repeats a value: {self.values}")


def _key_value(v) -> str:
    return json.dumps(v, sort_keys=True)


def key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


@dataclass
class Space:
    params: list[Param]
    rule: Callable[[dict], str | None] | None = None  # None when valid, else why not

    def __post_init__(self):
        names = [p.name for p in self.params]
        if len(set(names)) != len(names):
            raise ValueError(f"parameter names repeat: {names}")

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    @property
    def size(self) -> int:
        return math.prod(len(p.values) for p in self.params) if self.params else 0

    def contains(self, config: dict) -> bool:
        if set(config) != set(self.names):
            return False
        return all(
            _key_value(config[p.name]) in {_key_value(v) for v in p.values} for p in self.params
        )

    def invalid(self, config: dict) -> str | None:
        """Why a config is pruned before it is built (None when it may be evaluated)."""
        if not self.contains(config):
            return "not a point of the space"
        return self.rule(config) if self.rule else None

    def __iter__(self) -> Iterator[dict]:
        for values in itertools.product(*(p.values for p in self.params)):
            yield dict(zip(self.names, values))

    def sample(self, rng: random.Random) -> dict:
        return {p.name: rng.choice(p.values) for p in self.params}

    def neighbours(self, config: dict) -> list[dict]:
        """Configs that differ in one parameter by one step of its value list."""
        out = []
        for p in self.params:
            idx = [_key_value(v) for v in p.values].index(_key_value(config[p.name]))
            for j in (idx - 1, idx + 1):
                if 0 <= j < len(p.values):
                    out.append({**config, p.name: p.values[j]})
        return out


@dataclass
class Tunable:
    """What a search lane tunes: a space, a default point, and how to build a candidate."""

    space: Space
    build: Callable[[dict], object]  # config -> tasks.models.plan.CandidateRef
    defaults: list[dict] = field(default_factory=list)  # evaluated first (the incumbent's own)
    language: str = ""
    origin: str = ""

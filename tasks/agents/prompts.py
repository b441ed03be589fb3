"""A role's prompt: `roles/<prompt>.md` rendered with jinja2.

Apart from the registry so that a model responder can render a prompt of its own (a round's
conversation, the reviewer's with the diff it was shown) without loading the roles or Prefect.
Undefined names fail loudly: a prompt that silently lost a field would mislead the model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

ROOT = Path(__file__).resolve().parents[2]
ROLES_DIR = ROOT / "roles"

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(ROLES_DIR),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
)


def render_prompt(prompt: str, context: dict[str, Any]) -> str:
    return _env.get_template(f"{prompt}.md").render(**context)

"""Applying a bake-off's winner to the original repository, on a new branch (never the current
one, never over a dirty working tree): `tasks.apply.winner` decides what to write (a source
patch, or an env-tuned winner's deployable config), `tasks.apply.git_branch` writes it."""

"""Installs flows/, tasks/ and scripts/ as kernel_bakeoff.flows, .tasks and .scripts (the
metadata is in pyproject.toml): setuptools' pyproject tables cannot put a prefix on the
packages they find, so the mapping is made here."""

from setuptools import find_packages, setup

FOLDERS = ("flows", "tasks", "scripts")

setup(
    packages=["kernel_bakeoff"]
    + [f"kernel_bakeoff.{p}" for p in find_packages(include=[f"{f}*" for f in FOLDERS])],
    package_dir={"kernel_bakeoff": "kernel_bakeoff"} | {f"kernel_bakeoff.{f}": f for f in FOLDERS},
)

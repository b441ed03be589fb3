"""The driver in a measurement's fingerprint, read as the kernel module reports it."""

from kernel_bakeoff.scripts.fingerprint import _driver_version


def _write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_nvidia_module_version_is_the_driver(tmp_path):
    _write(tmp_path, "sys/module/nvidia/version", "580.159.04\n")
    assert _driver_version(tmp_path) == "580.159.04"


def test_without_sysfs_the_proc_banner_names_it(tmp_path):
    banner = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue Oct  1 2026\n"
    _write(tmp_path, "proc/driver/nvidia/version", banner)
    assert _driver_version(tmp_path) == "580.159.04"


def test_an_amdgpu_module_with_a_version_names_it(tmp_path):
    _write(tmp_path, "sys/module/amdgpu/version", "6.10.5\n")
    assert _driver_version(tmp_path) == "amdgpu 6.10.5"


def test_no_driver_is_none_here(tmp_path):
    import torch

    expected = f"hip {torch.version.hip}" if torch.version.hip else None
    assert _driver_version(tmp_path) == expected

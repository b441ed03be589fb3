"""Architecture detection against fake device properties: no GPU needed."""

from types import SimpleNamespace

import pytest
import torch

from kernel_bakeoff.scripts import arch
from kernel_bakeoff.scripts.errors import BadInput


def props(**kw):
    base = dict(name="dev", major=9, minor=0, multi_processor_count=1, L2_cache_size=0)
    return SimpleNamespace(**{**base, **kw})


H200 = props(name="NVIDIA H200", multi_processor_count=132, L2_cache_size=50 << 20, warp_size=32)
MI300X = props(
    name="AMD Instinct MI300X",
    minor=4,
    gcnArchName="gfx942:sramecc+:xnack-",
    multi_processor_count=304,
    L2_cache_size=4 << 20,
    warp_size=64,
)
MI250X = props(name="AMD Instinct MI250X", gcnArchName="gfx90a:sramecc+:xnack-", warp_size=64)


def test_nvidia_capability_names_sm_arch():
    info = arch.from_properties(H200, hip=False)
    assert (info.vendor, info.arch, info.wavefront) == ("nvidia", "sm_90", 32)
    assert info.compute_units == 132 and info.llc_bytes == 50 << 20


def test_rocm_feature_suffix_is_stripped_and_infinity_cache_counted():
    info = arch.from_properties(MI300X, hip=True)
    assert (info.vendor, info.arch, info.wavefront) == ("amd", "gfx942", 64)
    assert info.llc_bytes == (4 << 20) + (256 << 20)
    assert arch.flush_bytes(info) >= 512 << 20


def test_capability_9_0_is_gfx90a_under_hip_and_sm_90_under_cuda():
    assert (MI250X.major, MI250X.minor) == (9, 0)
    assert arch.from_properties(MI250X, hip=True).arch == "gfx90a"
    assert arch.from_properties(MI250X, hip=False).arch == "sm_90"


@pytest.mark.parametrize("hip, expected", [("6.2.41133", "gfx90a"), (None, "sm_90")])
def test_detect_asks_hip_first(monkeypatch, hip, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: MI250X)
    monkeypatch.setattr(torch.version, "hip", hip)
    assert arch.detect().arch == expected


def test_cpu_without_a_device(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    info = arch.detect()
    assert (info.vendor, info.arch) == ("cpu", "cpu")
    assert arch.flush_bytes(info) == 2 * info.llc_bytes


def test_a_cpu_hosts_cache_is_64_mib_unless_it_says_otherwise(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv(arch.CPU_LLC_VAR, raising=False)
    assert arch.detect().llc_bytes == 64 << 20
    monkeypatch.setenv(arch.CPU_LLC_VAR, "480")  # what this VM's sysfs reports
    assert arch.flush_bytes(arch.detect()) == 960 << 20
    for bad in ("0", "-4", "big", "nan"):
        monkeypatch.setenv(arch.CPU_LLC_VAR, bad)
        with pytest.raises(BadInput, match=f"must be a positive number of MiB, got '{bad}'"):
            arch.detect()


def test_peak_rates_come_from_the_table_and_unknown_arch_gets_the_generous_default():
    h200 = arch.from_properties(H200, hip=False)
    mi300 = arch.from_properties(MI300X, hip=True)
    assert h200.peak_bandwidth < mi300.peak_bandwidth
    odd = arch.named("gfx1201")
    assert odd.peak_bandwidth > mi300.peak_bandwidth and odd.wavefront == 32


@pytest.mark.parametrize(
    "name, target",
    [
        ("gfx942:sramecc+:xnack-", ("hip", "gfx942", 64)),
        ("gfx950", ("hip", "gfx950", 64)),
        ("sm_90", ("cuda", 90, 32)),
    ],
)
def test_named_arch_gives_the_cross_compile_target(name, target):
    assert arch.compile_target(arch.named(name)) == target


def test_unknown_name_and_cpu_target_are_refused():
    with pytest.raises(ValueError):
        arch.named("tpu_v5")
    with pytest.raises(ValueError):
        arch.compile_target(arch.named("cpu"))

"""The SM clock of an NVIDIA device, read through NVML (libnvidia-ml, part of the driver).

A diagnostic kept with every timed sample: an idle GPU runs its SMs at a fraction of a busy
one's clock (docs/studies/h200_figures.md), and a short kernel timed at the low clock takes
several times longer. Reading
takes microseconds, outside the timed region. Anything short of a working NVML (ROCm, the
CPU, no driver library, a device NVML cannot find) gives None and never an error.
"""

from __future__ import annotations

import ctypes

NVML_SUCCESS = 0
NVML_CLOCK_SM = 1


class SmClock:
    def __init__(self, device_index: int | None = None):
        self._read = None
        try:
            self._open(device_index)
        except Exception:
            self._read = None

    def _open(self, device_index: int | None) -> None:
        import torch

        if not torch.cuda.is_available() or torch.version.hip:
            return
        props = torch.cuda.get_device_properties(
            torch.cuda.current_device() if device_index is None else device_index
        )
        lib = ctypes.CDLL("libnvidia-ml.so.1")
        if lib.nvmlInit_v2() != NVML_SUCCESS:
            return
        handle = ctypes.c_void_p()
        for key in _device_keys(props):
            by_uuid = key.startswith("GPU-")
            find = (
                lib.nvmlDeviceGetHandleByUUID if by_uuid else lib.nvmlDeviceGetHandleByPciBusId_v2
            )
            find.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
            if find(key.encode(), ctypes.byref(handle)) == NVML_SUCCESS:
                break
        else:
            return
        get = lib.nvmlDeviceGetClockInfo
        get.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_uint)]
        value = ctypes.c_uint()

        def read() -> int | None:
            if get(handle, NVML_CLOCK_SM, ctypes.byref(value)) != NVML_SUCCESS:
                return None
            return int(value.value)

        self._read = read

    def __call__(self) -> int | None:
        """The SM clock now, in MHz, or None."""
        return self._read() if self._read is not None else None


def _device_keys(props) -> list[str]:
    """How NVML may name this device: its UUID, then its PCI address (two spellings)."""
    keys = []
    uuid = getattr(props, "uuid", None)
    if uuid is not None:
        text = str(uuid)
        keys.append(text if text.startswith("GPU-") else f"GPU-{text}")
    bus = getattr(props, "pci_bus_id", None)
    if bus is not None:
        domain = getattr(props, "pci_domain_id", 0)
        dev = getattr(props, "pci_device_id", 0)
        keys.append(f"{domain:08x}:{bus:02x}:{dev:02x}.0")
        keys.append(f"{domain:04x}:{bus:02x}:{dev:02x}.0")
    return keys

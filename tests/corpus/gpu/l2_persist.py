"""class: state that outlives the harness's cache flush. Marks its input's lines persisting in
L2 (the CUDA driver's access-policy window on the caller's stream, with the persisting carve-out
raised to the device's maximum), so the flush before the next sample cannot evict them and the
next call reads its input from L2. The clock resets persisting lines before each sample's flush
(scripts/timing.py): PASSED at no gain over the same code without the window
(test_check_gpu.test_l2_persistence_gains_nothing). RUNTIME_ERROR where the driver refuses the
window (no such feature on the device).

expect: PASSED|RUNTIME_ERROR
"""

import ctypes

import torch

_LIMIT_PERSISTING_L2 = 0x06  # CU_LIMIT_PERSISTING_L2_CACHE_SIZE
_MAX_PERSISTING_L2 = 108  # CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE
_MAX_WINDOW = 109  # CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE
_ACCESS_POLICY_WINDOW = 1  # CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW
_PERSISTING, _STREAMING = 2, 1  # CUaccessProperty


class _Window(ctypes.Structure):
    _fields_ = [
        ("base_ptr", ctypes.c_void_p),
        ("num_bytes", ctypes.c_size_t),
        ("hit_ratio", ctypes.c_float),
        ("hit_prop", ctypes.c_int),
        ("miss_prop", ctypes.c_int),
    ]


class _AttrValue(ctypes.Union):  # CUstreamAttrValue: 64 bytes, the window first
    _fields_ = [("window", _Window), ("pad", ctypes.c_char * 64)]


_cuda = ctypes.CDLL("libcuda.so.1")


def _call(name, *args):
    rc = getattr(_cuda, name)(*args)
    if rc != 0:
        raise RuntimeError(f"persisting L2 window refused: {name} returned {rc}")


def _device_int(attr: int, device: int) -> int:
    value = ctypes.c_int()
    _call("cuDeviceGetAttribute", ctypes.byref(value), attr, device)
    return value.value


def pin(x: torch.Tensor) -> None:
    device = x.device.index or 0
    carve_out = _device_int(_MAX_PERSISTING_L2, device)
    window = min(x.numel() * x.element_size(), _device_int(_MAX_WINDOW, device), carve_out)
    _call("cuCtxSetLimit", _LIMIT_PERSISTING_L2, ctypes.c_size_t(carve_out))
    value = _AttrValue()
    value.window = _Window(x.data_ptr(), window, 1.0, _PERSISTING, _STREAMING)
    stream = ctypes.c_void_p(torch.cuda.current_stream(x.device).cuda_stream)
    _call("cuStreamSetAttribute", stream, _ACCESS_POLICY_WINDOW, ctypes.byref(value))


_pinned: set = set()


def rmsnorm(x, weight, eps=1e-6):
    # once per input buffer (the harness alternates two): setting the carve-out every call
    # costs more device time than the window saves
    if x.data_ptr() not in _pinned:
        _pinned.add(x.data_ptr())
        pin(x)
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight

"""Compile a HIP C++ kernel with hiprtc, load it and launch it through hip-python.

Self-contained (standard library + hip-python), so a HIP candidate can carry a copy beside its
sources. Kernel arguments are packed from the kernel's own C signature: device tensors (anything
with `data_ptr()`) become pointers, Python numbers the C type the kernel declares.

    kernel = HipKernel(SOURCE, "scale", defines={"BLOCK": 256})
    kernel((n // 256,), (256,), y, x, 2.0, n)
"""

from __future__ import annotations

import ctypes
import re

_C_TYPES = {
    "bool": ctypes.c_bool,
    "char": ctypes.c_char,
    "signed char": ctypes.c_byte,
    "unsigned char": ctypes.c_ubyte,
    "short": ctypes.c_short,
    "unsigned short": ctypes.c_ushort,
    "int": ctypes.c_int,
    "unsigned": ctypes.c_uint,
    "unsigned int": ctypes.c_uint,
    "long": ctypes.c_long,
    "unsigned long": ctypes.c_ulong,
    "long long": ctypes.c_longlong,
    "unsigned long long": ctypes.c_ulonglong,
    "int8_t": ctypes.c_int8,
    "uint8_t": ctypes.c_uint8,
    "int16_t": ctypes.c_int16,
    "uint16_t": ctypes.c_uint16,
    "int32_t": ctypes.c_int32,
    "uint32_t": ctypes.c_uint32,
    "int64_t": ctypes.c_int64,
    "uint64_t": ctypes.c_uint64,
    "size_t": ctypes.c_size_t,
    "float": ctypes.c_float,
    "double": ctypes.c_double,
}
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b")


class HipError(RuntimeError):
    pass


def kernel_signature(source: str, name: str) -> list[str]:
    """C parameter types of `__global__ void name(...)`, qualifiers and names removed."""
    m = re.search(
        r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+"
        + re.escape(name)
        + r"\s*\(([^)]*)\)",
        source,
    )
    if m is None:
        raise HipError(f"no __global__ void {name}(...) in the source")
    params = [p.strip() for p in m.group(1).split(",") if p.strip()]
    types = []
    for p in params:
        p = " ".join(_QUALIFIERS.sub(" ", p).split())
        if "*" in p:
            types.append("pointer")
            continue
        words = p.split(" ")
        types.append(" ".join(words[:-1]) if len(words) > 1 else words[0])
    return types


def pack_args(types: list[str], args: tuple) -> tuple:
    """ctypes values for hipModuleLaunchKernel's `extra`, one per kernel parameter."""
    if len(types) != len(args):
        raise HipError(f"the kernel takes {len(types)} arguments, {len(args)} given")
    packed = []
    for i, (ctype, value) in enumerate(zip(types, args)):
        if ctype == "pointer":
            if hasattr(value, "data_ptr"):
                packed.append(ctypes.c_void_p(value.data_ptr()))
            elif isinstance(value, int) or value is None:
                packed.append(ctypes.c_void_p(value))
            else:
                raise HipError(f"argument {i} is a pointer; got {type(value).__name__}")
        elif ctype in _C_TYPES:
            if hasattr(value, "data_ptr"):
                raise HipError(f"argument {i} is a {ctype}; got a tensor")
            packed.append(_C_TYPES[ctype](value))
        else:
            raise HipError(f"argument {i}: unsupported C type {ctype!r}")
    return tuple(packed)


def compile_options(
    arch: str, defines: dict | None = None, extra: list[str] | None = None
) -> list[bytes]:
    opts = [f"--offload-arch={arch}", "-O3"]
    opts += [f"-D{k}={v}" for k, v in (defines or {}).items()]
    return [o.encode() for o in opts + list(extra or [])]


def hip_check(result):
    """hip-python returns (error, values...): raise on an error, return the values."""
    err = result[0] if isinstance(result, tuple) else result
    code = getattr(err, "value", err)
    if code != 0:
        raise HipError(f"HIP call failed: {err}")
    rest = result[1:] if isinstance(result, tuple) else ()
    return None if not rest else rest[0] if len(rest) == 1 else rest


class HipKernel:
    def __init__(self, source: str, name: str, *, defines=None, arch=None, hip=None, hiprtc=None):
        if hip is None or hiprtc is None:
            from hip import hip as _hip
            from hip import hiprtc as _hiprtc

            hip, hiprtc = hip or _hip, hiprtc or _hiprtc
        self.hip, self.hiprtc = hip, hiprtc
        self.source, self.name, self.defines = source, name, dict(defines or {})
        self.types = kernel_signature(source, name)
        self.arch = arch
        self._function = None

    def _device_arch(self) -> str:
        props = self.hip.hipDeviceProp_t()
        hip_check(self.hip.hipGetDeviceProperties(props, 0))
        arch = props.gcnArchName
        arch = arch.decode() if isinstance(arch, bytes) else str(arch)
        return arch.split(":")[0]

    def compile(self) -> bytes:
        rtc = self.hiprtc
        prog = hip_check(
            rtc.hiprtcCreateProgram(self.source.encode(), self.name.encode(), 0, [], [])
        )
        opts = compile_options(self.arch or self._device_arch(), self.defines)
        result = rtc.hiprtcCompileProgram(prog, len(opts), opts)
        err = result[0] if isinstance(result, tuple) else result
        if getattr(err, "value", err) != 0:
            size = hip_check(rtc.hiprtcGetProgramLogSize(prog))
            log = bytearray(size)
            rtc.hiprtcGetProgramLog(prog, log)
            raise HipError(f"hiprtc could not compile {self.name}: {log.decode(errors='replace')}")
        size = hip_check(rtc.hiprtcGetCodeSize(prog))
        code = bytearray(size)
        hip_check(rtc.hiprtcGetCode(prog, code))
        return bytes(code)

    def function(self):
        if self._function is None:
            module = hip_check(self.hip.hipModuleLoadData(self.compile()))
            self._function = hip_check(self.hip.hipModuleGetFunction(module, self.name.encode()))
        return self._function

    def __call__(self, grid, block, *args, shared_mem: int = 0, stream=None):
        grid = tuple(grid) + (1,) * (3 - len(grid))
        block = tuple(block) + (1,) * (3 - len(block))
        extra = pack_args(self.types, args)
        hip_check(
            self.hip.hipModuleLaunchKernel(
                self.function(),
                *grid,
                *block,
                sharedMemBytes=shared_mem,
                stream=stream,
                kernelParams=None,
                extra=extra,
            )
        )

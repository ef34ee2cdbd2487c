"""Batched Craftax environments on one GPU (backend="cuda"), over cuda/build/libcraftax_cuda.so.

The library is the CUDA build of the very same rules headers as the C reference and
exports the C API with device pointers (cuda/craftax_cuda.h). It is bound here with cffi
in ABI mode (ffi.dlopen): no compiler is needed at import, and the library carries the
CUDA runtime itself (linked statically), so only the NVIDIA driver must be present; no
CuPy or PyTorch is needed to run.

Observations, rewards and flags stay on the GPU. They are returned as `CudaArray`s, which
expose `__cuda_array_interface__` (v3) and `__dlpack__`, so `torch.as_tensor(obs)`,
`cupy.asarray(obs)` and `jax.dlpack.from_dlpack(obs)` take them without a copy;
`obs.numpy()` (or `np.asarray(obs)`) copies to the host on request. The arrays returned by
reset/step/observe are views of buffers owned by the env: the next reset/step/observe
overwrites them (as in PufferLib and EnvPool's GPU mode), so copy what you keep.

Library lookup: $PYCRAFTAX_CUDA_LIB, else the newer of pycraftax/libcraftax_cuda.so (put
there by `pip install` where nvcc is found) and the repository's cuda/build/libcraftax_cuda.so
(built by `make -C cuda`), so that a developer's fresh `make` wins over an older install.

This module needs neither the C extension nor a compiler: its pure-Python helpers (keys,
leaf table, params, validation) are shared with the C backend through pycraftax.vec_env.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import re
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pycraftax import _state, obs_compact, rules
from pycraftax._cdef import cdef_declarations
from pycraftax.achievements import ACHIEVEMENTS, NUM_ACHIEVEMENTS
from pycraftax.params import EnvParams, StaticEnvParams, to_c
from pycraftax.vec_env import OBS_SIZE, CraftaxVecEnv, check_actions

_PACKAGE_DIR = Path(__file__).resolve().parent
_ROOT = _PACKAGE_DIR.parent
_INSTALLED_HEADERS = _PACKAGE_DIR / "cuda_include"  # copied there by setup.py with the library
_SOURCE_HEADERS = (_ROOT / "cuda", _ROOT / "reference_c" / "include" / "craftax")
API_HEADER = "craftax_cuda.h"
API_VERSION_DEFINE = "CRAFTAX_CUDA_API_VERSION"

ERR_NULL, ERR_NUM_ENVS, ERR_NO_MEMORY, ERR_ARGUMENT, ERR_CUDA, ERR_NO_DEVICE = -1, -2, -3, -4, -5, -6
_ERROR_TEXT = {
    ERR_NULL: "a required pointer was NULL",
    ERR_NUM_ENVS: "num_envs out of range",
    ERR_NO_MEMORY: "out of GPU memory",
    ERR_ARGUMENT: "invalid argument",
    ERR_CUDA: "CUDA error",
    ERR_NO_DEVICE: "no usable CUDA device",
}


# -- loading ------------------------------------------------------------------------------------
def library_path() -> Path | None:
    """Where libcraftax_cuda.so would be loaded from (None if nowhere)."""
    env = os.environ.get("PYCRAFTAX_CUDA_LIB")
    if env:
        return Path(env) if Path(env).is_file() else None
    found = [d / "libcraftax_cuda.so" for d in (_PACKAGE_DIR, _ROOT / "cuda" / "build")]
    found = [p for p in found if p.is_file()]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def header_dirs(library: Path) -> tuple[Path, ...]:
    """Where find_header looks, in order: the installed copies beside an installed library,
    the source tree's beside a `make -C cuda` build; the other place second."""
    library = Path(library)
    if library.parent == _PACKAGE_DIR:
        return (_INSTALLED_HEADERS,) + _SOURCE_HEADERS
    return _SOURCE_HEADERS + (_INSTALLED_HEADERS,)


def _find(name: str, dirs) -> Path | None:
    # find_header's search
    for d in dirs:
        if (Path(d) / name).is_file():
            return Path(d) / name
    return None


def find_header(name: str, library_path) -> Path:
    """The header `name` (e.g. "craftax_cuda.h", "fast_cuda.h", "params.h") that describes the
    CUDA library at `library_path`: pycraftax/cuda_include/ for an installed library, cuda/ and
    reference_c/include/craftax/ of the source tree for a `make -C cuda` build.
    FileNotFoundError naming the places searched when it is in none."""
    dirs = header_dirs(library_path)
    found = _find(name, dirs)
    if found is not None:
        return found
    raise FileNotFoundError(f"pycraftax CUDA backend: header {name!r} not found in {[str(d) for d in dirs]}")


def expected_api_version(header: Path) -> int:
    """The API version `#define CRAFTAX_CUDA_API_VERSION <n>` of the header that describes the library."""
    match = re.search(rf"^\s*#define\s+{API_VERSION_DEFINE}\s+(\d+)\b", header.read_text(), flags=re.M)
    if match is None:
        raise RuntimeError(f"pycraftax CUDA backend: {header} defines no {API_VERSION_DEFINE}; the header and "
                           "the library come from different sources (rebuild: make -C cuda, or reinstall)")
    return int(match.group(1))


def bind(path: Path):
    """(ffi, lib) of the CUDA library at `path`, its cdef read from the headers that describe
    that very library (find_header). Touches no GPU."""
    from cffi import FFI

    try:
        header, params_header = find_header(API_HEADER, path), find_header("params.h", path)
    except FileNotFoundError as exc:
        raise RuntimeError(str(exc)) from exc
    ffi = FFI()
    ffi.cdef(cdef_declarations(params_header.read_text()) + "\n" + cdef_declarations(header.read_text()))
    return ffi, ffi.dlopen(str(path))


def _row_bytes(dtype, shape: tuple) -> int:
    """Bytes of one env's row of a buffer."""
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


class _Lib:
    """The loaded library, its ffi and the selected device (loaded once per process)."""

    def __init__(self, path: Path):
        self.ffi, self.lib = bind(path)
        self.path = path
        if int(self.lib.craftax_cuda_state_size()) != _state.STATE_SIZE:
            raise RuntimeError(
                f"{path}: state size {int(self.lib.craftax_cuda_state_size())} != the C extension's "
                f"{_state.STATE_SIZE}; rebuild the CUDA library (make -C cuda) from the same headers"
            )
        expected = expected_api_version(find_header(API_HEADER, path))
        if int(self.lib.craftax_cuda_api_version()) != expected:
            raise RuntimeError(f"{path}: API version {int(self.lib.craftax_cuda_api_version())}, but its header "
                               f"{find_header(API_HEADER, path)} says {expected}; rebuild it (make -C cuda)")
        rules.check_cuda_agrees(self.ffi.string(self.lib.craftax_cuda_rules_fingerprint()).decode(), path)
        if int(self.lib.craftax_cuda_params_size()) != self.ffi.sizeof("CraftaxParams"):
            raise RuntimeError(f"{path}: CraftaxParams of the library and of craftax/params.h differ; rebuild it")
        if int(self.lib.craftax_cuda_obs_size()) != OBS_SIZE:
            raise RuntimeError(f"{path}: obs size {int(self.lib.craftax_cuda_obs_size())} != {OBS_SIZE}; rebuild it")
        rc = self.lib.craftax_cuda_init(int(os.environ.get("PYCRAFTAX_CUDA_DEVICE", "0")))
        if rc != 0:
            raise RuntimeError(f"pycraftax CUDA backend: no usable GPU ({self.last_error()})")
        name = self.ffi.new("char[256]")
        self.lib.craftax_cuda_device_name(name, 256)
        self.device_name = self.ffi.string(name).decode()
        self.device_id = int(os.environ.get("PYCRAFTAX_CUDA_DEVICE", "0"))

    def last_error(self) -> str:
        return self.ffi.string(self.lib.craftax_cuda_last_error()).decode()

    def check(self, code: int, what: str) -> None:
        if code == 0:
            return
        detail = self.last_error() if code in (ERR_NO_MEMORY, ERR_CUDA, ERR_NO_DEVICE) else ""
        message = f"{what} failed: {_ERROR_TEXT.get(code, f'error {code}')}" + (f" ({detail})" if detail else "")
        if code == ERR_NO_MEMORY:
            raise MemoryError(message)
        if code == ERR_ARGUMENT:
            raise ValueError(message)
        raise RuntimeError(message)

    def mem_info(self) -> tuple[int, int]:
        free, total = self.ffi.new("size_t *"), self.ffi.new("size_t *")
        self.check(self.lib.craftax_cuda_mem_info(free, total), "cudaMemGetInfo")
        return int(free[0]), int(total[0])


_LIB: _Lib | None = None
_LIB_ERROR: str | None = None
_LIB_LOCK = threading.Lock()


def load() -> _Lib:
    """The CUDA library, loaded and initialised; RuntimeError saying why when unusable."""
    global _LIB, _LIB_ERROR
    with _LIB_LOCK:
        if _LIB is not None:
            return _LIB
        if _LIB_ERROR is not None:
            raise RuntimeError(_LIB_ERROR)
        path = library_path()
        try:
            problem = driver_problem()
            if problem is not None:
                raise RuntimeError(f"pycraftax CUDA backend: {problem}")
            if path is None:
                raise RuntimeError(
                    "pycraftax CUDA backend: libcraftax_cuda.so not found (build it with `make -C cuda` "
                    "from the repository root, or set PYCRAFTAX_CUDA_LIB)"
                )
            try:
                import cffi  # noqa: F401
            except ImportError as exc:
                raise RuntimeError("pycraftax CUDA backend: the cffi package is needed to load the library") from exc
            try:
                _LIB = _Lib(path)
            except OSError as exc:  # dlopen failure, e.g. no libcuda.so (no driver)
                raise RuntimeError(f"pycraftax CUDA backend: cannot load {path}: {exc}") from exc
        except RuntimeError as exc:
            _LIB_ERROR = str(exc)
            raise
        return _LIB


def driver_problem() -> str | None:
    """None where the NVIDIA driver's libcuda.so.1 loads, else why not. The library itself is
    loaded only where it does: without a driver, the CUDA runtime inside it could only report
    "CUDA driver version is insufficient", which on a machine without a GPU misleads."""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no GPU: this machine has no NVIDIA driver (libcuda.so.1 cannot be loaded)"
    return None


def available() -> bool:
    try:
        load()
        return True
    except RuntimeError:
        return False


def unavailable_reason() -> str | None:
    try:
        load()
        return None
    except RuntimeError as exc:
        return str(exc)


# -- device arrays ------------------------------------------------------------------------------
class _DeviceBuffer:
    """One cudaMalloc'd block, freed when the last array viewing it goes away (or on close)."""

    def __init__(self, lib: _Lib, ptr: int, nbytes: int):
        self._lib, self.ptr, self.nbytes = lib, ptr, nbytes

    def free(self) -> None:
        if self.ptr:
            self._lib.lib.craftax_cuda_free(self._lib.ffi.cast("void *", self.ptr))
            self.ptr = 0

    def __del__(self):
        try:
            self.free()
        except Exception:  # interpreter shutdown
            pass


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]
_DL_CUDA = 2
_DL_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}  # kDLInt, kDLUInt, kDLFloat, kDLBool
_LIVE_DLPACK: dict[int, tuple] = {}  # address of the DLManagedTensor -> what it keeps alive


@_DELETER
def _dl_deleter(managed):
    _LIVE_DLPACK.pop(ctypes.addressof(managed.contents), None)


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
# The destructor gets the capsule's raw PyObject* while it is being destroyed (refcount 0):
# call these on the raw pointer, never wrap it in a py_object.
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_capsule_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule_ptr):
    # An unconsumed "dltensor" capsule owns its DLManagedTensor: call its deleter. A consumer
    # renames the capsule "used_dltensor" and calls the deleter itself when done.
    if _capsule_is_valid(capsule_ptr, b"dltensor"):
        address = _capsule_get_pointer(capsule_ptr, b"dltensor")
        _LIVE_DLPACK.pop(address, None)


class CudaArray:
    """A view of device memory: shape, numpy dtype and byte strides over a _DeviceBuffer.

    Exposes __cuda_array_interface__ (v3) and __dlpack__/__dlpack_device__ for zero-copy
    handoff; `.numpy()` / `np.asarray(a)` copy to the host. Strided views (columns) are
    supported for reading."""

    __slots__ = ("_buffer", "offset", "shape", "dtype", "strides", "device_id", "__weakref__")

    def __init__(self, buffer: _DeviceBuffer, shape, dtype, offset: int = 0, strides=None, device_id: int = 0):
        self._buffer = buffer
        self.offset = int(offset)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.strides = tuple(strides) if strides is not None else _contiguous_strides(self.shape, self.dtype.itemsize)
        self.device_id = device_id

    # -- properties
    @property
    def ptr(self) -> int:
        if not self._buffer.ptr:
            raise RuntimeError("this CudaArray's memory was freed (its env was closed)")
        return self._buffer.ptr + self.offset

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def is_contiguous(self) -> bool:
        return self.strides == _contiguous_strides(self.shape, self.dtype.itemsize)

    def __len__(self) -> int:
        return self.shape[0]

    # -- interop
    @property
    def __cuda_array_interface__(self) -> dict:
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "strides": None if self.is_contiguous else self.strides,
            "version": 3,
            # every library call synchronizes before returning: nothing to wait for
            "stream": None,
        }

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_DL_CUDA, self.device_id)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("CudaArray.__dlpack__: copy=True is not supported (use .numpy())")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"CudaArray lives on {self.__dlpack_device__()}, not {dl_device}")
        itemsize = self.dtype.itemsize
        if any(s % itemsize for s in self.strides):
            raise BufferError("strides are not a multiple of the item size")
        shape = (ctypes.c_int64 * max(self.ndim, 1))(*self.shape)
        strides = (ctypes.c_int64 * max(self.ndim, 1))(*(s // itemsize for s in self.strides))
        managed = _DLManagedTensor()
        managed.dl_tensor.data = self.ptr
        managed.dl_tensor.device = _DLDevice(_DL_CUDA, self.device_id)
        managed.dl_tensor.ndim = self.ndim
        managed.dl_tensor.dtype = _DLDataType(_DL_CODES[self.dtype.kind], itemsize * 8, 1)
        managed.dl_tensor.shape = shape
        managed.dl_tensor.strides = strides
        managed.dl_tensor.byte_offset = 0
        managed.manager_ctx = None
        managed.deleter = _dl_deleter
        address = ctypes.addressof(managed)
        _LIVE_DLPACK[address] = (managed, shape, strides, self._buffer)
        return _capsule_new(address, b"dltensor", ctypes.cast(_capsule_destructor, ctypes.c_void_p))

    # -- host copies
    def numpy(self) -> np.ndarray:
        """A host copy (numpy array) of this device array."""
        lib = self._buffer._lib
        if self.size == 0:
            return np.empty(self.shape, self.dtype)
        if self.is_contiguous:
            out = np.empty(self.shape, self.dtype)
            lib.check(lib.lib.craftax_cuda_memcpy_dtoh(lib.ffi.cast("void *", out.ctypes.data),
                                                       lib.ffi.cast("void *", self.ptr), out.nbytes), "copy to host")
            return out
        span = sum((n - 1) * s for n, s in zip(self.shape, self.strides)) + self.dtype.itemsize
        raw = np.empty(span, np.uint8)
        lib.check(lib.lib.craftax_cuda_memcpy_dtoh(lib.ffi.cast("void *", raw.ctypes.data),
                                                   lib.ffi.cast("void *", self.ptr), span), "copy to host")
        return np.ndarray(self.shape, self.dtype, buffer=raw, offset=0, strides=self.strides).copy()

    get = numpy  # CuPy's spelling
    cpu = numpy  # PyTorch's spelling (returns numpy here)

    def __array__(self, dtype=None, copy=None):
        out = self.numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def column(self, index: int) -> "CudaArray":
        """Column `index` of a 2-D array, as a strided 1-D view (no copy)."""
        if self.ndim != 2 or not 0 <= index < self.shape[1]:
            raise IndexError(f"column {index} of an array of shape {self.shape}")
        return CudaArray(self._buffer, (self.shape[0],), self.dtype, self.offset + index * self.strides[1],
                         (self.strides[0],), self.device_id)

    def __repr__(self) -> str:
        return f"CudaArray(shape={self.shape}, dtype={self.dtype}, device=cuda:{self.device_id})"


# The leaves a floor's generation writes: a host read of them completes the pending floors.
_FLOOR_LEAVES = frozenset({"map", "item_map", "mob_map", "light_map", "down_ladders", "up_ladders"})


def _contiguous_strides(shape, itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _int32_on_device(actions, dtype: np.dtype):
    """Integer device actions of another width converted on their own device (torch's .int(),
    CuPy's and JAX's .astype): a policy's int64 samples need no host round trip."""
    if dtype.kind not in "iu":  # timedelta64 is an integer subtype to numpy, not an action
        raise TypeError(f"actions must have an integer dtype (int8..int64 or uint8..uint64), got {dtype}")
    if callable(getattr(actions, "int", None)):
        return actions.int()
    if callable(getattr(actions, "astype", None)):
        return actions.astype("int32")
    raise TypeError(f"actions on the GPU must have dtype int32, got {dtype}")


def _device_actions(actions, num_envs: int):
    """(the int32 device array to read, its __cuda_array_interface__) for actions that live on
    the GPU (torch, CuPy, JAX, Numba arrays), checked to be [num_envs] and contiguous; None for
    host actions. The array must stay alive until the step has read it."""
    cai = getattr(actions, "__cuda_array_interface__", None)
    if cai is None:
        return None
    dtype = _cai_dtype(cai)
    if dtype != np.int32:
        if tuple(cai["shape"]) != (num_envs,):
            raise ValueError(f"actions must have shape ({num_envs},), got {tuple(cai['shape'])}")
        actions = _int32_on_device(actions, dtype)
        cai = actions.__cuda_array_interface__
    if tuple(cai["shape"]) != (num_envs,):
        raise ValueError(f"actions must have shape ({num_envs},), got {tuple(cai['shape'])}")
    _cai_dtype(cai)
    strides = cai.get("strides")
    if strides is not None and tuple(strides) != (4,):
        raise ValueError("actions on the GPU must be contiguous")
    return actions, cai


def _cai_dtype(cai) -> np.dtype:
    """The dtype of a __cuda_array_interface__, checked to be a readable one (version 2/3 dict
    with typestr, shape and a (pointer, read-only) data pair); TypeError naming actions else."""
    try:
        dtype = np.dtype(cai["typestr"])
        tuple(cai["shape"])
        int(cai["data"][0])
    except Exception as exc:  # a malformed interface: its own error would not name the argument
        raise TypeError(f"actions: the __cuda_array_interface__ given is malformed ({type(exc).__name__}: {exc}); "
                        "actions must be an int32 device array of shape (num_envs,) (torch, CuPy, JAX)") from exc
    return dtype


@dataclass(frozen=True)
class NativeHandles:
    """Addresses for native code that drives a CudaCraftaxEnv's buffers itself (the CUDA
    trainer): device addresses of the states and the world-generation scratch, the host
    address of the env's CraftaxParams struct (valid while the env is open) and its size."""

    states: int
    scratch: int
    params: int
    params_size: int


# -- the env ------------------------------------------------------------------------------------
_LIVE_ENVS: "weakref.WeakSet[CudaCraftaxEnv]" = weakref.WeakSet()


@atexit.register
def _close_live_envs() -> None:
    # Free GPU buffers before the CUDA runtime tears itself down at process exit.
    for env in list(_LIVE_ENVS):
        env.close()
    if _LIB is not None:  # the library's shared scratch and done list (compute-sanitizer's leak check)
        _LIB.lib.craftax_cuda_release_scratch()


class CudaCraftaxEnv(CraftaxVecEnv):
    """`num_envs` full-Craftax envs on one GPU (Craftax-Symbolic-v1): the contract of
    pycraftax.vec_env.CraftaxVecEnv (seeding, threads, spaces), with device arrays (CudaArray)
    in place of numpy outputs and bit for bit the C env's results.

    obs="float" returns the symbolic obs, float32 [N, 8268]; "compact" returns compact uint8
    records [N, 1008] (pycraftax.obs_compact), 33x fewer bytes, which expand_obs() (GPU) or
    obs_compact.expand() (numpy) turn into the float obs.

    step() reads actions already on the GPU in place (int32 [N], any object with
    __cuda_array_interface__: torch, CuPy, JAX); invalid actions raise ValueError and change
    nothing.

    With `report_final_obs` set, step()'s info["final_obs"] is a device float32 [N, obs_size]
    array (float with obs="compact" too), a view of a buffer allocated on first use and
    rewritten by every step: the step kernels render the ended envs' terminal obs into it
    before their reset, the other rows are zeroed."""

    backend = "cuda"
    # the game's compact obs record and achievements; a subclass for another game
    # (pycraftax.classic_cuda_env) sets its own, its _BUFFERS and its native calls
    compact_size = obs_compact.COMPACT_SIZE
    achievement_table = ACHIEVEMENTS
    state_size = _state.STATE_SIZE

    # name -> (dtype, per-env shape); allocated together, all or nothing.
    _BUFFERS = {
        "states": (np.uint8, (_state.STATE_SIZE,)),
        "scratch": (np.uint8, None),  # the batch's world-gen scratch: scratch_bytes(num_envs)
        "obs": (np.float32, (OBS_SIZE,)),
        "reward": (np.float32, ()),
        "done": (np.bool_, ()),
        "terminated": (np.bool_, ()),
        "truncated": (np.bool_, ()),
        "final_achievements": (np.bool_, (NUM_ACHIEVEMENTS,)),
        "achievements_scaled": (np.float32, (NUM_ACHIEVEMENTS,)),
        "ret_acc": (np.float32, ()),
        "len_acc": (np.int32, ()),
        "episode_return": (np.float32, ()),
        "episode_length": (np.int32, ()),
        "discount": (np.float32, ()),
        "actions": (np.int32, ()),
        "keys": (np.uint32, (2,)),
    }

    def __init__(self, num_envs: int, seed: int, params: EnvParams, static_params: StaticEnvParams,
                 obs: str = "float", resets: str = "auto", reset_ratio: int | None = None):
        self._buffers = {}
        self._async_pending = False  # step_async work in flight on self._async_stream
        self._async_stream = 0
        super().__init__(num_envs, seed, params, static_params, obs=obs, resets=resets, reset_ratio=reset_ratio)
        self._closed = True  # until the buffers exist
        self._lib = load()
        self.device = self._lib.device_name
        self._float_views = {}  # name -> CudaArray float32 [N, width] of _float_buffer
        self._device_actions_in_use = None
        self._params = self._make_params(params)
        self._allocate()
        self._closed = False
        _LIVE_ENVS.add(self)

    def _make_params(self, params):
        """The params struct that the library's calls take."""
        return to_c(params, self._lib.ffi)

    @classmethod
    def _buffer_specs(cls, obs: str) -> dict:
        specs = dict(cls._BUFFERS)
        if obs == "compact":  # the compact records replace the float obs (1008 vs 33,072 bytes)
            specs["obs"] = (np.uint8, (cls.compact_size,))
        return specs

    @classmethod
    def bytes_per_env(cls, obs: str = "float") -> int:
        """Device memory the env's buffers take per env (state, obs, ...), besides the
        batch's world-generation scratch (scratch_bytes)."""
        return sum(_row_bytes(dtype, shape) for dtype, shape in cls._buffer_specs(obs).values() if shape is not None)

    @staticmethod
    def scratch_bytes(num_envs: int) -> int:
        """The batch's world-generation scratch: an entry per warp the GPU runs at once
        (45 KB each: a floor's noise blends and cell lists between its passes; at most
        4,224 entries, 186 MiB, on an H200), not per env. The rest of a floor's working memory is in the
        warp's shared memory."""
        lib = load()
        return int(lib.lib.craftax_cuda_scratch_entries(num_envs)) * int(lib.lib.craftax_cuda_scratch_size())

    def _allocate(self) -> None:
        lib, n = self._lib, self.num_envs
        self._specs = self._buffer_specs(self.obs_mode)
        names = list(self._specs)
        sizes = []
        for name in names:
            dtype, shape = self._specs[name]
            sizes.append(self.scratch_bytes(n) if shape is None else n * _row_bytes(dtype, shape))
        if self.resets == "optimistic":  # the wrapper's order keys and sort space
            names.append("optimistic_work")
            sizes.append(self._optimistic_work_size(n))
        need = sum(sizes)
        free, total = lib.mem_info()
        if need > free:
            fixed = self.scratch_bytes(n)
            raise MemoryError(
                f"backend='cuda': {n} envs need {need / 2**30:.2f} GiB of GPU memory "
                f"({(need - fixed) // n} bytes per env and {fixed / 2**30:.2f} GiB of world-generation scratch) "
                f"but only {free / 2**30:.2f} GiB of {total / 2**30:.2f} GiB are free on {lib.device_name}; "
                f"use fewer envs (at most about {max(free - fixed, 0) // ((need - fixed) // n)})"
            )
        ptrs = lib.ffi.new("void *[]", len(names))
        sizes_c = lib.ffi.new("size_t[]", sizes)
        lib.check(lib.lib.craftax_cuda_malloc_many(ptrs, sizes_c, len(names)), f"allocating {n} envs on the GPU")
        self._buffers = {
            name: _DeviceBuffer(lib, int(lib.ffi.cast("uintptr_t", ptrs[i])), sizes[i]) for i, name in enumerate(names)
        }
        self.device_bytes = need
        self._views = {}
        for name, (dtype, shape) in self._specs.items():
            if shape is None:
                continue
            self._views[name] = CudaArray(self._buffers[name], (n,) + shape, dtype, device_id=lib.device_id)
        # step()'s info: views of fixed buffers, built once (67 column views cost ~0.1 ms a step)
        v = self._views
        self._info_views = {f"Achievements/{name}": v["achievements_scaled"].column(index)
                            for name, index in self.achievement_table}
        self._info_views.update(done=v["done"], discount=v["discount"], episode_return=v["episode_return"],
                                episode_length=v["episode_length"], achievements=v["final_achievements"])
        lib.check(lib.lib.craftax_cuda_memset(self._p("ret_acc"), 0, n * 4), "memset")
        lib.check(lib.lib.craftax_cuda_memset(self._p("len_acc"), 0, n * 4), "memset")
        lib.check(lib.lib.craftax_cuda_memset(self._p("states"), 0, sizes[0]), "memset")
        lib.check(lib.lib.craftax_cuda_memset(self._p("done"), 0, n), "memset")
        self._clear_achievement_rows()

    def _optimistic_work_size(self, num_envs: int) -> int:
        return int(self._lib.lib.craftax_cuda_optimistic_work_size(num_envs))

    def _p(self, name: str, ctype: str = "void *"):
        return self._lib.ffi.cast(ctype, self._buffers[name].ptr)

    def _obs_ptrs(self):
        """(float *obs, uint8_t *obs_compact) for the library's _ex calls: one is NULL."""
        if self.obs_mode == "compact":
            return self._lib.ffi.NULL, self._p("obs", "uint8_t *")
        return self._p("obs", "float *"), self._lib.ffi.NULL

    def expand_obs(self, records=None):
        """The float obs (CudaArray float32 [N, obs_size], bitwise the obs="float" obs) of compact
        records on the GPU: `records` a device uint8 [N, compact_size] array (default: the
        env's last compact obs). The result is a view of a buffer the env owns (overwritten by
        the next expand_obs)."""
        with self._lock:
            self._check_open()
            n = self.num_envs
            if records is None:
                if self.obs_mode != "compact":
                    raise ValueError("expand_obs() without records needs make(..., obs='compact')")
                src = self._buffers["obs"].ptr
            else:
                cai = getattr(records, "__cuda_array_interface__", None)
                if cai is None or tuple(cai["shape"]) != (n, self.compact_size) or cai["typestr"] != "|u1":
                    raise ValueError(f"records must be a device uint8 array of shape ({n}, {self.compact_size})")
                if cai.get("strides") not in (None, (self.compact_size, 1)):
                    raise ValueError("records must be C-contiguous")
                src = int(cai["data"][0])
            expanded = self._float_buffer("obs_expanded", self.obs_size)
            self._expand_records(src, self._buffers["obs_expanded"].ptr)
            return expanded

    def _float_buffer(self, name: str, width: int) -> CudaArray:
        """A float32 [N, width] device buffer of the env's that only some calls need, allocated
        on first use (then freed with the others at close)."""
        view = self._float_views.get(name)
        if view is None:
            lib, size = self._lib, self.num_envs * width * 4
            ptr = lib.ffi.new("void **")
            lib.check(lib.lib.craftax_cuda_malloc(ptr, size), f"allocating {name}")
            self._buffers[name] = _DeviceBuffer(lib, int(lib.ffi.cast("uintptr_t", ptr[0])), size)
            view = CudaArray(self._buffers[name], (self.num_envs, width), np.float32, device_id=lib.device_id)
            self._float_views[name] = view
        return view

    def _final_obs_ptr(self):
        """float *final_obs for a step call: NULL unless report_final_obs, else the final-obs
        buffer (allocated on first use) zeroed, so that rows of envs that do not end are 0."""
        if not self.report_final_obs:
            return self._lib.ffi.NULL
        final_obs = self._float_buffer("final_obs", self.obs_size)
        self._lib.check(self._lib.lib.craftax_cuda_memset(self._p("final_obs"), 0, final_obs.nbytes), "memset")
        return self._p("final_obs", "float *")

    def _expand_records(self, records: int, out: int) -> None:
        """The library's expansion of the compact records at device address `records` into
        the float obs at `out`."""
        lib = self._lib
        lib.check(lib.lib.craftax_cuda_expand_obs(lib.ffi.cast("uint8_t *", records), self.num_envs,
                                                  lib.ffi.cast("float *", out)), "expand_obs")

    # -- native calls of CraftaxVecEnv -------------------------------------------------------
    def _native_reset(self, keys: np.ndarray):
        lib, n = self._lib, self.num_envs
        lib.check(lib.lib.craftax_cuda_memcpy_htod(self._p("keys"), lib.ffi.from_buffer(keys), keys.nbytes), "copy keys")
        lib.check(
            lib.lib.craftax_cuda_reset_with_keys_ex(
                self._p("states"), self._p("keys", "uint32_t *"), n, self._params, *self._obs_ptrs(),
                self._p("scratch"),
            ),
            "reset",
        )
        lib.check(lib.lib.craftax_cuda_memset(self._p("ret_acc"), 0, n * 4), "memset")
        lib.check(lib.lib.craftax_cuda_memset(self._p("len_acc"), 0, n * 4), "memset")
        return self._views["obs"]

    def _prepare_actions(self, actions):
        """A device int32 pointer to the actions: the caller's device array in place, or the
        env's actions buffer filled from validated host actions (the kernels check the range)."""
        lib, n = self._lib, self.num_envs
        device = _device_actions(actions, n)
        if device is None:
            actions = check_actions(actions, n, self.num_actions)
            self._settle_async()  # a step_async in flight may still read the actions buffer
            lib.check(lib.lib.craftax_cuda_memcpy_htod(self._p("actions"), lib.ffi.from_buffer(actions),
                                                       actions.nbytes), "copy actions")
            return self._p("actions", "int32_t *")
        self._device_actions_in_use, cai = device  # alive until the next step replaces it
        stream = cai.get("stream")
        if stream not in (None, 0, 1, 2):
            lib.check(lib.lib.craftax_cuda_stream_synchronize(stream), "waiting for the actions' stream")
        return lib.ffi.cast("int32_t *", cai["data"][0])

    def _native_step(self, actions_p, sub_key: np.ndarray):
        # step, resets and bookkeeping in one call with one wait
        lib, n = self._lib, self.num_envs
        outputs = (*self._obs_ptrs(), self._final_obs_ptr(), self._p("reward", "float *"), self._p("done", "uint8_t *"),
                   self._p("terminated", "uint8_t *"), self._p("truncated", "uint8_t *"),
                   self._p("final_achievements", "uint8_t *"))
        sub = np.ascontiguousarray(sub_key)
        if self.resets == "optimistic":
            code = lib.lib.craftax_cuda_env_step_optimistic(
                self._p("states"), actions_p, lib.ffi.from_buffer("uint32_t[]", sub), n, self.reset_ratio,
                self._params, *outputs, *self._episode_ptrs(), self._p("scratch"), self._p("optimistic_work"))
        else:
            code = lib.lib.craftax_cuda_env_step(
                self._p("states"), actions_p, lib.ffi.from_buffer("uint32_t[]", sub), self._p("keys", "uint32_t *"),
                n, self._params, *outputs, *self._episode_ptrs(), self._p("scratch"))
        return self._step_result(code)

    def _step_result(self, code: int):
        """step()'s outputs after a one-wait step call that returned `code` (ValueError where its
        action check refused the actions)."""
        lib = self._lib
        if code == ERR_ARGUMENT:
            raise ValueError(f"step failed: actions must be integers in [0, {self.num_actions}) "
                             f"({lib.last_error()}); no env changed")
        lib.check(code, "step")
        v = self._views
        info = dict(self._info_views)
        if self.report_final_obs:
            info["final_obs"] = self._float_views["final_obs"]
        return v["obs"], v["reward"], v["terminated"], v["truncated"], info

    # -- step_async ---------------------------------------------------------------------------
    def _async_work(self) -> int:
        """The device address of the step_async work buffer (its action flag first), allocated
        zeroed on first use."""
        buffer = self._buffers.get("step_async_work")
        if buffer is None:
            lib = self._lib
            size = self._step_async_work_size(self.num_envs)
            ptr = lib.ffi.new("void **")
            lib.check(lib.lib.craftax_cuda_malloc(ptr, size), "allocating step_async's work buffer")
            buffer = _DeviceBuffer(lib, int(lib.ffi.cast("uintptr_t", ptr[0])), size)
            self._buffers["step_async_work"] = buffer
            lib.check(lib.lib.craftax_cuda_memset(ptr[0], 0, size), "memset")
        return buffer.ptr

    def _step_async_work_size(self, num_envs: int) -> int:
        return int(self._lib.lib.craftax_cuda_step_async_work_size(num_envs))

    def _native_step_async(self, actions_p, sub_key: np.ndarray, stream: int):
        if self.resets == "optimistic":
            self._settle_async()  # the optimistic step has no async form: it runs with its one wait
            return self._native_step(actions_p, sub_key)
        work = self._async_work()
        self._async_stream = stream
        self._async_pending = True
        self._enqueue_step(actions_p, np.ascontiguousarray(sub_key), work, stream)
        v = self._views
        return v["obs"], v["reward"], v["terminated"], v["truncated"], dict(self._info_views)

    def _enqueue_step(self, actions_p, sub_key: np.ndarray, work: int, stream: int) -> None:
        lib, n = self._lib, self.num_envs
        ffi = lib.ffi
        lib.check(lib.lib.craftax_cuda_env_step_async(
            self._p("states"), actions_p, ffi.from_buffer("uint32_t[]", sub_key), self._p("keys", "uint32_t *"), n,
            self._params, *self._obs_ptrs(), ffi.NULL, self._p("reward", "float *"), self._p("done", "uint8_t *"),
            self._p("terminated", "uint8_t *"), self._p("truncated", "uint8_t *"),
            self._p("final_achievements", "uint8_t *"), *self._episode_ptrs(), self._p("scratch"),
            ffi.cast("void *", work), stream), "step_async")

    def _settle_async(self) -> None:
        if not self._async_pending:
            return
        lib = self._lib
        self._async_pending = False
        lib.check(lib.lib.craftax_cuda_stream_synchronize(self._async_stream), "waiting for step_async")
        flag = np.zeros(1, np.int32)
        work = self._buffers["step_async_work"].ptr
        lib.check(lib.lib.craftax_cuda_memcpy_dtoh(lib.ffi.from_buffer(flag), lib.ffi.cast("void *", work), 4),
                  "reading step_async's action check")
        if flag[0]:
            lib.check(lib.lib.craftax_cuda_memset(lib.ffi.cast("void *", work), 0, 4), "memset")
            raise ValueError(f"step_async: actions must be integers in [0, {self.num_actions}); a step since the "
                             "last wait had one outside, and it and the step_async calls after it changed nothing")

    def _clear_achievement_rows(self) -> None:
        """Zero step()'s achievement rows: craftax_cuda_env_step rewrites only the rows of envs
        that end in the step or ended in the previous one (per the done buffer), so the rows
        must be zero wherever the done buffer is (at allocation, after step_with_keys)."""
        lib, n = self._lib, self.num_envs
        k = len(self.achievement_table)
        lib.check(lib.lib.craftax_cuda_memset(self._p("final_achievements"), 0, n * k), "memset")
        lib.check(lib.lib.craftax_cuda_memset(self._p("achievements_scaled"), 0, n * k * 4), "memset")

    def _episode_ptrs(self):
        """ret_acc, len_acc, episode_return, episode_length, discount, achievements_scaled."""
        return (self._p("ret_acc", "float *"), self._p("len_acc", "int32_t *"),
                self._p("episode_return", "float *"), self._p("episode_length", "int32_t *"),
                self._p("discount", "float *"), self._p("achievements_scaled", "float *"))

    def _native_step_with_keys(self, actions_p, keys: np.ndarray):
        lib, n = self._lib, self.num_envs
        lib.check(lib.lib.craftax_cuda_memcpy_htod(self._p("keys"), lib.ffi.from_buffer(keys), keys.nbytes), "copy keys")
        code = lib.lib.craftax_cuda_step_with_keys_ex(
            self._p("states"), actions_p, self._p("keys", "uint32_t *"), n, self._params,
            *self._obs_ptrs(), self._p("reward", "float *"), self._p("done", "uint8_t *"), self._p("scratch"))
        if code == ERR_ARGUMENT:
            raise ValueError(f"step_with_keys failed: actions must be integers in [0, {self.num_actions}) "
                             f"({lib.last_error()}); no env changed")
        lib.check(code, "step_with_keys")
        return self._views["obs"], self._views["reward"], self._views["done"], self._done_info()

    def _done_info(self) -> dict:
        """step_with_keys' info, built on the device from the done buffer and the new states:
        the C env's keys (log_achievements_to_info's "Achievements/<name>" and "discount") as
        device views, the buffers step() reports its info in."""
        lib, n = self._lib, self.num_envs
        leaf = self._state_table().by_name["achievements"]
        width = self._BUFFERS["achievements_scaled"][1][0]
        if leaf.shape != (width,):
            raise RuntimeError(f"achievements leaf {leaf.shape} != the info's {width} columns")
        lib.check(lib.lib.craftax_cuda_done_info(self._p("states"), self.state_size, leaf.offset, width,
                                                 self._p("done", "uint8_t *"), n, self._p("achievements_scaled", "float *"),
                                                 self._p("discount", "float *")), "step_with_keys info")
        # step() rewrites the final-achievement rows of the envs its done buffer marks; these
        # dones are not step()'s, so the rest must read zero
        lib.check(lib.lib.craftax_cuda_memset(self._p("final_achievements"), 0, n * width), "memset")
        info = {key: view for key, view in self._info_views.items() if key.startswith("Achievements/")}
        info["discount"] = self._views["discount"]
        return info

    def _native_observe(self):
        lib = self._lib
        lib.check(lib.lib.craftax_cuda_observe_ex(self._p("states"), self.num_envs, *self._obs_ptrs()), "observe")
        return self._views["obs"]

    # -- parity hooks -----------------------------------------------------------------
    def _complete_floors(self) -> None:
        """Generate the floors that resets left pending (craftax_cuda_complete_floors), so that
        the device states equal eagerly generated ones before any host read."""
        self._lib.check(self._lib.lib.craftax_cuda_complete_floors(self._p("states"), self.num_envs, self._params,
                                                                   self._p("scratch")), "complete floors")

    def pending_levels(self) -> np.ndarray:
        """uint32 [N]: bit l set where env i's level l is not generated yet (lazy levels: a
        reset makes level 0, a descent the next; PYCRAFTAX_CUDA_EAGER_FLOORS=1 makes all nine).
        Reading it generates nothing, unlike get_state."""
        with self._lock:
            self._check_open()
            lib = self._lib
            out = np.empty(self.num_envs, dtype=np.uint32)
            src = lib.ffi.cast("char *", self._buffers["states"].ptr) + _state.FLOORS_PENDING_OFFSET
            lib.check(lib.lib.craftax_cuda_memcpy2d_dtoh(lib.ffi.from_buffer(out), 4, src, _state.STATE_SIZE, 4,
                                                         self.num_envs), "copy pending levels to host")
            return out

    def _host_states(self) -> np.ndarray:
        lib = self._lib
        self._complete_floors()
        host = np.empty((self.num_envs, self.state_size), dtype=np.uint8)
        lib.check(lib.lib.craftax_cuda_memcpy_dtoh(lib.ffi.from_buffer(host), self._p("states"), host.nbytes),
                  "copy states to host")
        return host

    def _read_leaf(self, name: str) -> np.ndarray:
        """One leaf of every env, copied from the device with one strided copy."""
        leaf, lib = self._state_table().by_name[name], self._lib
        if name in _FLOOR_LEAVES:
            self._complete_floors()
        if leaf.level_stride:  # spread over the per-level mob records: not one run per env
            return leaf.view(self._host_states()).copy()
        out = np.empty((self.num_envs,) + leaf.shape, dtype=leaf.storage)
        row = out.nbytes // max(self.num_envs, 1)
        src = lib.ffi.cast("char *", self._buffers["states"].ptr) + leaf.offset
        lib.check(lib.lib.craftax_cuda_memcpy2d_dtoh(lib.ffi.from_buffer(out), row, src, self.state_size, row,
                                                     self.num_envs), f"copy {name} to host")
        return out

    def _native_host_states(self) -> np.ndarray:
        return self._host_states()

    def _native_read_leaf(self, name: str) -> np.ndarray:
        return self._read_leaf(name)

    def _native_write_states(self, converted: dict[str, np.ndarray]) -> None:
        host = self._host_states()
        self._state_table().write_state(host, converted)
        lib = self._lib
        lib.check(lib.lib.craftax_cuda_memcpy_htod(self._p("states"), lib.ffi.from_buffer(host), host.nbytes),
                  "copy states to device")

    def _native_close(self) -> None:
        if self._async_pending:  # no kernel may run on freed buffers
            self._async_pending = False
            self._lib.lib.craftax_cuda_stream_synchronize(self._async_stream)
        for buffer in self._buffers.values():
            buffer.free()
        self._buffers = {}
        self._float_views = {}

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    # -- for native code of the caller's that drives the buffers itself ----------------------------
    def native_handles(self) -> NativeHandles:
        """The device addresses of the states and scratch buffers and the host address of the
        env's CraftaxParams (all valid while the env is open), and sizeof(CraftaxParams)."""
        with self._lock:
            self._check_open()
            ffi = self._lib.ffi
            return NativeHandles(states=self._buffers["states"].ptr, scratch=self._buffers["scratch"].ptr,
                                 params=int(ffi.cast("uintptr_t", self._params)),
                                 params_size=ffi.sizeof("CraftaxParams"))

    def _repr_details(self) -> str:
        return f", device={self.device!r}"

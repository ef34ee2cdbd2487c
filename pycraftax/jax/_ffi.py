"""Loading and registration of the XLA FFI handlers, and the jax.ffi calls over them.

CPU: _craftax_xla.so (reference_c/xla/craftax_xla_ffi.cc over the C extension's API), always:
the three calls (reset, step, auto-reset step) of four envs, Craftax-Symbolic-v1,
Craftax-Pixels-v1, Craftax-Classic-Symbolic-v1 and Craftax-Classic-Pixels-v1 (targets
"pycraftax_*", "pycraftax_pixels_*", "pycraftax_classic_*", "pycraftax_classic_pixels_*").
CUDA: _craftax_xla_cuda.so (cuda/xla/craftax_xla_ffi.cu over libcraftax_cuda.so), where the
install built it or a GPU driver, the CUDA library and nvcc are here; the same three calls of
Craftax-Symbolic-v1, so one jax.ffi call lowers to either platform. Each comes with
the install where jaxlib was present when it was built, else it is built at first import
against the installed jaxlib (pycraftax/jax/ffi_build.py).

Each call takes one env's operands (states uint8 [state size], key uint32 [2], action int32 []);
under jax.vmap, vmap_method="broadcast_all" gives every operand the batch axes in front
(unbatched ones broadcast), at any vmap depth, and the handler runs the whole batch as one
native call. The states operand is aliased to the states result. Params come in one of two
ways (pycraftax/jax/params.py): a PackedParams (concrete at trace time) as the "params"
attribute of the targets "pycraftax_reset", "pycraftax_step", "pycraftax_step_autoreset";
traced params as a uint32 [params words] operand of their "..._params_operand" twins (the
words of CraftaxParams, or of CraftaxClassicParams for the Classic targets). On the
GPU the attribute form runs without any host synchronisation; the operand form copies the
params to the host first (one wait for XLA's stream per call).

Out-of-range actions: the CPU handlers fail the call (an exception when its results are
used). The GPU handlers cannot see the actions without waiting for the GPU, so a device check
records the first bad (env, action) and runs that env's step as NOOP (no memory is touched
out of bounds); the record is raised as an error by the next GPU call whose host part runs
after the bad step finished, and at once by raise_if_invalid_actions().
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import jax
import jax.numpy as jnp

from pycraftax import _native, _state, classic_state, rules
from pycraftax._native import lib
from pycraftax.jax import ffi_build
from pycraftax.jax.params import CLASSIC_PARAMS_WORDS, PARAMS_WORDS, pack_on_host, pack_params

PACKAGE_DIR = Path(__file__).resolve().parent
LIBRARY = PACKAGE_DIR / ffi_build.CPU_LIBRARY  # where setup.py puts them when jaxlib is there at build time
CUDA_LIBRARY = PACKAGE_DIR / ffi_build.CUDA_LIBRARY
OBS_SIZE = int(lib.craftax_obs_size())
NUM_ACHIEVEMENTS = 67
NUM_ACTIONS = 43
OPERAND_SUFFIX = "_params_operand"
# target: handler symbol, less its platform suffix (Cpu, Cuda)
_HANDLERS = {
    "pycraftax_reset": "PycraftaxReset",
    "pycraftax_step": "PycraftaxStep",
    "pycraftax_step_autoreset": "PycraftaxStepAutoReset",
    "pycraftax_reset" + OPERAND_SUFFIX: "PycraftaxResetParamsOperand",
    "pycraftax_step" + OPERAND_SUFFIX: "PycraftaxStepParamsOperand",
    "pycraftax_step_autoreset" + OPERAND_SUFFIX: "PycraftaxStepAutoResetParamsOperand",
}
# The other envs' (CPU handlers): the same calls under their own prefix, keyed by (classic, pixels)
_PREFIXES = {(False, False): ("pycraftax_", "Pycraftax"), (False, True): ("pycraftax_pixels_", "PycraftaxPixels"),
             (True, False): ("pycraftax_classic_", "PycraftaxClassic"),
             (True, True): ("pycraftax_classic_pixels_", "PycraftaxClassicPixels")}
PIXELS_PREFIX = _PREFIXES[(False, True)][0]
_CPU_HANDLERS = {target.replace("pycraftax_", prefix, 1): symbol.replace("Pycraftax", symbol_prefix, 1)
                 for prefix, symbol_prefix in _PREFIXES.values() for target, symbol in _HANDLERS.items()}
PIXEL_OBS_SHAPE = (130, 110, 3)
CLASSIC_OBS_SIZE = classic_state.OBS_SIZE
CLASSIC_PIXEL_OBS_SHAPE = (63, 63, 3)
CLASSIC_NUM_ACTIONS = classic_state.NUM_ACTIONS
CLASSIC_NUM_ACHIEVEMENTS = classic_state.NUM_ACHIEVEMENTS


def obs_shape(classic: bool, pixels: bool) -> tuple:
    """One env's obs shape."""
    if classic:
        return CLASSIC_PIXEL_OBS_SHAPE if pixels else (CLASSIC_OBS_SIZE,)
    return PIXEL_OBS_SHAPE if pixels else (OBS_SIZE,)


def state_size(classic: bool) -> int:
    return classic_state.STATE_SIZE if classic else _state.STATE_SIZE


def _cpu_library_path() -> Path:
    """The CPU handlers: the install's, else built against the installed jaxlib (once, cached)."""
    if LIBRARY.exists():
        return LIBRARY
    try:
        return ffi_build.cached_cpu_library(PACKAGE_DIR)
    except ffi_build.FfiBuildError as exc:
        raise ImportError(f"pycraftax.jax needs its XLA FFI library {LIBRARY.name}, and it could not be built: {exc}") \
            from exc


def _load() -> ctypes.CDLL:
    path = _cpu_library_path()
    # the handlers call the C API of the extension pycraftax._native loaded: its symbols go global
    ctypes.CDLL(sys.modules[_native.EXTENSION_MODULE].__file__, mode=ctypes.RTLD_GLOBAL)
    try:
        library = ctypes.CDLL(str(path))
    except OSError as exc:
        raise ImportError(f"pycraftax.jax: cannot load {path} ({exc}); reinstall pycraftax (from the clone's root: "
                          f"{ffi_build.CLONE_FIX})") from exc
    # the layout compiled into the handlers; their rules are the loaded extension's by construction
    _check_abi(library.pycraftax_xla_abi, LIBRARY.name)
    classic_abi = getattr(library, "pycraftax_xla_classic_abi", None)
    if classic_abi is None:
        raise ImportError(f"{path} predates pycraftax.jax's Craftax-Classic envs; reinstall pycraftax (from the "
                          f"clone's root: {ffi_build.CLONE_FIX})")
    _check_abi(classic_abi, LIBRARY.name, classic=True)
    for target, symbol in _CPU_HANDLERS.items():
        jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(getattr(library, symbol + "Cpu")), platform="cpu")
    library.pycraftax_xla_set_pixel_atlas.restype = ctypes.c_int
    library.pycraftax_xla_set_pixel_atlas.argtypes = [ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64]
    return library


def _check_abi(abi, name: str, classic: bool = False) -> None:
    abi.restype = ctypes.c_int
    sizes = [ctypes.c_int64() for _ in range(3)]
    version = abi(*(ctypes.byref(s) for s in sizes))
    built = (version, sizes[0].value, sizes[1].value, sizes[2].value)
    if classic:
        expected = (int(lib.craftax_api_version()), classic_state.STATE_SIZE, CLASSIC_PARAMS_WORDS, CLASSIC_OBS_SIZE)
    else:
        expected = (int(lib.craftax_api_version()), _state.STATE_SIZE, PARAMS_WORDS, OBS_SIZE)
    # the CUDA library has its own API version; only the layout must agree
    if built[1:] != expected[1:] or (name == LIBRARY.name and built[0] != expected[0]):
        raise ImportError(
            f"{name} was built from another version of the C reference ({'Classic ' if classic else ''}api, state "
            f"size, params words, "
            f"obs size = {built}, this package {expected}); reinstall pycraftax (from the clone's root: "
            f"{ffi_build.CLONE_FIX})"
        )


def _rules_of(library: ctypes.CDLL, symbol: str, name: str) -> str:
    """The rules fingerprint a library (or the CUDA library it links) was built with."""
    try:
        fingerprint = getattr(library, symbol)
    except AttributeError:
        raise ImportError(f"{name} predates rules fingerprints (no {symbol}); rebuild pycraftax") from None
    fingerprint.restype = ctypes.c_char_p
    return fingerprint().decode()


def _cuda_library_path() -> Path | None:
    """The CUDA handlers: the install's, else built at first use where a GPU driver, the CUDA
    library and nvcc are all here; None otherwise (CPU only)."""
    if CUDA_LIBRARY.exists():
        return CUDA_LIBRARY
    from pycraftax import cuda_env

    env_library = cuda_env.library_path()
    if env_library is None or cuda_env.driver_problem() is not None:
        return None
    try:
        return ffi_build.cached_cuda_library(PACKAGE_DIR, env_library)
    except (ffi_build.FfiBuildError, OSError) as exc:
        print(f"pycraftax.jax: the CUDA handlers could not be built ({exc}); pycraftax.jax runs on the CPU only",
              file=sys.stderr)
        return None


def _load_cuda() -> ctypes.CDLL | None:
    """Register the CUDA handlers where there are some; None where not (CPU-only installs)."""
    path = _cuda_library_path()
    if path is None:
        return None
    library = ctypes.CDLL(str(path))
    _check_abi(library.pycraftax_xla_cuda_abi, CUDA_LIBRARY.name)
    # the handlers call libcraftax_cuda.so directly, not through cuda_env's loader: the same check
    rules.check_cuda_agrees(_rules_of(library, "craftax_cuda_rules_fingerprint", CUDA_LIBRARY.name), path)
    library.pycraftax_xla_cuda_take_invalid_action.restype = ctypes.c_int
    library.pycraftax_xla_cuda_take_invalid_action.argtypes = [ctypes.POINTER(ctypes.c_int64)] * 2
    for target, symbol in _HANDLERS.items():
        jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(getattr(library, symbol + "Cuda")), platform="CUDA")
    return library


_LIBRARY = _load()
_CUDA_LIBRARY = _load_cuda()
CUDA_AVAILABLE = _CUDA_LIBRARY is not None


_ATLAS_SET: set = set()


def set_pixel_atlas(classic: bool = False) -> None:
    """Give the CPU handlers the texture atlas of Craftax-Pixels-v1 (Craftax-Classic-Pixels-v1's
    with `classic`): pycraftax.pixels', from the installed craftax distribution's images; once
    per process and game."""
    if classic in _ATLAS_SET:
        return
    from pycraftax import pixels

    game = pixels.CLASSIC if classic else pixels.FULL
    atlas = pixels.atlas(game, pixels.AGENT_BLOCK[game])
    rc = _LIBRARY.pycraftax_xla_set_pixel_atlas(int(classic), atlas.ctypes.data, atlas.size)
    if rc != 0:
        raise RuntimeError(f"{LIBRARY.name} refused the {game} pixel atlas ({atlas.size} floats, code {rc}): "
                           "rebuild pycraftax")
    _ATLAS_SET.add(classic)


def raise_if_invalid_actions() -> None:
    """Wait for the GPU steps enqueued so far and raise ValueError if any got an action outside
    [0, 43) since the last report (the env is named; it was stepped with NOOP instead). The CPU
    handlers raise at the call itself, so without the CUDA handlers this only returns."""
    if _CUDA_LIBRARY is None:
        return
    env, action = ctypes.c_int64(), ctypes.c_int64()
    rc = _CUDA_LIBRARY.pycraftax_xla_cuda_take_invalid_action(ctypes.byref(env), ctypes.byref(action))
    if rc < 0:
        raise RuntimeError(f"pycraftax (CUDA): waiting for the GPU failed (code {rc})")
    if rc:
        raise ValueError(
            f"pycraftax (CUDA): action {action.value} of env {env.value} is outside [0, {NUM_ACTIONS}) "
            "(a GPU step since the last check; that env took NOOP instead)"
        )


def _call(target: str, result_shapes, operands, params, alias_states: bool, classic: bool):
    """The FFI call with `params` as the attribute where they are concrete, else as the last operand."""
    packed = pack_on_host(params, classic)
    if packed is None:
        target, operands, attributes = target + OPERAND_SUFFIX, (*operands, pack_params(params, classic)), {}
    else:
        attributes = {"params": packed.words}
    call = jax.ffi.ffi_call(
        target,
        result_shapes,
        vmap_method="broadcast_all",
        input_output_aliases={0: 0} if alias_states else None,
    )
    return call(*operands, **attributes)


def _target(name: str, pixels: bool, classic: bool = False) -> str:
    return name.replace("pycraftax_", _PREFIXES[(classic, pixels)][0], 1)


def reset(keys: jax.Array, params, pixels: bool = False, classic: bool = False):
    """(states, obs) of fresh worlds; `params` a PackedParams or a (traced) params object;
    the pixel env's worlds and obs with `pixels`, Craftax-Classic's with `classic`."""
    batch = keys.shape[:-1]
    return _call(
        _target("pycraftax_reset", pixels, classic),
        (
            jax.ShapeDtypeStruct(batch + (state_size(classic),), jnp.uint8),
            jax.ShapeDtypeStruct(batch + obs_shape(classic, pixels), jnp.float32),
        ),
        (keys,),
        params,
        alias_states=False,
        classic=classic,
    )


def step(states: jax.Array, actions: jax.Array, keys: jax.Array, params, auto_reset: bool, pixels: bool = False,
         classic: bool = False):
    """(states, obs, rewards, dones[, final_achievements]) after one step of every env (the
    pixel env's obs with `pixels`; Craftax-Classic's states, obs and achievements with `classic`)."""
    batch = actions.shape
    shapes = [
        jax.ShapeDtypeStruct(states.shape, jnp.uint8),
        jax.ShapeDtypeStruct(batch + obs_shape(classic, pixels), jnp.float32),
        jax.ShapeDtypeStruct(batch, jnp.float32),
        jax.ShapeDtypeStruct(batch, jnp.bool_),
    ]
    if auto_reset:
        achievements = CLASSIC_NUM_ACHIEVEMENTS if classic else NUM_ACHIEVEMENTS
        shapes.append(jax.ShapeDtypeStruct(batch + (achievements,), jnp.uint8))
    target = _target("pycraftax_step_autoreset" if auto_reset else "pycraftax_step", pixels, classic)
    return _call(target, tuple(shapes), (states, actions, keys), params, alias_states=True, classic=classic)


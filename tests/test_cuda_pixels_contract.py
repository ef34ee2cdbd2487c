"""The CUDA pixel envs' binding without a GPU (their GPU parity is conformance/test_cuda_pixels.py):
the headers cffi reads declare the pixel calls, the device bytes per env are the buffers'
(state, picture obs and the step's outputs), and a built library, loaded without touching a GPU,
renders with the C extension's atlas layout and obs sizes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cffi import FFI

from pycraftax import _state, classic_state, cuda_env, pixels
from pycraftax._cdef import cdef_declarations
from pycraftax.classic_cuda_env import _HEADERS as CLASSIC_HEADERS
from pycraftax.classic_cuda_env import CudaClassicEnv, _header
from pycraftax.cuda_env import CudaCraftaxEnv
from pycraftax.cuda_pixels_env import CudaClassicPixelsEnv, CudaPixelsEnv

ROOT = Path(__file__).resolve().parent.parent

FULL_CALLS = ("craftax_cuda_pixels_obs_size", "craftax_cuda_pixels_atlas_size", "craftax_cuda_pixels_observe",
              "craftax_cuda_pixels_reset_with_keys", "craftax_cuda_pixels_step_with_keys",
              "craftax_cuda_pixels_env_step", "craftax_cuda_pixels_env_step_optimistic")
CLASSIC_CALLS = tuple(name.replace("craftax_cuda_", "craftax_classic_cuda_") for name in FULL_CALLS)
LIBRARY = ROOT / "cuda" / "build" / "libcraftax_cuda.so"


def _full_ffi() -> FFI:
    ffi = FFI()
    ffi.cdef(cdef_declarations((ROOT / "reference_c" / "include" / "craftax" / "params.h").read_text()) + "\n"
             + cdef_declarations((ROOT / "cuda" / "craftax_cuda.h").read_text()))
    return ffi


def _classic_ffi() -> FFI:
    ffi = FFI()
    ffi.cdef("\n".join(cdef_declarations(_header(name, LIBRARY)) for name in CLASSIC_HEADERS))
    return ffi


def test_headers_declare_the_pixel_calls():
    for ffi, calls in ((_full_ffi(), FULL_CALLS), (_classic_ffi(), CLASSIC_CALLS)):
        declared = ffi._parser._declarations  # cffi's parsed cdef: "function <name>" -> its type
        for name in calls:
            assert f"function {name}" in declared, name
    # the pixel calls came with a new API version, which Python checks against the library
    assert cuda_env.expected_api_version(ROOT / "cuda" / "craftax_cuda.h") >= 13


def test_bytes_per_env_are_the_buffers():
    """Device bytes per env: the symbolic env's buffers with the float obs replaced by the
    picture (130 x 110 x 3 or 63 x 63 x 3 float32); final_obs (another picture, on first use
    with report_final_obs), the atlas and the world-generation scratch are per batch or extra."""
    full_obs, classic_obs = 4 * 130 * 110 * 3, 4 * 63 * 63 * 3
    assert CudaPixelsEnv.bytes_per_env() == CudaCraftaxEnv.bytes_per_env() - 4 * CudaCraftaxEnv.obs_size + full_obs
    assert CudaClassicPixelsEnv.bytes_per_env() == CudaClassicEnv.bytes_per_env() - 4 * CudaClassicEnv.obs_size \
        + classic_obs
    assert CudaPixelsEnv.bytes_per_env() == 320_910  # cuda/README.md states these
    assert CudaClassicPixelsEnv.bytes_per_env() == 56_453
    assert _state.STATE_SIZE + full_obs < CudaPixelsEnv.bytes_per_env() < _state.STATE_SIZE + full_obs + 400
    assert classic_state.STATE_SIZE + classic_obs < CudaClassicPixelsEnv.bytes_per_env()
    with pytest.raises(ValueError, match="obs='float'"):
        CudaPixelsEnv.bytes_per_env(obs="compact")


@pytest.mark.skipif(not LIBRARY.is_file(), reason=f"the CUDA library is not built ({LIBRARY}: make -C cuda)")
def test_built_library_renders_with_the_c_layout():
    """The library's pixel calls were compiled for the C extension's atlas (the layout nvcc's
    host code computes from the same section tables) and obs sizes; loading it and asking
    touches no GPU."""
    full = _full_ffi().dlopen(str(LIBRARY))
    built, header = full.craftax_cuda_api_version(), cuda_env.expected_api_version(ROOT / "cuda" / "craftax_cuda.h")
    if built != header:  # Python refuses such a library too (cuda_env._Lib)
        pytest.skip(f"{LIBRARY} is API version {built}, its header {header}: a stale build (make -C cuda)")
    classic = _classic_ffi().dlopen(str(LIBRARY))
    assert full.craftax_cuda_pixels_atlas_size() == pixels.atlas(pixels.FULL, pixels.AGENT_BLOCK[pixels.FULL]).size
    assert classic.craftax_classic_cuda_pixels_atlas_size() == \
        pixels.atlas(pixels.CLASSIC, pixels.AGENT_BLOCK[pixels.CLASSIC]).size
    assert full.craftax_cuda_pixels_obs_size() == int(np.prod(CudaPixelsEnv._picture_shape)) == CudaPixelsEnv.obs_size
    assert classic.craftax_classic_cuda_pixels_obs_size() == CudaClassicPixelsEnv.obs_size == 63 * 63 * 3

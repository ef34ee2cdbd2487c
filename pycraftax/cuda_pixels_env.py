"""The pixel envs on one GPU (backend="cuda"): Craftax-Pixels-v1 and Craftax-Classic-Pixels-v1
over the craftax_cuda_pixels_* and craftax_classic_cuda_pixels_* calls of
cuda/build/libcraftax_cuda.so (cuda/env_pixels.cuh, cuda/classic_pixels.cuh).

The symbolic CUDA envs' contract (pycraftax.cuda_env: device arrays with
__cuda_array_interface__ and __dlpack__, resets="auto"|"optimistic", info["final_obs"],
get_state/set_state) with the C pixel envs' obs (pycraftax.pixels_env): float32
[N, 130, 110, 3] (Classic [N, 63, 63, 3]), upstream's picture / 255, rendered on the device
by the C renderer's headers from the device states, over a device copy of the same texture
atlas (pycraftax.pixels.atlas, from the installed craftax distribution). obs="compact" does not
exist for them; step_async runs the step synchronously.
"""

from __future__ import annotations

import numpy as np

from pycraftax import pixels
from pycraftax.classic_cuda_env import CudaClassicEnv
from pycraftax.cuda_env import ERR_ARGUMENT, CudaArray, CudaCraftaxEnv, _DeviceBuffer
from pycraftax.params import CLASSIC_PIXELS_ENV_ID, CRAFTAX_PIXELS_ENV_ID
from pycraftax.vec_env import CraftaxVecEnv

__all__ = ["CudaClassicPixelsEnv", "CudaPixelsEnv"]


class _CudaPixelObs:
    """The pixel obs of a CUDA env: its game's atlas at the agent's block size, uploaded once per
    env to the device and passed to the game's pixel calls; the obs and final_obs buffers shaped
    as pictures."""

    game = pixels.FULL
    _picture_shape: tuple[int, int, int] = (130, 110, 3)

    def __init__(self, *args, **kwargs):
        # before any GPU memory is taken: a missing craftax distribution fails here, clearly
        self._host_atlas = pixels.atlas(self.game, pixels.AGENT_BLOCK[self.game])
        super().__init__(*args, **kwargs)

    @property
    def obs_shape(self) -> tuple[int, int, int]:
        return self._picture_shape

    def _observation_low(self) -> np.ndarray:
        return np.zeros(self.obs_shape, dtype=np.float32)

    def _observation_high(self) -> np.ndarray:
        return np.ones(self.obs_shape, dtype=np.float32)

    @classmethod
    def _buffer_specs(cls, obs: str) -> dict:
        if obs != "float":
            raise ValueError(f"obs={obs!r}: {cls.env_id} has only obs='float' (the compact records encode the "
                             "symbolic obs)")
        return dict(cls._BUFFERS)

    def _library_sizes(self) -> tuple[int, int]:
        """(atlas floats, obs floats) the library's pixel calls were built for."""
        raise NotImplementedError

    def _allocate(self) -> None:
        super()._allocate()
        atlas_floats, obs_floats = self._library_sizes()
        if atlas_floats != self._host_atlas.size or obs_floats != self.obs_size:
            self._native_close()
            raise RuntimeError(
                f"{self._lib.path}: its {self.env_id} takes an atlas of {atlas_floats} floats and renders {obs_floats} "
                f"floats an env, the C extension's {self._host_atlas.size} and {self.obs_size}; rebuild the CUDA "
                "library (make -C cuda) from the same headers")
        lib = self._lib
        ptr = lib.ffi.new("void **")
        lib.check(lib.lib.craftax_cuda_malloc(ptr, self._host_atlas.nbytes), "allocating the texture atlas")
        self._buffers["atlas"] = _DeviceBuffer(lib, int(lib.ffi.cast("uintptr_t", ptr[0])), self._host_atlas.nbytes)
        lib.check(lib.lib.craftax_cuda_memcpy_htod(ptr[0], lib.ffi.from_buffer(self._host_atlas),
                                                   self._host_atlas.nbytes), "copying the texture atlas to the GPU")
        self.device_bytes += self._host_atlas.nbytes

    def _float_buffer(self, name: str, width: int) -> CudaArray:
        view = super()._float_buffer(name, width)
        if name == "final_obs" and view.shape[1:] != self.obs_shape:  # pictures, as the obs
            view = CudaArray(view._buffer, (self.num_envs, *self.obs_shape), np.float32, device_id=view.device_id)
            self._float_views[name] = view
        return view

    def expand_obs(self, records=None):
        raise ValueError(f"{self.env_id} has no compact obs records to expand (they encode the symbolic obs)")

    # the pixel steps have no async form: step_async steps synchronously, as the C envs do
    _native_step_async = CraftaxVecEnv._native_step_async

    def _step_with_keys_result(self, code: int):
        lib = self._lib
        if code == ERR_ARGUMENT:
            raise ValueError(f"step_with_keys failed: actions must be integers in [0, {self.num_actions}) "
                             f"({lib.last_error()}); no env changed")
        lib.check(code, "step_with_keys")
        return self._views["obs"], self._views["reward"], self._views["done"], self._done_info()


class CudaPixelsEnv(_CudaPixelObs, CudaCraftaxEnv):
    """`num_envs` Craftax-Pixels-v1 envs on one GPU: obs float32 [N, 130, 110, 3] in [0, 1] as
    device arrays, bit for bit the C pixel env's (pycraftax.pixels_env.CraftaxPixelsEnv)."""

    env_id = CRAFTAX_PIXELS_ENV_ID
    game = pixels.FULL
    _picture_shape = (130, 110, 3)
    obs_size = 130 * 110 * 3
    _BUFFERS = {**CudaCraftaxEnv._BUFFERS, "obs": (np.float32, _picture_shape)}

    def _library_sizes(self) -> tuple[int, int]:
        lib = self._lib.lib
        return int(lib.craftax_cuda_pixels_atlas_size()), int(lib.craftax_cuda_pixels_obs_size())

    def _native_reset(self, keys: np.ndarray):
        lib, n = self._lib, self.num_envs
        lib.check(lib.lib.craftax_cuda_memcpy_htod(self._p("keys"), lib.ffi.from_buffer(keys), keys.nbytes), "copy keys")
        lib.check(lib.lib.craftax_cuda_pixels_reset_with_keys(
            self._p("states"), self._p("keys", "uint32_t *"), n, self._params, self._p("obs", "float *"),
            self._p("atlas", "float *"), self._p("scratch")), "reset")
        lib.check(lib.lib.craftax_cuda_memset(self._p("ret_acc"), 0, n * 4), "memset")
        lib.check(lib.lib.craftax_cuda_memset(self._p("len_acc"), 0, n * 4), "memset")
        return self._views["obs"]

    def _native_step(self, actions_p, sub_key: np.ndarray):
        lib, n = self._lib, self.num_envs
        ffi = lib.ffi
        outputs = (self._p("obs", "float *"), self._final_obs_ptr(), self._p("reward", "float *"),
                   self._p("done", "uint8_t *"), self._p("terminated", "uint8_t *"), self._p("truncated", "uint8_t *"),
                   self._p("final_achievements", "uint8_t *"))
        key = ffi.from_buffer("uint32_t[]", np.ascontiguousarray(sub_key))
        if self.resets == "optimistic":
            code = lib.lib.craftax_cuda_pixels_env_step_optimistic(
                self._p("states"), actions_p, key, n, self.reset_ratio, self._params, *outputs, *self._episode_ptrs(),
                self._p("atlas", "float *"), self._p("scratch"), self._p("optimistic_work"))
        else:
            code = lib.lib.craftax_cuda_pixels_env_step(
                self._p("states"), actions_p, key, self._p("keys", "uint32_t *"), n, self._params, *outputs,
                *self._episode_ptrs(), self._p("atlas", "float *"), self._p("scratch"))
        return self._step_result(code)

    def _native_step_with_keys(self, actions_p, keys: np.ndarray):
        lib, n = self._lib, self.num_envs
        lib.check(lib.lib.craftax_cuda_memcpy_htod(self._p("keys"), lib.ffi.from_buffer(keys), keys.nbytes), "copy keys")
        code = lib.lib.craftax_cuda_pixels_step_with_keys(
            self._p("states"), actions_p, self._p("keys", "uint32_t *"), n, self._params, self._p("obs", "float *"),
            self._p("reward", "float *"), self._p("done", "uint8_t *"), self._p("atlas", "float *"), self._p("scratch"))
        return self._step_with_keys_result(code)

    def _native_observe(self):
        lib = self._lib
        lib.check(lib.lib.craftax_cuda_pixels_observe(self._p("states"), self.num_envs, self._p("obs", "float *"),
                                                      self._p("atlas", "float *")), "observe")
        return self._views["obs"]


class CudaClassicPixelsEnv(_CudaPixelObs, CudaClassicEnv):
    """`num_envs` Craftax-Classic-Pixels-v1 envs on one GPU: obs float32 [N, 63, 63, 3] in [0, 1]
    as device arrays, bit for bit the C pixel env's (pycraftax.pixels_env.CraftaxClassicPixelsEnv)."""

    env_id = CLASSIC_PIXELS_ENV_ID
    game = pixels.CLASSIC
    _picture_shape = (63, 63, 3)
    obs_size = 63 * 63 * 3
    _BUFFERS = {**CudaClassicEnv._BUFFERS, "obs": (np.float32, _picture_shape)}

    def _library_sizes(self) -> tuple[int, int]:
        lib = self._classic.lib
        return int(lib.craftax_classic_cuda_pixels_atlas_size()), int(lib.craftax_classic_cuda_pixels_obs_size())

    def _native_reset(self, keys: np.ndarray):
        lib, n = self._lib, self.num_envs
        lib.check(lib.lib.craftax_cuda_memcpy_htod(self._p("keys"), lib.ffi.from_buffer(keys), keys.nbytes), "copy keys")
        lib.check(self._classic.lib.craftax_classic_cuda_pixels_reset_with_keys(
            self._c("states"), self._c("keys", "uint32_t *"), n, self._params, self._c("obs", "float *"),
            self._c("atlas", "float *")), "reset")
        lib.check(lib.lib.craftax_cuda_memset(self._p("ret_acc"), 0, n * 4), "memset")
        lib.check(lib.lib.craftax_cuda_memset(self._p("len_acc"), 0, n * 4), "memset")
        return self._views["obs"]

    def _native_step(self, actions_p, sub_key: np.ndarray):
        cl, n = self._classic, self.num_envs
        ffi = cl.ffi
        final_obs = ffi.NULL
        if self.report_final_obs:
            self._final_obs_ptr()  # allocated on first use, zeroed
            final_obs = self._c("final_obs", "float *")
        outputs = (self._c("obs", "float *"), final_obs, self._c("reward", "float *"), self._c("done", "uint8_t *"),
                   self._c("terminated", "uint8_t *"), self._c("truncated", "uint8_t *"),
                   self._c("final_achievements", "uint8_t *"))
        episodes = (self._c("ret_acc", "float *"), self._c("len_acc", "int32_t *"),
                    self._c("episode_return", "float *"), self._c("episode_length", "int32_t *"),
                    self._c("discount", "float *"), self._c("achievements_scaled", "float *"))
        key = ffi.from_buffer("uint32_t[]", np.ascontiguousarray(sub_key))
        actions = self._actions_ptr(actions_p)
        atlas = self._c("atlas", "float *")
        if self.resets == "optimistic":
            code = cl.lib.craftax_classic_cuda_pixels_env_step_optimistic(
                self._c("states"), actions, key, n, self.reset_ratio, self._params, *outputs, *episodes, atlas,
                self._c("optimistic_work"))
        else:
            code = cl.lib.craftax_classic_cuda_pixels_env_step(
                self._c("states"), actions, key, self._c("keys", "uint32_t *"), n, self._params, *outputs, *episodes,
                atlas)
        return self._step_result(code)

    def _native_step_with_keys(self, actions_p, keys: np.ndarray):
        lib, n = self._lib, self.num_envs
        lib.check(lib.lib.craftax_cuda_memcpy_htod(self._p("keys"), lib.ffi.from_buffer(keys), keys.nbytes), "copy keys")
        code = self._classic.lib.craftax_classic_cuda_pixels_step_with_keys(
            self._c("states"), self._actions_ptr(actions_p), self._c("keys", "uint32_t *"), n, self._params,
            self._c("obs", "float *"), self._c("reward", "float *"), self._c("done", "uint8_t *"),
            self._c("atlas", "float *"))
        return self._step_with_keys_result(code)

    def _native_observe(self):
        self._lib.check(self._classic.lib.craftax_classic_cuda_pixels_observe(
            self._c("states"), self.num_envs, self._c("obs", "float *"), self._c("atlas", "float *")), "observe")
        return self._views["obs"]

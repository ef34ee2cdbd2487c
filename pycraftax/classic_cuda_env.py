"""Batched Craftax-Classic envs on one GPU (backend="cuda"): Craftax-Classic-Symbolic-v1 on the
contract of pycraftax.cuda_env.CudaCraftaxEnv, through the craftax_classic_cuda_* calls of
cuda/build/libcraftax_cuda.so (cuda/craftax_classic_cuda.h), bit for bit the C env's
results (pycraftax.classic_env.CraftaxClassicEnv).

The library and its device buffers are the full game's (pycraftax.cuda_env); the Classic calls
are bound with a cffi of their own (ABI mode) from craftax_api_classic.h and
craftax_classic_cuda.h. The Classic state table (pycraftax.classic_state) comes from the C
extension.
"""

from __future__ import annotations

import threading

import numpy as np

from pycraftax import classic_state
from pycraftax.achievements import CLASSIC_ACHIEVEMENTS
from pycraftax.classic_env import CraftaxClassicEnv
from pycraftax.cuda_env import ERR_ARGUMENT, CudaCraftaxEnv, NativeHandles, _find, header_dirs, load
from pycraftax.params import to_c_classic

__all__ = ["CudaClassicEnv", "COMPACT_SIZE"]

# cuda/classic_obs.cuh: 22 float32 scalars, a block byte and a mob-bits byte per view cell, padding
COMPACT_SIZE = 224
_HEADERS = ("craftax/params.h", "craftax_api.h", "craftax_api_classic.h", "craftax_classic_cuda.h")
_BINDING = None
_BINDING_LOCK = threading.Lock()


def _header(name: str, library) -> str:
    """A Classic header beside the library's own (installed copies, or the source tree's cuda/
    and reference_c/include/)."""
    dirs = list(header_dirs(library))
    dirs += [d.parent for d in dirs if d.name == "craftax"]  # reference_c/include for craftax_api*.h
    found = _find(name, dirs) or _find(name.split("/")[-1], dirs)
    if found is None:
        raise RuntimeError(f"pycraftax CUDA backend: header {name!r} not found in {[str(d) for d in dirs]}")
    return found.read_text()


class _ClassicBinding:
    """The Classic calls of the loaded CUDA library (its own ffi over the same .so)."""

    def __init__(self):
        from cffi import FFI

        from pycraftax._cdef import cdef_declarations

        base = load()
        self.base = base
        self.ffi = FFI()
        self.ffi.cdef("\n".join(cdef_declarations(_header(name, base.path)) for name in _HEADERS))
        self.lib = self.ffi.dlopen(str(base.path))
        checks = ((self.lib.craftax_classic_cuda_state_size(), classic_state.STATE_SIZE, "state size"),
                  (self.lib.craftax_classic_cuda_obs_size(), classic_state.OBS_SIZE, "obs size"),
                  (self.lib.craftax_classic_cuda_compact_size(), COMPACT_SIZE, "compact obs size"))
        for got, want, what in checks:
            if int(got) != want:
                raise RuntimeError(f"{base.path}: Craftax-Classic {what} {int(got)} != {want}; rebuild it (make -C cuda)")


def binding() -> _ClassicBinding:
    global _BINDING
    with _BINDING_LOCK:
        if _BINDING is None:
            _BINDING = _ClassicBinding()
        return _BINDING


class CudaClassicEnv(CudaCraftaxEnv):
    """`num_envs` Craftax-Classic envs on one GPU: the contract of CudaCraftaxEnv (device
    arrays, obs="float"|"compact", resets="auto"|"optimistic", expand_obs, native_handles)
    with Classic's sizes: obs float32 [N, 1345] or compact uint8 records [N, 224] (which
    expand_obs() turns into the float obs), 17 actions, info's "achievements" bool [N, 22] and
    Classic's "Achievements/<name>" keys, get_state/set_state with upstream's craftax_classic
    EnvState leaf names.
    """

    env_id = classic_state.ENV_ID
    obs_size = classic_state.OBS_SIZE
    num_actions = classic_state.NUM_ACTIONS
    _walks_off_map_without_resets = True
    state_size = classic_state.STATE_SIZE
    compact_size = COMPACT_SIZE
    achievement_table = CLASSIC_ACHIEVEMENTS
    ended_by_rules = CraftaxClassicEnv.ended_by_rules
    _observation_low = CraftaxClassicEnv._observation_low
    _observation_high = CraftaxClassicEnv._observation_high

    # Classic generates a world in one pass, with scratch of the library's own: no scratch buffer
    _BUFFERS = {
        "states": (np.uint8, (classic_state.STATE_SIZE,)),
        "obs": (np.float32, (classic_state.OBS_SIZE,)),
        "reward": (np.float32, ()),
        "done": (np.bool_, ()),
        "terminated": (np.bool_, ()),
        "truncated": (np.bool_, ()),
        "final_achievements": (np.bool_, (classic_state.NUM_ACHIEVEMENTS,)),
        "achievements_scaled": (np.float32, (classic_state.NUM_ACHIEVEMENTS,)),
        "ret_acc": (np.float32, ()),
        "len_acc": (np.int32, ()),
        "episode_return": (np.float32, ()),
        "episode_length": (np.int32, ()),
        "discount": (np.float32, ()),
        "actions": (np.int32, ()),
        "keys": (np.uint32, (2,)),
    }

    def __init__(self, *args, **kwargs):
        self._classic = binding()
        super().__init__(*args, **kwargs)

    def _make_params(self, params):
        ffi = self._classic.ffi
        c = ffi.new("CraftaxClassicParams *")
        ffi.memmove(c, bytes(self._classic_bytes(params)), ffi.sizeof("CraftaxClassicParams"))
        return c

    @staticmethod
    def _classic_bytes(params) -> bytes:
        from pycraftax._native import ffi as c_ffi

        return c_ffi.buffer(to_c_classic(params))[:]

    def _state_table(self):
        return classic_state.TABLE

    def _make_spaces(self) -> None:
        super()._make_spaces()
        if self.obs_mode == "compact":  # Classic's records, not the full game's
            import gymnasium

            self.single_observation_space = gymnasium.spaces.Box(0, 255, (COMPACT_SIZE,), np.uint8)

    @staticmethod
    def scratch_bytes(num_envs: int) -> int:
        """No world-generation scratch buffer: the library takes its own (up to 8,192 entries
        of 99 KB, 811 MB, from its memory pool) while it generates worlds."""
        return 0

    def _optimistic_work_size(self, num_envs: int) -> int:
        return int(self._classic.lib.craftax_classic_cuda_optimistic_work_size(num_envs))

    def _c(self, name: str, ctype: str = "void *"):
        """Buffer `name` as a pointer of the Classic binding."""
        return self._classic.ffi.cast(ctype, self._buffers[name].ptr)

    def _classic_obs_ptrs(self):
        ffi = self._classic.ffi
        if self.obs_mode == "compact":
            return ffi.NULL, self._c("obs", "uint8_t *")
        return self._c("obs", "float *"), ffi.NULL

    def _expand_records(self, records: int, out: int) -> None:
        ffi = self._classic.ffi
        self._lib.check(self._classic.lib.craftax_classic_cuda_expand_obs(
            ffi.cast("uint8_t *", records), self.num_envs, ffi.cast("float *", out)), "expand_obs")

    def _actions_ptr(self, actions_p):
        return self._classic.ffi.cast("int32_t *", int(self._lib.ffi.cast("uintptr_t", actions_p)))

    def _native_reset(self, keys: np.ndarray):
        lib, n = self._lib, self.num_envs
        lib.check(lib.lib.craftax_cuda_memcpy_htod(self._p("keys"), lib.ffi.from_buffer(keys), keys.nbytes), "copy keys")
        lib.check(self._classic.lib.craftax_classic_cuda_reset_with_keys(
            self._c("states"), self._c("keys", "uint32_t *"), n, self._params, *self._classic_obs_ptrs()), "reset")
        lib.check(lib.lib.craftax_cuda_memset(self._p("ret_acc"), 0, n * 4), "memset")
        lib.check(lib.lib.craftax_cuda_memset(self._p("len_acc"), 0, n * 4), "memset")
        return self._views["obs"]

    def _native_step(self, actions_p, sub_key: np.ndarray):
        lib, cl, n = self._lib, self._classic, self.num_envs
        ffi = cl.ffi
        final_obs = ffi.NULL
        if self.report_final_obs:
            self._final_obs_ptr()  # allocated on first use, zeroed
            final_obs = self._c("final_obs", "float *")
        outputs = (*self._classic_obs_ptrs(), final_obs, self._c("reward", "float *"), self._c("done", "uint8_t *"),
                   self._c("terminated", "uint8_t *"), self._c("truncated", "uint8_t *"),
                   self._c("final_achievements", "uint8_t *"))
        episodes = (self._c("ret_acc", "float *"), self._c("len_acc", "int32_t *"),
                    self._c("episode_return", "float *"), self._c("episode_length", "int32_t *"),
                    self._c("discount", "float *"), self._c("achievements_scaled", "float *"))
        key = ffi.from_buffer("uint32_t[]", np.ascontiguousarray(sub_key))
        actions = self._actions_ptr(actions_p)
        if self.resets == "optimistic":
            code = cl.lib.craftax_classic_cuda_env_step_optimistic(
                self._c("states"), actions, key, n, self.reset_ratio, self._params, *outputs, *episodes,
                self._c("optimistic_work"))
        else:
            code = cl.lib.craftax_classic_cuda_env_step(
                self._c("states"), actions, key, self._c("keys", "uint32_t *"), n, self._params, *outputs, *episodes)
        if code == ERR_ARGUMENT:
            raise ValueError(f"step failed: actions must be integers in [0, {self.num_actions}) "
                             f"({lib.last_error()}); no env changed")
        lib.check(code, "step")
        v = self._views
        info = dict(self._info_views)
        if self.report_final_obs:
            info["final_obs"] = self._float_views["final_obs"]
        return v["obs"], v["reward"], v["terminated"], v["truncated"], info

    def _step_async_work_size(self, num_envs: int) -> int:
        return int(self._classic.lib.craftax_classic_cuda_step_async_work_size(num_envs))

    def _enqueue_step(self, actions_p, sub_key: np.ndarray, work: int, stream: int) -> None:
        cl, ffi = self._classic, self._classic.ffi
        self._lib.check(cl.lib.craftax_classic_cuda_env_step_async(
            self._c("states"), self._actions_ptr(actions_p), ffi.from_buffer("uint32_t[]", sub_key),
            self._c("keys", "uint32_t *"), self.num_envs, self._params, *self._classic_obs_ptrs(), ffi.NULL,
            self._c("reward", "float *"), self._c("done", "uint8_t *"), self._c("terminated", "uint8_t *"),
            self._c("truncated", "uint8_t *"), self._c("final_achievements", "uint8_t *"),
            self._c("ret_acc", "float *"), self._c("len_acc", "int32_t *"), self._c("episode_return", "float *"),
            self._c("episode_length", "int32_t *"), self._c("discount", "float *"),
            self._c("achievements_scaled", "float *"), ffi.cast("void *", work), stream), "step_async")

    def _native_step_with_keys(self, actions_p, keys: np.ndarray):
        lib, n = self._lib, self.num_envs
        lib.check(lib.lib.craftax_cuda_memcpy_htod(self._p("keys"), lib.ffi.from_buffer(keys), keys.nbytes), "copy keys")
        code = self._classic.lib.craftax_classic_cuda_step_with_keys(
            self._c("states"), self._actions_ptr(actions_p), self._c("keys", "uint32_t *"), n, self._params,
            *self._classic_obs_ptrs(), self._c("reward", "float *"), self._c("done", "uint8_t *"))
        if code == ERR_ARGUMENT:
            raise ValueError(f"step_with_keys failed: actions must be integers in [0, {self.num_actions}) "
                             f"({lib.last_error()}); no env changed")
        lib.check(code, "step_with_keys")
        return self._views["obs"], self._views["reward"], self._views["done"], self._done_info()

    def _native_observe(self):
        self._lib.check(self._classic.lib.craftax_classic_cuda_observe(self._c("states"), self.num_envs,
                                                                       *self._classic_obs_ptrs()), "observe")
        return self._views["obs"]

    def _complete_floors(self) -> None:
        """Nothing to complete: a Classic world is whole when it is generated."""

    def pending_levels(self) -> np.ndarray:
        raise AttributeError("Craftax-Classic has one level and nothing pending (pending_levels is the full game's)")

    def native_handles(self) -> NativeHandles:
        """The device address of the states and the host address of the env's
        CraftaxClassicParams (valid while the env is open) with its size; scratch is 0:
        Classic's calls take no scratch (cuda/craftax_classic_cuda.h)."""
        with self._lock:
            self._check_open()
            ffi = self._classic.ffi
            return NativeHandles(states=self._buffers["states"].ptr, scratch=0,
                                 params=int(ffi.cast("uintptr_t", self._params)),
                                 params_size=ffi.sizeof("CraftaxClassicParams"))

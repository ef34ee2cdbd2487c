"""GPU PPO-RNN trainer: the CUDA env + the CUDA trainer of cuda/ppo_cuda.cu.

Same TrainConfig, metrics lines, checkpoints (with "backend": "cuda" in their meta), resume,
plot and progress as the CPU trainer: both are loop.RunLoop's, each supplying its iteration.
It drives the CUDA env of config.env_id (full Craftax or Craftax-Classic) through its public
interface (native_handles, key, obs_size, num_actions, env_id). The model, loss,
GAE, clipping and Adam are numpy_ppo.py's, run on the GPU. Weights stay on the device; one
iteration (rollout + GAE + update) is one CUDA graph launch, after which only the episode log
and the per-minibatch loss statistics are copied back for the metrics line.

    from pycraftax.train import TrainConfig
    from pycraftax.train.cuda_trainer import CudaTrainer
    trainer = CudaTrainer(TrainConfig.from_recipe("paper", total_timesteps=50_000_000), out_dir="runs/gpu")
    trainer.run()

Differences from the CPU trainer, by design: policy sampling and minibatch permutations use
threefry of (seed, iteration, step/epoch, env) on the device instead of numpy's Generator, so
the two trainers agree on the env's key stream but not on sampled actions. TF32 GEMMs by
default (tf32=False for exact fp32). Forward passes use the trainer's own fixed-order GEMMs,
so the update recomputes the rollout's log-probs and values bitwise (first-epoch ratio
exactly 1). The encoder is sparse by default (gather-sum over each obs row's nonzeros;
encoder="dense" for one GEMM over the whole obs).

Over several GPUs (one process per GPU, see distributed.py), `start_rank` and `resume_rank`
build this rank's trainer and join it to the others; the TrainConfig describes one rank (its
envs, its share of the env steps), so N ranks train on N times the batch and env steps.

The low-level handle (PPO) is also what conformance/test_cuda_trainer.py checks against
numpy_ppo: set/get parameters by flax name, loss and gradients on a minibatch, GAE, Adam.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import os
import sys
from pathlib import Path

import numpy as np

from pycraftax.achievements import names_by_index
from pycraftax.params import CLASSIC_ENV_ID, CRAFTAX_ENV_ID
from pycraftax.train import numpy_ppo as npp
from pycraftax.train.config import TrainConfig
from pycraftax.train.loop import Iteration, RunLoop, now

HEADER = "ppo_cuda.h"
ENCODERS = ("dense", "sparse")  # CRAFTAX_PPO_ENCODER_<NAME> of the header
# the env each id trains on: CRAFTAX_PPO_ENV_<NAME> of the header
ENV_NAMES = {CRAFTAX_ENV_ID: "CRAFTAX", CLASSIC_ENV_ID: "CLASSIC"}
PROFILE_POLICY, PROFILE_ENV, PROFILE_UPDATE = 0, 1, 2
# phases of one minibatch's update, timed alone (cuda/ppo_cuda.h CRAFTAX_PPO_PROFILE_GATHER ...)
PROFILE_PHASES = {"gather": 3, "encode": 4, "gru_input": 5, "gru_forward": 6, "heads_forward": 7, "loss": 8,
                  "heads_backward": 9, "gru_bptt": 10, "gru_weights": 11, "encoder_backward": 12, "optimizer": 13,
                  "encoder_backward_alt": 14}
LOSS_STATS = ("total_loss", "value_loss", "actor_loss", "entropy", "approx_kl", "clip_frac", "grad_norm", "lr")
ACH_WORDS = 3

_FFI = None
_LIB = None


def header_path() -> Path:
    """The cuda/ppo_cuda.h that describes the CUDA library that would load (cuda_env.find_header), or
    where none is built, the one a `make -C cuda` build would use. FileNotFoundError where none
    is found."""
    from pycraftax import cuda_env

    library = cuda_env.library_path() or Path(cuda_env.__file__).resolve().parent.parent / "cuda" / "build" / \
        "libcraftax_cuda.so"
    return cuda_env.find_header(HEADER, library)


def _trainer_ffi(header: Path):
    """A cffi FFI holding the trainer API's cdef: the declarations and CRAFTAX_* integer
    constants of `header`."""
    from cffi import FFI

    from pycraftax._cdef import cdef_declarations

    ffi = FFI()
    ffi.cdef(cdef_declarations(header.read_text()))
    return ffi


@functools.cache
def header_constants() -> dict[str, int]:
    """The CRAFTAX_PPO_* integer constants of cuda/ppo_cuda.h, read through the trainer's cdef
    without loading the library (so with no GPU too)."""
    constants = _trainer_ffi(header_path()).dlopen(None)  # the process's own symbols: constants only
    return {name: getattr(constants, name) for name in dir(constants) if name.startswith("CRAFTAX_PPO_")}


class _HeaderConstants:
    """CRAFTAX_PPO_<group>_<NAME> of cuda/ppo_cuda.h as attributes NAME, read on first use."""

    def __init__(self, group: str):
        self._prefix = f"CRAFTAX_PPO_{group}_"

    def __getattr__(self, name: str) -> int:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return header_constants()[self._prefix + name]
        except KeyError:
            raise AttributeError(f"{HEADER} defines no {self._prefix}{name}") from None

    def as_dict(self) -> dict[str, int]:
        """{NAME: value} of every constant of the group."""
        return {k[len(self._prefix):]: v for k, v in header_constants().items() if k.startswith(self._prefix)}


# The trainer's buffers (craftax_ppo_read / _write): BUF.PARAMS, BUF.OBS, ... ; BUF_<NAME> is
# the same constant as a module attribute.
BUF = _HeaderConstants("BUF")


def __getattr__(name: str):
    if name.startswith("BUF_"):
        return getattr(BUF, name[len("BUF_"):])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def env_sizes(env_id: str) -> tuple[int, int]:
    """(obs size, number of actions) of an env id: those of its C env class, which its CUDA env shares."""
    from pycraftax.classic_env import CraftaxClassicEnv
    from pycraftax.env import CraftaxEnv

    sizes = {cls.env_id: (cls.obs_size, cls.num_actions) for cls in (CraftaxEnv, CraftaxClassicEnv)}
    if env_id not in sizes:
        raise ValueError(f"env_id must be one of {sorted(sizes)}, got {env_id!r}")
    return sizes[env_id]


def find_cublas() -> str | None:
    """libcublas.so.13: $PYCRAFTAX_CUBLAS, else the nvidia-cublas wheel (PyTorch's CUDA 13
    dependency, nvidia/cu13/lib or nvidia/cublas/lib) on sys.path, else the toolkit's."""
    env = os.environ.get("PYCRAFTAX_CUBLAS")
    if env:
        return env
    patterns = ("nvidia/cu13/lib/libcublas.so.13", "nvidia/cublas/lib/libcublas.so.13", "torch/lib/libcublas.so.13")
    for entry in sys.path:
        for pat in patterns:
            hits = sorted(glob.glob(os.path.join(entry or ".", pat)))
            if hits:
                return hits[0]
    for d in ("/usr/local/cuda/lib64", "/usr/local/cuda-13.0/lib64", "/usr/lib/x86_64-linux-gnu"):
        p = os.path.join(d, "libcublas.so.13")
        if os.path.exists(p):
            return p
    return None


def load():
    """(ffi, lib) of the trainer API, on the CUDA env's library (loads and initialises it)."""
    global _FFI, _LIB
    if _LIB is not None:
        return _FFI, _LIB
    from pycraftax import cuda_env

    env_lib = cuda_env.load()  # RuntimeError with the reason when there is no GPU
    try:
        header = cuda_env.find_header(HEADER, env_lib.path)
    except FileNotFoundError as exc:
        raise RuntimeError(f"pycraftax CUDA trainer: {exc}") from exc
    ffi = _trainer_ffi(header)
    lib = ffi.dlopen(str(env_lib.path))
    try:
        version = int(lib.craftax_ppo_api_version())
    except AttributeError as exc:
        raise RuntimeError(f"{env_lib.path} has no trainer of this API (rebuild it: make -C cuda)") from exc
    if version != lib.CRAFTAX_PPO_API_VERSION:
        raise RuntimeError(f"{env_lib.path}: trainer API version {version}, but {header} is version "
                           f"{lib.CRAFTAX_PPO_API_VERSION}; rebuild it (make -C cuda)")
    path = find_cublas()
    import ctypes

    try:
        ctypes.CDLL(path or "libcublas.so.13")
    except OSError as exc:
        raise RuntimeError(f"pycraftax CUDA trainer: cuBLAS not found ({exc}); install nvidia-cublas "
                           "(PyTorch's CUDA 13 wheels bring it) or set PYCRAFTAX_CUBLAS") from exc
    if path:
        lib.craftax_ppo_set_cublas_path(path.encode())
    _FFI, _LIB = ffi, lib
    return ffi, lib


def available() -> bool:
    try:
        load()
        return True
    except (RuntimeError, OSError):
        return False


def unavailable_reason() -> str | None:
    try:
        load()
        return None
    except (RuntimeError, OSError) as exc:
        return str(exc)


def _check(ffi, lib, code: int, what: str) -> None:
    if code == 0:
        return
    message = f"{what} failed: {ffi.string(lib.craftax_ppo_last_error()).decode()}"
    if code == lib.CRAFTAX_PPO_ERR_NO_MEMORY:
        raise MemoryError(message)
    if code in (lib.CRAFTAX_PPO_ERR_CONFIG, lib.CRAFTAX_PPO_ERR_ARGUMENT, lib.CRAFTAX_PPO_ERR_NULL):
        raise ValueError(message)
    raise RuntimeError(message)


def model_sizes(env_id: str, env=None, obs_size: int | None = None,
                num_actions: int | None = None) -> tuple[int, int]:
    """(obs_size, num_actions) of the model that trains on env id `env_id`: `env`'s own (an env
    of that id) or the id's (env_sizes) where none is given; a size given explicitly overrides
    the id's (checks without env) but must equal an env's."""
    if env is not None:
        if env.env_id != env_id:
            raise ValueError(f"env is {env.env_id!r} but config.env_id is {env_id!r}")
        own = env.obs_size, env.num_actions
    else:
        own = env_sizes(env_id)
    sizes = []
    for name, given, env_value in (("obs_size", obs_size, own[0]), ("num_actions", num_actions, own[1])):
        if env is not None and given is not None and given != env_value:
            raise ValueError(f"{name}={given} differs from the env's ({env_id}: {env_value})")
        sizes.append(env_value if given is None else given)
    return sizes[0], sizes[1]


def decode_episodes(raw: np.ndarray, T: int, N: int, num_achievements: int) -> list[tuple[float, int, np.ndarray]]:
    """The episode log of a rollout (CRAFTAX_PPO_BUF_EPISODES as uint32: return [T, N] as float32,
    length [T, N] as int32, 0 where no episode ended, achievement bits [T, N, ACH_WORDS]) as
    (return, length, achievements bool [num_achievements]) of every episode that ended, in
    (step, env) order."""
    if not 1 <= num_achievements <= 32 * ACH_WORDS:
        raise ValueError(f"num_achievements must be in [1, {32 * ACH_WORDS}], got {num_achievements}")
    raw = np.asarray(raw, np.uint32)
    if raw.shape != ((2 + ACH_WORDS) * T * N,):
        raise ValueError(f"raw must be uint32 [{(2 + ACH_WORDS) * T * N}] for T={T}, N={N}, got shape {raw.shape}")
    ret = raw[:T * N].view(np.float32)
    length = raw[T * N:2 * T * N].view(np.int32)
    bits = raw[2 * T * N:].reshape(T * N, ACH_WORDS)
    ks = np.arange(num_achievements)
    out = []
    for k in np.flatnonzero(length > 0):
        ach = ((bits[k, ks >> 5] >> (ks & 31).astype(np.uint32)) & 1).astype(bool)
        out.append((float(ret[k]), int(length[k]), ach))
    return out


class PPO:
    """One CUDA trainer handle (cuda/ppo_cuda.h). `env`: a CUDA env to roll out in (CudaCraftaxEnv,
    or CudaClassicEnv for Craftax-Classic; its env_id must be config.env_id), or None for a
    loss/gradient/optimiser-only handle (checks). The model's obs_size and num_actions are the
    env's (config.env_id's without one); obs_size / num_actions given explicitly must agree with
    an env's."""

    def __init__(self, config: TrainConfig, env=None, *, obs_size: int | None = None, num_actions: int | None = None,
                 tf32: bool = True, use_graph: bool = True, debug: bool = False, encoder="sparse",
                 max_nnz: int = 1024):
        if isinstance(encoder, str) and encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {sorted(ENCODERS)}, got {encoder!r}")
        if config.dtype != "float32":
            raise ValueError("the CUDA trainer runs float32 only (dtype='float32')")
        env_id = config.env_id
        obs_size, num_actions = model_sizes(env_id, env, obs_size, num_actions)
        self.ffi, self.lib = load()
        ffi, lib = self.ffi, self.lib
        self.config = config
        c = ffi.new("CraftaxPPOConfig *")
        c.num_envs, c.num_steps, c.obs_size, c.num_actions = config.num_envs, config.num_steps, obs_size, num_actions
        c.width, c.hidden = config.width, config.hidden
        c.update_epochs, c.num_minibatches, c.num_updates = config.update_epochs, config.num_minibatches, \
            config.num_updates
        c.lr, c.anneal_lr, c.gamma, c.gae_lambda = config.lr, int(config.anneal_lr), config.gamma, config.gae_lambda
        c.clip_eps, c.ent_coef, c.vf_coef, c.max_grad_norm = config.clip_eps, config.ent_coef, config.vf_coef, \
            config.max_grad_norm
        c.seed, c.tf32, c.max_nnz = config.seed, int(tf32), max_nnz
        c.encoder = getattr(lib, f"CRAFTAX_PPO_ENCODER_{encoder.upper()}") if isinstance(encoder, str) else encoder
        c.use_graph, c.debug = int(use_graph), int(debug)
        c.reset_ratio = config.reset_ratio or 0
        c.env = getattr(lib, f"CRAFTAX_PPO_ENV_{ENV_NAMES[env_id]}")
        self.N, self.T, self.D, self.A, self.H = config.num_envs, config.num_steps, obs_size, num_actions, config.hidden
        # the episode log's achievement bits, by index into the env's achievements
        self.achievement_names = names_by_index(env_id)
        self.config_max_nnz = max_nnz
        out = ffi.new("CraftaxPPO **")
        if env is not None:
            handles = env.native_handles()
            states = ffi.cast("void *", handles.states)
            scratch = ffi.cast("void *", handles.scratch)
            params = ffi.cast("void *", handles.params)
            psize = handles.params_size
        else:
            states = scratch = params = ffi.NULL
            psize = 0
        _check(ffi, lib, lib.craftax_ppo_create(c, states, scratch, params, psize, out), "craftax_ppo_create")
        self._h = out[0]
        self.env = env
        self.num_params = int(lib.craftax_ppo_num_params(self._h))
        self.layout = {}
        name = ffi.new("char[128]")
        rows, cols, off, ld = (ffi.new("int64_t *") for _ in range(4))
        for i in range(lib.craftax_ppo_num_tensors()):
            self._check(lib.craftax_ppo_param_info(self._h, i, name, 128, rows, cols, off, ld), "param_info")
            self.layout[ffi.string(name).decode()] = (int(rows[0]), int(cols[0]), int(off[0]), int(ld[0]))
        self.model_config = npp.ModelConfig(obs_size=obs_size, num_actions=num_actions, width=config.width,
                                            hidden=config.hidden)

    def _check(self, code: int, what: str) -> None:
        _check(self.ffi, self.lib, code, what)

    def close(self) -> None:
        if getattr(self, "_h", None) is not None:
            self.lib.craftax_ppo_destroy(self._h)
            self._h = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # -- raw buffers
    def read(self, which: int, dtype, shape=None) -> np.ndarray:
        n = int(self.lib.craftax_ppo_buffer_bytes(self._h, which))
        out = np.empty(n // np.dtype(dtype).itemsize, dtype)
        self._check(self.lib.craftax_ppo_read(self._h, which, self.ffi.from_buffer(out), out.nbytes), f"read {which}")
        return out.reshape(shape) if shape is not None else out

    def write(self, which: int, array) -> None:
        array = np.ascontiguousarray(array)
        self._check(self.lib.craftax_ppo_write(self._h, which, self.ffi.from_buffer(array), array.nbytes),
                    f"write {which}")

    # -- parameters by flax name
    def _to_flat(self, tensors: dict) -> np.ndarray:
        flat = self.read(BUF.PARAMS, np.float32)  # keeps the padding as it is
        for name, (rows, cols, off, ld) in self.layout.items():
            view = flat[off:off + rows * ld].reshape(rows, ld)[:, :cols]
            if name not in tensors:
                raise ValueError(f"missing parameter {name}")
            view[...] = np.asarray(tensors[name], np.float32).reshape(rows, cols)
        return flat

    def _from_flat(self, flat: np.ndarray) -> dict:
        shapes = npp.param_shapes(self.model_config)
        out = {}
        for name, (rows, cols, off, ld) in self.layout.items():
            out[name] = flat[off:off + rows * ld].reshape(rows, ld)[:, :cols].reshape(shapes[name]).copy()
        return {k: out[k] for k in shapes}

    def set_tensors(self, which: int, tensors: dict) -> None:
        npp.check_params(tensors, self.model_config)
        self.write(which, self._to_flat(tensors))

    def get_tensors(self, which: int) -> dict:
        return self._from_flat(self.read(which, np.float32))

    def set_params(self, params: dict) -> None:
        self.set_tensors(BUF.PARAMS, params)

    def get_params(self) -> dict:
        return self.get_tensors(BUF.PARAMS)

    def get_grads(self) -> dict:
        return self.get_tensors(BUF.GRADS)

    # -- operations
    def begin(self, env_key) -> None:
        key = np.ascontiguousarray(env_key, np.uint32)
        self._check(self.lib.craftax_ppo_begin(self._h, self.ffi.cast("uint32_t *", self.ffi.from_buffer(key))),
                    "begin")

    def iterate(self) -> None:
        self._check(self.lib.craftax_ppo_iterate(self._h), "iterate")

    def rollout(self) -> None:
        self._check(self.lib.craftax_ppo_rollout(self._h), "rollout")

    def replay(self, env_index=None) -> tuple[np.ndarray, np.ndarray]:
        """The update's forward over the stored rollout of envs env_index (default all, in
        order) as one minibatch: (log-probs, values), each [T, len(env_index)]."""
        if env_index is None:
            self._check(self.lib.craftax_ppo_replay(self._h, self.ffi.NULL, 0), "replay")
            count = self.N
        else:
            idx = np.ascontiguousarray(env_index, np.int32)
            if idx.ndim != 1 or not 1 <= idx.size <= self.N:
                raise ValueError(f"env_index must be 1-d with 1..{self.N} entries, got shape {idx.shape}")
            count = idx.size
            self._check(self.lib.craftax_ppo_replay(self._h, self.ffi.cast("int32_t *", self.ffi.from_buffer(idx)),
                                                    count), "replay")
        r = self.read(BUF.REPLAY, np.float32, (2, self.T, self.N))
        return r[0, :, :count].copy(), r[1, :, :count].copy()

    def profile(self, part: int, reps: int = 3) -> float:
        """Device ms per repetition of one part of an iteration alone (PROFILE_POLICY: the
        rollout's policy work without env steps; PROFILE_ENV: the env steps without the policy;
        PROFILE_UPDATE: the update; PROFILE_PHASES: one phase of one minibatch's update).
        Disturbs the run: benchmarks only."""
        ms = self.ffi.new("float *")
        self._check(self.lib.craftax_ppo_profile(self._h, int(part), int(reps), ms), "profile")
        return float(ms[0])

    @property
    def nnz_overflow(self) -> int:
        return int(self.lib.craftax_ppo_nnz_overflow(self._h))

    def gae(self) -> None:
        self._check(self.lib.craftax_ppo_gae(self._h), "gae")

    def loss_grads(self, env_index) -> dict:
        idx = np.ascontiguousarray(env_index, np.int32)
        B = self.N // self.config.num_minibatches
        if idx.shape != (B,):
            raise ValueError(f"env_index must have shape ({B},), got {idx.shape}")
        stats = self.ffi.new("double[]", self.lib.CRAFTAX_PPO_NUM_LOSS_STATS)
        self._check(self.lib.craftax_ppo_loss_grads(self._h, self.ffi.cast("int32_t *", self.ffi.from_buffer(idx)),
                                                    stats), "loss_grads")
        return {k: float(stats[i]) for i, k in enumerate(LOSS_STATS)}

    def apply_grads(self) -> None:
        self._check(self.lib.craftax_ppo_apply_grads(self._h), "apply_grads")

    def set_batch(self, batch: dict) -> None:
        """Write a rollout batch in numpy_ppo.ppo_loss's layout (obs [T, N, D], dones [T, N],
        actions, values, log_probs, advantages, targets [T, N], h0 [N, H]) into the rollout
        buffers (obs/dones slot T and values slot T are left zero)."""
        T, N, D = self.T, self.N, self.D
        obs = np.zeros((T + 1, N, D), np.float32)
        obs[:T] = batch["obs"]
        dones = np.zeros((T + 1, N), np.uint8)
        dones[:T] = batch["dones"]
        values = np.zeros((T + 1, N), np.float32)
        values[:T] = batch["values"]
        self.write(BUF.OBS, obs)
        self.write(BUF.DONES, dones)
        self.write(BUF.VALUES, values)
        self.write(BUF.ACTIONS, np.asarray(batch["actions"], np.int32))
        self.write(BUF.LOGP, np.asarray(batch["log_probs"], np.float32))
        self.write(BUF.ADVANTAGES, np.asarray(batch["advantages"], np.float32))
        self.write(BUF.TARGETS, np.asarray(batch["targets"], np.float32))
        self.write(BUF.H0, np.asarray(batch["h0"], np.float32))

    @property
    def counters(self) -> np.ndarray:
        return self.read(BUF.COUNTERS, np.int64)

    @property
    def last_iterate_ms(self) -> float:
        return float(self.lib.craftax_ppo_last_iterate_ms(self._h))

    @property
    def gru_seq_blocks(self) -> int:
        """Blocks of the one-launch GRU forward the GPU holds at once (0: one launch a step)."""
        return int(self.lib.craftax_ppo_gru_seq_blocks(self._h))

    def episodes(self) -> list[tuple[float, int, np.ndarray]]:
        """Episodes that ended in the last rollout, in (step, env) order, as loop.Iteration's
        (return, length, achievements bool [the env's achievement count])."""
        return decode_episodes(self.read(BUF.EPISODES, np.uint32), self.T, self.N, len(self.achievement_names))

    def losses(self) -> dict:
        rows = self.read(BUF.LOSSES, np.float64).reshape(-1, len(LOSS_STATS))
        return {k: float(v) for k, v in zip(LOSS_STATS, rows.mean(0))}


class CudaTrainer(RunLoop):
    """The run loop (run, step, checkpoints, resume, plot) over the GPU iteration."""

    BACKEND = "cuda"
    TITLE = "PPO-RNN (CUDA)"

    def __init__(self, config: TrainConfig, out_dir: str | None = None, *, _restore: dict | None = None,
                 tf32: bool = True, use_graph: bool = True, debug: bool = False, encoder: str = "sparse",
                 max_nnz: int = 1024):
        import pycraftax

        c = config
        if c.model != "gru":
            raise ValueError(f"the CUDA trainer trains model 'gru'; model {c.model!r} trains with "
                             "pycraftax.train.torch_trainer.TorchTrainer (pycraftax train picks it)")
        load()  # RuntimeError naming what is missing (GPU, library, cuBLAS) before any env is made
        super().__init__(config, out_dir, pycraftax.make(c.env_id, num_envs=c.num_envs, backend="cuda", seed=c.seed,
                                                         resets=c.resets, reset_ratio=c.reset_ratio))
        self.dtype = np.dtype(np.float32)
        self.ppo = PPO(c, self.env, tf32=tf32, use_graph=use_graph, debug=debug, encoder=encoder, max_nnz=max_nnz)
        self.model_config = self.ppo.model_config  # sized from the env: its obs_size and num_actions
        if _restore is None:
            self.env.reset()
            self.ppo.begin(self.env.key)
            self.ppo.set_params(npp.init_params(self.model_config, seed=c.seed, dtype=np.float32))
        else:
            self.load_state(_restore)

    @property
    def params(self) -> dict:
        return self.ppo.get_params()

    def iterate(self) -> Iteration:
        t0 = now()
        self.ppo.iterate()
        t1 = now()
        if self.ppo.nnz_overflow:
            raise RuntimeError(f"an observation had more than max_nnz={self.ppo.config_max_nnz} nonzeros: the sparse "
                               "encoder dropped some; rerun with a larger max_nnz (or encoder='dense')")
        # rollout and learning are one graph launch: no host-visible split between them
        return Iteration(self.ppo.episodes(), self.ppo.losses(), t1 - t0,
                         dict(rollout_s=None, learn_s=None, iteration_s=t1 - t0, device_ms=self.ppo.last_iterate_ms))

    def backend_arrays(self) -> dict[str, np.ndarray]:
        p = self.ppo
        arrays = dict(p.get_params())
        for prefix, which in (("opt/mu/", BUF.ADAM_MU), ("opt/nu/", BUF.ADAM_NU)):
            for k, v in p.get_tensors(which).items():
                arrays[prefix + k] = v
        arrays["envkey"] = p.read(BUF.ENV_KEY, np.uint32)
        arrays["env_episode_return"] = p.read(BUF.RET_ACC, np.float32)
        arrays["env_episode_length"] = p.read(BUF.LEN_ACC, np.int32)
        arrays["obs"] = p.read(BUF.CUR_OBS, np.float32, (self.config.num_envs, -1))
        arrays["last_done"] = p.read(BUF.LAST_DONE, np.uint8).astype(bool)
        arrays["hstate"] = p.read(BUF.HSTATE, np.float32, (self.config.num_envs, -1))
        arrays["counters"] = p.counters
        return arrays

    def restore_backend(self, data: dict) -> None:
        p = self.ppo
        key = np.asarray(data["envkey"], np.uint32)
        self.env.key = key.copy()
        p.begin(key)
        p.write(BUF.RET_ACC, np.asarray(data["env_episode_return"], np.float32))
        p.write(BUF.LEN_ACC, np.asarray(data["env_episode_length"], np.int32))
        p.write(BUF.CUR_OBS, np.asarray(data["obs"], np.float32))
        p.write(BUF.LAST_DONE, np.asarray(data["last_done"], np.uint8))
        p.write(BUF.HSTATE, np.asarray(data["hstate"], np.float32))
        self._restore_learner(data)

    def _restore_learner(self, data: dict) -> None:
        """Weights, Adam moments and counters from a checkpoint's arrays."""
        p = self.ppo
        params = {k: data[k] for k in npp.param_shapes(self.model_config)}
        p.set_params(params)
        p.set_tensors(BUF.ADAM_MU, {k: data[f"opt/mu/{k}"] for k in params})
        p.set_tensors(BUF.ADAM_NU, {k: data[f"opt/nu/{k}"] for k in params})
        p.write(BUF.COUNTERS, np.asarray(data["counters"], np.int64))

    def load_learner(self, data: dict) -> None:
        """The learner state of a checkpoint (weights, Adam moments, counters, and the run's
        progress) over this trainer's fresh envs: a resume on another world size."""
        self._restore_learner(data)
        self.load_progress(data["meta"])

    def close(self) -> None:
        self.ppo.close()
        self.env.close()


def _join(trainer: CudaTrainer, out_dir: str | None, rank: int, world_size: int, group) -> CudaTrainer:
    from pycraftax.train import distributed

    shard = None if rank == 0 else distributed.shard_path(os.path.join(out_dir, "checkpoint.npz"), rank)
    trainer.join_ranks(rank, world_size, group, shard)
    distributed.join_trainer(trainer.ppo, group)
    return trainer


def start_rank(config: TrainConfig, out_dir: str, rank: int = 0, world_size: int = 1, group=None,
               **options) -> CudaTrainer:
    """Rank `rank`'s trainer of a new run, joined to the others (group: its ProcessGroup, None
    with one process): its envs and sampling seeded with distributed.rank_seed, out_dir on rank
    0 only (the others write their shard there). `options` go to CudaTrainer."""
    from pycraftax.train import distributed

    rank_config = dataclasses.replace(config, seed=distributed.rank_seed(config.seed, rank))
    trainer = CudaTrainer(rank_config, out_dir if rank == 0 else None, **options)
    return _join(trainer, out_dir, rank, world_size, group)


def resume_rank(path: str, out_dir: str, rank: int = 0, world_size: int = 1, group=None,
                **options) -> tuple[CudaTrainer, str]:
    """(trainer, note): rank `rank`'s trainer continuing checkpoint `path` on `world_size`
    ranks, and distributed.plan_resume's note. Its own envs continue exactly where the world size
    is the one saved; on another world size the learner state carries over and the envs start
    fresh. ReshardError where the checkpoint cannot resume so."""
    from pycraftax.train import distributed
    from pycraftax.train.loop import read_rank_checkpoint

    plan, data = read_rank_checkpoint(path, rank, world_size)
    backend = data["meta"].get("backend", "c")
    if backend != CudaTrainer.BACKEND:
        raise ValueError(f"{path}: a checkpoint of the {backend!r} trainer, not {CudaTrainer.BACKEND!r}")
    config = TrainConfig.from_dict(data["meta"]["config"])
    rank_config = dataclasses.replace(config, seed=distributed.rank_seed(config.seed, rank))
    rank_out = out_dir if rank == 0 else None
    if plan.envs == "restore":
        trainer = CudaTrainer(rank_config, rank_out, _restore=data, **options)
    else:
        trainer = CudaTrainer(rank_config, rank_out, **options)
        trainer.load_learner(data)
    return _join(trainer, out_dir, rank, world_size, group), plan.note


def visible_gpu_count() -> int:
    """The GPUs this process may use (CUDA_VISIBLE_DEVICES applied), asked of the CUDA driver
    (libcuda.so.1) without creating a context; 0 without a driver."""
    import ctypes

    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    count = ctypes.c_int(0)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return int(count.value)


def default_backend() -> str:
    """"cuda" where the GPU trainer can run (GPU, CUDA library, cuBLAS), else "c"."""
    return "cuda" if available() else "c"

"""CPU PPO-RNN trainer: the C env (backend="c") + the NumPy reference (numpy_ppo.py).

One update = the baseline's `_update_step`: roll out `num_steps` steps of `num_envs` envs
(sampling from the policy, hidden state reset where the previous step was done), GAE,
then `update_epochs` epochs over `num_minibatches` minibatches split over envs (sequences
kept whole, each starting from the segment's stored initial hidden state), each an Adam
step on the globally-clipped gradient, the learning rate annealed linearly per update.

    from pycraftax.train import TrainConfig, Trainer
    trainer = Trainer(TrainConfig(total_timesteps=200_000), out_dir="runs/x")
    trainer.run()
    trainer = Trainer.resume("runs/x/checkpoint.npz")   # continues bit-exactly

Outputs in out_dir: metrics.jsonl (one line per update), checkpoint.npz (atomic, every
`checkpoint_every` updates and at the end), params.npz (final weights, flax names, see
interop.py) and learning_curve.png (if matplotlib is importable).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from pycraftax.achievements import NAMES_BY_INDEX, NUM_ACHIEVEMENTS
from pycraftax.train import interop
from pycraftax.train import numpy_ppo as npp

CHECKPOINT_VERSION = 1
WINDOW = 64  # episodes in the running return / achievement window


@dataclass(frozen=True)
class TrainConfig:
    """Defaults: a small CPU run (about 8 minutes on 2 cores) that learns visibly.
    The paper recipe is `TrainConfig.paper()` (1024 envs x 64 steps, width/hidden 512)."""

    total_timesteps: int = 491_520  # 240 updates of 64 x 32
    num_envs: int = 64
    num_steps: int = 32
    update_epochs: int = 4
    num_minibatches: int = 8
    width: int = 128
    hidden: int = 128
    lr: float = 2e-4
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.8
    clip_eps: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 1.0
    seed: int = 0
    dtype: str = "float32"
    checkpoint_every: int = 20
    # "optimistic": Craftax_Baselines' OptimisticResetVecEnvWrapper with reset_ratio
    # min(16, num_envs), what the official ppo_rnn.py trains on; "auto": a fresh world for every
    # ended episode (upstream's auto-reset env.step).
    resets: str = "optimistic"

    @classmethod
    def paper(cls, **kw) -> "TrainConfig":
        base = dict(total_timesteps=1_000_000_000, num_envs=1024, num_steps=64, width=512, hidden=512)
        base.update(kw)
        return cls(**base)

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        d = dict(d)
        d.setdefault("resets", "auto")  # checkpoints written before the option existed trained with auto resets
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown training option(s) {unknown}; known: {sorted(names)}")
        cfg = cls(**d)
        cfg.validate()
        return cfg

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @property
    def reset_ratio(self) -> int | None:
        """ppo_rnn.py's min(OPTIMISTIC_RESET_RATIO=16, NUM_ENVS); None with auto resets."""
        return min(16, self.num_envs) if self.resets == "optimistic" else None

    @property
    def num_updates(self) -> int:
        return self.total_timesteps // self.num_steps // self.num_envs

    def validate(self) -> None:
        def is_int(v):
            return isinstance(v, (int, np.integer)) and not isinstance(v, bool)

        for name in ("total_timesteps", "num_envs", "num_steps", "update_epochs", "num_minibatches", "width",
                     "hidden", "checkpoint_every"):
            v = getattr(self, name)
            if not is_int(v) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not is_int(self.seed) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.num_envs % self.num_minibatches:
            raise ValueError(f"num_minibatches ({self.num_minibatches}) must divide num_envs ({self.num_envs}): "
                             "minibatches are split over envs so GRU sequences stay whole")
        if self.num_updates < 1:
            raise ValueError(f"total_timesteps ({self.total_timesteps}) must be at least num_envs * num_steps "
                             f"({self.num_envs * self.num_steps})")
        for name, lo, hi, lo_open in (("lr", 0, math.inf, True), ("gamma", 0, 1, False),
                                      ("gae_lambda", 0, 1, False), ("clip_eps", 0, math.inf, True),
                                      ("ent_coef", 0, math.inf, False), ("vf_coef", 0, math.inf, False),
                                      ("max_grad_norm", 0, math.inf, True)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not math.isfinite(v) \
                    or v < lo or v > hi or (lo_open and v == lo):
                rng = f"{'(' if lo_open else '['}{lo}, {hi}{']' if hi != math.inf else ')'}"
                raise ValueError(f"{name} must be a number in {rng}, got {v!r}")
        if not isinstance(self.anneal_lr, bool):
            raise ValueError(f"anneal_lr must be a bool, got {self.anneal_lr!r}")
        if self.resets not in ("optimistic", "auto"):
            raise ValueError(f"resets must be 'optimistic' or 'auto', got {self.resets!r}")
        if self.resets == "optimistic" and self.num_envs % self.reset_ratio:
            raise ValueError(f"resets='optimistic' needs num_envs ({self.num_envs}) to be a multiple of "
                             f"reset_ratio min(16, num_envs) = {self.reset_ratio}, as ppo_rnn.py asserts")
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {self.dtype!r}")


def _now() -> float:
    return time.perf_counter()


def set_blas_threads(n: int) -> bool:
    """Set the thread count of numpy's OpenBLAS (no threadpoolctl needed). The trainer's
    GEMMs are small; on a loaded 2-core machine multi-threaded OpenBLAS spin-waits and a
    64 x 8268 x 128 product takes ~150 ms instead of ~2 ms, so the CLI defaults to 1.
    Returns whether an OpenBLAS was found."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            libs = {ln.split()[-1] for ln in f if "openblas" in ln.lower() and ".so" in ln.split()[-1]}
    except OSError:
        return False
    for path in sorted(libs):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for sym in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
                    "openblas_set_num_threads"):
            fn = getattr(lib, sym, None)
            if fn is not None:
                fn(ctypes.c_int(int(n)))
                return True
    return False


def write_npz_fast(path: str, arrays: dict[str, np.ndarray]) -> None:
    """An .npz that np.load reads, deflated at zlib level 1: env states and obs are mostly
    repeated bytes (~20x smaller, at ~500 MB/s), so a checkpoint of 8,192 envs is ~0.1 GB
    instead of 2.5 GB. (np.savez_compressed deflates at level 6: several times slower.)"""
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, value in arrays.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(value), allow_pickle=False)


def read_checkpoint(path: str) -> dict:
    """A checkpoint's arrays, with "meta" decoded; checks the version."""
    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    meta = json.loads(str(data["meta"]))
    if meta.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"{path}: checkpoint version {meta.get('version')}, expected {CHECKPOINT_VERSION}")
    data["meta"] = meta
    return data


class Trainer:
    BACKEND = "c"
    TITLE = "PPO-RNN (NumPy)"
    stop_reason: str | None = None  # why the last run() stopped before its end, see run()

    def __init__(self, config: TrainConfig, out_dir: str | None = None, *, _restore: dict | None = None):
        config.validate()
        import pycraftax
        from pycraftax.env import NUM_ACTIONS, OBS_SIZE

        self.config = c = config
        self.out_dir = out_dir
        self.dtype = np.dtype(c.dtype)
        self.model_config = npp.ModelConfig(obs_size=OBS_SIZE, num_actions=NUM_ACTIONS, width=c.width,
                                            hidden=c.hidden)
        self.loss_config = npp.LossConfig(clip_eps=c.clip_eps, vf_coef=c.vf_coef, ent_coef=c.ent_coef)
        self.env = pycraftax.make("Craftax-Symbolic-v1", num_envs=c.num_envs, backend="c", seed=c.seed,
                                  resets=c.resets, reset_ratio=c.reset_ratio)
        self.window_returns: deque = deque(maxlen=WINDOW)
        self.window_lengths: deque = deque(maxlen=WINDOW)
        self.window_ach: deque = deque(maxlen=WINDOW)
        self.history: list[dict] = []
        if _restore is None:
            self.params = npp.init_params(self.model_config, seed=c.seed, dtype=self.dtype)
            self.opt_state = npp.adam_init(self.params)
            self.rng = np.random.default_rng(c.seed)
            self.obs, _ = self.env.reset()
            self.last_done = np.zeros(c.num_envs, bool)
            self.hstate = np.zeros((c.num_envs, c.hidden), self.dtype)
            self.update = 0
        else:
            self._load_state(_restore)

    # -- rollout + update ------------------------------------------------------------
    def rollout(self):
        c, dt = self.config, self.dtype
        T, N = c.num_steps, c.num_envs
        buf = dict(
            obs=np.empty((T, N, self.model_config.obs_size), np.float32),
            dones=np.empty((T, N), bool), actions=np.empty((T, N), np.int32),
            values=np.empty((T, N), dt), log_probs=np.empty((T, N), dt), rewards=np.empty((T, N), dt),
        )
        h0 = self.hstate.copy()
        episodes = []
        for t in range(T):
            buf["obs"][t] = self.obs
            buf["dones"][t] = self.last_done
            self.hstate, logits, value, _ = npp.forward(self.params, self.obs[None], self.last_done[None], self.hstate)
            action, logp = npp.sample_actions(self.rng, logits[0])
            buf["actions"][t], buf["values"][t], buf["log_probs"][t] = action, value[0], logp
            self.obs, reward, _term, _trunc, info = self.env.step(action)
            buf["rewards"][t] = reward
            self.last_done = info["done"].copy()
            for i in np.flatnonzero(info["done"]):
                episodes.append((float(info["episode_return"][i]), int(info["episode_length"][i]),
                                 info["achievements"][i].copy()))
        _, _, last_val, _ = npp.forward(self.params, self.obs[None], self.last_done[None], self.hstate)
        adv, targets = npp.gae(buf["rewards"], buf["values"], buf["dones"], last_val[0],
                               self.last_done, c.gamma, c.gae_lambda)
        buf.update(h0=h0, advantages=adv, targets=targets)
        return buf, episodes

    def learn(self, buf) -> dict:
        c = self.config
        per = c.num_envs // c.num_minibatches
        sums: dict[str, float] = {}
        n = 0
        for _ in range(c.update_epochs):
            perm = self.rng.permutation(c.num_envs)
            for m in range(c.num_minibatches):
                idx = perm[m * per:(m + 1) * per]
                mb = {k: (v[idx] if k == "h0" else v[:, idx]) for k, v in buf.items() if k != "rewards"}
                loss, aux, grads = npp.ppo_loss(self.params, mb, self.loss_config)
                grads, gnorm = npp.clip_by_global_norm(grads, c.max_grad_norm)
                lr = (npp.linear_schedule(c.lr, self.opt_state["count"], c.num_minibatches, c.update_epochs,
                                          c.num_updates) if c.anneal_lr else c.lr)
                npp.adam_update(self.params, grads, self.opt_state, lr)
                for k, v in (("total_loss", loss), ("grad_norm", gnorm), ("lr", lr), *aux.items()):
                    sums[k] = sums.get(k, 0.0) + float(v)
                n += 1
        return {k: v / n for k, v in sums.items()}

    def step(self) -> dict:
        """One update (rollout + learning); returns its metrics line."""
        t0 = _now()
        buf, episodes = self.rollout()
        t1 = _now()
        losses = self.learn(buf)
        t2 = _now()
        return self._record(episodes, losses, t0, t1, t2)

    def _record(self, episodes, losses: dict, t0: float, t1: float, t2: float | None) -> dict:
        """Count the update, feed the episode windows and build its metrics line (shared with
        the CUDA trainer, whose iteration has no host-visible rollout/learn split: t2 None)."""
        c = self.config
        if t2 is None:
            t1, t2 = None, t1
        self.update += 1
        for ret, length, ach in episodes:
            self.window_returns.append(ret)
            self.window_lengths.append(length)
            self.window_ach.append(ach)
        steps = c.num_envs * c.num_steps
        m = dict(update=self.update, env_steps=self.update * steps, episodes=len(episodes),
                 episode_return=(float(np.mean([e[0] for e in episodes])) if episodes else None),
                 episode_length=(float(np.mean([e[1] for e in episodes])) if episodes else None),
                 return_window=(float(np.mean(self.window_returns)) if self.window_returns else None),
                 length_window=(float(np.mean(self.window_lengths)) if self.window_lengths else None),
                 window_episodes=len(self.window_returns),
                 **losses, sps=steps / (t2 - t0), rollout_s=None if t1 is None else t1 - t0,
                 learn_s=None if t1 is None else t2 - t1)
        if self.window_ach:
            rates = np.mean(np.stack(self.window_ach), 0)
            m["achievements"] = {NAMES_BY_INDEX[i]: float(rates[i]) for i in range(NUM_ACHIEVEMENTS)}
        if not all(np.isfinite(v) for k, v in losses.items()):
            raise FloatingPointError(f"non-finite loss at update {self.update}: {losses}")
        self.history.append({k: m[k] for k in ("update", "env_steps", "episode_return", "return_window",
                                               "total_loss", "entropy")})
        return m

    def request_stop(self, reason: str = "stop requested") -> None:
        """Finish the update in progress, checkpoint and return from run() (signal handlers
        call this; the run continues later with `resume`)."""
        self.stop_reason = reason

    def run(self, max_updates: int | None = None, progress: bool = True, log=None,
            time_limit_s: float | None = None) -> list[dict]:
        """Train until config.num_updates (or `max_updates` more updates); log JSONL and
        checkpoint into out_dir. Returns the metric lines of this call.

        `time_limit_s`: stop early, with a checkpoint, before an update that would end past
        this many seconds from now (judged by the longest update so far), so a run fits a
        batch-job or lease limit and continues with `resume`. `self.stop_reason` says why a
        call stopped before the end (None when it did not)."""
        c = self.config
        end = c.num_updates if max_updates is None else min(c.num_updates, self.update + max_updates)
        self.stop_reason = None
        t_start = _now()
        longest = 0.0
        lines = []
        metrics_f = None
        if self.out_dir:
            os.makedirs(self.out_dir, exist_ok=True)
            self._truncate_metrics()
            metrics_f = open(os.path.join(self.out_dir, "metrics.jsonl"), "a")
        bar = _Progress(c.num_updates * c.num_envs * c.num_steps, self.update * c.num_envs * c.num_steps) \
            if progress else None
        try:
            while self.update < end and self.stop_reason is None:
                t_update = _now()
                m = self.step()
                longest = max(longest, _now() - t_update)
                lines.append(m)
                if metrics_f:
                    metrics_f.write(json.dumps(m) + "\n")
                    metrics_f.flush()
                if bar:
                    bar.update(m)
                if log:
                    log(m)
                if (self.stop_reason is None and time_limit_s is not None and self.update < end
                        and _now() - t_start + longest > time_limit_s):
                    self.stop_reason = f"time limit of {time_limit_s:g} s"
                if self.out_dir and (self.update % c.checkpoint_every == 0 or self.update == end
                                     or self.stop_reason is not None):
                    self.save_checkpoint(os.path.join(self.out_dir, "checkpoint.npz"))
        finally:
            if metrics_f:
                metrics_f.close()
            if bar:
                bar.close()
        if self.out_dir and self.update == c.num_updates:
            interop.save_npz(os.path.join(self.out_dir, "params.npz"), self.params)
        if self.out_dir and (self.update == c.num_updates or self.stop_reason is not None):
            self.plot()
        return lines

    # -- checkpoints -----------------------------------------------------------------
    def _common_arrays(self, params, mu, nu) -> dict[str, np.ndarray]:
        """Weights, Adam moments, env states and episode windows (both trainers)."""
        arrays = dict(params)
        for k, v in mu.items():
            arrays[f"opt/mu/{k}"] = v
        for k, v in nu.items():
            arrays[f"opt/nu/{k}"] = v
        for k, v in self.env.get_state().items():
            arrays[f"env/{k}"] = v
        arrays["window_returns"] = np.asarray(self.window_returns, np.float64)
        arrays["window_lengths"] = np.asarray(self.window_lengths, np.int64)
        arrays["window_ach"] = (np.stack(self.window_ach) if self.window_ach
                                else np.zeros((0, NUM_ACHIEVEMENTS), bool))
        return arrays

    def _load_common(self, data: dict) -> None:
        self.env.set_state({k[4:]: v for k, v in data.items() if k.startswith("env/")})
        self.update = int(data["meta"]["update"])
        self.window_returns.extend(data["window_returns"].tolist())
        self.window_lengths.extend(data["window_lengths"].tolist())
        self.window_ach.extend(list(data["window_ach"]))
        self.history = list(data["meta"].get("history", []))

    def state_arrays(self) -> dict[str, np.ndarray]:
        arrays = self._common_arrays(self.params, self.opt_state["mu"], self.opt_state["nu"])
        arrays["envkey"] = self.env._key.copy()
        arrays["env_episode_return"] = self.env._episode_return.copy()
        arrays["env_episode_length"] = self.env._episode_length.copy()
        arrays["obs"] = self.obs
        arrays["last_done"] = self.last_done
        arrays["hstate"] = self.hstate
        meta = dict(version=CHECKPOINT_VERSION, backend="c", config=self.config.to_dict(), update=self.update,
                    opt_count=self.opt_state["count"], rng=self.rng.bit_generator.state, history=self.history)
        arrays["meta"] = np.array(json.dumps(meta))
        return arrays

    def save_checkpoint(self, path: str) -> None:
        """Atomic: write `path`.tmp<pid> then os.replace."""
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}"
        write_npz_fast(tmp, self.state_arrays())
        os.replace(tmp, path)

    @classmethod
    def resume(cls, path: str, out_dir: str | None = None) -> "Trainer":
        """Continue from a checkpoint with its own config (bit-exact continuation)."""
        data = read_checkpoint(path)
        meta = data["meta"]
        if meta.get("backend", "c") != cls.BACKEND:
            raise ValueError(f"{path}: a checkpoint of the {meta.get('backend', 'c')!r} trainer, not {cls.BACKEND!r}")
        config = TrainConfig.from_dict(meta["config"])
        return cls(config, out_dir if out_dir is not None else os.path.dirname(os.path.abspath(path)),
                   _restore=data)

    def _load_state(self, data: dict) -> None:
        meta = data["meta"]
        self.params = {k: data[k] for k in npp.param_shapes(self.model_config)}
        npp.check_params(self.params, self.model_config)
        self.opt_state = {"count": int(meta["opt_count"]),
                          "mu": {k: data[f"opt/mu/{k}"] for k in self.params},
                          "nu": {k: data[f"opt/nu/{k}"] for k in self.params}}
        self._load_common(data)
        self.env._key = data["envkey"].copy()
        self.env._episode_return[:] = data["env_episode_return"]
        self.env._episode_length[:] = data["env_episode_length"]
        self.obs = data["obs"].copy()
        self.last_done = data["last_done"].copy()
        self.hstate = data["hstate"].copy()
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = meta["rng"]

    def _truncate_metrics(self) -> None:
        """Drop metric lines past the current update (after a resume from an older checkpoint)."""
        path = os.path.join(self.out_dir, "metrics.jsonl")
        if not os.path.exists(path):
            return
        with open(path) as f:
            keep = [ln for ln in f if ln.strip() and json.loads(ln)["update"] <= self.update]
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            f.writelines(keep)
        os.replace(tmp, path)

    def plot(self) -> str | None:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("matplotlib is not installed: skipping learning_curve.png", file=sys.stderr)
            return None
        h = [r for r in self.history if r["return_window"] is not None]
        if not h:
            return None
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot([r["env_steps"] for r in h], [r["return_window"] for r in h], label=f"mean of last {WINDOW} episodes")
        ax.set_xlabel("env steps")
        ax.set_ylabel("episode return")
        ax.set_title(f"{self.TITLE} on Craftax-Symbolic-v1, {self.config.num_envs} envs")
        ax.grid(alpha=0.3)
        ax.legend()
        path = os.path.join(self.out_dir, "learning_curve.png")
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path


class _Progress:
    def __init__(self, total: int, start: int):
        self.total, self.start_steps, self.t0 = total, start, _now()

    def update(self, m: dict) -> None:
        done = m["env_steps"]
        el = max(_now() - self.t0, 1e-9)
        rate = (done - self.start_steps) / el
        eta = (self.total - done) / rate if rate > 0 else float("inf")
        w = 24
        fill = int(w * done / self.total)
        ret = "-" if m["return_window"] is None else f"{m['return_window']:.2f}"
        sys.stderr.write(f"\r[{'#' * fill}{'.' * (w - fill)}] {done:,}/{self.total:,} steps {rate:,.0f} steps/s "
                         f"ETA {eta / 60:4.1f} min | update {m['update']} return {ret} "
                         f"entropy {m['entropy']:.2f} ")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")


# -- evaluation ----------------------------------------------------------------------------
def load_policy(path: str, dtype=np.float32) -> dict[str, np.ndarray]:
    """Weights from a trainer checkpoint or a params.npz (flax names)."""
    return interop.load_npz(path, dtype=dtype)


def evaluate(params: dict, num_episodes: int = 32, num_envs: int = 16, seed: int = 1000, greedy: bool = False,
             max_steps: int = 100_000, progress: bool = False) -> dict:
    """Run the policy for `num_episodes` complete episodes: rounds of up to `num_envs` envs,
    counting only each env's first episode of a round (no bias towards short episodes).
    `max_steps` caps the steps of a round. Returns mean/std return, mean length and
    per-achievement success rates."""
    import pycraftax

    if num_episodes < 1 or num_envs < 1:
        raise ValueError("num_episodes and num_envs must be >= 1")
    cfg = interop.infer_model_config(params)
    dt = params["params/Dense_0/kernel"].dtype
    rng = np.random.default_rng(seed)
    rets, lens, achs = [], [], []
    rnd = 0
    while len(rets) < num_episodes:
        n = min(num_envs, num_episodes - len(rets))
        env = pycraftax.make("Craftax-Symbolic-v1", num_envs=n, backend="c", seed=seed + rnd)
        obs, _ = env.reset()
        done = np.zeros(n, bool)
        finished = np.zeros(n, bool)
        h = np.zeros((n, cfg.hidden), dt)
        steps = 0
        while not finished.all() and steps < max_steps:
            h, logits, _, _ = npp.forward(params, obs[None], done[None], h)
            action = logits[0].argmax(-1).astype(np.int32) if greedy else npp.sample_actions(rng, logits[0])[0]
            obs, _, _, _, info = env.step(action)
            done = info["done"]
            for i in np.flatnonzero(done & ~finished):
                rets.append(float(info["episode_return"][i]))
                lens.append(int(info["episode_length"][i]))
                achs.append(info["achievements"][i])
            finished |= done
            steps += 1
            if progress and steps % 50 == 0:
                sys.stderr.write(f"\r{steps} steps, {len(rets)}/{num_episodes} episodes ")
                sys.stderr.flush()
        env.close()
        rnd += 1
        if not finished.all():
            break  # max_steps reached: report what finished
    if progress:
        sys.stderr.write("\n")
    rates = np.mean(np.stack(achs), 0) if achs else np.zeros(NUM_ACHIEVEMENTS)
    return dict(episodes=len(rets), return_mean=float(np.mean(rets)) if rets else None,
                return_std=float(np.std(rets)) if rets else None,
                length_mean=float(np.mean(lens)) if lens else None,
                achievements={NAMES_BY_INDEX[i]: float(rates[i]) for i in range(NUM_ACHIEVEMENTS)})


def train(config: TrainConfig | None = None, out_dir: str | None = None, **kw) -> Trainer:
    trainer = Trainer(config or TrainConfig(**kw), out_dir)
    trainer.run()
    return trainer


# -- command line (`pycraftax train` / `pycraftax eval`) -------------------------------------
_CLI_FIELDS = ("total_timesteps", "num_envs", "num_steps", "update_epochs", "num_minibatches", "width", "hidden",
               "lr", "gamma", "gae_lambda", "clip_eps", "ent_coef", "vf_coef", "max_grad_norm", "seed", "dtype",
               "checkpoint_every", "resets")


def _int_arg(text: str) -> int:
    """An integer, also written like 1e6."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not math.isfinite(v) or v != int(v):
        import argparse

        raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
    return int(v)


def add_train_args(p) -> None:
    defaults = TrainConfig()
    for name in _CLI_FIELDS:
        ftype = {"dtype": str, "resets": str}.get(name, type(getattr(defaults, name)))
        if ftype is int:
            ftype = _int_arg
        # dest cfg_<name>: None means "not given" (and stays clear of cli.py's generic checks)
        p.add_argument("--" + name.replace("_", "-"), dest="cfg_" + name, metavar=name.upper(), type=ftype, default=None,
                       help=f"default {getattr(defaults, name)}")
    p.add_argument("--no-anneal-lr", action="store_true", help="constant learning rate")
    p.add_argument("--paper", action="store_true",
                   help="the paper's sizes (1024 envs x 64 steps, width/hidden 512, 1e9 steps); flags override "
                        "(the default with --backend cuda)")
    p.add_argument("--backend", choices=("auto", "cuda", "c"), default="auto",
                   help="cuda: the GPU trainer (cuda/ppo_cuda.cu); c: NumPy + C env on the CPU; auto (default): "
                        "cuda where a GPU, the CUDA library and cuBLAS are usable")
    p.add_argument("--no-tf32", action="store_true", help="GPU trainer: exact fp32 GEMMs instead of TF32")
    p.add_argument("--out", default=None, help="output directory (default runs/ppo-rnn-seed<seed>)")
    p.add_argument("--resume", default=None, metavar="CHECKPOINT",
                   help="continue a run bit-exactly from its checkpoint.npz (with the checkpoint's config)")
    p.add_argument("--time-limit", type=float, default=None, metavar="MINUTES",
                   help="stop with a checkpoint before an update would end past this many minutes (continue "
                        "with --resume); SIGTERM and Ctrl-C also stop after the current update with a checkpoint")
    p.add_argument("--blas-threads", type=int, default=1, help="OpenBLAS threads (default 1, see set_blas_threads)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def resolve_backend(args) -> str:
    backend = getattr(args, "backend", "c")
    if backend == "auto":
        from pycraftax.train import cuda_trainer

        backend = cuda_trainer.default_backend()
    elif backend == "cuda":
        from pycraftax.train import cuda_trainer

        reason = cuda_trainer.unavailable_reason()
        if reason:
            raise ValueError(f"--backend cuda: {reason}")
    return backend


def config_from_args(args, backend: str = "c") -> TrainConfig:
    given = {n: getattr(args, "cfg_" + n) for n in _CLI_FIELDS if getattr(args, "cfg_" + n) is not None}
    if args.no_anneal_lr:
        given["anneal_lr"] = False
    if args.paper or backend == "cuda":
        cfg = TrainConfig.paper(**given)
    else:
        cfg = TrainConfig(**given)
    cfg.validate()
    return cfg


class _stop_on_signals:
    """While training: the first SIGTERM (batch schedulers send it before the kill) or Ctrl-C
    asks the trainer to finish its update and checkpoint; a second Ctrl-C interrupts at once."""

    def __init__(self, trainer):
        self.trainer, self.saved = trainer, {}

    def _handle(self, signum, frame):
        import signal

        if self.trainer.stop_reason is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.trainer.request_stop(signal.Signals(signum).name)
        sys.stderr.write(f"\n{signal.Signals(signum).name}: stopping after this update with a checkpoint\n")

    def __enter__(self):
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        import signal

        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        return False


def cmd_train(args) -> int:
    try:
        if args.blas_threads < 1:
            raise ValueError(f"--blas-threads must be >= 1, got {args.blas_threads}")
        if args.time_limit is not None and not (math.isfinite(args.time_limit) and args.time_limit > 0):
            raise ValueError(f"--time-limit must be a positive number of minutes, got {args.time_limit}")
        if args.resume:
            explicit = [n for n in _CLI_FIELDS if getattr(args, "cfg_" + n) is not None]
            if explicit or args.paper or args.no_anneal_lr:
                raise ValueError("--resume continues with the checkpoint's own config; drop "
                                 + ", ".join("--" + n.replace("_", "-") for n in explicit or ["paper/--no-anneal-lr"]))
            if not os.path.exists(args.resume):
                raise ValueError(f"--resume: no checkpoint at {args.resume}")
            backend = read_checkpoint(args.resume)["meta"].get("backend", "c")
        else:
            backend = resolve_backend(args)
            config = config_from_args(args, backend)
    except ValueError as e:
        print(f"pycraftax train: error: {e}", file=sys.stderr)
        return 2
    set_blas_threads(args.blas_threads)
    if backend == "cuda":
        import functools

        from pycraftax.train.cuda_trainer import CudaTrainer

        cls = CudaTrainer
        make = functools.partial(CudaTrainer, tf32=not getattr(args, "no_tf32", False))
    else:
        cls = make = Trainer
    if args.resume:
        trainer = cls.resume(args.resume, out_dir=args.out)
        config = trainer.config
        print(f"resumed {args.resume} at update {trainer.update}/{config.num_updates}")
    else:
        out = args.out or f"runs/ppo-rnn-seed{config.seed}"
        trainer = make(config, out)
    print(f"{cls.TITLE} ({config.dtype}) on Craftax-Symbolic-v1 ({cls.BACKEND} env): {config.num_envs} envs x "
          f"{config.num_steps} steps, width {config.width}, hidden {config.hidden}, {config.num_updates} updates "
          f"({config.num_updates * config.num_envs * config.num_steps:,} env steps) -> {trainer.out_dir}")
    t0 = _now()
    start_update = trainer.update
    with _stop_on_signals(trainer):
        trainer.run(progress=not args.quiet,
                    time_limit_s=None if args.time_limit is None else 60.0 * args.time_limit)
    el = _now() - t0
    steps = (trainer.update - start_update) * config.num_envs * config.num_steps
    last = trainer.history[-1] if trainer.history else {}
    state = "done" if trainer.stop_reason is None else f"stopped ({trainer.stop_reason})"
    print(f"{state}: {trainer.update}/{config.num_updates} updates, {steps:,} env steps in {el:.0f} s "
          f"({steps / max(el, 1e-9):,.0f} steps/s); return (last {WINDOW} episodes) {last.get('return_window')}")
    metrics_path = os.path.join(trainer.out_dir, "metrics.jsonl")
    if os.path.exists(metrics_path):
        from pathlib import Path

        from pycraftax.train import summary

        print(summary.report(summary.summarize(summary.load(Path(metrics_path)))))
    if trainer.stop_reason is not None:
        print(f"continue with: pycraftax train --resume {os.path.join(trainer.out_dir, 'checkpoint.npz')}")
    print(f"metrics: {os.path.join(trainer.out_dir, 'metrics.jsonl')}, checkpoint: "
          f"{os.path.join(trainer.out_dir, 'checkpoint.npz')}, weights: {os.path.join(trainer.out_dir, 'params.npz')}")
    return 0


def add_eval_args(p) -> None:
    p.add_argument("--checkpoint", required=True, help="checkpoint.npz or params.npz of `pycraftax train`")
    p.add_argument("--episodes", type=int, default=32)
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--seed", type=int, default=1000)
    p.add_argument("--greedy", action="store_true", help="argmax actions instead of sampling")
    p.add_argument("--max-steps", type=int, default=100_000, help="step cap per round of num-envs episodes")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--blas-threads", type=int, default=1)


def cmd_eval(args) -> int:
    if args.episodes < 1 or args.num_envs < 1 or args.seed < 0 or args.max_steps < 1:
        print("pycraftax eval: error: --episodes, --num-envs and --max-steps must be >= 1, --seed >= 0",
              file=sys.stderr)
        return 2
    if not os.path.exists(args.checkpoint):
        print(f"pycraftax eval: error: no file {args.checkpoint}", file=sys.stderr)
        return 2
    set_blas_threads(max(1, args.blas_threads))
    params = load_policy(args.checkpoint)
    res = evaluate(params, num_episodes=args.episodes, num_envs=args.num_envs, seed=args.seed, greedy=args.greedy,
                   max_steps=args.max_steps, progress=not args.json)
    if args.json:
        print(json.dumps(res))
        return 0
    if not res["episodes"]:
        print("no episode finished within the step limit")
        return 1
    print(f"{res['episodes']} episodes: return {res['return_mean']:.2f} +- {res['return_std']:.2f}, "
          f"length {res['length_mean']:.0f}")
    for name, rate in sorted(res["achievements"].items(), key=lambda kv: -kv[1]):
        if rate > 0:
            print(f"  {name:<24} {100 * rate:5.1f}%")
    return 0

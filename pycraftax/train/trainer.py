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

The run loop (metrics, checkpoints, windows, plot, progress) is loop.RunLoop's; this module
supplies the iteration and the NumPy state a checkpoint holds.
"""

from __future__ import annotations

import numpy as np

from pycraftax.train import numpy_ppo as npp
from pycraftax.train.config import TrainConfig
from pycraftax.train.loop import (  # noqa: F401  (write_npz_fast, WINDOW: bench/checkpoint_parts.py, old callers)
    WINDOW, Iteration, RunLoop, now, write_npz_fast)
from pycraftax.vec_env import available_host_memory


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


class Trainer(RunLoop):
    BACKEND = "c"
    TITLE = "PPO-RNN (NumPy)"

    def __init__(self, config: TrainConfig, out_dir: str | None = None, *, _restore: dict | None = None):
        import pycraftax

        c = config
        if c.model != "gru":
            raise ValueError(f"the NumPy trainer trains model 'gru'; model {c.model!r} trains with "
                             "pycraftax.train.torch_trainer.TorchTrainer (pycraftax train picks it)")
        super().__init__(config, out_dir, pycraftax.make(c.env_id, num_envs=c.num_envs, backend="c", seed=c.seed,
                                                         resets=c.resets, reset_ratio=c.reset_ratio))
        self.dtype = np.dtype(c.dtype)
        self.model_config = npp.ModelConfig(obs_size=self.env.obs_size, num_actions=self.env.num_actions,
                                            width=c.width, hidden=c.hidden)
        self.loss_config = npp.LossConfig(clip_eps=c.clip_eps, vf_coef=c.vf_coef, ent_coef=c.ent_coef)
        self.check_memory("the CPU", c.num_steps * c.num_envs * self.env.obs_size * 4,  # float32 obs
                          available_host_memory())
        if _restore is None:
            self.params = npp.init_params(self.model_config, seed=c.seed, dtype=self.dtype)
            self.opt_state = npp.adam_init(self.params)
            self.rng = np.random.default_rng(c.seed)
            self.obs, _ = self.env.reset()
            self.last_done = np.zeros(c.num_envs, bool)
            self.hstate = np.zeros((c.num_envs, c.hidden), self.dtype)
        else:
            self.load_state(_restore)

    # -- rollout + update ------------------------------------------------------------
    def rollout(self):
        """(buffers, episodes) of one rollout; self.episode_steps: the rollout step at which
        each of the episodes ended."""
        c, dt = self.config, self.dtype
        T, N = c.num_steps, c.num_envs
        buf = dict(
            obs=np.empty((T, N, self.model_config.obs_size), np.float32),
            dones=np.empty((T, N), bool), actions=np.empty((T, N), np.int32),
            values=np.empty((T, N), dt), log_probs=np.empty((T, N), dt), rewards=np.empty((T, N), dt),
        )
        h0 = self.hstate.copy()
        episodes, episode_steps = [], []
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
                episode_steps.append(t)
        _, _, last_val, _ = npp.forward(self.params, self.obs[None], self.last_done[None], self.hstate)
        adv, targets = npp.gae(buf["rewards"], buf["values"], buf["dones"], last_val[0],
                               self.last_done, c.gamma, c.gae_lambda)
        buf.update(h0=h0, advantages=adv, targets=targets)
        self.episode_steps = episode_steps
        return buf, episodes

    def learn(self, buf) -> dict:
        c = self.config
        per = c.num_envs // c.num_minibatches
        steps_per_update = c.num_minibatches * c.update_epochs
        sums: dict[str, float] = {}
        n = 0
        for _ in range(c.update_epochs):
            perm = self.rng.permutation(c.num_envs)
            for m in range(c.num_minibatches):
                idx = perm[m * per:(m + 1) * per]
                mb = {k: (v[idx] if k == "h0" else v[:, idx]) for k, v in buf.items() if k != "rewards"}
                loss, aux, grads = npp.ppo_loss(self.params, mb, self.loss_config)
                grads, gnorm = npp.clip_by_global_norm(grads, c.max_grad_norm)
                lr = npp.learning_rate(c.lr, c.anneal_lr, self.opt_state["count"] // steps_per_update,
                                       c.num_updates)
                npp.adam_update(self.params, grads, self.opt_state, lr)
                for k, v in (("total_loss", loss), ("grad_norm", gnorm), ("lr", lr), *aux.items()):
                    sums[k] = sums.get(k, 0.0) + float(v)
                n += 1
        return {k: v / n for k, v in sums.items()}

    def iterate(self) -> Iteration:
        t0 = now()
        buf, episodes = self.rollout()
        t1 = now()
        losses = self.learn(buf)
        t2 = now()
        return Iteration(episodes, losses, t2 - t0, dict(rollout_s=t1 - t0, learn_s=t2 - t1), self.episode_steps)

    # -- checkpoint state ------------------------------------------------------------
    def backend_arrays(self) -> dict[str, np.ndarray]:
        arrays = dict(self.params)
        for k, v in self.opt_state["mu"].items():
            arrays[f"opt/mu/{k}"] = v
        for k, v in self.opt_state["nu"].items():
            arrays[f"opt/nu/{k}"] = v
        arrays["envkey"] = self.env.key
        progress = self.env.episode_progress
        arrays["env_episode_return"] = progress["episode_return"]
        arrays["env_episode_length"] = progress["episode_length"]
        arrays["obs"] = self.obs
        arrays["last_done"] = self.last_done
        arrays["hstate"] = self.hstate
        return arrays

    def backend_meta(self) -> dict:
        return dict(opt_count=self.opt_state["count"], rng=self.rng.bit_generator.state)

    def restore_backend(self, data: dict) -> None:
        meta = data["meta"]
        self.params = {k: data[k] for k in npp.param_shapes(self.model_config)}
        npp.check_params(self.params, self.model_config)
        self.opt_state = {"count": int(meta["opt_count"]),
                          "mu": {k: data[f"opt/mu/{k}"] for k in self.params},
                          "nu": {k: data[f"opt/nu/{k}"] for k in self.params}}
        self.env.key = data["envkey"]
        self.env.episode_progress = dict(episode_return=data["env_episode_return"],
                                         episode_length=data["env_episode_length"])
        self.obs = data["obs"].copy()
        self.last_done = data["last_done"].copy()
        self.hstate = data["hstate"].copy()
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = meta["rng"]


def train(config: TrainConfig | None = None, out_dir: str | None = None, **kw) -> Trainer:
    trainer = Trainer(config or TrainConfig(**kw), out_dir)
    trainer.run()
    return trainer

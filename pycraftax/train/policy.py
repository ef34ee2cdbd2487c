"""A trained policy of either network, stepped on the float obs of the C env (NumPy, any CPU):
what `pycraftax eval`, `pycraftax render` and the check against the official env run.

    policy = Policy(load_policy("runs/x/params.npz"))      # or pretrained.load("fast-1e9")
    h = policy.initial_state(num_envs)
    h, logits = policy.step(obs, done, h)                  # obs float [N, obs_size], done bool [N]

The networks: "gru", the paper's ActorCriticRNN (numpy_ppo), and "cell-gru" / "cell-mingru", the
fast recipes' (fast_model), told apart by their weights' names.
"""

from __future__ import annotations

import numpy as np

from pycraftax.train import fast_model
from pycraftax.train import numpy_ppo as npp
from pycraftax.vec_env import check_int


class Policy:
    def __init__(self, params: dict):
        from pycraftax.train import interop

        self.params = params
        self.dtype = params["params/Dense_0/kernel"].dtype
        if fast_model.is_fast_params(params):
            cfg = fast_model.config_of(params)
            fast_model.check_params(params, cfg)
            self.model = "cell-mingru" if cfg.recurrence == "mingru" else "cell-gru"
            self.env_id = "Craftax-Symbolic-v1"
            self.obs_size = fast_model.MAP_FLOATS + fast_model.SCALARS
            self.hidden, self.num_actions = cfg.hidden, cfg.num_actions
        else:
            cfg = interop.infer_model_config(params)
            self.model, self.env_id = "gru", env_id_for_policy(cfg.obs_size)
            self.obs_size = cfg.obs_size
            self.hidden, self.num_actions = cfg.hidden, cfg.num_actions

    def initial_state(self, num_envs: int) -> np.ndarray:
        return np.zeros((check_int("num_envs", num_envs, 1), self.hidden), self.dtype)

    def step(self, obs: np.ndarray, done: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One step of N envs: (new state [N, hidden], logits [N, num_actions]); done[i] resets
        env i's state first (its previous step ended an episode)."""
        obs, done, h = np.asarray(obs), np.asarray(done), np.asarray(h)
        if obs.ndim != 2 or obs.shape[1] != self.obs_size:
            raise ValueError(f"obs must have shape (N, {self.obs_size}) ({self.env_id}'s float obs), got {obs.shape}")
        n = obs.shape[0]
        if done.shape != (n,) or done.dtype != np.bool_:
            raise ValueError(f"done must be a bool array of shape ({n},), got {done.dtype} {done.shape}")
        if h.shape != (n, self.hidden):
            raise ValueError(f"h must have shape ({n}, {self.hidden}) (initial_state or the last step's), "
                             f"got {h.shape}")
        forward = fast_model.forward if self.model.startswith("cell-") else _paper_forward
        h, logits, _ = forward(self.params, obs[None], done[None], h)
        return h, logits[0]

    def act(self, rng: np.random.Generator | None, logits: np.ndarray, greedy: bool,
            uniforms: np.ndarray | None = None) -> np.ndarray:
        """int32 actions [N]: the argmax, or sampled (numpy_ppo.sample_actions) with rng's
        uniforms or the given ones (float [N] in [0, 1), one per row)."""
        logits = np.asarray(logits)
        if logits.ndim != 2 or logits.shape[1] != self.num_actions:
            raise ValueError(f"logits must have shape (N, {self.num_actions}), got {logits.shape}")
        if greedy:
            return logits.argmax(-1).astype(np.int32)
        return npp.sample_actions(rng, logits, uniforms)[0]


def env_id_for_policy(obs_size: int) -> str:
    """The env id whose observations a policy with `obs_size` inputs reads."""
    from pycraftax.classic_env import CraftaxClassicEnv
    from pycraftax.env import CraftaxEnv

    by_size = {cls.obs_size: cls.env_id for cls in (CraftaxEnv, CraftaxClassicEnv)}
    if obs_size not in by_size:
        raise ValueError(f"a policy of {obs_size} inputs matches no env: the envs read {sorted(by_size)} "
                         f"({', '.join(by_size.values())})")
    return by_size[obs_size]


def _paper_forward(params, obs, dones, h0):
    h, logits, values, _ = npp.forward(params, obs, dones, h0)
    return h, logits, values

"""Evaluation of a trained policy on the C env: returns, lengths and achievement rates over
complete episodes (`pycraftax eval`), with the weights read from a trainer's files.

    params = load_policy("runs/x/checkpoint.npz")
    result = evaluate(params, num_episodes=32)
"""

from __future__ import annotations

import numpy as np

from pycraftax import rules
from pycraftax.achievements import names_by_index
from pycraftax.progress import Progress
from pycraftax.train import interop
from pycraftax.vec_env import check_int


def load_policy(path: str, dtype=np.float32) -> dict[str, np.ndarray]:
    """Weights from a trainer checkpoint or a params.npz (flax names); interop.NotACheckpointError
    (a ValueError naming the file and what was expected) for any other file."""
    return interop.load_npz(path, dtype=dtype)


def evaluate(params: dict, num_episodes: int = 32, num_envs: int = 16, seed: int = 1000, greedy: bool = False,
             max_steps: int = 100_000, progress: bool = False) -> dict:
    """Run the policy for `num_episodes` complete episodes: rounds of up to `num_envs` envs,
    counting only each env's first episode of a round (no bias towards short episodes).
    `max_steps` caps the steps of a round. Returns mean/std return, mean length and
    per-achievement success rates. The env is the one the policy's input size reads
    (the one Policy.env_id names)."""
    import pycraftax
    from pycraftax.train.policy import Policy

    num_episodes, num_envs = check_int("num_episodes", num_episodes, 1), check_int("num_envs", num_envs, 1)
    seed, max_steps = check_int("seed", seed, 0), check_int("max_steps", max_steps, 1)
    if not isinstance(greedy, (bool, np.bool_)):
        raise TypeError(f"greedy must be a bool, got {type(greedy).__name__} {greedy!r}")
    policy = Policy(params)
    env_id = policy.env_id
    names = names_by_index(env_id)
    rng = np.random.default_rng(seed)
    rets, lens, achs = [], [], []
    bar = Progress(num_episodes, "episodes") if progress else None
    rnd = 0
    while len(rets) < num_episodes:
        n = min(num_envs, num_episodes - len(rets))
        env = pycraftax.make(env_id, num_envs=n, backend="c", seed=seed + rnd)
        obs, _ = env.reset()
        done = np.zeros(n, bool)
        finished = np.zeros(n, bool)
        h = policy.initial_state(n)
        steps = 0
        while not finished.all() and steps < max_steps:
            h, logits = policy.step(obs, done, h)
            action = policy.act(rng, logits, greedy)
            obs, _, _, _, info = env.step(action)
            done = info["done"]
            for i in np.flatnonzero(done & ~finished):
                rets.append(float(info["episode_return"][i]))
                lens.append(int(info["episode_length"][i]))
                achs.append(info["achievements"][i])
            finished |= done
            steps += 1
            if bar:
                bar.update(len(rets), f"round {rnd + 1}, step {steps:,}")
        env.close()
        rnd += 1
        if not finished.all():
            break  # max_steps reached: report what finished
    if bar:
        bar.close()
    rates = np.mean(np.stack(achs), 0) if achs else np.zeros(len(names))
    return dict(episodes=len(rets), return_mean=float(np.mean(rets)) if rets else None,
                return_std=float(np.std(rets)) if rets else None,
                length_mean=float(np.mean(lens)) if lens else None,
                env_id=env_id, rules=rules.rules_fingerprint(),
                achievements=dict(zip(names, (float(r) for r in rates))))

"""Evaluation of a trained policy on the C env: returns, lengths and achievement rates over
complete episodes (`pycraftax eval`), with the weights read from a trainer's files.

    params = load_policy("runs/x/checkpoint.npz")
    result = evaluate(params, num_episodes=32)
"""

from __future__ import annotations

import numpy as np

from pycraftax import jax_random, rules
from pycraftax.achievements import names_by_index
from pycraftax.progress import Progress
from pycraftax.train import interop
from pycraftax.vec_env import check_int


def load_policy(path: str, dtype=np.float32) -> dict[str, np.ndarray]:
    """Weights from a trainer checkpoint or a params.npz (flax names); interop.NotACheckpointError
    (a ValueError naming the file and what was expected) for any other file."""
    return interop.load_npz(path, dtype=dtype)


def episode_keys(seed: int, first: int, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(world, env-step, action) keys uint32 [count, 2] of episodes first..first+count-1 of an
    evaluation with `seed`: split(k, n)[i] of the three keys split(PRNGKey(seed), 3), the same
    for any n > i, so an episode's keys do not depend on how many episodes run or how many at once."""
    roots = jax_random.split(jax_random.prng_key(seed), 3)
    return tuple(jax_random.split(root, first + count)[first:] for root in roots)


def step_uniforms(action_keys: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """float64 [N] in [0, 1): the uniform that samples step steps[i] of the episode with action
    key action_keys[i] (53 bits of fold_in(key, step))."""
    bits = jax_random.fold_in_rows(action_keys, steps).astype(np.uint64)
    return ((bits[:, 0] >> np.uint64(5)) * np.uint64(1 << 26) + (bits[:, 1] >> np.uint64(6))) / float(1 << 53)


def evaluate(params: dict, num_episodes: int = 32, num_envs: int = 16, seed: int = 1000, greedy: bool = False,
             max_steps: int = 100_000, progress: bool = False) -> dict:
    """Run the policy for `num_episodes` complete episodes: rounds of up to `num_envs` envs,
    each env playing one episode per round; `max_steps` caps the steps of a round. Returns
    every episode's return (in episode order), mean/std return, mean length and per-achievement
    success rates. The env is the one the
    policy's input size reads (the one Policy.env_id names).

    Episode i is a function of (seed, i) alone, whatever num_envs and num_episodes: its world
    is reset_env(world key i), its step t runs upstream's step_env with fold_in(env-step key i,
    t), and a sampled action takes the uniform of fold_in(action key i, t) (episode_keys,
    step_uniforms). The policy's arithmetic is row by row, so the score depends on the policy,
    the seed and the number of episodes only."""
    import pycraftax
    from pycraftax.train.policy import Policy

    num_episodes, num_envs = check_int("num_episodes", num_episodes, 1), check_int("num_envs", num_envs, 1)
    seed, max_steps = check_int("seed", seed, 0), check_int("max_steps", max_steps, 1)
    if not isinstance(greedy, (bool, np.bool_)):
        raise TypeError(f"greedy must be a bool, got {type(greedy).__name__} {greedy!r}")
    policy = Policy(params)
    env_id = policy.env_id
    names = names_by_index(env_id)
    rets, lens, achs = {}, {}, {}  # by episode index
    bar = Progress(num_episodes, "episodes") if progress else None
    first = 0
    while first < num_episodes:
        n = min(num_envs, num_episodes - first)
        world_keys, step_keys, action_keys = episode_keys(seed, first, n)
        env = pycraftax.make(env_id, num_envs=n, backend="c")
        obs, _ = env.reset_with_keys(world_keys)
        done = np.zeros(n, bool)
        finished = np.zeros(n, bool)
        returns = np.zeros(n, np.float32)
        h = policy.initial_state(n)
        step = 0
        while not finished.all() and step < max_steps:
            h, logits = policy.step(obs, done, h)
            t = np.full(n, step, np.int64)
            action = policy.act(None, logits, greedy, uniforms=None if greedy else step_uniforms(action_keys, t))
            obs, reward, done, info = env.step_with_keys(action, jax_random.fold_in_rows(step_keys, t))
            returns += np.where(finished, np.float32(0), reward)
            step += 1
            for i in np.flatnonzero(done & ~finished):
                rets[first + i] = float(returns[i])
                lens[first + i] = step
                achs[first + i] = np.array([info[f"Achievements/{name}"][i] > 0 for name in names])
            finished |= done
            if bar:
                bar.update(len(rets), f"episodes {first + 1}-{first + n}, step {step:,}")
        env.close()
        first += n
        if not finished.all():
            break  # max_steps reached: report what finished
    if bar:
        bar.close()
    order = sorted(rets)
    rets, lens = [rets[i] for i in order], [lens[i] for i in order]
    rates = np.mean(np.stack([achs[i] for i in order]), 0) if order else np.zeros(len(names))
    return dict(episodes=len(rets), returns=rets, return_mean=float(np.mean(rets)) if rets else None,
                return_std=float(np.std(rets)) if rets else None,
                length_mean=float(np.mean(lens)) if lens else None,
                env_id=env_id, rules=rules.rules_fingerprint(),
                achievements=dict(zip(names, (float(r) for r in rates))))

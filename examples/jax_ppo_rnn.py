"""PPO with a GRU policy, trained with the env inside one jitted JAX program: the structure of
Craftax_Baselines' ppo_rnn.py (make_train(config) -> train(rng), a lax.scan over updates, each
a lax.scan over env steps, then GAE and epochs of minibatch updates), written from scratch in
plain JAX (no flax/optax). The env is either pycraftax.jax (the C reference through XLA FFI)
or craftax 1.6.1 itself: the same program, the same keys.

    python examples/jax_ppo_rnn.py --env pycraftax
    python examples/jax_ppo_rnn.py --env craftax
    python examples/jax_ppo_rnn.py --env both --num-envs 8 --num-steps 16 --updates 2

Prints one JSON line per env: training steps/s (env steps of a run over its wall time, the
fastest of 3 after a warm-up, compile excluded), compile seconds, and the env's share of the
loop (the time of a scan of the same env steps with random actions over the training time).
"""

from __future__ import annotations

import argparse
import json
import os
import time

# jaxlib 0.10.2's CPU fusion builds wrong batched noise in craftax's world generation without
# this flag (conformance/upstream.py); it must be set before jax is imported.
_FLAG = "--xla_cpu_experimental_ynn_fusion_type="
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402


def make_env(name: str):
    if name == "pycraftax":
        from pycraftax.jax import make_craftax_env_from_name
    elif name == "craftax":
        from craftax.craftax_env import make_craftax_env_from_name
    else:
        raise ValueError(f"--env must be pycraftax, craftax or both, got {name!r}")
    return make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=True)


# -- network: dense -> GRU -> actor and critic heads ------------------------------------------

def _dense(key, n_in, n_out, scale=np.sqrt(2.0)):
    w = jax.nn.initializers.orthogonal(scale)(key, (n_in, n_out), jnp.float32)
    return {"w": w, "b": jnp.zeros((n_out,), jnp.float32)}


def init_network(key, obs_size: int, num_actions: int, width: int):
    k = jax.random.split(key, 8)
    return {
        "embed": _dense(k[0], obs_size, width),
        "gru_x": _dense(k[1], width, 3 * width, 1.0),
        "gru_h": _dense(k[2], width, 3 * width, 1.0),
        "actor_hidden": _dense(k[3], width, width),
        "actor_out": _dense(k[4], width, num_actions, 0.01),
        "critic_hidden": _dense(k[5], width, width),
        "critic_out": _dense(k[6], width, 1, 1.0),
    }


def _apply_dense(p, x):
    return x @ p["w"] + p["b"]


def gru_cell(p, h, x):
    gx, gh = _apply_dense(p["gru_x"], x), _apply_dense(p["gru_h"], h)
    rx, zx, nx = jnp.split(gx, 3, axis=-1)
    rh, zh, nh = jnp.split(gh, 3, axis=-1)
    r, z = jax.nn.sigmoid(rx + rh), jax.nn.sigmoid(zx + zh)
    n = jnp.tanh(nx + r * nh)
    return (1.0 - z) * n + z * h


def network_step(p, h, obs, reset):
    """One time step for a batch: the hidden state is zeroed where the previous step ended an
    episode (ScannedRNN's reset), then (h, logits, value)."""
    h = jnp.where(reset[:, None], jnp.zeros_like(h), h)
    h = gru_cell(p, h, jax.nn.relu(_apply_dense(p["embed"], obs)))
    logits = _apply_dense(p["actor_out"], jax.nn.relu(_apply_dense(p["actor_hidden"], h)))
    value = _apply_dense(p["critic_out"], jax.nn.relu(_apply_dense(p["critic_hidden"], h)))[:, 0]
    return h, logits, value


def network_sequence(p, h, obs, resets):
    def body(h, xs):
        h, logits, value = network_step(p, h, *xs)
        return h, (logits, value)

    return jax.lax.scan(body, h, (obs, resets))[1]


# -- Adam with global-norm clipping --------------------------------------------------------------

def adam_init(params):
    zeros = jax.tree.map(jnp.zeros_like, params)
    return {"m": zeros, "v": zeros, "t": jnp.int32(0)}


def adam_update(params, grads, opt, lr, max_norm, b1=0.9, b2=0.999, eps=1e-5):
    norm = jnp.sqrt(sum(jnp.sum(g * g) for g in jax.tree.leaves(grads)))
    grads = jax.tree.map(lambda g: g * jnp.minimum(1.0, max_norm / (norm + 1e-6)), grads)
    t = opt["t"] + 1
    m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, opt["m"], grads)
    v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, opt["v"], grads)
    scale = lr * jnp.sqrt(1 - b2**t) / (1 - b1**t)
    params = jax.tree.map(lambda p, m, v: p - scale * m / (jnp.sqrt(v) + eps), params, m, v)
    return params, {"m": m, "v": v, "t": t}


# -- PPO -------------------------------------------------------------------------------------------

def make_train(config: dict, env):
    num_envs, num_steps = config["NUM_ENVS"], config["NUM_STEPS"]
    env_params = env.default_params
    obs_size = env.observation_space(env_params).shape[0]
    num_actions = env.action_space(env_params).n
    reset_fn = jax.vmap(env.reset, in_axes=(0, None))
    step_fn = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    width = config["LAYER_SIZE"]

    def loss_fn(params, h0, batch):
        obs, resets, actions, old_logp, advantages, targets = batch
        logits, values = network_sequence(params, h0, obs, resets)
        logp_all = jax.nn.log_softmax(logits)
        logp = jnp.take_along_axis(logp_all, actions[..., None], axis=-1)[..., 0]
        ratio = jnp.exp(logp - old_logp)
        adv = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        clipped = jnp.clip(ratio, 1 - config["CLIP_EPS"], 1 + config["CLIP_EPS"])
        actor_loss = -jnp.minimum(ratio * adv, clipped * adv).mean()
        value_loss = 0.5 * jnp.square(values - targets).mean()
        entropy = -(jnp.exp(logp_all) * logp_all).sum(-1).mean()
        return actor_loss + config["VF_COEF"] * value_loss - config["ENT_COEF"] * entropy

    def train(rng):
        rng, net_key, reset_key = jax.random.split(rng, 3)
        params = init_network(net_key, obs_size, num_actions, width)
        opt = adam_init(params)
        obs, env_state = reset_fn(jax.random.split(reset_key, num_envs), env_params)
        runner = (params, opt, env_state, obs, jnp.zeros(num_envs, bool), jnp.zeros((num_envs, width)), rng)

        def update(runner, _):
            params, opt, env_state, obs, last_done, h, rng = runner
            h_start = h

            def env_step(carry, _):
                env_state, obs, last_done, h, rng = carry
                rng, act_key, step_key = jax.random.split(rng, 3)
                h, logits, value = network_step(params, h, obs, last_done)
                action = jax.random.categorical(act_key, logits)
                logp = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], axis=-1)[:, 0]
                next_obs, env_state, reward, done, info = step_fn(
                    jax.random.split(step_key, num_envs), env_state, action.astype(jnp.int32), env_params
                )
                transition = (obs, last_done, action, logp, value, reward, done)
                return (env_state, next_obs, done, h, rng), transition

            (env_state, obs, last_done, h, rng), traj = jax.lax.scan(
                env_step, (env_state, obs, last_done, h, rng), None, num_steps
            )
            t_obs, t_resets, t_actions, t_logp, t_values, t_rewards, t_dones = traj
            _, _, last_value = network_step(params, h, obs, last_done)

            def gae(carry, xs):
                advantage, next_value = carry
                done, value, reward = xs
                delta = reward + config["GAMMA"] * next_value * (1 - done) - value
                advantage = delta + config["GAMMA"] * config["GAE_LAMBDA"] * (1 - done) * advantage
                return (advantage, value), advantage

            _, advantages = jax.lax.scan(
                gae, (jnp.zeros_like(last_value), last_value), (t_dones, t_values, t_rewards), reverse=True
            )
            targets = advantages + t_values

            def epoch(carry, _):
                params, opt, rng = carry
                rng, perm_key = jax.random.split(rng)
                perm = jax.random.permutation(perm_key, num_envs).reshape(config["NUM_MINIBATCHES"], -1)

                def minibatch(carry, envs):
                    params, opt = carry
                    batch = tuple(x[:, envs] for x in (t_obs, t_resets, t_actions, t_logp, advantages, targets))
                    grads = jax.grad(loss_fn)(params, h_start[envs], batch)
                    return adam_update(params, grads, opt, config["LR"], config["MAX_GRAD_NORM"]), None

                (params, opt), _ = jax.lax.scan(minibatch, (params, opt), perm)
                return (params, opt, rng), None

            (params, opt, rng), _ = jax.lax.scan(epoch, (params, opt, rng), None, config["UPDATE_EPOCHS"])
            metrics = {"reward": t_rewards.mean(), "episodes": t_dones.sum()}
            return (params, opt, env_state, obs, last_done, h, rng), metrics

        runner, metrics = jax.lax.scan(update, runner, None, config["NUM_UPDATES"])
        return runner[0], metrics

    return train


def make_env_only_loop(config: dict, env):
    """The training loop's env steps alone (random actions): its time over the training time
    is the env's share of the loop."""
    num_envs, num_steps = config["NUM_ENVS"], config["NUM_STEPS"] * config["NUM_UPDATES"]
    env_params = env.default_params
    step_fn = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def run(rng):
        rng, reset_key = jax.random.split(rng)
        _, env_state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, num_envs), env_params)

        def body(carry, _):
            env_state, rng = carry
            rng, act_key, step_key = jax.random.split(rng, 3)
            action = jax.random.randint(act_key, (num_envs,), 0, env.num_actions, jnp.int32)
            _, env_state, reward, _, _ = step_fn(jax.random.split(step_key, num_envs), env_state, action, env_params)
            return (env_state, rng), reward.sum()

        return jax.lax.scan(body, (env_state, rng), None, num_steps)[1].sum()

    return run


def timed(fn, *args, repeats: int = 3):
    """(result, compile seconds, run seconds) of jit(fn)(*args): the compile timed apart, one
    untimed warm-up run, then the fastest of `repeats` runs (the machine may be shared)."""
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - start
    result = jax.block_until_ready(compiled(*args))
    run_s = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        result = jax.block_until_ready(compiled(*args))
        run_s = min(run_s, time.perf_counter() - start)
    return result, compile_s, run_s


def run(env_name: str, config: dict, seed: int) -> dict:
    env = make_env(env_name)
    (_, metrics), compile_s, train_s = timed(make_train(config, env), jax.random.PRNGKey(seed))
    _, env_compile_s, env_s = timed(make_env_only_loop(config, env), jax.random.PRNGKey(seed))
    steps = config["NUM_ENVS"] * config["NUM_STEPS"] * config["NUM_UPDATES"]
    return {
        "env": env_name,
        "device": jax.devices()[0].device_kind,
        "env_steps": steps,
        "train_steps_per_s": steps / train_s,
        "train_s": train_s,
        "compile_s": compile_s,
        "env_only_steps_per_s": steps / env_s,
        "env_share_of_loop": env_s / train_s,
        "mean_reward": float(np.asarray(metrics["reward"]).mean()),
        "episodes": int(np.asarray(metrics["episodes"]).sum()),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="pycraftax", choices=["pycraftax", "craftax", "both"])
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--num-steps", type=int, default=64)
    parser.add_argument("--updates", type=int, default=4)
    parser.add_argument("--layer-size", type=int, default=128)
    parser.add_argument("--minibatches", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.num_envs % args.minibatches:
        parser.error(f"--num-envs ({args.num_envs}) must be a multiple of --minibatches ({args.minibatches})")
    config = {
        "NUM_ENVS": args.num_envs, "NUM_STEPS": args.num_steps, "NUM_UPDATES": args.updates,
        "LAYER_SIZE": args.layer_size, "NUM_MINIBATCHES": args.minibatches, "UPDATE_EPOCHS": args.epochs,
        "GAMMA": 0.99, "GAE_LAMBDA": 0.8, "CLIP_EPS": 0.2, "ENT_COEF": 0.01, "VF_COEF": 0.5,
        "MAX_GRAD_NORM": 1.0, "LR": 2e-4,
    }
    for name in (["pycraftax", "craftax"] if args.env == "both" else [args.env]):
        print(json.dumps(run(name, config, args.seed)), flush=True)


if __name__ == "__main__":
    main()

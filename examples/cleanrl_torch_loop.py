"""A CleanRL-style PPO loop in torch over `gymnasium.make_vec("pycraftax/Craftax-Symbolic-v1")`.

Small by default (8 envs x 32 steps x 4 iterations, an MLP policy): it runs in seconds on a CPU
and shows the pieces a real trainer needs: numpy/torch conversion, same-step auto-reset, episode
statistics from `final_info`, and bootstrapping truncated episodes from `final_obs`.

    pip install torch                       # optional dependency of this example only
    python examples/cleanrl_torch_loop.py --backend c
    python examples/cleanrl_torch_loop.py --backend cuda --num-envs 1024   # on a GPU
"""

from __future__ import annotations

import argparse
import time

import gymnasium
import numpy as np
import torch
from torch import nn

from pycraftax.gymnasium_env import register_envs


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["auto", "c", "cuda"], default="c", help="pycraftax backend (default: c)")
    parser.add_argument("--num-envs", type=int, default=8, help="parallel envs (default: 8)")
    parser.add_argument("--num-steps", type=int, default=32, help="steps per rollout (default: 32)")
    parser.add_argument("--iterations", type=int, default=4, help="PPO iterations (default: 4)")
    parser.add_argument("--max-timesteps", type=int, default=24,
                        help="episode time limit, short so that truncations show up (default: 24)")
    parser.add_argument("--seed", type=int, default=0, help="env and torch seed (default: 0)")
    return parser.parse_args()


class Agent(nn.Module):
    def __init__(self, obs_size: int, num_actions: int, hidden: int = 64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_size, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.actor = nn.Linear(hidden, num_actions)
        self.critic = nn.Linear(hidden, 1)

    def value(self, obs):
        return self.critic(self.body(obs)).squeeze(-1)

    def act(self, obs, action=None):
        hidden = self.body(obs)
        dist = torch.distributions.Categorical(logits=self.actor(hidden))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(hidden).squeeze(-1)


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    register_envs()  # pycraftax's __init__ does this too where it calls register_envs()
    envs = gymnasium.make_vec("pycraftax/Craftax-Symbolic-v1", num_envs=args.num_envs,
                              vectorization_mode="vector_entry_point", backend=args.backend,
                              max_timesteps=args.max_timesteps)
    device = torch.device("cuda" if envs.unwrapped.backend == "cuda" and torch.cuda.is_available() else "cpu")
    obs_size = envs.single_observation_space.shape[0]
    agent = Agent(obs_size, envs.single_action_space.n).to(device)
    optimizer = torch.optim.Adam(agent.parameters(), lr=2.5e-4, eps=1e-5)
    gamma, gae_lambda, clip, n, steps = 0.99, 0.8, 0.2, args.num_envs, args.num_steps

    obs_buf = torch.zeros((steps, n, obs_size), device=device)
    actions_buf = torch.zeros((steps, n), dtype=torch.long, device=device)
    logprobs_buf, rewards_buf, dones_buf, values_buf = (torch.zeros((steps, n), device=device) for _ in range(4))

    next_obs = torch.as_tensor(envs.reset(seed=args.seed)[0], device=device)
    next_done = torch.zeros(n, device=device)
    episodes, truncations, start = [], 0, time.perf_counter()
    for iteration in range(args.iterations):
        for step in range(steps):
            obs_buf[step], dones_buf[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.act(next_obs)
            actions_buf[step], logprobs_buf[step], values_buf[step] = action, logprob, value
            # torch actions go in as they are (int32: what the CUDA backend takes from device memory)
            obs, reward, terminated, truncated, infos = envs.step(action.to(torch.int32))
            reward = torch.as_tensor(reward, device=device)
            if truncated.any():
                # A truncated episode would have gone on: bootstrap its last reward with the value of
                # final_obs, the obs of the state it ended in (docs/GYMNASIUM.md).
                final = torch.as_tensor(infos["final_obs"][truncated], device=device)
                with torch.no_grad():
                    reward[torch.as_tensor(truncated, device=device)] += gamma * agent.value(final)
                truncations += int(truncated.sum())
            if "final_info" in infos:
                ended = infos["_final_info"]
                episodes += infos["final_info"]["episode_return"][ended].tolist()
            rewards_buf[step] = reward
            next_obs = torch.as_tensor(obs, device=device)
            next_done = torch.as_tensor(terminated | truncated, dtype=torch.float32, device=device)

        with torch.no_grad():  # GAE over the rollout
            next_value = agent.value(next_obs)
            advantages = torch.zeros_like(rewards_buf)
            last = torch.zeros(n, device=device)
            for t in reversed(range(steps)):
                not_done = 1.0 - (next_done if t == steps - 1 else dones_buf[t + 1])
                following = next_value if t == steps - 1 else values_buf[t + 1]
                delta = rewards_buf[t] + gamma * following * not_done - values_buf[t]
                last = delta + gamma * gae_lambda * not_done * last
                advantages[t] = last
            returns = advantages + values_buf

        b_obs, b_actions = obs_buf.reshape(-1, obs_size), actions_buf.reshape(-1)
        b_logprobs, b_adv, b_returns = logprobs_buf.reshape(-1), advantages.reshape(-1), returns.reshape(-1)
        for _ in range(2):  # update epochs, one minibatch each
            _, logprob, entropy, value = agent.act(b_obs, b_actions)
            ratio = (logprob - b_logprobs).exp()
            adv = (b_adv - b_adv.mean()) / (b_adv.std() + 1e-8)
            policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip)).mean()
            loss = policy_loss + 0.5 * ((value - b_returns) ** 2).mean() - 0.01 * entropy.mean()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
            optimizer.step()
        mean_return = f"{np.mean(episodes):.2f}" if episodes else "n/a"
        print(f"iteration {iteration + 1}/{args.iterations}: loss {loss.item():.4f}, episodes ended {len(episodes)} "
              f"(truncated {truncations}), mean return {mean_return}")
    steps_done = args.iterations * steps * n
    print(f"{steps_done:,} env steps in {time.perf_counter() - start:.1f} s on backend={envs.unwrapped.backend!r}")
    envs.close()


if __name__ == "__main__":
    main()

"""The fast recipe's trainer: PPO-RNN of fast_model.TorchActorCritic in PyTorch.

    trainer = TorchTrainer(TrainConfig.from_recipe("fast"))   # the GPU where there is one
    trainer.run()

On the GPU the envs are the CUDA env with compact obs records (pycraftax.cuda_env,
obs="compact"): the rollout keeps 1,008 bytes an env step, and the cell encoder reads them
(cuda/fast_cuda.cu). Everything stays on the GPU: the env's outputs are read in place, the
weights, the Adam moments and the rollout never leave it, and one minibatch's update (gather,
forward, BPTT, clip, Adam) is captured once as a CUDA graph and replayed. Only the metrics of
the episodes that ended come back, once an update. On the CPU (tests, smoke runs) the same loop
runs eagerly on the C env's float obs.

The loss, GAE, advantage normalisation, global-norm clip and Adam are the paper recipe's
(numpy_ppo); the GEMMs run in bfloat16 with fp32 accumulation on the GPU. Checkpoints hold the
learner (weights, moments, the env key, counters) but not the env states (GBs at these sizes): a
resumed run continues the learning exactly and starts new episodes.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from pycraftax.train import numpy_ppo
from pycraftax.train.config import CELL_MODELS, TrainConfig
from pycraftax.train.fast_model import FastModelConfig, TorchActorCritic, init_params, param_shapes, ppo_loss_torch
from pycraftax.train.loop import Iteration, RunLoop, now
from pycraftax.vec_env import available_host_memory

LOSS_STATS = ("total_loss", "value_loss", "actor_loss", "entropy", "approx_kl", "clip_frac", "grad_norm")


def _torch():
    import torch

    return torch


def default_device() -> str:
    """"cuda" where PyTorch sees a GPU and the CUDA library loads, else "cpu"."""
    try:
        torch = _torch()
    except ImportError:
        return "cpu"
    from pycraftax import cuda_env

    return "cuda" if torch.cuda.is_available() and cuda_env.available() else "cpu"


def unavailable_reason(device: str) -> str | None:
    """Why the fast trainer cannot run on `device`, or None."""
    try:
        torch = _torch()
    except ImportError:
        return "the fast recipe trains with PyTorch: pip install torch"
    if device == "cuda":
        from pycraftax import cuda_env

        if not torch.cuda.is_available():
            return "PyTorch sees no CUDA GPU"
        return cuda_env.unavailable_reason()
    return None


class TorchTrainer(RunLoop):
    BACKEND = "torch"
    TITLE = "PPO-RNN, fast recipe (PyTorch)"
    CHECKPOINT_ENVS = False

    def __init__(self, config: TrainConfig, out_dir: str | None = None, *, device: str | None = None,
                 graphs: bool = True, _restore: dict | None = None):
        import pycraftax

        torch = _torch()
        c = config
        if c.model not in CELL_MODELS:
            raise ValueError(f"TorchTrainer trains the models {sorted(CELL_MODELS)}, got {c.model!r}")
        device = device or (_restore["meta"].get("device") if _restore else None) or default_device()
        reason = unavailable_reason(device)
        if reason:
            raise RuntimeError(f"fast trainer on {device}: {reason}")
        on_gpu = device == "cuda"
        if c.deterministic and on_gpu:
            # cuBLAS reads it when a handle is made: before this process's first GEMM
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        env = pycraftax.make(c.env_id, num_envs=c.num_envs, backend="cuda" if on_gpu else "c", seed=c.seed,
                             obs="compact" if on_gpu else "float", resets=c.resets, reset_ratio=c.reset_ratio)
        super().__init__(config, out_dir, env)
        self.device = torch.device(device)
        self.graphs = graphs and on_gpu
        self.model_config = FastModelConfig(cell_dim=c.cell_dim, width=c.width, hidden=c.hidden,
                                            num_actions=env.num_actions, recurrence=CELL_MODELS[c.model])
        self.loss_config = numpy_ppo.LossConfig(clip_eps=c.clip_eps, vf_coef=c.vf_coef, ent_coef=c.ent_coef)
        self.model = TorchActorCritic(init_params(self.model_config, seed=c.seed), self.device, bf16=on_gpu)
        lr = torch.tensor(float(c.lr), device=self.device) if on_gpu else float(c.lr)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr, eps=1e-5, capturable=on_gpu,
                                    foreach=True)
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(c.seed)
        T, N, H = c.num_steps, c.num_envs, c.hidden
        obs, _ = env.reset(seed=c.seed)
        obs = self._tensor(obs)
        dev = self.device
        self.check_memory("the GPU" if on_gpu else "the CPU",
                          (T + 1) * N * obs[0].numel() * obs.element_size(),  # the current obs in slot T
                          torch.cuda.mem_get_info(dev)[0] if on_gpu else available_host_memory())
        self.buf = dict(obs=torch.empty((T + 1, N, *obs.shape[1:]), dtype=obs.dtype, device=dev),
                        dones=torch.zeros((T + 1, N), dtype=torch.bool, device=dev),
                        actions=torch.empty((T, N), dtype=torch.int32, device=dev),
                        log_probs=torch.empty((T, N), device=dev), values=torch.empty((T + 1, N), device=dev),
                        rewards=torch.empty((T, N), device=dev), advantages=torch.empty((T, N), device=dev),
                        targets=torch.empty((T, N), device=dev), h0=torch.zeros((N, H), device=dev))
        self.buf["obs"][T].copy_(obs)  # slot T holds the current obs between updates
        self.hstate = torch.zeros((N, H), device=dev)
        self.ep = dict(ret=torch.zeros((T, N), device=dev), length=torch.zeros((T, N), dtype=torch.int32, device=dev),
                       ach=torch.zeros((T, N, len(self.ladder.names)), dtype=torch.bool, device=dev))
        self.mb_index = torch.zeros(N // c.num_minibatches, dtype=torch.int64, device=dev)
        self.stats = torch.zeros(len(LOSS_STATS), dtype=torch.float64, device=dev)
        self.graph = None
        self.rollout_graphs = []  # one per step boundary t = 0..T, captured in the first rollout
        self._rollout_pool = torch.cuda.graph_pool_handle() if self.graphs else None
        self._env_views = None
        self._env_out = None
        self.opt_steps = 0
        if _restore is not None:
            self.load_state(_restore)

    # -- helpers ---------------------------------------------------------------------------
    def _tensor(self, x):
        """An env output as a tensor on self.device (device arrays read in place)."""
        torch = _torch()
        if isinstance(x, np.ndarray):
            return torch.from_numpy(x).to(self.device)
        return torch.as_tensor(x, device=self.device)

    @property
    def params(self) -> dict:
        return self.model.numpy_params()

    def learning_rate(self) -> float:
        c = self.config
        return numpy_ppo.learning_rate(c.lr, c.anneal_lr, self.update, c.num_updates)

    # -- rollout ---------------------------------------------------------------------------
    def rollout(self) -> None:
        """T env steps: between steps t-1 and t, _rollout_work(t) (a CUDA graph each on the GPU)
        stores step t-1's outputs and samples step t's actions; the env steps with step_async, so
        the GPU runs the next graph as soon as a step ends, with no host wait in between."""
        T = self.config.num_steps
        first = self.graphs and not self.rollout_graphs
        if first:
            self._warm_up_rollout()
        for t in range(T + 1):
            if first:
                self.rollout_graphs.append(self._captured(lambda: self._rollout_work(t), self._rollout_pool))
            if self.graphs:
                self.rollout_graphs[t].replay()
            else:
                self._rollout_work(t)
            if t < T:
                self._env_out = self._env_outputs(self.env.step_async(self.buf["actions"][t],
                                                                      stream=self._stream()))
        self.env.step_wait()  # reports nothing the policy can cause (its actions are in range)

    def _stream(self):
        return _torch().cuda.current_stream() if self.device.type == "cuda" else None

    def _rollout_work(self, t: int) -> None:
        """Step t-1's outputs into the buffers (t >= 1), then the policy on obs t: the value, and
        for t < T the action, its log-prob and the next hidden state; at t = T the GAE."""
        torch = _torch()
        c, b, ep = self.config, self.buf, self.ep
        T = c.num_steps
        with torch.no_grad():
            if t == 0:
                b["obs"][0].copy_(b["obs"][T])
                b["dones"][0].copy_(b["dones"][T])
                b["h0"].copy_(self.hstate)
            else:
                obs, reward, done, ret, length, ach = self._env_out
                b["obs"][t].copy_(obs)
                b["rewards"][t - 1].copy_(reward)
                b["dones"][t].copy_(done)
                ep["ret"][t - 1].copy_(ret)
                ep["length"][t - 1].copy_(length)
                torch.logical_and(ach, done[:, None], out=ep["ach"][t - 1])
            h_new, logits, value = self.model.forward(b["obs"][t:t + 1], b["dones"][t:t + 1], self.hstate)
            b["values"][t].copy_(value[0])
            if t == T:
                self._gae()  # the last value bootstraps
                return
            self.hstate.copy_(h_new)
            logp_all = torch.log_softmax(logits[0], -1)
            u = torch.rand(logp_all.shape, generator=self.gen, device=self.device).clamp_(min=1e-20)
            action = torch.argmax(logp_all - torch.log(-torch.log(u)), -1)  # Gumbel-max: a categorical draw
            b["actions"][t].copy_(action)
            b["log_probs"][t].copy_(logp_all.gather(-1, action[:, None])[:, 0])

    def _env_outputs(self, out) -> tuple:
        """(obs, reward, done, episode_return, episode_length, achievements) of a step's outputs as
        tensors; on the GPU views of the env's fixed buffers, made once (the rollout graphs read
        those addresses)."""
        obs, reward, _terminated, _truncated, info = out
        arrays = (obs, reward, info["done"], info["episode_return"], info["episode_length"], info["achievements"])
        if self.device.type != "cuda":
            return tuple(self._tensor(a) for a in arrays)
        if self._env_views is None:
            self._env_views = (arrays, tuple(self._tensor(a) for a in arrays))
        if any(a is not kept for a, kept in zip(arrays, self._env_views[0])):
            raise RuntimeError("the env's step outputs moved: the rollout graphs read the first step's buffers")
        return self._env_views[1]

    def _warm_up_rollout(self) -> None:
        """Run the policy's work once eagerly on a side stream (lazy library set-up must not
        happen inside a capture), then undo its effects on the hidden state and the generator."""
        torch = _torch()
        h, gen_state = self.hstate.clone(), self.gen.get_state()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self._rollout_work(0)
        torch.cuda.current_stream().wait_stream(side)
        self.hstate.copy_(h)
        self.gen.set_state(gen_state)

    def _captured(self, work, pool=None):
        """`work` captured as a CUDA graph (not run), drawing on self.gen where it samples."""
        torch = _torch()
        graph = torch.cuda.CUDAGraph()
        graph.register_generator_state(self.gen)
        with torch.cuda.graph(graph, pool=pool):
            work()
        return graph

    def _gae(self) -> None:
        """numpy_ppo.gae over the buffers: dones[t] is step t's reset flag, dones[T] the last done."""
        c, b = self.config, self.buf
        T = c.num_steps
        g = 0.0
        for t in range(T - 1, -1, -1):
            nd = 1.0 - b["dones"][t + 1].float()
            delta = b["rewards"][t] + c.gamma * b["values"][t + 1] * nd - b["values"][t]
            g = delta + c.gamma * c.gae_lambda * nd * g
            b["advantages"][t] = g
        b["targets"].copy_(b["advantages"] + b["values"][:T])

    def _episodes(self) -> tuple[list, list]:
        """The episodes that ended in the rollout, (return, length, achievements) and their step."""
        torch = _torch()
        ended = self.buf["dones"][1:]
        t_idx, n_idx = torch.nonzero(ended, as_tuple=True)
        rets = self.ep["ret"][t_idx, n_idx].cpu().numpy()
        lens = self.ep["length"][t_idx, n_idx].cpu().numpy()
        achs = self.ep["ach"][t_idx, n_idx].cpu().numpy()
        steps = t_idx.cpu().numpy()
        order = np.lexsort((n_idx.cpu().numpy(), steps))  # by step, then env: the order they ended in
        episodes = [(float(rets[i]), int(lens[i]), achs[i].copy()) for i in order]
        return episodes, [int(steps[i]) for i in order]

    # -- update ----------------------------------------------------------------------------
    def _minibatch_step(self) -> None:
        """One Adam step on the minibatch of envs self.mb_index (everything on the device)."""
        torch = _torch()
        b, idx, c = self.buf, self.mb_index, self.config
        T = c.num_steps
        mb = {k: b[k][:T].index_select(1, idx) for k in ("obs", "dones", "actions", "log_probs", "advantages",
                                                          "targets")}
        mb["values"] = b["values"][:T].index_select(1, idx)
        h0 = b["h0"].index_select(0, idx)
        self.opt.zero_grad(set_to_none=False)
        _, logits, values = self.model.forward(mb["obs"], mb["dones"], h0)
        total, stats = ppo_loss_torch(logits, values, mb, self.loss_config)
        total.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), c.max_grad_norm, foreach=True)
        self.opt.step()
        self.stats += torch.stack([total.detach(), stats["value_loss"], stats["actor_loss"], stats["entropy"],
                                   stats["approx_kl"], stats["clip_frac"], norm]).double()

    def _capture(self) -> None:
        """self.graph = one minibatch step, captured after warm-up steps whose effects are undone."""
        torch = _torch()
        saved = [p.detach().clone() for p in self.model.parameters()]
        opt_saved = {id(p): {k: (v.clone() if torch.is_tensor(v) else v) for k, v in s.items()}
                     for p, s in self.opt.state.items()}
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                self._minibatch_step()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self._minibatch_step()
        with torch.no_grad():
            for p, s in zip(self.model.parameters(), saved):
                p.copy_(s)
            for p, state in self.opt.state.items():
                for k, v in state.items():
                    old = opt_saved.get(id(p), {}).get(k)
                    if torch.is_tensor(v):
                        v.copy_(old if old is not None else torch.zeros_like(v))
        self.stats.zero_()

    def learn(self) -> dict:
        torch = _torch()
        c = self.config
        B = c.num_envs // c.num_minibatches
        lr = self.learning_rate()
        group = self.opt.param_groups[0]
        if torch.is_tensor(group["lr"]):
            group["lr"].fill_(lr)
        else:
            group["lr"] = lr
        if self.graphs and self.graph is None:
            self.mb_index.copy_(torch.arange(B, device=self.device))
            self._capture()
        self.stats.zero_()
        for _ in range(c.update_epochs):
            perm = torch.randperm(c.num_envs, generator=self.gen, device=self.device)
            for m in range(c.num_minibatches):
                self.mb_index.copy_(perm[m * B:(m + 1) * B])
                if self.graph is not None:
                    self.graph.replay()
                else:
                    self._minibatch_step()
                self.opt_steps += 1
        n = c.update_epochs * c.num_minibatches
        losses = dict(zip(LOSS_STATS, (self.stats / n).cpu().tolist()))
        losses["lr"] = lr
        return losses

    @contextlib.contextmanager
    def _determinism(self):
        """PyTorch's deterministic algorithms for this trainer's work where the config asks
        (graphs captured inside keep the kernels chosen then), restored after: the flag is
        process-wide."""
        torch = _torch()
        before = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(before or self.config.deterministic)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(before)

    def iterate(self) -> Iteration:
        with self._determinism():
            t0 = now()
            self.rollout()
            episodes, steps = self._episodes()
            t1 = now()
            losses = self.learn()
            t2 = now()
        return Iteration(episodes, losses, t2 - t0, dict(rollout_s=t1 - t0, learn_s=t2 - t1), steps)

    # -- checkpoint state ------------------------------------------------------------------
    def backend_arrays(self) -> dict[str, np.ndarray]:
        arrays = dict(self.params)
        params = self.model.parameters()
        for name, p in zip(self.model.names, params):
            state = self.opt.state.get(p, {})
            if state:
                arrays[f"opt/mu/{name}"] = state["exp_avg"].cpu().numpy()
                arrays[f"opt/nu/{name}"] = state["exp_avg_sq"].cpu().numpy()
        arrays["envkey"] = self.env.key
        arrays["generator"] = self.gen.get_state().numpy()
        return arrays

    def backend_meta(self) -> dict:
        return dict(opt_count=self.opt_steps, device=self.device.type)

    def restore_backend(self, data: dict) -> None:
        """The learner from a checkpoint; the envs start new episodes from the saved env key."""
        torch = _torch()
        self.model.load({k: data[k] for k in param_shapes(self.model_config)})
        self.opt_steps = int(data["meta"]["opt_count"])
        if self.opt_steps:
            for name, p in zip(self.model.names, self.model.parameters()):
                step = torch.tensor(float(self.opt_steps), device=self.device)
                self.opt.state[p] = dict(step=step,
                                         exp_avg=torch.as_tensor(data[f"opt/mu/{name}"], device=self.device).clone(),
                                         exp_avg_sq=torch.as_tensor(data[f"opt/nu/{name}"],
                                                                    device=self.device).clone())
        self.gen.set_state(torch.as_tensor(data["generator"], dtype=torch.uint8))
        self.env.key = data["envkey"]
        obs, _ = self.env.reset()  # new worlds from the saved key stream
        T = self.config.num_steps
        self.buf["obs"][T].copy_(self._tensor(obs))
        self.buf["dones"][T].fill_(True)
        self.hstate.zero_()


"""The PyTorch engine: PPO-RNN of any model behind a small interface, on the GPU or the CPU, in
one process or several (distributed.py).

    trainer = TorchTrainer(TrainConfig.from_recipe("paper"))   # the GPU where there is one
    trainer.run()

The models (config.model): "gru", the paper's ActorCriticRNN on the float obs
(paper_model.PaperActorCritic: the paper recipe, Classic), and the cell models "cell-gru" and
"cell-mingru", the fast and strong recipes' networks (fast_model.TorchActorCritic). A model gives `forward(obs [T, B, ...], dones [T, B],
h0 [B, H]) -> (h_T, logits [T, B, A], values [T, B])`, `parameters()` and `names` (flax names, in
the same order), `numpy_params()` and `load(params)`.

On the GPU the envs are the CUDA env: compact obs records (1,008 bytes an env step, which the
cell encoder reads: cuda/fast_cuda.cu) for the cell models, float obs for "gru". Everything stays on
the GPU: the env's outputs are read in place, the weights, the Adam moments and the rollout
never leave it; the work between two env steps is a CUDA graph per step boundary, and one
minibatch's update (gather, forward, BPTT, gradient average over the ranks, clip, Adam) is
captured once as a CUDA graph and replayed. Only the metrics of the episodes that ended come
back, once an update. On the CPU the same loop runs eagerly on the C env's float obs.

The loss, GAE, advantage normalisation, global-norm clip, Adam and learning-rate schedule are
numpy_ppo's. Precision: the cell models run their GEMMs in bfloat16 with fp32 accumulation on the GPU;
"gru" runs in the config's dtype, with TF32 GEMMs on the GPU unless tf32=False. Checkpoints hold
the learner (weights, moments, the env key, the sampling generator, counters) but not the env
states: a resumed run continues the learning exactly and starts new episodes.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from pycraftax.train import numpy_ppo
from pycraftax.train.config import CELL_MODELS, TrainConfig
from pycraftax.train.fast_model import FastModelConfig, TorchActorCritic, ppo_loss_torch
from pycraftax.train.fast_model import init_params as fast_init_params
from pycraftax.train.loop import Iteration, RunLoop, now, read_checkpoint
from pycraftax.vec_env import available_host_memory

LOSS_STATS = ("total_loss", "value_loss", "actor_loss", "entropy", "approx_kl", "clip_frac", "grad_norm")
TITLES = {"gru": "PPO-RNN (PyTorch)", "cell-gru": "PPO-RNN, fast recipe (PyTorch)",
          "cell-mingru": "PPO-RNN, fast recipe (PyTorch)"}
# the trainers whose checkpoints TorchTrainer resumes: its own, and the learner of the CUDA
# trainer's (model "gru", the same flax names; its Adam count in counters[1])
RESUMABLE_BACKENDS = ("torch", "cuda")


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
    """Why the PyTorch engine cannot run on `device`, or None."""
    try:
        torch = _torch()
    except ImportError:
        return "the PyTorch engine needs PyTorch: pip install torch"
    if device == "cuda":
        from pycraftax import cuda_env

        if not torch.cuda.is_available():
            return "PyTorch sees no CUDA GPU"
        return cuda_env.unavailable_reason()
    return None


class TorchTrainer(RunLoop):
    BACKEND = "torch"
    TITLE = TITLES["cell-gru"]
    CHECKPOINT_ENVS = False

    def __init__(self, config: TrainConfig, out_dir: str | None = None, *, device: str | None = None,
                 graphs: bool = True, tf32: bool = True, group=None, _restore: dict | None = None):
        import pycraftax
        from pycraftax.train import distributed

        torch = _torch()
        c = config
        device = device or (_restore["meta"].get("device") if _restore else None) or default_device()
        reason = unavailable_reason(device)
        if reason:
            raise RuntimeError(f"PyTorch trainer on {device}: {reason}")
        on_gpu = device == "cuda"
        if c.deterministic and on_gpu:
            # cuBLAS reads it when a handle is made: before this process's first GEMM
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        rank, world = (group.rank, group.world_size) if group is not None else (0, 1)
        if rank > 0 and out_dir is not None:
            raise ValueError(f"rank {rank} writes no run files: out_dir must be None")
        local_envs = (distributed.envs_per_rank(c.num_envs, world, c.num_minibatches, c.reset_ratio)
                      if group is not None else c.num_envs)
        env = pycraftax.make(c.env_id, num_envs=local_envs, backend="cuda" if on_gpu else "c", seed=c.seed,
                             obs="compact" if on_gpu and c.model in CELL_MODELS else "float", resets=c.resets,
                             reset_ratio=c.reset_ratio)
        super().__init__(config, out_dir, env)
        self.TITLE = TITLES[c.model]
        self.group, self.rank, self.world_size, self.local_envs = group, rank, world, local_envs
        self.device = torch.device(device)
        self.graphs = graphs and on_gpu
        self.tf32 = bool(tf32)
        if on_gpu:  # the float32 GEMMs of model "gru" (the cell models' bf16 ones do not depend on it)
            torch.backends.cuda.matmul.fp32_precision = "tf32" if self.tf32 else "ieee"
        self.dtype = torch.float64 if c.dtype == "float64" else torch.float32
        self.model = self._build_model(c, env, on_gpu)
        self.loss_config = numpy_ppo.LossConfig(clip_eps=c.clip_eps, vf_coef=c.vf_coef, ent_coef=c.ent_coef)
        lr = torch.tensor(float(c.lr), device=self.device) if on_gpu else float(c.lr)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr, eps=1e-5, capturable=on_gpu,
                                    foreach=True)
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(distributed.rank_seed(c.seed, rank))
        T, N, H = c.num_steps, self.local_envs, c.hidden
        if rank == 0:
            obs, _ = env.reset(seed=c.seed)
        else:
            env.key = distributed.rank_env_key(env.key, rank)
            obs, _ = env.reset()
        obs = self._tensor(obs)
        dev, fp = self.device, self.dtype
        self.check_memory("the GPU" if on_gpu else "the CPU",
                          (T + 1) * N * obs[0].numel() * obs.element_size(),  # the current obs in slot T
                          torch.cuda.mem_get_info(dev)[0] if on_gpu else available_host_memory())
        self.buf = dict(obs=torch.empty((T + 1, N, *obs.shape[1:]), dtype=obs.dtype, device=dev),
                        dones=torch.zeros((T + 1, N), dtype=torch.bool, device=dev),
                        actions=torch.empty((T, N), dtype=torch.int32, device=dev),
                        log_probs=torch.empty((T, N), dtype=fp, device=dev),
                        values=torch.empty((T + 1, N), dtype=fp, device=dev),
                        rewards=torch.empty((T, N), dtype=fp, device=dev),
                        advantages=torch.empty((T, N), dtype=fp, device=dev),
                        targets=torch.empty((T, N), dtype=fp, device=dev),
                        h0=torch.zeros((N, H), dtype=fp, device=dev))
        self.buf["obs"][T].copy_(obs)  # slot T holds the current obs between updates
        self.hstate = torch.zeros((N, H), dtype=fp, device=dev)
        self.ep = dict(ret=torch.zeros((T, N), device=dev), length=torch.zeros((T, N), dtype=torch.int32, device=dev),
                       ach=torch.zeros((T, N, len(self.ladder.names)), dtype=torch.bool, device=dev))
        self.mb_index = torch.zeros(N // c.num_minibatches, dtype=torch.int64, device=dev)
        self.stats = torch.zeros(len(LOSS_STATS), dtype=torch.float64, device=dev)
        self.flat_grad = None
        if group is not None:
            self._join(group)
        self.graph = None
        self.rollout_graphs = []  # one per step boundary t = 0..T, captured in the first rollout
        self._rollout_pool = torch.cuda.graph_pool_handle() if self.graphs else None
        self._env_views = None
        self._env_out = None
        self.opt_steps = 0
        if _restore is not None:
            self.load_state(_restore)

    def _build_model(self, c: TrainConfig, env, on_gpu: bool):
        """The model of c.model, initialised from c.seed, sized from the env (self.model_config)."""
        if c.model in CELL_MODELS:
            self.model_config = FastModelConfig(cell_dim=c.cell_dim, width=c.width, hidden=c.hidden,
                                                num_actions=env.num_actions, recurrence=CELL_MODELS[c.model])
            return TorchActorCritic(fast_init_params(self.model_config, seed=c.seed), self.device, bf16=on_gpu,
                                    dtype=None if on_gpu else self.dtype)
        from pycraftax.train.paper_model import PaperActorCritic

        self.model_config = numpy_ppo.ModelConfig(obs_size=env.obs_size, num_actions=env.num_actions, width=c.width,
                                                  hidden=c.hidden)
        return PaperActorCritic(numpy_ppo.init_params(self.model_config, seed=c.seed), self.device, dtype=self.dtype)

    def _join(self, group) -> None:
        """Makes this trainer one replica of the run: the same configuration on every rank, rank 0's
        initial weights everywhere, and every gradient a view of one flat buffer (self.flat_grad)
        that one all-reduce averages."""
        torch = _torch()
        params = self.model.parameters()
        group.check_same("the training configuration", dict(self.config.to_dict(), model_dtype=str(self.dtype),
                                                              parameters=sum(p.numel() for p in params)))
        with torch.no_grad():
            weights = [p.detach().contiguous() for p in params]  # NCCL sends contiguous tensors only
            group.broadcast_(weights, "sending rank 0's weights")
            for p, w in zip(params, weights):
                p.copy_(w)
        self.flat_grad = torch.zeros(sum(p.numel() for p in params), dtype=params[0].dtype, device=self.device)
        offset = 0
        for p in params:  # each gradient laid out as its parameter (a transposed kernel included)
            p.grad = self.flat_grad.as_strided(p.shape, p.stride(), offset)
            offset += p.numel()

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
        moments = None if self.group is None else self._minibatch_moments
        total, stats = ppo_loss_torch(logits, values, mb, self.loss_config, moments=moments)
        total.backward()
        if self.group is not None:
            self.group.average_(self.flat_grad)
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), c.max_grad_norm, foreach=True)
        self.opt.step()
        self.stats += torch.stack([total.detach(), stats["value_loss"], stats["actor_loss"], stats["entropy"],
                                   stats["approx_kl"], stats["clip_frac"], norm]).double()

    def _minibatch_moments(self, advantages):
        """(mean, standard deviation) of the whole minibatch's advantages, every rank's share of
        it included (the normalisation one process over all the envs applies)."""
        torch = _torch()
        count = advantages.numel() * self.group.world_size
        total = advantages.sum().reshape(1)
        self.group.sum_(total)
        mean = total[0] / count
        squares = torch.square(advantages - mean).sum().reshape(1)
        self.group.sum_(squares)
        return mean, torch.sqrt(squares[0] / count)

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
        B = self.local_envs // c.num_minibatches
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
            perm = self.minibatch_order()
            for m in range(c.num_minibatches):
                self.mb_index.copy_(perm[m * B:(m + 1) * B])
                if self.graph is not None:
                    self.graph.replay()
                else:
                    self._minibatch_step()
                self.opt_steps += 1
        n = c.update_epochs * c.num_minibatches
        stats = self.stats / n
        if self.group is not None:  # the ranks' losses of their shares; grad_norm is already the same on all
            stats = self.group.mean_of(stats, "averaging the loss statistics")
        losses = dict(zip(LOSS_STATS, stats.cpu().tolist()))
        losses["lr"] = lr
        return losses

    def minibatch_order(self):
        """An epoch's order of this rank's envs: minibatch m is the m-th slice of it (on every rank:
        the run's minibatch m is the union of the ranks' m-th slices)."""
        return _torch().randperm(self.local_envs, generator=self.gen, device=self.device)

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
        """The learner from a checkpoint (of this trainer or the CUDA trainer's: the same names);
        the envs start new episodes from the saved env key, each rank's from its own fold of it
        (distributed.rank_env_key). Rank 0 takes up the saved sampling generator; the other ranks,
        and checkpoints without one, seed theirs from the seed, the rank and the update."""
        from pycraftax.train import distributed

        torch = _torch()
        self.model.load({k: data[k] for k in self.model.names})
        meta = data["meta"]
        counters = data.get("counters")
        self.opt_steps = int(meta["opt_count"]) if "opt_count" in meta else int(np.asarray(counters)[1])
        if self.opt_steps:
            for name, p in zip(self.model.names, self.model.parameters()):
                step = torch.tensor(float(self.opt_steps), device=self.device if self.opt.defaults["capturable"]
                                    else "cpu")
                moments = [torch.as_tensor(np.asarray(data[f"opt/{m}/{name}"]), dtype=p.dtype,
                                           device=self.device).clone() for m in ("mu", "nu")]
                self.opt.state[p] = dict(step=step, exp_avg=moments[0], exp_avg_sq=moments[1])
        if self.rank == 0 and "generator" in data:
            self.gen.set_state(torch.as_tensor(data["generator"], dtype=torch.uint8))
        else:
            self.gen.manual_seed(distributed.rank_seed(self.config.seed, self.rank, salt=self.update + 1))
        self.env.key = distributed.rank_env_key(data["envkey"], self.rank)
        obs, _ = self.env.reset()  # new worlds from the key stream
        T = self.config.num_steps
        self.buf["obs"][T].copy_(self._tensor(obs))
        self.buf["dones"][T].fill_(True)
        self.hstate.zero_()

    @classmethod
    def resume(cls, path: str, out_dir: str | None = None, *, group=None, **options) -> "TorchTrainer":
        """Continue the run of checkpoint `path` (this trainer's, or the CUDA trainer's) with its own
        config, on any device and world size whose ranks split its envs; out_dir default: the
        checkpoint's directory (rank 0 only). With a group, rank 0 reads the file and sends it to
        the others (they need no copy of it)."""
        data = read_checkpoint(path) if group is None or group.rank == 0 else None
        if group is not None:
            data = group.broadcast_object(data, "sending the checkpoint")
        backend = data["meta"].get("backend", "c")
        if backend not in RESUMABLE_BACKENDS:
            raise ValueError(f"{path}: a checkpoint of the {backend!r} trainer (NumPy: it resumes in one process on "
                             "the CPU, pycraftax train --backend c), not the PyTorch trainer's")
        if out_dir is None and (group is None or group.rank == 0):
            out_dir = os.path.dirname(os.path.abspath(path))
        return cls(TrainConfig.from_dict(data["meta"]["config"]), out_dir, group=group, _restore=data, **options)

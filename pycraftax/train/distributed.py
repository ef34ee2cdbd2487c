"""Data-parallel training over torch.distributed: one process (a rank) per GPU, or several CPU
processes, each stepping its share of the run's envs with a replica of the learner.

    world = World.from_environ()              # RANK, WORLD_SIZE, LOCAL_RANK, as torchrun sets them
    group = Group(world, device)              # init_process_group: NCCL on GPUs, gloo on CPUs
    trainer = TorchTrainer(config, out_dir if world.is_main else None, device=device, group=group)

The run's config is global: `num_envs` envs and `total_timesteps` env steps in all, the envs split
evenly over the ranks (`envs_per_rank`), so a run is the same run on any number of ranks. In each
minibatch every rank takes its share of the minibatch's envs; the trainer averages the gradients
over the ranks with one all-reduce of a flat buffer that holds them all, and normalises the
advantages with the whole minibatch's mean and standard deviation (two all-reduces of one
number), before the global-norm clip and Adam: every rank takes the same step, the one a single
process takes on the same minibatch. On the GPU these collectives are part of the minibatch's
CUDA graph.

Launch with torchrun (one host or several), or `pycraftax train --gpus N` (torchrun --standalone
on this host). Rank 0 prints, writes the metrics and the checkpoints; a checkpoint holds the
learner (weights, Adam moments, counters, the env key of rank 0) and resumes on any world size
whose ranks can split the envs (`envs_per_rank`): rank 0 reads it and sends it to the others.
Each rank's envs and action sampling are seeded apart (`rank_env_key`, `rank_seed`).

A rank that dies: torchrun ends the others at once; without it, the next collective on the other
ranks fails (gloo: at once, as the dead rank's connections close) or times out after
`timeout_s`, and the trainer raises RankFailedError naming it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

__all__ = ["World", "Group", "RendezvousError", "RankFailedError", "WorldSizeError", "DEFAULT_TIMEOUT_S",
           "bind_local_device", "envs_per_rank", "rank_env_key", "rank_seed", "torchrun_command"]

DEFAULT_TIMEOUT_S = 300.0
RANK_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


class RendezvousError(ValueError):
    """The torchrun variables are missing, malformed or inconsistent, or the ranks disagree on
    what they train."""


class RankFailedError(RuntimeError):
    """Another rank died or stopped answering within the timeout."""


class WorldSizeError(ValueError):
    """A run's envs cannot be split over this many ranks."""


def _int_var(env, name: str, low: int, high: int | None = None) -> int:
    raw = env.get(name, "")
    if raw.strip() == "":
        raise RendezvousError(f"{name} is not set (torchrun and `pycraftax train --gpus N` set it)")
    try:
        value = int(raw.strip())
    except ValueError:
        raise RendezvousError(f"{name}={raw!r} is not an integer") from None
    if value < low or (high is not None and value > high):
        allowed = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise RendezvousError(f"{name}={value} must be {allowed}")
    return value


@dataclass(frozen=True)
class World:
    """Where this process stands in the run: rank (0 .. world_size - 1) and its device's index
    on its host (local_rank)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        """Rank 0: the rank that prints and writes metrics and checkpoints."""
        return self.rank == 0

    @classmethod
    def from_environ(cls, environ=None) -> World:
        """RANK, WORLD_SIZE and LOCAL_RANK as torchrun sets them; none set, or WORLD_SIZE=1: one
        process. With WORLD_SIZE > 1 the three and MASTER_ADDR, MASTER_PORT (where rank 0
        listens: torch.distributed's env:// rendezvous) must be set; RendezvousError names the
        first that is missing or out of range."""
        env = os.environ if environ is None else environ
        present = [v for v in RANK_VARIABLES if env.get(v, "").strip() != ""]
        if not present:
            return cls()
        if "WORLD_SIZE" not in present:
            raise RendezvousError(f"{', '.join(present)} set but WORLD_SIZE is not: set WORLD_SIZE (>= 1), or unset "
                                  "them for a one-process run")
        world = _int_var(env, "WORLD_SIZE", 1)
        if world == 1:
            rank = _int_var(env, "RANK", 0, 0) if "RANK" in present else 0
            return cls(rank, 1, _int_var(env, "LOCAL_RANK", 0) if "LOCAL_RANK" in present else 0)
        rank = _int_var(env, "RANK", 0, world - 1)
        local = _int_var(env, "LOCAL_RANK", 0, world - 1)
        if not env.get("MASTER_ADDR", "").strip():
            raise RendezvousError("MASTER_ADDR is not set: the host name or address of rank 0 (127.0.0.1 on one host)")
        _int_var(env, "MASTER_PORT", 1, 65535)
        return cls(rank, world, local)


def bind_local_device(world: World, environ=None) -> str:
    """Restricts this process to GPU local_rank of its host (CUDA_VISIBLE_DEVICES, narrowed to its
    local_rank-th entry where already set), so that device 0 is this rank's GPU for PyTorch and
    for the CUDA env alike (the env's library has a CUDA runtime of its own, which
    torch.cuda.set_device does not reach). Must run before CUDA is first used. Returns the value set."""
    env = os.environ if environ is None else environ
    current = env.get("CUDA_VISIBLE_DEVICES", "")
    if current.strip() == "":
        chosen = str(world.local_rank)
    else:
        devices = [d.strip() for d in current.split(",") if d.strip()]
        if world.local_rank >= len(devices):
            raise RendezvousError(f"LOCAL_RANK={world.local_rank} but CUDA_VISIBLE_DEVICES={current!r} lists "
                                  f"{len(devices)} GPU(s): LOCAL_RANK must be in [0, {len(devices) - 1}]")
        chosen = devices[world.local_rank]
    env["CUDA_VISIBLE_DEVICES"] = chosen
    return chosen


def torchrun_command(nproc: int, argv: list[str], python: str | None = None) -> list[str]:
    """The torchrun command that runs `python -m pycraftax <argv>` as `nproc` ranks on this host."""
    import sys

    return [python or sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
            "-m", "pycraftax", *argv]


def envs_per_rank(num_envs: int, world_size: int, num_minibatches: int, reset_ratio: int | None = None) -> int:
    """Each rank's share of a run's `num_envs` envs; WorldSizeError, naming what to change, where
    they do not split: the ranks' shares must be equal, each split into num_minibatches equal
    minibatches, and with optimistic resets a multiple of reset_ratio."""
    per = num_envs // world_size
    needed = [(world_size * num_minibatches, f"num_minibatches ({num_minibatches})")]
    if reset_ratio:
        needed.append((world_size * reset_ratio, f"the optimistic resets' reset_ratio ({reset_ratio})"))
    for multiple, what in needed:
        if num_envs % multiple:
            raise WorldSizeError(
                f"{num_envs} envs do not split over {world_size} ranks: each rank's share must be a multiple of "
                f"{what}, so num_envs must be a multiple of {multiple}; choose another number of ranks or --num-envs")
    return per


def rank_env_key(key, rank: int) -> np.ndarray:
    """Rank `rank`'s env key stream from the run's `key` (rank 0's): rank 0 keeps it, rank r >= 1
    takes jax.random.fold_in(key, r), so that no two ranks step the same worlds."""
    from pycraftax import jax_random

    key = np.asarray(key, np.uint32)
    return key.copy() if rank == 0 else jax_random.fold_in(key, rank)


def rank_seed(seed: int, rank: int, salt: int = 0) -> int:
    """The seed of rank `rank`'s action sampling: `seed` itself on rank 0 of a fresh run (what a
    one-process run uses), otherwise a 63-bit draw of numpy's SeedSequence([seed, rank, salt])
    (salt: the update a resumed run starts at)."""
    if rank == 0 and salt == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(rank), int(salt)]).generate_state(1, np.uint64)[0] >> 1)


class Group:
    """This rank's membership of the run: torch.distributed's default process group (NCCL for a
    CUDA device, gloo for the CPU) and the few collectives the trainer uses. `timeout_s` bounds
    every wait on another rank."""

    def __init__(self, world: World, device, timeout_s: float = DEFAULT_TIMEOUT_S):
        import datetime

        import torch
        import torch.distributed as dist

        self.rank, self.world_size = world.rank, world.world_size
        self.device = torch.device(device)
        self.backend = "nccl" if self.device.type == "cuda" else "gloo"
        self.timeout_s = float(timeout_s)
        options = dict(device_id=self.device) if self.device.type == "cuda" else {}
        try:
            dist.init_process_group(self.backend, rank=world.rank, world_size=world.world_size,
                                    timeout=datetime.timedelta(seconds=self.timeout_s), **options)
        except (RuntimeError, ValueError) as exc:  # torch.distributed's errors derive from RuntimeError
            raise RankFailedError(f"rank {self.rank}: joining the {world.world_size} ranks ({self.backend}) failed: "
                                  f"{exc}") from exc

    def _run(self, what: str, fn, *args, **kw):
        try:
            return fn(*args, **kw)
        except RuntimeError as exc:  # gloo's and NCCL's errors (DistBackendError, ...) included
            raise RankFailedError(f"rank {self.rank} of {self.world_size}: {what} failed: another rank died or did "
                                  f"not answer within {self.timeout_s:g} s ({exc})") from exc

    def sum_(self, tensor, what: str = "a sum over the ranks"):
        """tensor <- its sum over the ranks, in place (capturable in a CUDA graph on NCCL)."""
        import torch.distributed as dist

        self._run(what, dist.all_reduce, tensor)
        return tensor

    def average_(self, tensor, what: str = "averaging the gradients"):
        """tensor <- its mean over the ranks, in place (capturable in a CUDA graph on NCCL)."""
        return self.sum_(tensor, what).div_(self.world_size)

    def any(self, flag: bool, what: str = "the stop decision") -> bool:
        """Whether any rank gives True (outside CUDA graphs; a failed rank raises RankFailedError)."""
        import torch
        import torch.distributed as dist

        t = torch.tensor([int(bool(flag))], dtype=torch.int32, device=self.device)
        self._run(what, dist.all_reduce, t, op=dist.ReduceOp.MAX)
        return bool(t.item())

    def mean_of(self, tensor, what: str):
        """A copy of `tensor` averaged over the ranks (outside CUDA graphs)."""
        return self.average_(tensor.clone(), what)

    def broadcast_object(self, obj, what: str):
        """Rank 0's picklable `obj` on every rank (the others pass None)."""
        import torch.distributed as dist

        box = [obj if self.rank == 0 else None]
        self._run(what, dist.broadcast_object_list, box, src=0,
                  device=self.device if self.backend == "nccl" else None)
        return box[0]

    def broadcast_(self, tensors, what: str) -> None:
        """Every tensor <- rank 0's, in place."""
        import torch.distributed as dist

        for t in tensors:
            self._run(what, dist.broadcast, t, src=0)

    def check_same(self, what: str, value: dict) -> None:
        """RendezvousError on every rank unless all ranks give the same dict (of JSON values),
        naming the first key that differs."""
        import torch.distributed as dist

        everyone = [None] * self.world_size
        self._run(what, dist.all_gather_object, everyone, value)
        for r, theirs in enumerate(everyone):
            if theirs != value:
                diff = sorted(k for k in set(value) | set(theirs) if value.get(k) != theirs.get(k))
                raise RendezvousError(f"rank {self.rank}: {what} differs on rank {r}: "
                                      + ", ".join(f"{k} = {theirs.get(k)!r} there, {value.get(k)!r} here"
                                                  for k in diff))

    def close(self) -> None:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()

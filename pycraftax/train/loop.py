"""The run loop the trainers share: updates until the end of the run or a stop, one
metrics.jsonl line per update, the 64-episode windows, checkpoints (atomic, resumable
bit-exactly), the final weights, the learning-curve plot and the progress display.

A trainer (trainer.Trainer, the NumPy reference on the CPU; torch_trainer.TorchTrainer, the
PyTorch engine) subclasses RunLoop and supplies its iteration and its own state:

    iterate() -> Iteration            one update: rollout, GAE, the epochs of minibatches
    params                            the current weights, by flax name
    backend_arrays(), backend_meta()  what a checkpoint holds beyond the shared state
    restore_backend(data)             the inverse, from a checkpoint's arrays

Outputs in out_dir: metrics.jsonl (one line per update), checkpoint.npz (every
`checkpoint_every` updates, at a stop and at the end), params.npz (final weights, flax
names, see interop.py), skill_ladder.json (the first occurrence of each achievement, see
skill_ladder.py) and learning_curve.png (the curve and the ladder, if matplotlib is importable).

One rank of a run over several processes (`group`: a distributed.Group, set by the trainer):
rank 0 writes all of the above, every other rank has no out_dir and writes nothing. The config
is the run's (num_envs: of all ranks), so the metrics count the env steps of all ranks; the
ranks agree after every update on whether to stop, so a time limit or a signal on one rank stops
them all at the same update.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from pycraftax import rules
from pycraftax.achievements import names_by_index
from pycraftax.progress import Progress
from pycraftax.train import interop
from pycraftax.train.config import TrainConfig
from pycraftax.train.skill_ladder import LADDER_FILE, SkillLadder, ordered

CHECKPOINT_VERSION = 1
WINDOW = 64  # episodes in the running return / achievement window
RUN_FILES = ("metrics.jsonl", "checkpoint.npz", "params.npz", LADDER_FILE, "learning_curve.png")  # what a run writes


def now() -> float:
    return time.perf_counter()


@dataclass
class Iteration:
    """What one update hands the run loop: the episodes that ended during its rollout as
    (return, length, achievements bool [67]), its mean loss statistics, its wall time and
    timings of its own (written into the metrics line after `sps`). `episode_steps`, where the
    trainer knows them: the rollout step (0 .. num_steps - 1) at which each episode ended, in
    the order of `episodes` (the skill ladder then has the exact env step; without, the
    update's end)."""

    episodes: list
    losses: dict
    seconds: float
    timings: dict = field(default_factory=dict)
    episode_steps: list | None = None


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
    """A checkpoint's arrays, with "meta" decoded; NotACheckpointError for any other file
    (params.npz included: it holds weights only) or another checkpoint version."""
    data = interop.read_npz(path)
    if "meta" not in data:
        raise interop.NotACheckpointError(path, "no training state in it: a params.npz, or another .npz")
    try:
        meta = json.loads(str(data["meta"]))
    except ValueError:
        raise interop.NotACheckpointError(path, "its meta entry is not the trainer's JSON") from None
    if not isinstance(meta, dict) or meta.get("version") != CHECKPOINT_VERSION:
        version = meta.get("version") if isinstance(meta, dict) else None
        raise interop.NotACheckpointError(path, f"checkpoint version {version}, this pycraftax reads "
                                                f"{CHECKPOINT_VERSION}")
    data["meta"] = meta
    return data


def existing_run_files(out_dir: str) -> list[str]:
    """The files of a run already in out_dir (empty when there is none)."""
    return [name for name in RUN_FILES if os.path.exists(os.path.join(out_dir, name))]


def progress_detail(m: dict) -> str:
    ret = "-" if m["return_window"] is None else f"{m['return_window']:.2f}"
    return f"update {m['update']:,} return {ret} entropy {m['entropy']:.2f}"


class RunLoop:
    """The shared part of a trainer; see the module docstring for what a subclass supplies."""

    BACKEND = ""
    TITLE = ""
    # whether checkpoints hold the env states (episodes in flight continue on resume); a trainer
    # of hundreds of thousands of envs (GBs of states) saves the learner only, and its envs
    # start new episodes on resume (restore_backend)
    CHECKPOINT_ENVS = True
    stop_reason: str | None = None  # why the last run() stopped before its end, see run()

    def __init__(self, config: TrainConfig, out_dir: str | None, env):
        self.config = config
        self.out_dir = out_dir
        self.env = env
        self.window_returns: deque = deque(maxlen=WINDOW)
        self.window_lengths: deque = deque(maxlen=WINDOW)
        self.window_ach: deque = deque(maxlen=WINDOW)
        self.history: list[dict] = []
        self.update = 0
        self.env_steps = 0  # of all ranks, over the whole run
        self.train_seconds = 0.0  # the summed wall time of the run's updates, over all its parts
        self.ladder = SkillLadder(names_by_index(config.env_id))
        self.resumed_firsts: dict | None = None  # the ladder a checkpoint held, for the next metrics line
        self.rank, self.world_size, self.group = 0, 1, None
        self.local_envs = config.num_envs  # this process's share of the envs

    def check_memory(self, where: str, rollout_obs_bytes: int, free: int | None) -> None:
        """MemoryError before a run whose rollout obs and a minibatch's gathered copy of its share
        (all proportional to num_envs) cannot fit in the `free` bytes of `where` (None: unknown,
        not checked): the alternative is an allocation failure, or the OOM killer, mid-update."""
        buffer_bytes = rollout_obs_bytes + rollout_obs_bytes // self.config.num_minibatches
        if free is None or buffer_bytes <= free:
            return
        c = self.config
        fits = int(free * self.local_envs // buffer_bytes) * self.world_size
        self.env.close()  # the trainer will not exist; its env's memory goes back now
        raise MemoryError(
            f"{self.TITLE} on {where}: num_envs {c.num_envs} x num_steps {c.num_steps} need about "
            f"{buffer_bytes / 2**30:.2f} GiB of rollout and minibatch buffers but only {free / 2**30:.2f} GiB "
            f"are free; use at most about {fits} envs (--num-envs) or fewer steps (--num-steps)")

    # -- what a trainer supplies --------------------------------------------------------
    def iterate(self) -> Iteration:
        raise NotImplementedError

    def backend_arrays(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def backend_meta(self) -> dict:
        return {}

    def restore_backend(self, data: dict) -> None:
        raise NotImplementedError

    # -- one update -----------------------------------------------------------------------
    def step(self) -> dict:
        """One update; returns its metrics line."""
        return self.record(self.iterate())

    def record(self, it: Iteration) -> dict:
        """Count the update, feed the episode windows and build its metrics line."""
        c = self.config
        self.update += 1
        steps_before = self.env_steps
        self.env_steps += c.steps_per_update
        self.train_seconds += it.seconds
        episodes = it.episodes
        for ret, length, ach in episodes:
            self.window_returns.append(ret)
            self.window_lengths.append(length)
            self.window_ach.append(ach)
        m = dict(update=self.update, env_steps=self.env_steps, env_id=c.env_id, rules=rules.rules_fingerprint(),
                 episodes=len(episodes),
                 episode_return=(float(np.mean([e[0] for e in episodes])) if episodes else None),
                 episode_length=(float(np.mean([e[1] for e in episodes])) if episodes else None),
                 return_window=(float(np.mean(self.window_returns)) if self.window_returns else None),
                 length_window=(float(np.mean(self.window_lengths)) if self.window_lengths else None),
                 window_episodes=len(self.window_returns),
                 **it.losses, sps=c.steps_per_update / it.seconds, **it.timings)
        if self.window_ach:
            rates = np.mean(np.stack(self.window_ach), 0)
            m["achievements"] = dict(zip(names_by_index(c.env_id), (float(r) for r in rates)))
        if self.resumed_firsts:
            m["earlier_first_achievements"] = self.resumed_firsts
        self.resumed_firsts = None
        new_firsts = self.record_firsts(it, steps_before)
        if new_firsts:
            m["first_achievements"] = new_firsts
        if not all(np.isfinite(v) for v in it.losses.values()):
            raise FloatingPointError(f"non-finite loss at update {self.update}: {it.losses}")
        self.history.append({k: m[k] for k in ("update", "env_steps", "episode_return", "return_window",
                                               "total_loss", "entropy")})
        return m

    def record_firsts(self, it: Iteration, steps_before: int) -> dict:
        """The skill ladder's new firsts of this update (see skill_ladder.py), written to
        skill_ladder.json at once (they are rare)."""
        if not it.episodes:
            return {}
        if it.episode_steps is None:
            end_steps = np.full(len(it.episodes), self.env_steps, np.int64)
        else:  # every rank steps its envs in lockstep: rollout step t ends at (t + 1) steps of all envs
            end_steps = steps_before + (np.asarray(it.episode_steps, np.int64) + 1) * self.config.num_envs
        new = self.ladder.record(np.stack([e[2] for e in it.episodes]), end_steps, self.train_seconds, self.update)
        if new and self.out_dir:
            self.ladder.write(self.out_dir, self.config.env_id)
        return new

    def request_stop(self, reason: str = "stop requested") -> None:
        """Finish the update in progress, checkpoint and return from run() (signal handlers
        call this; the run continues later with `resume`)."""
        self.stop_reason = reason

    # -- the run --------------------------------------------------------------------------
    def run(self, max_updates: int | None = None, progress: bool = True, log=None,
            time_limit_s: float | None = None) -> list[dict]:
        """Train until config.num_updates (or `max_updates` more updates); log JSONL and
        checkpoint into out_dir. Returns the metric lines of this call.

        `time_limit_s`: stop early, with a checkpoint, before an update that would end past
        this many seconds from now (judged by the longest update so far), so a run fits a
        batch-job or lease limit and continues with `resume`. `self.stop_reason` says why a
        call stopped before the end (None when it did not). `progress`: True for the
        display on stderr, or a Progress of the caller's."""
        c = self.config
        end = c.num_updates if max_updates is None else min(c.num_updates, self.update + max_updates)
        self.stop_reason = None
        t_start = now()
        longest = 0.0
        lines = []
        metrics_f = None
        if self.out_dir:
            os.makedirs(self.out_dir, exist_ok=True)
            self._truncate_metrics()
            self.ladder.write(self.out_dir, c.env_id)  # a resume from an older checkpoint drops later firsts
            metrics_f = open(os.path.join(self.out_dir, "metrics.jsonl"), "a")
        if progress is True:
            left = (c.num_updates - self.update) * c.steps_per_update
            progress = Progress(self.env_steps + left, "steps", start=self.env_steps)
        bar = progress or None
        try:
            stopping = None  # the stop decision taken after an update (a signal may set stop_reason any time)
            while self.update < end and stopping is None:
                t_update = now()
                m = self.step()
                longest = max(longest, now() - t_update)
                lines.append(m)
                if metrics_f:
                    metrics_f.write(json.dumps(m) + "\n")
                    metrics_f.flush()
                if bar:
                    bar.update(m["env_steps"], progress_detail(m))
                if log:
                    log(m)
                if (self.stop_reason is None and time_limit_s is not None and self.update < end
                        and now() - t_start + longest > time_limit_s):
                    self.stop_reason = f"time limit of {time_limit_s:g} s"
                stopping = self.stop_reason if self.group is None else self._agree_on_stop()
                if self.out_dir and (self.update % c.checkpoint_every == 0 or self.update == end
                                     or stopping is not None):
                    self.save_checkpoint(os.path.join(self.out_dir, "checkpoint.npz"))
            self.stop_reason = stopping
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

    def _agree_on_stop(self) -> str | None:
        """This update's stop decision of all ranks: this rank's reason to stop, another's, or None
        (every rank must run the same updates, or the others wait on the one that stopped)."""
        if not self.group.any(self.stop_reason is not None):
            return None
        return self.stop_reason or "a stop on another rank"

    # -- checkpoints ----------------------------------------------------------------------
    def state_arrays(self) -> dict[str, np.ndarray]:
        """Everything a checkpoint holds: the trainer's arrays (weights, Adam moments, ...),
        the env states and the episode windows, and the meta JSON."""
        arrays = self.backend_arrays()
        if self.CHECKPOINT_ENVS:
            for k, v in self.env.get_state().items():
                arrays[f"env/{k}"] = v
        arrays["window_returns"] = np.asarray(self.window_returns, np.float64)
        arrays["window_lengths"] = np.asarray(self.window_lengths, np.int64)
        arrays["window_ach"] = (np.stack(self.window_ach) if self.window_ach
                                else np.zeros((0, len(names_by_index(self.config.env_id))), bool))
        meta = dict(version=CHECKPOINT_VERSION, backend=self.BACKEND, config=self.config.to_dict(),
                    update=self.update, env_steps=self.env_steps, world_size=self.world_size, history=self.history,
                    train_seconds=self.train_seconds, achievement_firsts=self.ladder.firsts,
                    ladder_from_update=self.ladder.recorded_from_update, **self.backend_meta())
        arrays["meta"] = np.array(json.dumps(meta))
        return arrays

    def save_checkpoint(self, path: str) -> None:
        """Atomic: write `path`.tmp<pid> then os.replace."""
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}"
        write_npz_fast(tmp, self.state_arrays())
        os.replace(tmp, path)

    @classmethod
    def resume(cls, path: str, out_dir: str | None = None, **options) -> "RunLoop":
        """Continue from a checkpoint with its own config (bit-exact continuation); `options`
        go to the trainer's constructor."""
        data = read_checkpoint(path)
        meta = data["meta"]
        if meta.get("backend", "c") != cls.BACKEND:
            raise ValueError(f"{path}: a checkpoint of the {meta.get('backend', 'c')!r} trainer, not {cls.BACKEND!r}")
        config = TrainConfig.from_dict(meta["config"])
        return cls(config, out_dir if out_dir is not None else os.path.dirname(os.path.abspath(path)),
                   _restore=data, **options)

    def load_state(self, data: dict) -> None:
        """Restore the shared state from a checkpoint's arrays, then the trainer's own."""
        if self.CHECKPOINT_ENVS:
            self.env.set_state({k[4:]: v for k, v in data.items() if k.startswith("env/")})
        self.load_progress(data["meta"])
        self.window_returns.extend(data["window_returns"].tolist())
        self.window_lengths.extend(data["window_lengths"].tolist())
        self.window_ach.extend(list(data["window_ach"]))
        self.restore_backend(data)

    def load_progress(self, meta: dict) -> None:
        """How far the run is, from a checkpoint's meta: updates, env steps, history, training
        time and the skill ladder (a checkpoint without one starts the ladder at its update)."""
        self.update = int(meta["update"])
        self.env_steps = int(meta.get("env_steps", self.update * self.config.steps_per_update))
        self.history = list(meta.get("history", []))
        self.train_seconds = float(meta.get("train_seconds", 0.0))
        if "achievement_firsts" in meta:
            self.ladder = SkillLadder(self.ladder.names, meta["achievement_firsts"], meta.get("ladder_from_update", 0))
        else:
            self.ladder = SkillLadder(self.ladder.names, recorded_from_update=self.update)
        self.resumed_firsts = ordered(self.ladder.firsts) or None

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
        """learning_curve.png: the curve of the episode windows and the skill ladder below it
        (summary.plot's figure)."""
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("matplotlib is not installed: skipping learning_curve.png", file=sys.stderr)
            return None
        from pycraftax.train import summary

        if not any(r["return_window"] is not None for r in self.history):
            return None
        path = os.path.join(self.out_dir, "learning_curve.png")
        summary.plot([dict(r, env_id=self.config.env_id) for r in self.history],
                     f"{self.TITLE} on {self.config.env_id}, {self.config.num_envs} envs", path,
                     firsts=self.ladder.firsts)
        return path

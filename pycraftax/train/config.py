"""The training configuration both trainers take, and the named recipes it starts from.

    TrainConfig()                                   # the "small" recipe: a CPU job of minutes
    TrainConfig.from_recipe("paper", seed=3)        # a recipe, some fields overridden

A config is checked once, when it is built (`__post_init__`): every later holder of a
TrainConfig may take it as valid.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

# The sizes a recipe fixes; every other field keeps its TrainConfig default.
RECIPES: dict[str, dict] = {
    # The CPU job: the NumPy trainer learns visibly on 2 cores (return ~1 -> ~4).
    "small": dict(total_timesteps=491_520, num_envs=64, num_steps=32, update_epochs=4, num_minibatches=8,
                  width=128, hidden=128),
    # The Craftax paper's PPO-RNN (Craftax_Baselines ppo_rnn.py).
    "paper": dict(total_timesteps=1_000_000_000, num_envs=1024, num_steps=64, update_epochs=4, num_minibatches=8,
                  width=512, hidden=512),
    # The GPU recipe of the PyTorch trainer (torch_trainer.py): the paper's network behind a
    # per-cell code of the map (fast_model.py), 256 wide, bf16 GEMMs; 16x the envs and 4x the
    # minibatch of the paper recipe, half its epochs, four times its learning rate, auto resets.
    "fast": dict(total_timesteps=1_000_000_000, num_envs=16384, num_steps=64, update_epochs=2, num_minibatches=32,
                 width=256, hidden=256, model="cell-gru", cell_dim=16, resets="auto", lr=8e-4,
                 checkpoint_every=100),
    # The strongest agent at 1e9 steps measured so far (docs/TRAINING.md): the fast recipe 512 wide.
    "strong": dict(total_timesteps=1_000_000_000, num_envs=16384, num_steps=64, update_epochs=2, num_minibatches=32,
                   width=512, hidden=512, model="cell-gru", cell_dim=16, resets="auto", lr=8e-4,
                   checkpoint_every=100),
}
DEFAULT_RECIPE = "small"
RESETS = ("optimistic", "auto")
# "gru": the paper's ActorCriticRNN on the float obs (numpy_ppo in the NumPy trainer, paper_model
# in the PyTorch one); "cell-gru": the same behind a per-cell code of the map (fast_model, PyTorch);
# "cell-mingru": the per-cell code, then a MinGRU whose recurrence is an elementwise scan and
# heads that read [h, embedding] (fast_model, PyTorch)
MODELS = ("gru", "cell-gru", "cell-mingru")
CELL_MODELS = {"cell-gru": "gru", "cell-mingru": "mingru"}  # model -> fast_model's recurrence
DTYPES = ("float32", "float64")
_SMALL = RECIPES[DEFAULT_RECIPE]


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


@dataclass(frozen=True)
class TrainConfig:
    """PPO-RNN hyperparameters. The defaults are the "small" recipe (RECIPES) with the
    baseline's learning settings; `from_recipe` starts from another recipe."""

    total_timesteps: int = _SMALL["total_timesteps"]
    num_envs: int = _SMALL["num_envs"]
    num_steps: int = _SMALL["num_steps"]
    update_epochs: int = _SMALL["update_epochs"]
    num_minibatches: int = _SMALL["num_minibatches"]
    width: int = _SMALL["width"]
    hidden: int = _SMALL["hidden"]
    lr: float = 2e-4
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.8
    clip_eps: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 1.0
    seed: int = 0
    dtype: str = "float32"
    checkpoint_every: int = 20
    # "optimistic": Craftax_Baselines' OptimisticResetVecEnvWrapper with reset_ratio
    # min(16, num_envs), what the official ppo_rnn.py trains on; "auto": a fresh world for every
    # ended episode (upstream's auto-reset env.step).
    resets: str = "optimistic"
    # the env trained on: an id of pycraftax.list_envs()
    env_id: str = "Craftax-Symbolic-v1"
    model: str = "gru"
    cell_dim: int = 16  # features of a view cell (models "cell-*")
    # bitwise-repeatable GPU training for a seed on one GPU model: PyTorch's deterministic
    # algorithms and the cell encoder's backward without atomics (the PyTorch trainer)
    deterministic: bool = False

    def __post_init__(self) -> None:
        self.validate()

    @classmethod
    def from_recipe(cls, name: str, **overrides) -> "TrainConfig":
        if name not in RECIPES:
            raise ValueError(f"recipe must be one of {sorted(RECIPES)}, got {name!r}")
        return cls(**{**RECIPES[name], **overrides})

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        d = dict(d)
        d.setdefault("resets", "auto")  # checkpoints written before the option existed trained with auto resets
        d.setdefault("env_id", "Craftax-Symbolic-v1")  # and those written before env_id trained on full Craftax
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown training option(s) {unknown}; known: {sorted(names)}")
        return cls(**d)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @property
    def reset_ratio(self) -> int | None:
        """ppo_rnn.py's min(OPTIMISTIC_RESET_RATIO=16, NUM_ENVS); None with auto resets."""
        return min(16, self.num_envs) if self.resets == "optimistic" else None

    @property
    def num_updates(self) -> int:
        return self.total_timesteps // self.num_steps // self.num_envs

    @property
    def steps_per_update(self) -> int:
        return self.num_envs * self.num_steps

    def validate(self) -> None:
        """Raise ValueError naming the first bad field and what it allows."""
        for name in ("total_timesteps", "num_envs", "num_steps", "update_epochs", "num_minibatches", "width",
                     "hidden", "checkpoint_every"):
            v = getattr(self, name)
            if not _is_int(v) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not _is_int(self.seed) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.num_envs % self.num_minibatches:
            raise ValueError(f"num_minibatches ({self.num_minibatches}) must divide num_envs ({self.num_envs}): "
                             "minibatches are split over envs so GRU sequences stay whole")
        if self.num_updates < 1:
            raise ValueError(f"total_timesteps ({self.total_timesteps}) must be at least num_envs * num_steps "
                             f"({self.steps_per_update})")
        for name, lo, hi, lo_open in (("lr", 0, math.inf, True), ("gamma", 0, 1, False),
                                      ("gae_lambda", 0, 1, False), ("clip_eps", 0, math.inf, True),
                                      ("ent_coef", 0, math.inf, False), ("vf_coef", 0, math.inf, False),
                                      ("max_grad_norm", 0, math.inf, True)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not math.isfinite(v) \
                    or v < lo or v > hi or (lo_open and v == lo):
                rng = f"{'(' if lo_open else '['}{lo}, {hi}{']' if hi != math.inf else ')'}"
                raise ValueError(f"{name} must be a number in {rng}, got {v!r}")
        if not isinstance(self.anneal_lr, bool):
            raise ValueError(f"anneal_lr must be a bool, got {self.anneal_lr!r}")
        if not isinstance(self.deterministic, bool):
            raise ValueError(f"deterministic must be a bool, got {self.deterministic!r}")
        if self.resets not in RESETS:
            raise ValueError(f"resets must be one of {list(RESETS)}, got {self.resets!r}")
        if self.resets == "optimistic" and self.num_envs % self.reset_ratio:
            raise ValueError(f"resets='optimistic' needs num_envs ({self.num_envs}) to be a multiple of "
                             f"reset_ratio min(16, num_envs) = {self.reset_ratio}, as ppo_rnn.py asserts")
        from pycraftax.registry import list_envs

        if self.env_id not in list_envs():
            raise ValueError(f"env_id must be one of {list_envs()}, got {self.env_id!r}")
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {list(MODELS)}, got {self.model!r}")
        if self.model in CELL_MODELS:
            from pycraftax.train.fast_model import CELL_DIMS

            if self.env_id != "Craftax-Symbolic-v1":
                raise ValueError(f"model {self.model!r} reads Craftax-Symbolic-v1's view cells; env_id "
                                 f"{self.env_id!r} trains with model 'gru'")
            if self.cell_dim not in CELL_DIMS:
                raise ValueError(f"cell_dim must be one of {list(CELL_DIMS)}, got {self.cell_dim!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {list(DTYPES)}, got {self.dtype!r}")

"""Policies trained by pycraftax that ship with the package (pycraftax/agents/).

    pycraftax.pretrained.names()            # ['fast-1e9']
    params = pycraftax.pretrained.load("fast-1e9")
    pycraftax eval --pretrained fast-1e9     pycraftax render --pretrained fast-1e9

Each entry says how it was trained and what it scored; the run's curve, ladder and metrics are in
the repository's bench/results/ under the file named by `run`.
"""

from __future__ import annotations

from pathlib import Path

AGENTS_DIR = Path(__file__).resolve().parent / "agents"

PRETRAINED = {
    "fast-1e9": dict(
        file="fast-1e9.npz",
        env_id="Craftax-Symbolic-v1",
        model="cell-gru",
        trained="`pycraftax train --recipe fast --backend cuda` (seed 0): 1e9 env steps in 5.0 min on one H200",
        score="return 37.40 = 16.55% of the 226 maximum (the 29,848 episodes of the last 1% of updates)",
        run="train-fast-1e9-2026-12-03",
    ),
}


def names() -> list[str]:
    return sorted(PRETRAINED)


def path(name: str) -> Path:
    """The weights file of pretrained policy `name`; ValueError naming the choices for another."""
    if name not in PRETRAINED:
        raise ValueError(f"pretrained policy must be one of {names()}, got {name!r}")
    p = AGENTS_DIR / PRETRAINED[name]["file"]
    if not p.is_file():
        raise FileNotFoundError(f"{p}: the weights of {name!r} are missing from this installation (reinstall "
                                "pycraftax)")
    return p


def load(name: str) -> dict:
    """The flax-named float32 weights of pretrained policy `name` (pycraftax.train.policy.Policy runs them)."""
    from pycraftax.train.evaluation import load_policy

    return load_policy(str(path(name)))

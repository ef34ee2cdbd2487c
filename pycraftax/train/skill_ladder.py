"""The skill ladder of a training run: for every achievement, the env step and the training
second of its first occurrence in the run (first wood, first table, first iron ...).

An achievement counts from the episode that first ends with it: its env step is the run's
global count of env steps (all ranks) when that episode ended, exact where the trainer says
at which rollout step each episode ended and the end of the update otherwise; its seconds
are the run's training time (the summed wall time of its updates, without setup,
checkpoint writes or the time between the parts of a resumed run) at the end of that update.

The run loop (loop.py) keeps a SkillLadder, puts the firsts each update found into that
update's metrics line ("first_achievements") and the whole ladder into its checkpoint and
into skill_ladder.json beside metrics.jsonl; `pycraftax summary` rebuilds it from the
metrics lines (ladder_from_lines) and prints and plots it.
"""

from __future__ import annotations

import json
import os

import numpy as np

LADDER_FILE = "skill_ladder.json"
# labelled in the plot where the game has them (Craftax-Classic has no floors)
MILESTONES = ("collect_wood", "place_table", "make_wood_pickaxe", "collect_stone", "collect_iron",
              "collect_diamond", "enter_gnomish_mines", "enter_dungeon", "enter_sewers", "enter_vault",
              "enter_troll_mines", "enter_fire_realm", "enter_ice_realm", "enter_graveyard", "defeat_necromancer")


def first_occurrences(achievements: np.ndarray, end_steps: np.ndarray, names, known) -> dict[str, int]:
    """{name: env step} of the achievements that no name of `known` holds and some episode of
    the batch has: achievements bool [episodes, len(names)], end_steps int [episodes] (when each
    episode ended); an achievement several episodes share takes the earliest of their steps."""
    achievements = np.asarray(achievements, bool)
    end_steps = np.asarray(end_steps, np.int64)
    if achievements.ndim != 2 or achievements.shape[1] != len(names) or end_steps.shape != achievements.shape[:1]:
        raise ValueError(f"achievements must be bool [episodes, {len(names)}] and end_steps [episodes], got "
                         f"{achievements.shape} and {end_steps.shape}")
    found = {}
    for i in np.flatnonzero(achievements.any(0)):
        if names[i] not in known:
            found[names[i]] = int(end_steps[achievements[:, i]].min())
    return found


class SkillLadder:
    """The firsts of one run: `firsts` maps an achievement's name to dict(env_steps, seconds,
    update); `recorded_from_update` is 0 unless the run resumed a checkpoint that kept no
    ladder (then the firsts start at that update)."""

    def __init__(self, names, firsts: dict | None = None, recorded_from_update: int = 0):
        self.names = tuple(names)
        self.firsts: dict[str, dict] = dict(firsts or {})
        self.recorded_from_update = int(recorded_from_update)

    def record(self, achievements, end_steps, seconds: float, update: int) -> dict[str, dict]:
        """Add the firsts of one update's episodes (see first_occurrences); returns the new ones."""
        if len(end_steps) == 0:
            return {}
        new = {name: dict(env_steps=step, seconds=float(seconds), update=int(update))
               for name, step in first_occurrences(achievements, end_steps, self.names, self.firsts).items()}
        self.firsts.update(new)
        return new

    def to_json(self, env_id: str) -> dict:
        return dict(env_id=env_id, recorded_from_update=self.recorded_from_update,
                    achievements=len(self.names), firsts=ordered(self.firsts))

    def write(self, out_dir: str, env_id: str) -> str:
        """skill_ladder.json in out_dir, atomic (written then renamed)."""
        path = os.path.join(out_dir, LADDER_FILE)
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(self.to_json(env_id), f, indent=1)
        os.replace(tmp, path)
        return path


def ordered(firsts: dict[str, dict]) -> dict[str, dict]:
    """The firsts by env step; a stable sort, so firsts of one step keep the order they were
    found in (the achievement table's, which follows the game's progression)."""
    return dict(sorted(firsts.items(), key=lambda kv: kv[1]["env_steps"]))


def merge(into: dict[str, dict], more: dict[str, dict]) -> None:
    """Keep the earlier of two records of an achievement (parts of a run repeat the ladder they resumed)."""
    for name, first in more.items():
        if name not in into or first["env_steps"] < into[name]["env_steps"]:
            into[name] = dict(first)


def ladder_from_lines(lines: list[dict]) -> dict[str, dict]:
    """The ladder of a run's metrics lines: each line's "first_achievements" and, at the first
    update of a resumed part, "earlier_first_achievements" (what its checkpoint held)."""
    firsts: dict[str, dict] = {}
    for m in lines:
        merge(firsts, m.get("earlier_first_achievements") or {})
        merge(firsts, m.get("first_achievements") or {})
    return ordered(firsts)


def seconds_text(seconds: float) -> str:
    """Training seconds as the ladder prints them: hundredths below 10 s, tenths below a minute (first wood comes early)."""
    from pycraftax.progress import format_duration

    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s" if seconds < 60 else format_duration(seconds)


def format_ladder(firsts: dict[str, dict], total: int | None = None) -> list[str]:
    """Text lines: name, env step and training seconds of each first, by time."""
    if not firsts:
        return []
    of = f" of {total}" if total else ""
    out = [f"skill ladder (first occurrence of {len(firsts)}{of} achievements: env step, training time):"]
    width = max(len(n) for n in firsts)
    step_width = max(len(f"{f['env_steps']:,}") for f in firsts.values())
    for name, f in ordered(firsts).items():
        out.append(f"  {name:<{width}} {f['env_steps']:>{step_width},} steps {seconds_text(f['seconds']):>9}")
    return out


def plot_ladder(ax, firsts: dict[str, dict]) -> None:
    """Markers at each achievement's first env step (y: its place on the ladder), the
    milestones among them labelled."""
    items = list(ordered(firsts).items())
    if not items:
        ax.text(0.5, 0.5, "no achievement yet", transform=ax.transAxes, ha="center", va="center")
        return
    steps = [f["env_steps"] for _, f in items]
    ax.plot(steps, range(1, len(items) + 1), "o", ms=3, color="tab:orange", label="first occurrence")
    for rank, (name, f) in enumerate(items, 1):
        if name in MILESTONES:
            ax.plot([f["env_steps"]], [rank], "o", ms=5, color="tab:red")
            ax.annotate(name, (f["env_steps"], rank), textcoords="offset points", xytext=(4, -3), fontsize=7)
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("achievements reached")
    ax.grid(alpha=0.3)

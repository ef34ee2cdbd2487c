"""Summary of a `pycraftax train` run from its metrics.jsonl (or .jsonl.gz): the score the
Craftax paper reports (mean episode return, and as % of the maximum: 226 for Craftax, 22 for
Craftax-Classic) over the episodes
that ended in the last 1% of updates, the learning curve at round step counts, throughput,
per-achievement success rates averaged over the last 50 updates' 64-episode windows, the
skill ladder: the env step and training time of each achievement's first occurrence
(skill_ladder.py), and for Craftax the training time at which the score over the same window of
updates first reaches each 1e9 score of the Craftax scoreboard (SCOREBOARD).

    pycraftax summary runs/ppo-rnn-seed0                 # the score and the achievement table
    pycraftax summary part1/metrics.jsonl part2/metrics.jsonl --png curve.png --json

A run continued over several machines (`--time-limit`, then `--resume` elsewhere) has one
metrics file per part: pass them in order; their updates must follow on without a gap or
overlap. The plot shows the mean return of the last 64 episodes at each update and, below it
on the same env-step axis, the ladder (one marker per achievement at its first env step, the
milestones named: first wood, table, pickaxe, iron, diamond, each floor entered).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from pycraftax import rules
from pycraftax.achievements import names_by_index
from pycraftax.params import CRAFTAX_ENV_ID
from pycraftax.progress import format_count, format_duration
from pycraftax.train import skill_ladder

MAX_RETURN = 226.0  # the Craftax paper's normaliser (% of max)
CLASSIC_MAX_RETURN = 22.0  # Craftax-Classic's: one per achievement
# The Craftax scoreboard's 1e9-step scores on Craftax-Symbolic-v1 (% of the maximum), which a run's
# time to each is measured against.
SCOREBOARD = (("PPO-RNN", 15.3), ("PQN-RNN", 16.0), ("PPO-GTrXL", 18.3))


def max_return(lines: list[dict]) -> float:
    """The % of max normaliser of a run, by the env id its metrics lines carry (lines without
    one are full Craftax's)."""
    from pycraftax.params import CLASSIC_ENV_ID

    return CLASSIC_MAX_RETURN if lines[-1].get("env_id") == CLASSIC_ENV_ID else MAX_RETURN


# What every metrics line of `pycraftax train` carries and a summary reads
LINE_KEYS = ("update", "env_steps", "episodes", "episode_return", "sps")


def load(path: Path) -> list[dict]:
    """The metrics lines of one file; ValueError naming the file (and line) where it is empty or
    holds something else."""
    opener = gzip.open if path.suffix == ".gz" else open
    lines = []
    with opener(path, "rt") as f:
        for number, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}, line {number}: not JSON ({e.msg})") from None
            missing = [k for k in LINE_KEYS if not isinstance(line, dict) or k not in line]
            if missing:
                raise ValueError(f"{path}, line {number}: not a metrics line of pycraftax train (no {missing})")
            lines.append(line)
    if not lines:
        raise ValueError(f"{path}: no metrics lines yet (a run writes one per update)")
    return lines


def load_parts(paths: list[Path]) -> list[dict]:
    lines: list[dict] = []
    for path in paths:
        part = load(path)
        if lines and part and part[0]["update"] != lines[-1]["update"] + 1:
            raise ValueError(f"{path}: starts at update {part[0]['update']}, the previous part ended at "
                             f"{lines[-1]['update']}")
        lines.extend(part)
    if [m["update"] for m in lines] != list(range(lines[0]["update"], lines[0]["update"] + len(lines))):
        raise ValueError("updates are not consecutive within a part")
    return lines


def plot(lines: list[dict], title: str, path: Path, firsts: dict | None = None) -> None:
    """The learning curve of `lines` and, below it, the skill ladder `firsts` (by default the
    one the lines record, skill_ladder.ladder_from_lines)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if firsts is None:
        firsts = skill_ladder.ladder_from_lines(lines)
    steps = np.array([m["env_steps"] for m in lines], np.float64)
    window = [m["return_window"] if m["return_window"] is not None else np.nan for m in lines]
    fig, (ax, ladder_ax) = plt.subplots(2, 1, figsize=(7, 7), sharex=True, height_ratios=(3, 2))
    ax.plot(steps, window, lw=1, label="mean return of the last 64 episodes")
    top = max_return(lines)
    ax2 = ax.secondary_yaxis("right", functions=(lambda r: 100 * r / top, lambda p: p * top / 100))
    ax2.set_ylabel(f"% of max ({top:g})")
    ax.set_ylabel("episode return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    skill_ladder.plot_ladder(ladder_ax, firsts)
    ladder_ax.set_xlabel("env steps")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def weighted_return(lines: list[dict]) -> tuple[float, int]:
    eps = np.array([m["episodes"] for m in lines], np.float64)
    ret = np.array([m["episode_return"] if m["episode_return"] is not None else 0.0 for m in lines])
    return (float((ret * eps).sum() / eps.sum()) if eps.sum() else float("nan")), int(eps.sum())


def update_seconds(m: dict) -> float:
    """An update's training time: its iteration, or its rollout plus learning, as recorded."""
    return m.get("iteration_s") or (m.get("rollout_s") or 0) + (m.get("learn_s") or 0)


def time_to_scores(lines: list[dict], window: int) -> list[dict]:
    """For each SCOREBOARD entry (a Craftax run; none for Classic): the first update at which the
    score, the episode-weighted mean return over the `window` updates ending there, reaches that
    entry's percent of the maximum; with its env steps and the training seconds from the first of
    `lines` (None where the run never reaches it)."""
    if lines[-1].get("env_id", CRAFTAX_ENV_ID) != CRAFTAX_ENV_ID:
        return []
    top = MAX_RETURN
    eps = np.array([m["episodes"] for m in lines], np.float64)
    ret = np.array([m["episode_return"] if m["episode_return"] is not None else 0.0 for m in lines]) * eps
    cum_eps, cum_ret = np.concatenate([[0.0], np.cumsum(eps)]), np.concatenate([[0.0], np.cumsum(ret)])
    idx = np.arange(len(lines))
    start = np.maximum(idx - window + 1, 0)
    n = cum_eps[idx + 1] - cum_eps[start]
    score = np.where(n > 0, (cum_ret[idx + 1] - cum_ret[start]) / np.maximum(n, 1), -np.inf)
    seconds = np.cumsum([update_seconds(m) for m in lines])
    out = []
    for name, percent in SCOREBOARD:
        reached = np.nonzero(score >= percent / 100 * top)[0]
        i = int(reached[0]) if len(reached) else None
        out.append(dict(name=name, percent=percent, update=None if i is None else lines[i]["update"],
                        env_steps=None if i is None else int(lines[i]["env_steps"]),
                        training_seconds=None if i is None else float(seconds[i])))
    return out


def summarize(lines: list[dict], final_fraction: float = 0.01) -> dict:
    if not lines:
        raise ValueError("no metrics lines")
    # Update numbers and step counts are the run's, not the file's: a resumed part's metrics begin
    # mid-run, and its score uses the same final updates as the uninterrupted run's would.
    first_update, last_update = lines[0]["update"], lines[-1]["update"]
    k = min(len(lines), max(1, int(last_update * final_fraction)))
    top = max_return(lines)
    final, episodes = weighted_return(lines[-k:])
    steps = np.array([m["env_steps"] for m in lines])
    steps_before = steps[0] - steps[0] // first_update  # the env steps of the updates before this file
    curve = []
    for target in (1e6, 3e6, 1e7, 3e7, 1e8, 2e8, 3e8, 5e8, 7e8, 1e9, 2e9):
        if target > steps[-1] * 1.0001:
            break
        if target < steps[0]:
            continue
        i = int(np.searchsorted(steps, target))
        i = min(i, len(lines) - 1)
        window = lines[max(0, i - k + 1):i + 1]
        r, n = weighted_return(window)
        curve.append(dict(env_steps=int(steps[i]), episode_return=r, percent_of_max=100 * r / top,
                          episodes=n))
    tail = [m["achievements"] for m in lines[-50:] if m.get("achievements")]
    names = list(tail[-1]) if tail else []
    rates = {n: float(np.mean([a[n] for a in tail])) for n in names}
    wall = float(sum(update_seconds(m) for m in lines))
    return dict(updates=len(lines), first_update=first_update, last_update=last_update, env_steps=int(steps[-1]),
                final_updates=k, final_episodes=episodes,
                final_return=final, final_percent_of_max=100 * final / top, max_return=top,
                training_seconds=wall, mean_steps_per_s=float((steps[-1] - steps_before) / wall) if wall else None,
                median_update_steps_per_s=float(np.median([m["sps"] for m in lines])),
                curve=curve, achievement_success_rates=dict(sorted(rates.items(), key=lambda x: -x[1])),
                achievements=len(names_by_index(lines[-1].get("env_id", CRAFTAX_ENV_ID))),
                skill_ladder=skill_ladder.ladder_from_lines(lines), time_to_scoreboard=time_to_scores(lines, k),
                rules=sorted({m["rules"] for m in lines if "rules" in m}))


def report(s: dict) -> str:
    """The summary as text: score, curve, throughput and the achievements reached."""
    if s["final_episodes"]:
        score = (f"score (episodes ending in the last {s['final_updates']} updates, {s['final_episodes']:,} "
                 f"episodes): return {s['final_return']:.2f} = {s['final_percent_of_max']:.2f}% of {s.get('max_return', MAX_RETURN):g}")
    else:
        score = f"no score yet: no episode ended in the last {s['final_updates']} updates"
    span = f"over {s['updates']:,} updates" if s["first_update"] == 1 else \
        f"(updates {s['first_update']:,}..{s['last_update']:,} of a resumed run)"
    lines = [f"{s['env_steps']:,} env steps {span}; {score}"]
    modified = [note for note in map(rules.modified_note, s.get("rules") or []) if note]
    if modified:  # runs recorded before the fingerprint have no "rules"
        lines.insert(0, f"{', '.join(modified)}: not the released game's rules")
    if s["curve"]:
        lines.append("curve: " + ", ".join(f"{format_count(c['env_steps'])} steps {c['episode_return']:.2f}"
                                           for c in s["curve"]))
    if s["training_seconds"]:
        lines.append(f"training time {format_duration(s['training_seconds'])} ({s['mean_steps_per_s']:,.0f} steps/s"
                     + (")" if s["first_update"] == 1 else " in these updates)"))
    reached = [t for t in s.get("time_to_scoreboard") or [] if t["update"] is not None]
    if reached:
        lines.append("the scoreboard's 1e9 scores reached (score over the same window of updates): " + "; ".join(
            f"{t['name']} {t['percent']:g}% at {format_count(t['env_steps'])} steps, "
            f"{format_duration(t['training_seconds'])} of training" for t in reached))
    rates = [(n, r) for n, r in s["achievement_success_rates"].items() if r > 0]
    if rates:
        lines.append("achievement success rates (last 50 updates' 64-episode windows):")
        width = max(len(n) for n, _ in rates)
        lines += [f"  {n:<{width}} {100 * r:6.2f}%" for n, r in rates]
        never = len(s["achievement_success_rates"]) - len(rates)
        if never:
            lines.append(f"  ({never} others: 0%)")
    lines += skill_ladder.format_ladder(s.get("skill_ladder") or {}, s.get("achievements"))
    return "\n".join(lines)


def metrics_paths(args: list[str]) -> list[Path]:
    """Run directories stand for their metrics.jsonl."""
    paths = []
    for a in args:
        p = Path(a)
        paths.append(p / "metrics.jsonl" if p.is_dir() else p)
    for p in paths:
        if not p.exists():
            raise ValueError(f"no metrics file at {p}")
    return paths

"""`pycraftax` command line.

    pycraftax worlds [--num-envs N] [--seed S]    generate worlds, summarise all nine floors
    pycraftax bench reset [--num-envs N] [--threads T] [--seconds S]
    pycraftax bench step  [--num-envs N] [--threads T] [--seconds S]
    pycraftax train [--total-timesteps N] [--num-envs N] ... [--out DIR] [--resume CKPT]   PPO-RNN on CPU
    pycraftax eval --checkpoint CKPT [--episodes N] [--greedy]                          run a trained policy
    pycraftax summary RUN [RUN2 ...] [--json] [--png curve.png]                         score, curve, achievements
    pycraftax render [--checkpoint CKPT] [--out episode.gif] [--view local|floor]      GIF of one episode
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from pycraftax.render import BLOCK_NAMES

FLOOR_NAMES = ("Overworld", "Dungeon", "Gnomish Mines", "Sewers", "Vaults", "Troll Mines", "Fire Realm",
               "Ice Realm", "Graveyard")


class Progress:
    """A one-line progress bar on stderr with rate and ETA (no dependencies)."""

    def __init__(self, total: int, unit: str):
        self.total, self.unit, self.start, self.last = total, unit, time.perf_counter(), 0.0

    def update(self, done: int, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self.last < 0.2:
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        rate = done / elapsed
        eta = (self.total - done) / rate if rate > 0 else float("inf")
        width = 30
        filled = int(width * done / max(self.total, 1))
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} {self.unit} "
                         f"{rate:,.0f} {self.unit}/s ETA {eta:4.1f}s ")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")


def cmd_worlds(args: argparse.Namespace) -> int:
    import pycraftax

    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=args.batch, backend="c", seed=args.seed)
    counts = np.zeros((9, len(BLOCK_NAMES)), dtype=np.int64)
    generated, progress = 0, Progress(args.num_envs, "worlds")
    first = True
    while generated < args.num_envs:
        if first:
            env.reset(seed=args.seed)
            first = False
        else:
            env.reset()
        state = env.get_state()
        take = min(args.batch, args.num_envs - generated)
        for level in range(9):
            counts[level] += np.bincount(state["map"][:take, level].ravel(), minlength=len(BLOCK_NAMES))
        generated += take
        progress.update(generated)
    progress.update(generated, force=True)
    progress.close()
    elapsed = time.perf_counter() - progress.start
    print(f"{generated} worlds (seed {args.seed}) in {elapsed:.2f} s: {generated / elapsed:,.0f} worlds/s")
    print("mean cells per floor (48 x 48 = 2304) of the most common blocks:")
    for level in range(9):
        mean = counts[level] / generated
        top = np.argsort(mean)[::-1][:6]
        cells = ", ".join(f"{BLOCK_NAMES[b].lower()} {mean[b]:.0f}" for b in top if mean[b] > 0)
        print(f"  {level} {FLOOR_NAMES[level]:<14} {cells}")
    rare = {b: counts[:, b].sum() / generated for b in (10, 21, 22, 23, 24, 30, 31)}
    print("per world: " + ", ".join(f"{BLOCK_NAMES[b].lower()} {v:.1f}" for b, v in rare.items()))
    return 0


def _timed_progress(seconds: float):
    """A progress callback for a benchmark that runs `seconds` (rate and time left)."""

    last = [0.0]

    def report(done: int, elapsed: float) -> None:
        if elapsed - last[0] < 0.5:
            return
        last[0] = elapsed
        rate = done / max(elapsed, 1e-9)
        sys.stderr.write(f"\r{elapsed:5.1f}/{seconds:.0f} s  {rate:,.0f}/s ")
        sys.stderr.flush()

    return report


def cmd_bench(args: argparse.Namespace) -> int:
    from pycraftax.bench import bench_step, bench_worldgen, machine_info

    info = machine_info()
    print(f"CPU: {info['cpu']} ({info['cores']} cores), commit {info['commit'][:12]}")
    progress = _timed_progress(args.seconds)
    if args.what == "reset":
        result = bench_worldgen(num_envs=args.num_envs, threads=args.threads, min_seconds=args.seconds,
                                progress=progress)
        sys.stderr.write("\n")
        print(f"reset_env: {result['worlds_per_s']:,.0f} worlds/s with {args.threads} thread(s), "
              f"{result['worlds_per_s_per_core']:,.0f} per core ({args.num_envs} envs per batch)")
    else:
        result = bench_step(num_envs=args.num_envs, threads=args.threads, min_seconds=args.seconds,
                            progress=progress)
        sys.stderr.write("\n")
        print(f"auto-reset step, random actions, obs every step: {result['steps_per_s']:,.0f} steps/s with "
              f"{args.threads} thread(s), {result['steps_per_s_per_core']:,.0f} per core ({args.num_envs} envs)")
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    import os

    from pycraftax.render import record_episode, save_gif

    policy = None
    if args.checkpoint is not None:
        if not os.path.exists(args.checkpoint):
            print(f"pycraftax render: error: no file {args.checkpoint}", file=sys.stderr)
            return 2
        policy = _train_module().load_policy(args.checkpoint)
    bar = Progress(args.max_steps, "steps")
    frames, summary = record_episode(policy, seed=args.seed, max_steps=args.max_steps, view=args.view,
                                     tile=args.tile, greedy=args.greedy, progress=bar.update)
    bar.update(summary["length"], force=True)
    bar.close()
    save_gif(args.out, frames, fps=args.fps)
    who = "random actions" if policy is None else args.checkpoint
    state = "ended" if summary["ended"] else "still running (step limit)"
    print(f"{args.out}: {len(frames)} frames; {who}: return {summary['return']:.2f} over {summary['length']} steps, "
          f"episode {state}")
    for name, step in sorted(summary["achievements"].items(), key=lambda kv: kv[1]):
        print(f"  step {step:>5}  {name}")
    return 0


def _train_module():
    from pycraftax.train import trainer

    return trainer


def cmd_train(args: argparse.Namespace) -> int:
    return _train_module().cmd_train(args)


def cmd_eval(args: argparse.Namespace) -> int:
    return _train_module().cmd_eval(args)


def cmd_summary(args: argparse.Namespace) -> int:
    import json

    from pycraftax.train import summary

    try:
        lines = summary.load_parts(summary.metrics_paths(args.runs))
        if not lines:
            raise ValueError("the metrics files hold no updates yet")
        s = summary.summarize(lines, final_fraction=args.final_fraction)
    except (OSError, ValueError, KeyError) as e:
        print(f"pycraftax summary: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(s, indent=1) if args.json else summary.report(s))
    if args.png:
        summary.plot(lines, f"PPO-RNN on Craftax-Symbolic-v1, {s['env_steps']:,} steps", args.png)
        print(f"learning curve: {args.png}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pycraftax", description="Craftax 1.6.1, bit-faithful, in C (and CUDA).")
    sub = parser.add_subparsers(dest="command", required=True)

    worlds = sub.add_parser("worlds", help="generate worlds and summarise their nine floors")
    worlds.add_argument("--num-envs", type=int, default=1024, help="number of worlds to generate")
    worlds.add_argument("--batch", type=int, default=256, help="worlds generated per batched call")
    worlds.add_argument("--seed", type=int, default=0)
    worlds.set_defaults(func=cmd_worlds)

    bench = sub.add_parser("bench", help="throughput of the C reference")
    bench_sub = bench.add_subparsers(dest="what", required=True)
    reset = bench_sub.add_parser("reset", help="world generation (reset_env) rate")
    reset.add_argument("--num-envs", type=int, default=64)
    reset.add_argument("--threads", type=int, default=1)
    reset.add_argument("--seconds", type=float, default=3.0)
    reset.set_defaults(func=cmd_bench)
    step = bench_sub.add_parser("step", help="env steps per second (auto-reset, random actions)")
    step.add_argument("--num-envs", type=int, default=1024)
    step.add_argument("--threads", type=int, default=1)
    step.add_argument("--seconds", type=float, default=5.0)
    step.set_defaults(func=cmd_bench)

    train = sub.add_parser("train", help="train PPO-RNN (GPU trainer where usable, else NumPy + C env); see pycraftax.train")
    _train_module().add_train_args(train)
    train.set_defaults(func=cmd_train)
    evaluate = sub.add_parser("eval", help="run a trained policy: return and achievement rates")
    _train_module().add_eval_args(evaluate)
    evaluate.set_defaults(func=cmd_eval)

    summ = sub.add_parser("summary", help="a training run's score (as the paper reports it), curve and achievements")
    summ.add_argument("runs", nargs="+", metavar="RUN",
                      help="run directory or metrics.jsonl[.gz]; several = the parts of one run, in order")
    summ.add_argument("--final-fraction", type=float, default=0.01,
                      help="score over the episodes of this last fraction of updates (default 0.01, as the paper)")
    summ.add_argument("--json", action="store_true", help="print the summary as JSON")
    summ.add_argument("--png", default=None, help="also plot the learning curve to this file")
    summ.set_defaults(func=cmd_summary)

    render = sub.add_parser("render", help="record one episode of a policy (or random actions) as a GIF")
    render.add_argument("--checkpoint", default=None, help="checkpoint.npz or params.npz; random actions if absent")
    render.add_argument("--out", default="episode.gif")
    render.add_argument("--seed", type=int, default=0)
    render.add_argument("--max-steps", type=int, default=1000)
    render.add_argument("--view", choices=("local", "floor"), default="local",
                        help="the agent's 9x11 view, or the whole floor")
    render.add_argument("--tile", type=int, default=16, help="pixels per cell (>= 4)")
    render.add_argument("--fps", type=float, default=8.0)
    render.add_argument("--greedy", action="store_true", help="argmax actions instead of sampling")
    render.set_defaults(func=cmd_render)

    args = parser.parse_args(argv)
    for name in ("num_envs", "batch", "threads", "max_steps"):
        if getattr(args, name, 1) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if not 0 < getattr(args, "final_fraction", 0.5) <= 1:
        parser.error("--final-fraction must be in (0, 1]")
    if getattr(args, "seconds", 1.0) <= 0:
        parser.error("--seconds must be > 0")
    if getattr(args, "fps", 1.0) <= 0 or getattr(args, "tile", 16) < 4 or getattr(args, "seed", 0) < 0:
        parser.error("--fps must be > 0, --tile >= 4 and --seed >= 0")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

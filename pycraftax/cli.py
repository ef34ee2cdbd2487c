"""`pycraftax` command line.

    pycraftax worlds [--num-envs N] [--seed S]    generate worlds, summarise all nine floors
    pycraftax bench reset [--num-envs N] [--threads T] [--seconds S]
    pycraftax bench step  [--num-envs N] [--threads T] [--seconds S]
    pycraftax train [--recipe small|paper|fast] [--num-envs N] ... [--out DIR] [--resume CKPT]   PPO-RNN
    pycraftax eval --checkpoint CKPT | --pretrained NAME [--episodes N] [--greedy]       run a trained policy
    pycraftax summary RUN [RUN2 ...] [--json] [--png curve.png]                         score, curve, achievements
    pycraftax render [--checkpoint CKPT | --pretrained NAME] [--out episode.gif|.mp4]  one episode, textured
    pycraftax conformance [--env ID] [--num-envs N] [--steps T] [--seed S] [--replay FILE]  the divergence finder
    pycraftax play [--env ID] [--seed S] [--agent NAME | --checkpoint CKPT]             play in a window (pygame)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from pycraftax import __version__
from pycraftax.progress import Progress
from pycraftax.registry import list_envs
from pycraftax.render import BLOCK_NAMES
from pycraftax.train import cli as train_cli

FLOOR_NAMES = ("Overworld", "Dungeon", "Gnomish Mines", "Sewers", "Vaults", "Troll Mines", "Fire Realm",
               "Ice Realm", "Graveyard")


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
    elapsed = time.perf_counter() - progress.t0
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
    from pycraftax import rules

    if rules.modified_note():
        print(rules.modified_note())
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
    from pycraftax.textures import TexturesMissing
    from pycraftax.paths import output_file_problem
    from pycraftax.render import VIDEO_FORMATS, mp4_writer_problem, record_episode, save_video

    try:
        policy, who = train_cli.policy_from_args(args)
    except ValueError as e:  # interop.NotACheckpointError included
        print(f"pycraftax render: error: {e}", file=sys.stderr)
        return 2
    problem = output_file_problem(args.out)  # before the episode, which can take minutes
    suffix = Path(args.out).suffix.lower()
    if not problem and suffix not in VIDEO_FORMATS:
        problem = f"the file name must end in one of {list(VIDEO_FORMATS)}, got {args.out!r}"
    if not problem and suffix == ".mp4":
        problem = mp4_writer_problem()
    if problem:
        print(f"pycraftax render: error: --out: {problem}", file=sys.stderr)
        return 2
    bar = Progress(args.max_steps, "steps")
    try:
        frames, summary = record_episode(policy, seed=args.seed, max_steps=args.max_steps, view=args.view,
                                         tile=args.block_size, greedy=args.greedy, progress=bar.update,
                                         env_id=args.env)
    except (ValueError, TexturesMissing) as e:
        bar.close()
        print(f"pycraftax render: error: {e}", file=sys.stderr)
        return 2
    bar.update(summary["length"], force=True)
    bar.close()
    save_video(args.out, frames, fps=args.fps)
    state = "ended" if summary["ended"] else "still running (step limit)"
    print(f"{args.out}: {len(frames):,} frames; {who}: return {summary['return']:.2f} over {summary['length']:,} "
          f"steps, episode {state}")
    for name, step in sorted(summary["achievements"].items(), key=lambda kv: kv[1]):
        print(f"  step {step:>5}  {name}")
    return 0


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


def cmd_play(args: argparse.Namespace) -> int:
    from pycraftax import play

    problem = play.pygame_problem()
    if problem:
        print(f"pycraftax play: error: {problem}", file=sys.stderr)
        return 2
    from pycraftax import pretrained
    from pycraftax.textures import TexturesMissing

    policy, env_id = None, args.env
    try:
        if args.agent is not None or args.checkpoint is not None:
            from pycraftax.train.evaluation import load_policy
            from pycraftax.train.policy import Policy

            if args.checkpoint is not None and not Path(args.checkpoint).is_file():
                raise ValueError(f"no file {args.checkpoint}")
            policy = pretrained.load(args.agent) if args.agent is not None else load_policy(args.checkpoint)
            env_id = env_id or Policy(policy).env_id
        game = play.Game(env_id or "Craftax-Symbolic-v1", seed=args.seed, block_size=args.block_size,
                         history=args.history, policy=policy, greedy=args.greedy)
    except (ValueError, TexturesMissing) as e:
        print(f"pycraftax play: error: {e}", file=sys.stderr)
        return 2
    if policy is None:
        print("Controls (upstream's key map):\n  " + "\n  ".join(play.controls(game.env_id)))
    print("Backspace: step back, Esc: quit" + (", P: pause the agent, right arrow: one step" if policy else ""))
    try:
        play.play(game, fps=args.fps, max_frames=args.max_frames)
    finally:
        game.close()
    print(f"{len(game.unlocked)} achievements: " + ", ".join(name.lower() for _, name in game.unlocked))
    return 0


def build_parser() -> argparse.ArgumentParser:
    fmt = dict(formatter_class=train_cli.HelpFormatter)
    parser = argparse.ArgumentParser(prog="pycraftax", description="Craftax 1.6.1, bit-faithful, in C (and CUDA).",
                                     **fmt)
    parser.add_argument("--version", action="version", version=f"pycraftax {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    worlds = sub.add_parser("worlds", help="generate worlds and summarise their nine floors", **fmt)
    worlds.add_argument("--num-envs", type=int, default=1024, help="number of worlds to generate")
    worlds.add_argument("--batch", type=int, default=256, help="worlds generated per batched call")
    worlds.add_argument("--seed", type=int, default=0, help="seed of the first batch")
    worlds.set_defaults(func=cmd_worlds)

    bench = sub.add_parser("bench", help="throughput of the C reference", **fmt)
    bench_sub = bench.add_subparsers(dest="what", required=True)
    reset = bench_sub.add_parser("reset", help="world generation (reset_env) rate", **fmt)
    reset.add_argument("--num-envs", type=int, default=64, help="worlds per batch")
    reset.add_argument("--threads", type=int, default=1, help="worker threads")
    reset.add_argument("--seconds", type=float, default=3.0, help="how long to measure")
    reset.set_defaults(func=cmd_bench)
    step = bench_sub.add_parser("step", help="env steps per second (auto-reset, random actions)", **fmt)
    step.add_argument("--num-envs", type=int, default=1024, help="envs stepped together")
    step.add_argument("--threads", type=int, default=1, help="worker threads")
    step.add_argument("--seconds", type=float, default=5.0, help="how long to measure")
    step.set_defaults(func=cmd_bench)

    train = sub.add_parser("train", help="train PPO-RNN (PyTorch on the GPU where usable, else NumPy + C env); see "
                           "pycraftax.train", **fmt)
    train_cli.add_train_args(train)
    train.set_defaults(func=train_cli.cmd_train)
    evaluate = sub.add_parser("eval", help="run a trained policy: return and achievement rates", **fmt)
    train_cli.add_eval_args(evaluate)
    evaluate.set_defaults(func=train_cli.cmd_eval)

    summ = sub.add_parser("summary", help="a training run's score (as the paper reports it), curve and achievements",
                          **fmt)
    summ.add_argument("runs", nargs="+", metavar="RUN",
                      help="run directory or metrics.jsonl[.gz]; several = the parts of one run, in order")
    summ.add_argument("--final-fraction", type=float, default=0.01,
                      help="score over the episodes of this last fraction of updates (as the paper)")
    summ.add_argument("--json", action="store_true", help="print the summary as JSON")
    summ.add_argument("--png", default=None, help="also plot the learning curve to this file (default: no plot)")
    summ.set_defaults(func=cmd_summary)

    render = sub.add_parser("render", help="record one episode of a policy (or random actions) as a GIF or MP4, in "
                                           "upstream's textures", **fmt)
    train_cli.add_policy_args(render, required=False)  # neither: random actions
    render.add_argument("--out", default="episode.gif",
                        help="the video to write: .gif, or .mp4 (needs imageio-ffmpeg)")
    render.add_argument("--seed", type=int, default=0, help="seed of the world and of the action sampling")
    render.add_argument("--max-steps", type=int, default=1000, help="step cap of the episode")
    render.add_argument("--view", choices=("local", "floor"), default="local",
                        help="the player's view with the inventory (as upstream's play window), or the whole floor")
    render.add_argument("--block-size", "--tile", dest="block_size", type=int, default=16,
                        help="pixels per map cell, 6..256 (the textures are 16 x 16; upstream's play window: 64)")
    render.add_argument("--fps", type=float, default=8.0, help="frames per second of the GIF")
    render.add_argument("--greedy", action="store_true", help="argmax actions (default: sampled)")
    render.add_argument("--env", default=None, choices=list_envs(),
                        help="the env to play (default: the one the checkpoint's policy reads; Craftax-Symbolic-v1 "
                             "for random actions)")
    render.set_defaults(func=cmd_render)

    conformance = sub.add_parser(
        "conformance", help="compare the built rules with the installed craftax (both games, lockstep); at the "
        "first divergence name the leaves, the upstream function responsible and a reproducer (docs/PORTING.md)",
        **fmt)
    from pycraftax.porting import finder

    finder.add_arguments(conformance)
    conformance.set_defaults(func=finder.run)

    from pycraftax import pretrained

    play = sub.add_parser("play", help="play Craftax in a window (or watch an agent), with upstream's keys; needs "
                                       "pygame", **fmt)
    play.add_argument("--env", default=None, choices=list_envs(),
                      help="the env to play (default: Craftax-Symbolic-v1, or the agent's)")
    play.add_argument("--seed", type=int, default=0, help="seed of the world")
    agent = play.add_mutually_exclusive_group()
    agent.add_argument("--agent", default=None, choices=pretrained.names(),
                       help="a shipped policy plays and you watch (default: you play)")
    agent.add_argument("--checkpoint", default=None,
                       help="a policy of `pycraftax train` plays and you watch (default: none, you play)")
    play.add_argument("--greedy", action="store_true", help="the agent takes argmax actions (default: sampled)")
    play.add_argument("--block-size", type=int, default=48, help="pixels per map cell, 6..256 (upstream's: 64)")
    play.add_argument("--history", type=int, default=100, help="states kept for Backspace to step back to")
    play.add_argument("--fps", type=float, default=15.0, help="frames per second (an agent steps once a frame)")
    play.add_argument("--max-frames", type=int, default=None, help=argparse.SUPPRESS)  # for scripted runs
    play.set_defaults(func=cmd_play)
    return parser


# The range of each numeric option, whichever subcommands have it (train checks its own
# through TrainConfig).
OPTION_RANGES = (
    *((name, lambda v: v >= 1, ">= 1") for name in ("num_envs", "batch", "threads", "max_steps", "episodes",
                                                    "blas_threads", "max_frames")),
    ("history", lambda v: v >= 0, ">= 0"),
    ("seed", lambda v: 0 <= v < 2**32, "in [0, 2**32)"),  # the envs' seed range
    ("block_size", lambda v: 6 <= v <= 256, "in [6, 256]"),
    ("fps", lambda v: v > 0, "> 0"),
    ("seconds", lambda v: v > 0, "> 0"),
    ("final_fraction", lambda v: 0 < v <= 1, "in (0, 1]"),
)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    for name, ok, allowed in OPTION_RANGES:
        value = getattr(args, name, None)
        if value is not None and not ok(value):
            parser.error(f"--{name.replace('_', '-')} must be {allowed}, got {value}")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

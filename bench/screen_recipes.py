"""Screen training variants side by side: each variant is a `pycraftax train` run of one recipe and
length with some flags changed; they run at the same time (on one GPU they share it, so their
scores compare and their speeds do not), then one table ranks them by score.

    python bench/screen_recipes.py --recipe fast --steps 200000000 --out runs/screen \\
        base "lr1.2e-3=--lr 1.2e-3" "w512=--width 512 --hidden 512" "mb32=--num-minibatches 32"

A variant is NAME or NAME=FLAGS (train's flags, as on its command line). Each run writes
OUT/NAME/ (metrics, checkpoint, weights) and OUT/NAME.log; the table, with each run's score
(pycraftax summary's: the mean return of the episodes of the last 1% of updates) and exit
status, goes to the terminal and to OUT/screen.json. A run that fails is reported with the
tail of its log and does not stop the others.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from pycraftax.train.summary import load, summarize

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
PROGRESS_EVERY_S = 30.0


def parse_variant(spec: str) -> tuple[str, list[str]]:
    """(name, flags) of NAME or NAME=FLAGS; ValueError naming the spec where NAME is no plain
    file name."""
    name, _, flags = spec.partition("=")
    if not NAME.match(name):
        raise ValueError(f"variant {spec!r}: its name must be letters, digits and ._+- (it names the run's "
                         "directory), then optionally =FLAGS")
    flags = shlex.split(flags)
    taken = sorted({f.split("=")[0] for f in flags} & {"--out", "--resume", "--total-timesteps"})
    if taken:
        raise ValueError(f"variant {spec!r}: {', '.join(taken)} belong to the screen (--out, --steps), not a variant")
    return name, flags


def train_command(recipe: str, steps: int, out: Path, flags: list[str], common: list[str]) -> list[str]:
    return [sys.executable, "-m", "pycraftax", "train", "--recipe", recipe, "--total-timesteps", str(steps),
            "--quiet", "--out", str(out), *common, *flags]


def run_all(commands: dict[str, list[str]], logs: dict[str, Path], parallel: int) -> dict[str, int]:
    """Run the commands, at most `parallel` at once; {name: exit status}. A line on stderr every
    PROGRESS_EVERY_S seconds says how many are running and done."""
    waiting, running, status = list(commands), {}, {}
    start = last = time.monotonic()
    while waiting or running:
        while waiting and len(running) < parallel:
            name = waiting.pop(0)
            with open(logs[name], "w") as log:
                running[name] = subprocess.Popen(commands[name], stdout=log, stderr=subprocess.STDOUT)
        for name, proc in list(running.items()):
            if proc.poll() is not None:
                status[name] = proc.returncode
                del running[name]
                print(f"screen: {name} ended with exit status {proc.returncode} after "
                      f"{time.monotonic() - start:.0f} s", file=sys.stderr)
        if time.monotonic() - last >= PROGRESS_EVERY_S:
            last = time.monotonic()
            print(f"screen: {len(running)} running, {len(status)} done, {len(waiting)} waiting, "
                  f"{last - start:.0f} s", file=sys.stderr)
        time.sleep(0.2)
    return status


def score(run_dir: Path) -> dict | None:
    try:
        s = summarize(load(run_dir / "metrics.jsonl"))
    except (OSError, ValueError):  # no run, or no update finished
        return None
    return {k: s[k] for k in ("env_steps", "final_return", "final_percent_of_max", "final_episodes",
                              "training_seconds")}


def table(rows: list[dict]) -> str:
    out = ["| variant | flags | return | % of max | env steps | episodes | training s | exit |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        s = r["score"]
        cells = ([f"{s['final_return']:.2f}", f"{s['final_percent_of_max']:.2f}", f"{s['env_steps']:,}",
                  f"{s['final_episodes']:,}", f"{s['training_seconds']:.0f}"] if s else ["-"] * 5)
        out.append(f"| {r['name']} | {shlex.join(r['flags']) or '(none)'} | " + " | ".join(cells) + f" | {r['exit']} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variants", nargs="+", help="NAME or NAME=FLAGS, one run each")
    ap.add_argument("--recipe", default="fast", help="the recipe every variant starts from (default: fast)")
    ap.add_argument("--steps", type=float, required=True, help="env steps of each run (2e8 is a usual screen)")
    ap.add_argument("--out", type=Path, required=True, help="directory of the runs; must not hold a screen yet")
    ap.add_argument("--parallel", type=int, default=0, help="runs at once (default: all of them)")
    ap.add_argument("--common", default="", help="flags given to every run (e.g. '--backend cuda --seed 1')")
    args = ap.parse_args(argv)
    try:
        variants = [parse_variant(v) for v in args.variants]
        names = [n for n, _ in variants]
        if len(set(names)) != len(names):
            raise ValueError(f"variant names must differ, got {names}")
        if args.steps < 1 or args.steps != int(args.steps):
            raise ValueError(f"--steps must be a whole number >= 1, got {args.steps:g}")
        if args.parallel < 0:
            raise ValueError(f"--parallel must be >= 0 (0: all at once), got {args.parallel}")
        if (args.out / "screen.json").exists() or any((args.out / n).exists() for n in names):
            raise ValueError(f"{args.out} already holds a screen or a run of these names: choose another --out")
    except ValueError as e:
        print(f"screen_recipes: error: {e}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    common = shlex.split(args.common)
    commands = {n: train_command(args.recipe, int(args.steps), args.out / n, f, common) for n, f in variants}
    logs = {n: args.out / f"{n}.log" for n in names}
    status = run_all(commands, logs, args.parallel or len(variants))
    rows = [dict(name=n, flags=f, command=shlex.join(commands[n][1:]), exit=status[n], score=score(args.out / n))
            for n, f in variants]
    rows.sort(key=lambda r: -(r["score"]["final_return"] if r["score"] else float("-inf")))
    (args.out / "screen.json").write_text(json.dumps(dict(recipe=args.recipe, steps=int(args.steps),
                                                          common=common, runs=rows), indent=1) + "\n")
    print(table(rows))
    for r in rows:
        if r["exit"] != 0:
            tail = logs[r["name"]].read_text().strip().splitlines()[-5:]
            print(f"\n{r['name']} failed (exit status {r['exit']}); the end of {logs[r['name']]}:\n  "
                  + "\n  ".join(tail), file=sys.stderr)
    return 0 if all(r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

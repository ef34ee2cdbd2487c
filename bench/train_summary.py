"""Result file of one training run for bench/results/ (recipe, machine and commit merged in):
pycraftax.train.summary's score, curve and achievement rates, from the run's metrics files
(one per part for a run continued over several machines, in order).

    python bench/train_summary.py RUN/metrics.jsonl --name fast-1e9 --out bench/results/x.json --png x.png
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pycraftax.train.summary import MAX_RETURN, load_parts, plot, summarize


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("metrics", type=Path, nargs="+", help="metrics.jsonl[.gz] of the run, one per part, in order")
    ap.add_argument("--name", required=True)
    ap.add_argument("--meta", default="{}", help="JSON object merged into the output (recipe, GPU, commit, ...)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--png", type=Path, help="learning-curve plot")
    args = ap.parse_args()
    lines = load_parts(args.metrics)
    out = dict(run=args.name, **json.loads(args.meta), **summarize(lines))
    if args.png:
        env_id = next((line["env_id"] for line in lines if "env_id" in line), "Craftax-Symbolic-v1")
        plot(lines, f"{args.name} on {env_id}", args.png)
    text = json.dumps(out, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(f"{args.name}: {out['env_steps']:,} env steps, return {out['final_return']:.2f} "
          f"({out['final_percent_of_max']:.2f}% of {out.get('max_return', MAX_RETURN):g}) over {out['final_episodes']:,} episodes, "
          f"{out['training_seconds']:.0f} s of training")
    return 0


if __name__ == "__main__":
    sys.exit(main())

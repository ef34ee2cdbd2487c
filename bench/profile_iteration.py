"""One training iteration of the PyTorch trainer broken down by kernel (GPU), as a table.

    python bench/profile_iteration.py                       # the fast recipe
    python bench/profile_iteration.py --recipe strong --out profile.json
    python bench/profile_iteration.py --recipe fast -- --width 512 --hidden 512

It builds the trainer of `pycraftax train --recipe R [overrides]` (the overrides after `--` are
the train command's own flags), runs warm-up iterations (the CUDA graphs are captured there),
then profiles a few iterations with torch.profiler and sums the kernels' device time into the
parts of an iteration: the env's step kernels, the rollout's policy forward, GAE, the update's
forward/backward parts, the optimizer and the copies. Wall times of the rollout and the update
come from the trainer's own timings. The table is what docs/TRAINING.md quotes.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict

# (part, phase, pattern): the first pattern a kernel's name matches names its part; phase
# "rollout" or "learn" restricts a pattern to that phase (kernels of the GAE loop run in the
# rollout's last graph and are timed apart, see gae_ms).
PARTS = [
    ("env: step", "rollout", r"autoreset_step|optimistic_step|step_kernel|check_actions|track_episodes|done_info"),
    ("env: reset (world generation)", "rollout", r"world_floors|world_rest|pending_floors|generate_worlds|optimistic_take"
                                                 r"|key_split|store_key|sort|radix"),
    ("env: obs", "rollout", r"observe|obs_kernel|expand_obs|final_obs"),
    ("policy: cell encoder", "rollout", r"encode_cells"),
    ("policy: GEMMs", "rollout", r"gemm|nvjet|cutlass|sm90|xmma|gemv|splitK"),
    ("policy: recurrence", "rollout", r"gru|scan|mingru"),
    ("policy: sampling and the rest", "rollout", r"."),
    ("update: minibatch gather", "learn", r"index_select|indexSelect|gather_kernel|index_kernel"),
    ("update: cell encoder forward", "learn", r"encode_cells_kernel"),
    ("update: cell encoder backward", "learn", r"encode_cells_backward|reduce_partials"),
    ("update: recurrence (forward and backward)", "learn", r"gru|scan|mingru"),
    ("update: GEMMs (forward and backward)", "learn", r"gemm|nvjet|cutlass|sm90|xmma|gemv|splitK"),
    ("update: optimizer and clip", "learn", r"multi_tensor|adam|Adam|foreach|norm"),
    ("update: reductions (bias gradients, loss)", "learn", r"reduce|Reduce"),
    ("update: dtype copies", "learn", r"copy|Copy|convert"),
    ("update: elementwise (activations, loss)", "learn", r"elementwise|Elementwise|softmax|Softmax"),
    ("update: other", "learn", r"."),
]


def _kernel_rows(prof) -> list[tuple[str, float]]:
    """(name, device microseconds) of every kernel the profiler saw."""
    rows = []
    for evt in prof.events():
        dev = getattr(evt, "device_type", None)
        if dev is None or "CUDA" not in str(dev):
            continue
        rows.append((evt.name, float(evt.device_time if hasattr(evt, "device_time") else evt.cuda_time)))
    return rows


def classify(name: str, phase: str) -> str:
    for part, part_phase, pattern in PARTS:
        if part_phase == phase and re.search(pattern, name):
            return part
    return f"{phase}: other"


def profile(trainer, iterations: int) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile as torch_profile

    parts: dict[str, float] = defaultdict(float)
    kernels: dict[str, float] = defaultdict(float)
    walls = defaultdict(float)
    for _ in range(iterations):
        for phase, work in (("rollout", trainer.rollout), ("learn", trainer.learn)):
            torch.cuda.synchronize()
            with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
                t0 = time.perf_counter()
                work()
                torch.cuda.synchronize()
                walls[phase] += time.perf_counter() - t0
            for name, us in _kernel_rows(prof):
                parts[classify(name, phase)] += us / 1e3 / iterations
                kernels[f"{phase}: {name[:110]}"] += us / 1e3 / iterations
            if phase == "rollout":
                trainer._episodes()  # what iterate() does between the two (a host read)
    # GAE runs inside the rollout's last graph: timed on its own, eagerly, after the profile
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        trainer._gae()
    end.record()
    torch.cuda.synchronize()
    gae_ms = start.elapsed_time(end) / 5
    return dict(parts=dict(parts), kernels=dict(sorted(kernels.items(), key=lambda kv: -kv[1])[:30]),
                rollout_wall_ms=walls["rollout"] * 1e3 / iterations, learn_wall_ms=walls["learn"] * 1e3 / iterations,
                gae_eager_ms=gae_ms)


def table(result: dict, steps_per_iteration: int) -> str:
    parts = result["parts"]
    wall = result["rollout_wall_ms"] + result["learn_wall_ms"]
    lines = ["| part | kernel ms / iteration | share of kernel time |", "| --- | ---: | ---: |"]
    total = sum(parts.values())
    order = [p for p, _, _ in PARTS] + sorted(set(parts) - {p for p, _, _ in PARTS})
    for part in dict.fromkeys(order):
        if parts.get(part, 0.0) > 0:
            lines.append(f"| {part} | {parts[part]:.2f} | {100 * parts[part] / total:.1f}% |")
    lines.append(f"| all kernels | {total:.2f} | 100% |")
    lines.append("")
    lines.append(f"Wall: rollout {result['rollout_wall_ms']:.1f} ms, update {result['learn_wall_ms']:.1f} ms, "
                 f"{wall:.1f} ms an iteration of {steps_per_iteration:,} env steps = "
                 f"{steps_per_iteration / wall / 1e3:.2f} M training steps/s under the profiler; "
                 f"GAE alone (eager) {result['gae_eager_ms']:.2f} ms.")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", default="fast")
    parser.add_argument("--warmup", type=int, default=3, help="iterations before the profile (graphs captured)")
    parser.add_argument("--iterations", type=int, default=2, help="iterations profiled")
    parser.add_argument("--out", help="write the parts, top kernels and table as JSON here")
    parser.add_argument("train_flags", nargs="*", help="`pycraftax train` flags after --, e.g. -- --width 512")
    args = parser.parse_args(argv)
    import torch

    from pycraftax.train.cli import add_train_args, config_from_args
    from pycraftax.train.torch_trainer import TorchTrainer

    if not torch.cuda.is_available():
        print("profile_iteration.py profiles GPU kernels: PyTorch sees no CUDA GPU", file=sys.stderr)
        return 2
    train_parser = argparse.ArgumentParser()
    add_train_args(train_parser)
    targs = train_parser.parse_args(["--recipe", args.recipe, *args.train_flags])
    config = config_from_args(targs)
    trainer = TorchTrainer(config, out_dir=None, device="cuda")
    for _ in range(args.warmup):
        trainer.iterate()
    result = profile(trainer, args.iterations)
    text = table(result, config.steps_per_update)
    print(f"recipe {args.recipe} {' '.join(args.train_flags)}: {config.num_envs:,} envs x {config.num_steps} steps, "
          f"{config.update_epochs} epochs x {config.num_minibatches} minibatches, {torch.cuda.get_device_name()}")
    print(text)
    print("\ntop kernels (ms / iteration):")
    for name, ms in list(result["kernels"].items())[:20]:
        print(f"  {ms:8.3f}  {name}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(result, table=text, recipe=args.recipe, flags=args.train_flags), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

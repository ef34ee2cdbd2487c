"""`pycraftax train` and `pycraftax eval`: their options, the config built from them and the
commands (pycraftax/cli.py wires them into the `pycraftax` parser).

The recipe is always explicit: `--recipe` (default "small", the CPU job) picks the sizes,
flags override single fields, and the recipe in effect is printed with its values at the
start. The backend (`--backend`) chooses where to train, never what.

The engines: the NumPy trainer (trainer.py) for model gru in one process on the CPU
(`--backend c`), the PyTorch engine (torch_trainer.py) for everything else: the GPU (`--backend
cuda`), the cell models (cell-gru, cell-mingru), and runs of several processes. Several
processes: `--gpus N` runs torchrun on this host (`torchrun --standalone --nproc-per-node N -m
pycraftax train ...`); a process started with torchrun's variables (by `--gpus`, torchrun or a
scheduler) is one rank of the run (distributed.py): the recipe's envs and env steps are split
over the ranks, rank 0 prints, logs and checkpoints.

A new run never writes over another: an --out that holds a run's files is refused (the
message says how to resume it) unless --force, which deletes those files first. Outputs and
inputs are checked before any training starts.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from pycraftax.progress import format_duration
from pycraftax.registry import list_envs
from pycraftax.train.config import CELL_MODELS, DEFAULT_RECIPE, DTYPES, MODELS, RECIPES, RESETS, TrainConfig

# TrainConfig fields with a flag of their own (anneal_lr has --no-anneal-lr)
CONFIG_FLAGS = ("total_timesteps", "num_envs", "num_steps", "update_epochs", "num_minibatches", "width", "hidden",
                "lr", "gamma", "gae_lambda", "clip_eps", "ent_coef", "vf_coef", "max_grad_norm", "seed", "dtype",
                "checkpoint_every", "resets", "env_id", "model", "cell_dim")
FLAG_CHOICES = {"dtype": DTYPES, "resets": RESETS, "env_id": tuple(list_envs()), "model": MODELS}
FLAG_NAMES = {"env_id": "--env"}
BACKENDS = ("auto", "cuda", "c")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's "(default: X)" after every option's help, unless the help already says
    its default in words (options whose default depends on others) or it is a switch."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default is None or isinstance(action.default, bool) or action.required:
            return text
        return super()._get_help_string(action)


def _int_arg(text: str) -> int:
    """An integer, also written like 1e6."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not math.isfinite(v) or v != int(v):
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
    return int(v)


def _flag(name: str) -> str:
    return FLAG_NAMES.get(name, "--" + name.replace("_", "-"))


def _recipe_help() -> str:
    return "; ".join(f"{name}: {describe_sizes(TrainConfig.from_recipe(name))}" for name in RECIPES)


def describe_sizes(c: TrainConfig) -> str:
    model = f"model {c.model}" + (f" (cell_dim {c.cell_dim})" if c.model in CELL_MODELS else "")
    return (f"{c.num_envs} envs x {c.num_steps} steps, {c.update_epochs} epochs x {c.num_minibatches} minibatches, "
            f"{model}, width {c.width}, hidden {c.hidden}, {c.total_timesteps:,} env steps")


def add_train_args(p) -> None:
    defaults = TrainConfig()
    p.add_argument("--recipe", choices=tuple(RECIPES), default=DEFAULT_RECIPE,
                   help=f"the sizes to train with, any field overridden by its own flag ({_recipe_help()})")
    for name in CONFIG_FLAGS:
        if name in RECIPES[DEFAULT_RECIPE]:
            default = "default: the recipe's (" + ", ".join(f"{r} {RECIPES[r][name]:,}" for r in RECIPES) + ")"
        else:
            default = f"default: {getattr(defaults, name)}"
        kind = {str: str, int: _int_arg, float: float}[type(getattr(defaults, name))]
        # dest cfg_<name>: None means "not given", so the recipe's value stands
        metavar = name.upper()
        if name in FLAG_CHOICES:  # checked by TrainConfig, whose error names the allowed values
            default = f"{' or '.join(FLAG_CHOICES[name])} ({default})"
            metavar = "{" + ",".join(FLAG_CHOICES[name]) + "}"
        p.add_argument(_flag(name), dest="cfg_" + name, metavar=metavar, type=kind, default=None, help=default)
    p.add_argument("--no-anneal-lr", action="store_true", help="constant learning rate (default: annealed linearly)")
    p.add_argument("--deterministic", action="store_true",
                   help="PyTorch trainer: a bitwise-repeatable run for the seed on the same GPU model (deterministic "
                        "kernels; costs some speed, see docs/TRAINING.md) (default: off)")
    p.add_argument("--backend", choices=BACKENDS, default="auto",
                   help="where to train, never what (the recipe does not depend on it): cuda: PyTorch on the GPU "
                        "with the CUDA env; c: the CPU with the C env (NumPy for model gru in one process, else "
                        "PyTorch); auto: cuda where PyTorch sees a GPU, the CUDA library loads and the env has a "
                        "CUDA build, else c")
    p.add_argument("--no-tf32", action="store_true",
                   help="model gru on the GPU: exact fp32 GEMMs (default: TF32 GEMMs)")
    p.add_argument("--out", default=None, help="output directory (default: runs/ppo-rnn-seed<seed>)")
    p.add_argument("--force", action="store_true",
                   help="replace the run already in --out (default: refuse to start over an existing run)")
    p.add_argument("--resume", default=None, metavar="CHECKPOINT",
                   help="continue a run bit-exactly from its checkpoint.npz, with the checkpoint's config "
                        "(default: start a new run)")
    p.add_argument("--time-limit", type=float, default=None, metavar="MINUTES",
                   help="stop with a checkpoint before an update would end past this many minutes (continue "
                        "with --resume); SIGTERM and Ctrl-C also stop after the current update with a checkpoint "
                        "(default: no limit)")
    p.add_argument("--gpus", type=int, default=None, metavar="N",
                   help="train on N GPUs of this host: runs torchrun --standalone --nproc-per-node N with these "
                        "options, one process per GPU, the recipe's envs and env steps split over them, gradients "
                        "averaged over NCCL; needs --backend cuda (default: one GPU, or the world that torchrun's "
                        "RANK/WORLD_SIZE variables describe)")
    p.add_argument("--blas-threads", type=int, default=1, help="OpenBLAS threads (see trainer.set_blas_threads)")
    p.add_argument("--quiet", action="store_true", help="no progress display (default: a bar on a terminal, "
                   "a line every 30 s otherwise)")


def given_fields(args) -> dict:
    """The TrainConfig fields set by flags."""
    given = {n: getattr(args, "cfg_" + n) for n in CONFIG_FLAGS if getattr(args, "cfg_" + n) is not None}
    if args.no_anneal_lr:
        given["anneal_lr"] = False
    if getattr(args, "deterministic", False):
        given["deterministic"] = True
    return given


def config_from_args(args) -> TrainConfig:
    return TrainConfig.from_recipe(args.recipe, **given_fields(args))


def describe_recipe(args) -> str:
    """The recipe with its values, the default and how to pick another, and the flags that
    override it."""
    others = " or ".join(f"--recipe {r}" for r in RECIPES if r != args.recipe)
    default = "the default" if args.recipe == DEFAULT_RECIPE else f"the default is {DEFAULT_RECIPE}"
    text = (f"recipe {args.recipe} ({default}; {others} for another, see --help): "
            f"{describe_sizes(TrainConfig.from_recipe(args.recipe))}")
    given = given_fields(args)
    if given:
        text += "\n  overridden by flags: " + ", ".join(f"{_flag(k)} {v}" for k, v in given.items()
                                                      if k != "anneal_lr")
        if "anneal_lr" in given:
            text += (", " if len(given) > 1 else "") + "--no-anneal-lr"
    return text


def resolve_backend(args) -> str:
    """"cuda" or "c": where this run trains (--backend, with auto resolved); ValueError where the
    GPU was asked for and cannot be used."""
    from pycraftax.train import torch_trainer

    env_id = config_from_args(args).env_id
    cuda_ids = list_envs(backend="cuda")  # the ids with a CUDA env
    if args.backend == "auto":
        if env_id in cuda_ids and torch_trainer.default_device() == "cuda":
            return "cuda"
        reason = torch_trainer.unavailable_reason("cuda")
        if reason and "pip install torch" in reason:
            from pycraftax import cuda_env

            if cuda_env.available():  # a GPU this run could use, but for PyTorch
                print(f"pycraftax train: training on the CPU: {reason} to train on the GPU", file=sys.stderr)
        return "c"
    if args.backend == "cuda":
        reason = torch_trainer.unavailable_reason("cuda")
        if reason:
            raise ValueError(f"--backend cuda: {reason}")
        if env_id not in cuda_ids:
            raise ValueError(f"--backend cuda: {env_id} has no CUDA env in this build (CUDA envs: {cuda_ids}); "
                             "use --backend c")
    return args.backend


class stop_on_signals:
    """While training: the first SIGTERM (batch schedulers send it before the kill) or Ctrl-C
    asks the trainer to finish its update and checkpoint; a second Ctrl-C interrupts at once,
    unless `interrupt` is False (a rank of several: torchrun passes on the Ctrl-C the ranks already
    had from the terminal, and they must all reach the same update's end)."""

    def __init__(self, trainer, interrupt: bool = True):
        self.trainer, self.saved, self.interrupt = trainer, {}, interrupt

    def _handle(self, signum, frame):
        import signal

        if self.trainer.stop_reason is not None:
            if signum == signal.SIGINT and self.interrupt:
                raise KeyboardInterrupt
            return
        self.trainer.request_stop(signal.Signals(signum).name)
        sys.stderr.write(f"\n{signal.Signals(signum).name}: stopping after this update with a checkpoint\n")

    def __enter__(self):
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self.saved[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        import signal

        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        return False


def _check_out_dir(out: str, force: bool, keep_dir: str | None = None) -> None:
    """Refuse to start over another run in `out` unless `force` (then its files go), and check
    that `out` is a writable directory. `keep_dir`: the directory of the run being resumed."""
    from pycraftax.paths import output_dir_problem
    from pycraftax.train.loop import existing_run_files

    same = keep_dir is not None and os.path.abspath(out) == os.path.abspath(keep_dir)
    found = [] if same or not os.path.isdir(out) else existing_run_files(out)
    if found and not force:
        raise ValueError(f"{out} already holds a run ({', '.join(found)}): continue it with --resume "
                         f"{os.path.join(out, 'checkpoint.npz')}, choose another --out, or replace it with --force")
    problem = output_dir_problem(out)
    if problem:
        raise ValueError(f"--out: {problem}")
    for name in found:
        os.remove(os.path.join(out, name))


def closing_summary(trainer, start_update: int, seconds: float) -> str:
    """The run's first closing line (how far, how fast); env steps and steps/s count all ranks.
    The score follows it, once, as summary.report gives it."""
    c = trainer.config
    steps = (trainer.update - start_update) * c.steps_per_update
    state = "done" if trainer.stop_reason is None else f"stopped ({trainer.stop_reason})"
    return (f"{state}: {trainer.update:,}/{c.num_updates:,} updates, {steps:,} env steps in "
            f"{format_duration(seconds)} ({steps / max(seconds, 1e-9):,.0f} steps/s)")


def written_files(out_dir: str) -> str:
    """The closing line that lists every file the run has in out_dir now (a stopped run has no
    params.npz yet: it comes with the last update)."""
    from pycraftax.train.loop import existing_run_files

    names = existing_run_files(out_dir)
    return "files: " + (", ".join(os.path.join(out_dir, name) for name in names) if names else "none")


def rank_argv(args, out: str) -> list[str]:
    """The `pycraftax train` options that give every rank this command's run: every option as
    parsed, --out resolved, --gpus left out (each rank is one of the N)."""
    argv = ["train", "--recipe", args.recipe, "--backend", args.backend, "--out", out, "--blas-threads",
            str(args.blas_threads)]
    for name in CONFIG_FLAGS:
        value = getattr(args, "cfg_" + name)
        if value is not None:
            argv += [_flag(name), repr(value) if isinstance(value, float) else str(value)]
    for switch in ("no_anneal_lr", "deterministic", "no_tf32", "force", "quiet"):
        if getattr(args, switch):
            argv.append(_flag(switch))
    if args.resume:
        argv += ["--resume", args.resume]
    if args.time_limit is not None:
        argv += ["--time-limit", repr(args.time_limit)]
    return argv


def _checkpoint_backend(path: str) -> str:
    from pycraftax.train.loop import read_checkpoint

    return read_checkpoint(path)["meta"].get("backend", "c")


def _check_gpus(args, world) -> None:
    """--gpus: an integer >= 1, with the GPU backend, no more than PyTorch sees, and inside a
    torchrun world the world's size."""
    if args.gpus is None:
        return
    if args.gpus < 1:
        raise ValueError(f"--gpus must be an integer >= 1, got {args.gpus}")
    if world.world_size > 1:
        if args.gpus != world.world_size:
            raise ValueError(f"--gpus {args.gpus} inside a run of WORLD_SIZE={world.world_size} ranks (torchrun or a "
                             "scheduler set it): drop --gpus, the launcher already chose the GPUs")
        return
    if args.backend != "cuda" and not (args.backend == "auto" and _visible_gpus() > 0):
        raise ValueError(f"--gpus {args.gpus}: training on GPUs needs --backend cuda, not --backend {args.backend}")
    visible = _visible_gpus()
    if visible < args.gpus:
        raise ValueError(f"--gpus {args.gpus}: PyTorch sees {visible} GPU(s) (CUDA_VISIBLE_DEVICES="
                         f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}); ask for at most {visible}")


def _visible_gpus() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count()


def cmd_train(args) -> int:
    from pycraftax.train import distributed

    world = distributed.World()
    try:
        world = distributed.World.from_environ()
        if world.world_size > 1:
            distributed.bind_local_device(world)  # before anything touches CUDA: this rank's GPU is its device 0
        _check_gpus(args, world)
        if args.time_limit is not None and not (math.isfinite(args.time_limit) and args.time_limit > 0):
            raise ValueError(f"--time-limit must be a positive number of minutes, got {args.time_limit}")
        launching = world.world_size == 1 and (args.gpus or 1) > 1
        if args.resume:
            explicit = [_flag(n) for n in CONFIG_FLAGS if getattr(args, "cfg_" + n) is not None]
            if args.no_anneal_lr:
                explicit.append("--no-anneal-lr")
            if args.recipe != DEFAULT_RECIPE:
                explicit.append("--recipe")
            if explicit:
                raise ValueError("--resume continues with the checkpoint's own config; drop " + ", ".join(explicit))
            resume_dir = os.path.dirname(os.path.abspath(args.resume))
            out = args.out or resume_dir
            if world.is_main:
                if not os.path.exists(args.resume):
                    raise ValueError(f"--resume: no checkpoint at {args.resume}")
                if _checkpoint_backend(args.resume) == "c" and (world.world_size > 1 or launching):
                    raise ValueError(f"--resume {args.resume}: a checkpoint of the NumPy trainer resumes in one "
                                     "process on the CPU (--backend c, no --gpus)")
                _check_out_dir(out, args.force, keep_dir=resume_dir)
            backend = args.backend if launching else resolve_backend(args)
        else:
            config = config_from_args(args)
            # the launcher itself leaves CUDA alone: its ranks load it, each on its own GPU
            backend = args.backend if launching else resolve_backend(args)
            out = args.out or f"runs/ppo-rnn-seed{config.seed}"
            if world.is_main:
                _check_out_dir(out, args.force)
    except ValueError as e:  # interop.NotACheckpointError and RendezvousError included
        where = f" (rank {world.rank})" if world.rank else ""
        print(f"pycraftax train{where}: error: {e}", file=sys.stderr)
        return 2
    if launching:
        return _launch(args.gpus, rank_argv(args, out))
    if world.world_size > 1:
        return _train_rank(args, world, out, backend)
    return _train(args, out, backend)


def _launch(gpus: int, argv: list[str]) -> int:
    """torchrun's own entry point (torch.distributed.run.main) in this process, as
    `torchrun --standalone --nproc-per-node N -m pycraftax <argv>` (distributed.torchrun_command).
    A rank that fails ends the others (torchrun prints which); a Ctrl-C or SIGTERM stops every rank
    after the same update with a checkpoint. Returns 0, 1 (a rank failed) or 128 + the signal."""
    import signal

    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import main as torchrun

    from pycraftax.train import distributed

    sys.stdout.flush()
    try:
        torchrun(distributed.torchrun_command(gpus, argv)[3:])
    except SignalException as e:
        name = signal.Signals(int(e.sigval)).name
        print(f"pycraftax train: {name}: the ranks stopped after an update with a checkpoint", file=sys.stderr)
        return 128 + int(e.sigval)
    except ChildFailedError:
        return 1  # torchrun has printed the failed rank and its error
    return 0


def _train(args, out: str, backend: str) -> int:
    """One process: the NumPy trainer or the PyTorch engine."""
    from pycraftax.train.trainer import set_blas_threads

    set_blas_threads(args.blas_threads)
    try:
        trainer = _make_trainer(args, out, backend)
    except (ValueError, MemoryError, RuntimeError) as e:  # a run too large for the memory, an unusable device
        print(f"pycraftax train: error: {e}", file=sys.stderr)
        return 2
    _run_and_report(args, trainer)
    return 0


def _uses_numpy_trainer(args, backend: str) -> bool:
    """Model gru on the CPU in one process trains with the NumPy reference."""
    if args.resume:
        return _checkpoint_backend(args.resume) == "c"
    return backend == "c" and config_from_args(args).model == "gru"


def _make_trainer(args, out: str | None, backend: str, group=None):
    """The trainer of a new or resumed run; with a group, this rank's (out None on ranks > 0)."""
    if group is None and _uses_numpy_trainer(args, backend):
        from pycraftax.train.trainer import Trainer

        if args.resume:
            trainer = Trainer.resume(args.resume, out_dir=out)
            _print_resumed(args.resume, trainer)
        else:
            print(describe_recipe(args))
            trainer = Trainer(config_from_args(args), out)
        return trainer
    from pycraftax.train.torch_trainer import TorchTrainer

    main = group is None or group.rank == 0
    options = dict(tf32=not args.no_tf32, group=group, device="cuda" if backend == "cuda" else "cpu")
    if args.resume:
        trainer = TorchTrainer.resume(args.resume, out_dir=out if main else None, **options)
        if main:
            _print_resumed(args.resume, trainer, "the envs start new episodes (the checkpoint holds the learner)")
    else:
        if main:
            print(describe_recipe(args))
        trainer = TorchTrainer(config_from_args(args), out if main else None, **options)
    return trainer


def _train_rank(args, world, out: str, backend: str) -> int:
    """One rank of a run over several processes. A rank that fails says so and exits at once
    (os._exit: no clean goodbye that could wait on the others), which ends the others: torchrun
    stops them, and without it their next collective fails or times out."""
    from pycraftax.train import distributed
    from pycraftax.train.trainer import set_blas_threads

    set_blas_threads(args.blas_threads)
    group = None
    try:
        group = distributed.Group(world, "cuda" if backend == "cuda" else "cpu")
        trainer = _make_trainer(args, out, backend, group)
        _run_and_report(args, trainer, quiet=not world.is_main)
    except Exception as e:  # noqa: BLE001 - every failure of a rank ends it the same way
        print(f"pycraftax train (rank {world.rank} of {world.world_size}): error: {type(e).__name__}: {e}",
              file=sys.stderr)
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(2 if isinstance(e, ValueError) else 1)
    group.close()
    return 0


def _print_resumed(path: str, trainer, note: str | None = None) -> None:
    config = trainer.config
    print(f"resumed {path} at update {trainer.update:,}/{config.num_updates:,}: {describe_sizes(config)}")
    if note:
        print(f"  {note}")


def _print_rules_note(env_id: str) -> None:
    """On modified rules, say so (results then belong to the variant, not to the released game)."""
    from pycraftax import rules

    note = rules.modified_note()
    if note:
        print(f"{note}: not the released game; results are {rules.variant_id(env_id)}'s")


def _run_and_report(args, trainer, quiet: bool = False) -> None:
    """Train with the signal handlers on; rank 0 (quiet False) prints the run's summary."""
    from pycraftax.train.loop import now

    config = trainer.config
    if not quiet:
        ranks = f" over {trainer.world_size} ranks of {trainer.local_envs} envs" if trainer.world_size > 1 else ""
        print(f"{trainer.TITLE} ({config.dtype}) on {config.env_id} ({trainer.env.backend} env): "
              f"{describe_sizes(config)}{ranks}, {config.num_updates:,} updates -> {trainer.out_dir}")
        _print_rules_note(config.env_id)
    t0 = now()
    start_update = trainer.update
    with stop_on_signals(trainer, interrupt=trainer.world_size == 1):
        trainer.run(progress=not (args.quiet or quiet),
                    time_limit_s=None if args.time_limit is None else 60.0 * args.time_limit)
    if quiet:
        return
    print(closing_summary(trainer, start_update, now() - t0))
    metrics_path = os.path.join(trainer.out_dir, "metrics.jsonl")
    if trainer.update > 0 and os.path.exists(metrics_path) and os.path.getsize(metrics_path):  # a line to sum up
        from pathlib import Path

        from pycraftax.train import summary

        print(summary.report(summary.summarize(summary.load(Path(metrics_path)))))
    if trainer.stop_reason is not None:
        print(f"continue with: pycraftax train --resume {os.path.join(trainer.out_dir, 'checkpoint.npz')}")
    print(written_files(trainer.out_dir))


def add_policy_args(p, required: bool) -> None:
    """--checkpoint FILE or --pretrained NAME (pycraftax.pretrained)."""
    from pycraftax import pretrained

    group = p.add_mutually_exclusive_group(required=required)
    default = "default: none, one of the two is required" if required else "default: random actions"
    group.add_argument("--checkpoint", default=None,
                       help=f"checkpoint.npz or params.npz of `pycraftax train` ({default})")
    group.add_argument("--pretrained", default=None, choices=pretrained.names(),
                       help=f"a policy shipped with pycraftax, pycraftax/pretrained.py says how each was trained "
                            f"({default})")


def policy_from_args(args):
    """(weights or None, description) of --checkpoint / --pretrained; ValueError with the message to print."""
    from pycraftax import pretrained
    from pycraftax.train.evaluation import load_policy

    if args.pretrained is not None:
        return pretrained.load(args.pretrained), f"pretrained {args.pretrained}"
    if args.checkpoint is None:
        return None, "random actions"
    if not os.path.exists(args.checkpoint):
        raise ValueError(f"no file {args.checkpoint}")
    return load_policy(args.checkpoint), args.checkpoint


def add_eval_args(p) -> None:
    add_policy_args(p, required=True)
    p.add_argument("--episodes", type=int, default=32, help="complete episodes to run")
    p.add_argument("--num-envs", type=int, default=16,
                   help="envs run at once (speed only: episode i's world and random draws depend on the seed and i)")
    p.add_argument("--seed", type=int, default=1000, help="seed of the worlds, env steps and action sampling")
    p.add_argument("--greedy", action="store_true", help="argmax actions (default: sampled)")
    p.add_argument("--max-steps", type=int, default=100_000, help="step cap per round of num-envs episodes")
    p.add_argument("--json", action="store_true", help="print the result as JSON (default: text)")
    p.add_argument("--blas-threads", type=int, default=1, help="OpenBLAS threads")


def cmd_eval(args) -> int:
    import json

    from pycraftax.train.evaluation import evaluate
    from pycraftax.train.trainer import set_blas_threads

    try:
        params, _ = policy_from_args(args)
    except ValueError as e:  # interop.NotACheckpointError included
        print(f"pycraftax eval: error: {e}", file=sys.stderr)
        return 2
    set_blas_threads(args.blas_threads)
    try:
        res = evaluate(params, num_episodes=args.episodes, num_envs=args.num_envs, seed=args.seed,
                       greedy=args.greedy, max_steps=args.max_steps, progress=not args.json)
    except ValueError as e:  # a policy of an input size no env has
        print(f"pycraftax eval: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(res))
        return 0
    if not res["episodes"]:
        print("no episode finished within the step limit")
        return 1
    _print_rules_note(res["env_id"])
    print(f"{res['env_id']}, {res['episodes']:,} episodes: return {res['return_mean']:.2f} +- {res['return_std']:.2f}, "
          f"length {res['length_mean']:,.0f}")
    for name, rate in sorted(res["achievements"].items(), key=lambda kv: -kv[1]):
        if rate > 0:
            print(f"  {name:<24} {100 * rate:5.1f}%")
    return 0

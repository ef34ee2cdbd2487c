"""`pycraftax train` and `pycraftax eval`: their options, the config built from them and the
commands (pycraftax/cli.py wires them into the `pycraftax` parser).

The recipe is always explicit: `--recipe` (default "small", the CPU job) picks the sizes,
flags override single fields, and the recipe in effect is printed with its values at the
start. The backend (`--backend`) chooses where to train, never what.

Several GPUs: `--gpus N` (with `--backend cuda`) starts one `python -m pycraftax train`
process per GPU of this host with the torchrun variables set (distributed.launch); a process
started with those variables (by that launcher, torchrun or a scheduler) is one rank of the run:
rank 0 prints, logs and checkpoints, the others write only their envs' state.

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
                   help="where to train, never what (the recipe does not depend on it): cuda: the GPU trainer "
                        "(cuda/ppo_cuda.cu; model cell-gru: PyTorch on the GPU with the CUDA env); c: the CPU "
                        "(NumPy, or PyTorch for model cell-gru) with the C env; auto: cuda where a GPU, the CUDA "
                        "library and cuBLAS (cell-gru: PyTorch with CUDA) are usable and the env has a CUDA build, "
                        "else c")
    p.add_argument("--no-tf32", action="store_true", help="GPU trainer: exact fp32 GEMMs (default: TF32)")
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
                   help="train on N GPUs of this host, one process each, gradients averaged over NCCL; needs "
                        "--backend cuda; --num-envs and --total-timesteps count per GPU (default: one GPU, or the "
                        "world that torchrun's RANK/WORLD_SIZE variables describe)")
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
    from pycraftax.train import cuda_trainer

    env_id = args.cfg_env_id or TrainConfig().env_id
    cuda_ids = list_envs(backend="cuda")  # the ids with a CUDA env, which the GPU trainer runs
    fast = config_from_args(args).model in CELL_MODELS
    if args.backend == "auto":
        if fast:
            from pycraftax.train import torch_trainer

            return "cuda" if torch_trainer.default_device() == "cuda" else "c"
        return cuda_trainer.default_backend() if env_id in cuda_ids else "c"
    if args.backend == "cuda":
        if fast:
            from pycraftax.train import torch_trainer

            reason = torch_trainer.unavailable_reason("cuda")
        else:
            reason = cuda_trainer.unavailable_reason()
        if reason:
            raise ValueError(f"--backend cuda: {reason}")
        if env_id not in cuda_ids:
            raise ValueError(f"--backend cuda: {env_id} has no CUDA env in this build (CUDA envs: {cuda_ids}); "
                             "use --backend c")
    return args.backend


class stop_on_signals:
    """While training: the first SIGTERM (batch schedulers send it before the kill) or Ctrl-C
    asks the trainer to finish its update and checkpoint; a second Ctrl-C interrupts at once."""

    def __init__(self, trainer):
        self.trainer, self.saved = trainer, {}

    def _handle(self, signum, frame):
        import signal

        if self.trainer.stop_reason is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
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


def closing_summary(trainer, start_update: int, seconds: float, world_size: int = 1) -> str:
    """The run's first closing line (how far, how fast); env steps and steps/s count all
    `world_size` ranks. The score follows it, once, as summary.report gives it."""
    c = trainer.config
    steps = (trainer.update - start_update) * c.steps_per_update * world_size
    state = "done" if trainer.stop_reason is None else f"stopped ({trainer.stop_reason})"
    return (f"{state}: {trainer.update:,}/{c.num_updates:,} updates, {steps:,} env steps in "
            f"{format_duration(seconds)} ({steps / max(seconds, 1e-9):,.0f} steps/s)")


def written_files(out_dir: str) -> str:
    """The closing line that lists every file the run has in out_dir now (a stopped run has no
    params.npz yet: it comes with the last update)."""
    from pycraftax.train.loop import existing_run_files

    names = existing_run_files(out_dir)
    return "files: " + (", ".join(os.path.join(out_dir, name) for name in names) if names else "none")


TRAIN_COMMAND = (sys.executable, "-m", "pycraftax", "train")  # what the launcher runs on every rank


def rank_argv(args, out: str) -> list[str]:
    """The `pycraftax train` options that give a rank this command's run: every option as
    parsed, --out resolved, --gpus left out (each rank is one of the N)."""
    argv = ["--recipe", args.recipe, "--backend", args.backend, "--out", out, "--blas-threads", str(args.blas_threads)]
    for name in CONFIG_FLAGS:
        value = getattr(args, "cfg_" + name)
        if value is not None:
            argv += [_flag(name), repr(value) if isinstance(value, float) else str(value)]
    for switch in ("no_anneal_lr", "no_tf32", "force", "quiet"):
        if getattr(args, switch):
            argv.append(_flag(switch))
    if args.resume:
        argv += ["--resume", args.resume]
    if args.time_limit is not None:
        argv += ["--time-limit", repr(args.time_limit)]
    return argv


def _check_world(args, rdv, backend: str) -> None:
    """--gpus, and a rendezvous of several ranks, need the CUDA trainer (`backend`: the one this
    run would use); a launch needs as many GPUs visible."""
    several = args.gpus is not None or rdv.world_size > 1
    if several and not args.resume and config_from_args(args).model != "gru":
        raise ValueError("--gpus / several ranks: the fast recipe (model cell-gru) trains on one GPU; several GPUs "
                         "train model gru (the CUDA trainer)")
    if several and backend != "cuda":
        what = f"--gpus {args.gpus}" if args.gpus is not None else f"WORLD_SIZE={rdv.world_size}"
        given = f"a checkpoint of the {backend!r} trainer" if args.resume else f"--backend {args.backend}"
        raise ValueError(f"{what}: training on GPUs needs --backend cuda, not {given}")
    if rdv.world_size == 1 and (args.gpus or 1) > 1:
        from pycraftax.train import cuda_trainer

        visible = cuda_trainer.visible_gpu_count()
        if visible < args.gpus:
            raise ValueError(f"--gpus {args.gpus}: the CUDA driver sees {visible} GPU(s) (CUDA_VISIBLE_DEVICES="
                             f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}); ask for at most {visible}")


def cmd_train(args) -> int:
    from pycraftax.train import distributed
    from pycraftax.train.loop import read_checkpoint

    rank = 0
    try:
        if args.gpus is not None and args.gpus < 1:
            raise ValueError(f"--gpus must be an integer >= 1, got {args.gpus}")
        rdv = distributed.Rendezvous.from_environ()
        rank = rdv.rank
        if rdv.world_size > 1 and args.gpus is not None and args.gpus != rdv.world_size:
            raise ValueError(f"--gpus {args.gpus} inside a run of WORLD_SIZE={rdv.world_size} ranks (torchrun or a "
                             "scheduler set it): drop --gpus, the launcher already chose the GPUs")
        if rdv.world_size > 1:
            distributed.bind_local_device(rdv)  # before anything touches CUDA: this rank's GPU is its device 0
        if args.time_limit is not None and not (math.isfinite(args.time_limit) and args.time_limit > 0):
            raise ValueError(f"--time-limit must be a positive number of minutes, got {args.time_limit}")
        launching = rdv.world_size == 1 and (args.gpus or 1) > 1
        if args.resume:
            explicit = [_flag(n) for n in CONFIG_FLAGS if getattr(args, "cfg_" + n) is not None]
            if args.no_anneal_lr:
                explicit.append("--no-anneal-lr")
            if args.recipe != DEFAULT_RECIPE:
                explicit.append("--recipe")
            if explicit:
                raise ValueError("--resume continues with the checkpoint's own config; drop " + ", ".join(explicit))
            if not os.path.exists(args.resume):
                raise ValueError(f"--resume: no checkpoint at {args.resume}")
            backend = read_checkpoint(args.resume)["meta"].get("backend", "c")
            _check_world(args, rdv, backend)
            resume_dir = os.path.dirname(os.path.abspath(args.resume))
            out = args.out or resume_dir
            if rank == 0:
                _check_out_dir(out, args.force, keep_dir=resume_dir)
        else:
            config = config_from_args(args)
            # the launcher itself leaves CUDA alone: its ranks load it, each on its own GPU
            backend = args.backend if launching else resolve_backend(args)
            _check_world(args, rdv, backend)
            out = args.out or f"runs/ppo-rnn-seed{config.seed}"
            if rank == 0:
                _check_out_dir(out, args.force)
    except ValueError as e:  # interop.NotACheckpointError and RendezvousError included
        where = f" (rank {rank})" if rank else ""
        print(f"pycraftax train{where}: error: {e}", file=sys.stderr)
        return 2
    if launching:
        return _launch(args.gpus, [*TRAIN_COMMAND, *rank_argv(args, out)])
    if rdv.world_size > 1:
        return _train_rank(args, rdv, out, backend)
    return _train(args, out, backend)


def _launch(gpus: int, argv: list[str]) -> int:
    """distributed.launch, with Ctrl-C left to the ranks: they share the terminal's process group,
    so each gets it and they stop together after an update with a checkpoint (a second Ctrl-C
    interrupts them). SIGTERM to the launcher ends it, and launch passes it on to the ranks."""
    import signal
    import threading

    from pycraftax.train import distributed

    def terminate(signum, frame):
        raise SystemExit(128 + signum)

    if threading.current_thread() is not threading.main_thread():
        return distributed.launch(gpus, argv)
    # a Python handler, not SIG_IGN: the ranks would inherit an ignored SIGINT through exec
    saved = {signal.SIGINT: signal.signal(signal.SIGINT, lambda signum, frame: None),
             signal.SIGTERM: signal.signal(signal.SIGTERM, terminate)}
    try:
        return distributed.launch(gpus, argv)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _train(args, out: str, backend: str) -> int:
    """One process: the CPU or the CUDA trainer."""
    from pycraftax.train.trainer import set_blas_threads

    set_blas_threads(args.blas_threads)
    try:
        trainer = _make_trainer(args, out, backend)
    except (ValueError, MemoryError) as e:  # ReshardError included; a run too large for the memory
        print(f"pycraftax train: error: {e}", file=sys.stderr)
        return 2
    if trainer is None:
        return 2
    _run_and_report(args, trainer, 1)
    return 0


def _make_trainer(args, out: str, backend: str):
    """The trainer of a new or resumed run (None, having said why, where it cannot run)."""
    from pycraftax.train.trainer import Trainer

    if backend == "torch" or (not args.resume and config_from_args(args).model in CELL_MODELS):
        from pycraftax.train.torch_trainer import TorchTrainer, unavailable_reason

        if args.resume:
            trainer = TorchTrainer.resume(args.resume, out_dir=out)
            _print_resumed(args.resume, trainer, "the envs start new episodes (the checkpoint holds the learner)")
        else:
            device = "cuda" if backend == "cuda" else "cpu"
            reason = unavailable_reason(device)
            if reason:
                print(f"pycraftax train: error: {reason}", file=sys.stderr)
                return None
            print(describe_recipe(args))
            trainer = TorchTrainer(config_from_args(args), out, device=device)
    elif backend == "cuda":
        from pycraftax.train import cuda_trainer

        options = dict(tf32=not args.no_tf32)
        if args.resume:
            trainer, note = cuda_trainer.resume_rank(args.resume, out, **options)
            _print_resumed(args.resume, trainer, note)
        else:
            print(describe_recipe(args))
            trainer = cuda_trainer.start_rank(config_from_args(args), out, **options)
    elif args.resume:
        trainer = Trainer.resume(args.resume, out_dir=out)
        _print_resumed(args.resume, trainer, None)
    else:
        print(describe_recipe(args))
        trainer = Trainer(config_from_args(args), out)
    return trainer


def _train_rank(args, rdv, out: str, backend: str) -> int:
    """One rank of a run over several GPUs. A rank that fails exits without leaving the group, so
    the store sees it die and the other ranks stop with RankFailedError (or, inside an iteration,
    NCCL's error at the trainer's timeout) instead of waiting."""
    from pycraftax.train import cuda_trainer, distributed
    from pycraftax.train.trainer import set_blas_threads

    set_blas_threads(args.blas_threads)
    try:
        group = distributed.init_process_group(rdv)
        options = dict(tf32=not args.no_tf32)
        if args.resume:
            trainer, note = cuda_trainer.resume_rank(args.resume, out, rdv.rank, rdv.world_size, group, **options)
            if rdv.is_main:
                _print_resumed(args.resume, trainer, note)
        else:
            if rdv.is_main:
                print(describe_recipe(args))
            trainer = cuda_trainer.start_rank(config_from_args(args), out, rdv.rank, rdv.world_size, group,
                                              **options)
        _run_and_report(args, trainer, rdv.world_size, quiet=not rdv.is_main)
    except Exception as e:  # noqa: BLE001 - every failure of a rank ends it the same way
        print(f"pycraftax train (rank {rdv.rank} of {rdv.world_size}): error: {type(e).__name__}: {e}",
              file=sys.stderr)
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(2 if isinstance(e, ValueError) else 1)  # no clean goodbye: the others must see this rank end
    group.close()
    return 0


def _print_resumed(path: str, trainer, note: str | None) -> None:
    config = trainer.config
    print(f"resumed {path} at update {trainer.update:,}/{config.num_updates:,}: {describe_sizes(config)}")
    if note:
        print(f"  {note}")


def _run_and_report(args, trainer, world_size: int, quiet: bool = False) -> None:
    """Train with the signal handlers on; rank 0 (quiet False) prints the run's summary."""
    from pycraftax.train.loop import now

    config = trainer.config
    if not quiet:
        ranks = f" x {world_size} GPUs (per GPU)" if world_size > 1 else ""
        print(f"{trainer.TITLE} ({config.dtype}) on {config.env_id} ({trainer.BACKEND} env): "
              f"{describe_sizes(config)}{ranks}, {config.num_updates:,} updates -> {trainer.out_dir}")
    t0 = now()
    start_update = trainer.update
    with stop_on_signals(trainer):
        trainer.run(progress=not (args.quiet or quiet),
                    time_limit_s=None if args.time_limit is None else 60.0 * args.time_limit)
    if quiet:
        return
    print(closing_summary(trainer, start_update, now() - t0, world_size))
    metrics_path = os.path.join(trainer.out_dir, "metrics.jsonl")
    if trainer.update > 0 and os.path.exists(metrics_path):  # not a run stopped before its first update
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
    print(f"{res['env_id']}, {res['episodes']:,} episodes: return {res['return_mean']:.2f} +- {res['return_std']:.2f}, "
          f"length {res['length_mean']:,.0f}")
    for name, rate in sorted(res["achievements"].items(), key=lambda kv: -kv[1]):
        if rate > 0:
            print(f"  {name:<24} {100 * rate:5.1f}%")
    return 0

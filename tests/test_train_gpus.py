"""`pycraftax train --gpus N` and a rank of a multi-GPU run (pycraftax/train/cli.py, loop.py): the
argument checks, the launcher's command and variables (with a stand-in for the rank's command),
what a rank above 0 writes (its shard, nothing else), the stop decision the ranks share, and how a
checkpoint of several ranks resumes. On the CPU these drive the NumPy trainer through an in-process
stand-in for the process group; the end-to-end run needs >= 2 GPUs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from pycraftax import cli
from pycraftax.train import cli as train_cli
from pycraftax.train import cuda_trainer, interop
from pycraftax.train.distributed import ReshardError, shard_path
from pycraftax.train.loop import existing_run_files, read_checkpoint, read_rank_checkpoint
from pycraftax.train.trainer import TrainConfig, Trainer, set_blas_threads

set_blas_threads(1)
TINY = dict(total_timesteps=96, num_envs=4, num_steps=8, num_minibatches=2, update_epochs=1, width=16, hidden=8,
            checkpoint_every=2)  # 3 updates, a checkpoint at 2 and at 3
TINY_FLAGS = ["--num-envs", "4", "--num-steps", "8", "--total-timesteps", "96", "--num-minibatches", "2",
              "--update-epochs", "1", "--width", "16", "--hidden", "8"]
RENDEZVOUS = dict(RANK="1", WORLD_SIZE="2", LOCAL_RANK="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29999")


class FakeGroup:
    """What a RunLoop uses of a distributed.ProcessGroup (check, barrier, store.set/get), for one
    rank alone in this process: the other ranks' stop votes come from `votes`, {(update, rank):
    reason}, and every other rank votes to go on."""

    def __init__(self, rank: int, world_size: int, votes=None):
        self.rank, self.world_size = rank, world_size
        self.store = self
        self.votes = dict(votes or {})
        self.sent: dict[str, bytes] = {}
        self.checks = 0
        self.barriers: list[str] = []

    def check(self) -> None:
        self.checks += 1

    def barrier(self, name: str) -> None:
        self.barriers.append(name)

    def set(self, key: str, value: bytes) -> None:
        self.sent[key] = value

    def get(self, key: str) -> bytes:
        if key in self.sent:
            return self.sent[key]
        _, update, rank = key.split("/")
        return self.votes.get((int(update), int(rank)), "").encode()


def _rank(rank: int, out, votes=None, world_size: int = 2) -> tuple[Trainer, FakeGroup]:
    """Rank `rank`'s NumPy trainer of the TINY run writing into directory `out`."""
    group = FakeGroup(rank, world_size, votes)
    trainer = Trainer(TrainConfig(**TINY, seed=rank), out_dir=str(out) if rank == 0 else None)
    checkpoint = os.path.join(str(out), "checkpoint.npz")
    trainer.join_ranks(rank, world_size, group, None if rank == 0 else shard_path(checkpoint, rank))
    return trainer, group


@pytest.fixture(scope="module")
def two_rank_run(tmp_path_factory):
    """The files of the TINY run over 2 ranks: rank 0's run files and rank 1's shard."""
    out = tmp_path_factory.mktemp("two_ranks")
    for rank in (0, 1):
        trainer, _ = _rank(rank, out)
        trainer.run(progress=False)
    return out


# ---- the arguments ---------------------------------------------------------------------------------
def _error(capsys, argv) -> str:
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_gpus_must_be_positive(tmp_path, capsys):
    assert "--gpus must be an integer >= 1, got 0" in _error(capsys, ["train", "--gpus", "0", "--backend", "cuda",
                                                                     "--out", str(tmp_path)])


@pytest.mark.parametrize("backend", ["auto", "c"])
def test_gpus_needs_the_cuda_backend(backend, tmp_path, capsys):
    err = _error(capsys, ["train", "--gpus", "2", "--backend", backend, "--out", str(tmp_path)])
    assert f"--gpus 2: training on GPUs needs --backend cuda, not --backend {backend}" in err


def test_gpus_needs_a_cuda_checkpoint(two_rank_run, tmp_path, capsys):
    err = _error(capsys, ["train", "--gpus", "2", "--resume", str(two_rank_run / "checkpoint.npz"),
                          "--out", str(tmp_path)])
    assert "training on GPUs needs --backend cuda, not a checkpoint of the 'c' trainer" in err


def test_more_gpus_than_visible_is_refused(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cuda_trainer, "visible_gpu_count", lambda: 1)
    err = _error(capsys, ["train", "--gpus", "2", "--backend", "cuda", "--out", str(tmp_path)])
    assert "--gpus 2: the CUDA driver sees 1 GPU(s)" in err and "ask for at most 1" in err


def test_bad_rendezvous_variables_are_a_clear_error(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert "set WORLD_SIZE" in _error(capsys, ["train", "--backend", "c", "--out", str(tmp_path)])


def test_a_rank_needs_the_cuda_backend_and_no_other_gpus(monkeypatch, tmp_path, capsys):
    for k, v in RENDEZVOUS.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # bind_local_device narrows it; monkeypatch restores it
    assert "(rank 1): error: WORLD_SIZE=2: training on GPUs needs --backend cuda, not --backend c" in \
        _error(capsys, ["train", "--backend", "c", "--out", str(tmp_path)])
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert "--gpus 4 inside a run of WORLD_SIZE=2 ranks" in \
        _error(capsys, ["train", "--gpus", "4", "--backend", "cuda", "--out", str(tmp_path)])
    assert os.listdir(tmp_path) == []


def test_a_run_directory_with_shards_is_a_run(tmp_path, capsys):
    (tmp_path / "checkpoint.rank1.npz").write_bytes(b"")
    assert existing_run_files(str(tmp_path)) == ["checkpoint.rank1.npz"]
    err = _error(capsys, ["train", "--backend", "c", "--out", str(tmp_path), *TINY_FLAGS])
    assert "already holds a run (checkpoint.rank1.npz)" in err


# ---- the launcher ---------------------------------------------------------------------------------
RECORD_RANK = """import json, os, sys
keys = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
with open(os.path.join(os.environ["RECORD_DIR"], "rank" + os.environ["RANK"] + ".json"), "w") as f:
    json.dump(dict(argv=sys.argv[1:], env={k: os.environ.get(k) for k in keys}), f)
"""


def test_launch_runs_every_rank_with_the_torchrun_variables(monkeypatch, tmp_path):
    monkeypatch.setattr(cuda_trainer, "visible_gpu_count", lambda: 2)
    monkeypatch.setattr(train_cli, "TRAIN_COMMAND", (sys.executable, "-c", RECORD_RANK))
    monkeypatch.setenv("RECORD_DIR", str(tmp_path))
    out = tmp_path / "run"
    argv = ["train", "--gpus", "2", "--backend", "cuda", "--out", str(out), "--lr", "0.0003", "--no-tf32",
            "--time-limit", "1.5", "--quiet", *TINY_FLAGS]
    assert cli.main(argv) == 0
    records = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    ports = {rec["env"]["MASTER_PORT"] for rec in records}
    assert len(ports) == 1 and 1 <= int(ports.pop()) <= 65535
    for rank, rec in enumerate(records):
        assert {k: v for k, v in rec["env"].items() if k != "MASTER_PORT"} == dict(
            RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1")
        assert "--gpus" not in rec["argv"]
        parsed = vars(cli.build_parser().parse_args(["train", *rec["argv"]]))
        expected = vars(cli.build_parser().parse_args(argv))
        assert parsed == dict(expected, gpus=None)
    assert not out.exists() or os.listdir(out) == []


def test_launch_returns_the_failed_ranks_status(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cuda_trainer, "visible_gpu_count", lambda: 2)
    monkeypatch.setattr(train_cli, "TRAIN_COMMAND",
                        (sys.executable, "-c", "import os, sys, time\nif os.environ['RANK'] == '1': sys.exit(7)\n"
                                               "time.sleep(60)"))
    assert cli.main(["train", "--gpus", "2", "--backend", "cuda", "--out", str(tmp_path), *TINY_FLAGS]) == 7
    assert "rank 1 of 2 exited with status 7; stopped the others" in capsys.readouterr().err


def test_python_m_pycraftax_is_the_command():
    done = subprocess.run([sys.executable, "-m", "pycraftax", "train", "--help"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "--gpus N" in done.stdout, done.stderr


# ---- a rank of the run ------------------------------------------------------------------------------
def test_a_rank_above_zero_writes_only_its_shard(tmp_path):
    trainer, group = _rank(1, tmp_path)
    lines = trainer.run(progress=False)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint.rank1.npz"]
    shard = interop.read_npz(str(tmp_path / "checkpoint.rank1.npz"))
    assert json.loads(str(shard["shard"])) == dict(rank=1, world_size=2, update=3)
    assert {"envkey", "obs", "hstate", "window_returns"} <= set(shard) and any(k.startswith("env/") for k in shard)
    assert not [k for k in shard if k in trainer.params or k.startswith("opt/") or k == "meta"]
    steps = TINY["num_envs"] * TINY["num_steps"]
    assert [m["env_steps"] for m in lines] == [2 * steps, 4 * steps, 6 * steps]  # both ranks' steps
    assert group.checks == 3 and group.barriers == ["checkpoint 2", "checkpoint 3"]
    with pytest.raises(ValueError, match="rank 1 writes no run files"):
        Trainer(TrainConfig(**TINY), out_dir=str(tmp_path)).join_ranks(1, 2, group, None)


def test_rank_zero_writes_the_run_with_its_world_size(two_rank_run):
    names = set(os.listdir(two_rank_run)) - {"learning_curve.png"}
    assert names == {"checkpoint.npz", "checkpoint.rank1.npz", "metrics.jsonl", "params.npz", "skill_ladder.json"}
    meta = read_checkpoint(str(two_rank_run / "checkpoint.npz"))["meta"]
    assert (meta["world_size"], meta["update"], meta["env_steps"]) == (2, 3, 2 * 3 * 32)
    lines = [json.loads(ln) for ln in (two_rank_run / "metrics.jsonl").read_text().splitlines()]
    assert [m["env_steps"] for m in lines] == [64, 128, 192]


def test_a_stop_on_one_rank_stops_every_rank_at_the_same_update(tmp_path):
    trainer, group = _rank(1, tmp_path, votes={(1, 0): "SIGTERM"})
    lines = trainer.run(progress=False)
    assert len(lines) == 1 and trainer.stop_reason == "SIGTERM on rank 0"
    assert json.loads(str(interop.read_npz(str(tmp_path / "checkpoint.rank1.npz"))["shard"]))["update"] == 1
    assert group.sent == {"stop/1/1": b""}


# ---- two real ranks on the CPU -------------------------------------------------------------------
# `pycraftax train` as one rank, with the NumPy trainer standing in for the CUDA one (argv[1]: the
# update after which rank 1 fails, or -1): the CLI's rank path, the store, the stop votes, the
# checkpoint barriers and the closing barrier run between real processes.
CPU_RANK = """import dataclasses, os, sys
from pycraftax.train import cli as train_cli, cuda_trainer
from pycraftax.train.distributed import shard_path
from pycraftax.train.trainer import Trainer
fail_after = int(sys.argv[1])

def start_rank(config, out, rank=0, world_size=1, group=None, **options):
    trainer = Trainer(dataclasses.replace(config, seed=config.seed + rank), out if rank == 0 else None)
    trainer.join_ranks(rank, world_size, group, None if rank == 0 else shard_path(os.path.join(out, "checkpoint.npz"),
                                                                                  rank))
    if rank == 1 and fail_after >= 0:
        iterate = trainer.iterate
        def failing():
            if trainer.update == fail_after:
                raise RuntimeError("a failure of rank 1")
            return iterate()
        trainer.iterate = failing
    return trainer

cuda_trainer.start_rank = start_rank
train_cli.resolve_backend = lambda args: "cuda"
from pycraftax.cli import main
sys.exit(main(["train", *sys.argv[2:]]))
"""


def test_two_cpu_ranks_train_through_the_launcher(monkeypatch, tmp_path):
    monkeypatch.setattr(cuda_trainer, "visible_gpu_count", lambda: 2)
    monkeypatch.setattr(train_cli, "TRAIN_COMMAND", (sys.executable, "-c", CPU_RANK, "-1"))
    out = tmp_path / "run"
    assert cli.main(["train", "--gpus", "2", "--backend", "cuda", "--out", str(out), "--quiet", "--checkpoint-every",
                     "2", *TINY_FLAGS]) == 0
    assert set(os.listdir(out)) - {"learning_curve.png"} == {"checkpoint.npz", "checkpoint.rank1.npz", "metrics.jsonl",
                                                             "params.npz", "skill_ladder.json"}
    meta = read_checkpoint(str(out / "checkpoint.npz"))["meta"]
    assert (meta["world_size"], meta["update"], meta["env_steps"]) == (2, 3, 2 * 3 * 32)
    assert json.loads(str(interop.read_npz(str(out / "checkpoint.rank1.npz"))["shard"])) == dict(
        rank=1, world_size=2, update=3)


def test_a_failing_rank_ends_the_other_with_a_clear_error(tmp_path):
    from pycraftax.train.distributed import Rendezvous, _free_port

    port = _free_port("127.0.0.1")
    procs = []
    for rank in (0, 1):
        env = dict(os.environ, **Rendezvous(rank=rank, world_size=2, local_rank=rank, master_addr="127.0.0.1",
                                            master_port=port).environ())
        procs.append(subprocess.Popen([sys.executable, "-c", CPU_RANK, "1", "--backend", "cuda", "--out",
                                       str(tmp_path), "--quiet", *TINY_FLAGS], env=env, stderr=subprocess.PIPE,
                                      text=True))
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [1, 1], errors
    assert "(rank 1 of 2): error: RuntimeError: a failure of rank 1" in errors[1], errors[1]
    assert "(rank 0 of 2): error: RankFailedError: rank 0: rank 1 died" in errors[0], errors[0]


# ---- resuming a checkpoint of several ranks ----------------------------------------------------------
def test_same_world_size_restores_each_ranks_envs(two_rank_run):
    path = str(two_rank_run / "checkpoint.npz")
    saved = read_checkpoint(path)
    shard = interop.read_npz(shard_path(path, 1))
    plan, data = read_rank_checkpoint(path, 1, 2)
    assert plan.envs == "restore"
    for k in data:
        if k == "meta":
            continue
        expected = shard[k] if k in shard else saved[k]
        np.testing.assert_array_equal(data[k], expected, err_msg=k)
    assert any(not np.array_equal(shard[k], saved[k]) for k in shard if k.startswith("env/"))
    plan, data = read_rank_checkpoint(path, 0, 2)
    assert plan.envs == "restore" and data["meta"]["update"] == 3


def test_another_world_size_resets_the_envs(two_rank_run):
    plan, data = read_rank_checkpoint(str(two_rank_run / "checkpoint.npz"), 0, 1)
    assert plan.envs == "reset" and "envs start fresh" in plan.note and data["meta"]["world_size"] == 2


def test_a_missing_or_foreign_shard_cannot_resume(two_rank_run, tmp_path):
    import shutil

    path = str(tmp_path / "checkpoint.npz")
    shutil.copy(two_rank_run / "checkpoint.npz", path)
    with pytest.raises(ReshardError, match=r"env state of rank\(s\) \[1\] is missing"):
        read_rank_checkpoint(path, 1, 2)
    shard = interop.read_npz(shard_path(str(two_rank_run / "checkpoint.npz"), 1))
    shard["shard"] = np.array(json.dumps(dict(rank=1, world_size=2, update=2)))
    np.savez(shard_path(path, 1), **shard)
    with pytest.raises(ReshardError, match="holds rank 1 of 2 at update 2, but .* is at update 3"):
        read_rank_checkpoint(path, 1, 2)


# ---- the CUDA trainer's rank setup, the trainer stood in for ---------------------------------------
class StandInCudaTrainer(Trainer):
    """The NumPy trainer under the CUDA trainer's name, recording how start_rank and resume_rank
    build and restore it."""

    BACKEND = "cuda"

    def __init__(self, config, out_dir=None, *, _restore=None, **options):
        super().__init__(config, out_dir, _restore=_restore)
        self.ppo, self.options, self.restored, self.learner = object(), options, _restore is not None, None

    def load_learner(self, data):
        self.learner = data


@pytest.fixture
def stand_in(monkeypatch):
    joined = []
    monkeypatch.setattr(cuda_trainer, "CudaTrainer", StandInCudaTrainer)
    monkeypatch.setattr("pycraftax.train.distributed.join_trainer", lambda ppo, group: joined.append((ppo, group)))
    return joined


def test_start_rank_seeds_each_rank_and_gives_only_rank_zero_the_run(stand_in, tmp_path):
    config = TrainConfig(**TINY, seed=5)
    group = FakeGroup(1, 2)
    trainer = cuda_trainer.start_rank(config, str(tmp_path), 1, 2, group, tf32=False)
    assert (trainer.config.seed, trainer.out_dir, trainer.rank, trainer.world_size) == (6, None, 1, 2)
    assert trainer.shard_file == str(tmp_path / "checkpoint.rank1.npz") and trainer.options == dict(tf32=False)
    assert stand_in == [(trainer.ppo, group)]
    first = cuda_trainer.start_rank(config, str(tmp_path))
    assert (first.config.seed, first.out_dir, first.shard_file) == (5, str(tmp_path), None)


def test_resume_rank_restores_or_starts_fresh_envs(stand_in, two_rank_run, tmp_path):
    import shutil

    path = str(tmp_path / "checkpoint.npz")
    with pytest.raises(ValueError, match="a checkpoint of the 'c' trainer, not 'cuda'"):
        cuda_trainer.resume_rank(str(two_rank_run / "checkpoint.npz"), str(tmp_path))
    saved = read_checkpoint(str(two_rank_run / "checkpoint.npz"))
    saved["meta"] = np.array(json.dumps(dict(saved["meta"], backend="cuda")))
    np.savez(path, **saved)
    shutil.copy(shard_path(str(two_rank_run / "checkpoint.npz"), 1), shard_path(path, 1))
    trainer, note = cuda_trainer.resume_rank(path, str(tmp_path), 1, 2, FakeGroup(1, 2))
    assert trainer.restored and trainer.learner is None and "continue their envs exactly" in note
    assert (trainer.config.seed, trainer.out_dir, trainer.update) == (1, None, 3)
    trainer, note = cuda_trainer.resume_rank(path, str(tmp_path))
    assert not trainer.restored and trainer.learner["meta"]["world_size"] == 2 and "envs start fresh" in note
    assert (trainer.config.seed, trainer.out_dir) == (0, str(tmp_path))


# ---- on GPUs ---------------------------------------------------------------------------------------
def _gpus() -> int:
    return cuda_trainer.visible_gpu_count() if cuda_trainer.available() else 0


@pytest.mark.skipif(_gpus() < 2, reason="needs >= 2 GPUs (and the CUDA library): a run of pycraftax train --gpus 2")
def test_gpu_train_on_two_gpus_and_resume_on_two_then_one(tmp_path):
    out = tmp_path / "run"
    env = dict(os.environ, NCCL_NVLS_ENABLE="0")
    base = [sys.executable, "-m", "pycraftax", "train", "--backend", "cuda", "--quiet"]
    steps = 64 * 16
    flags = ["--num-envs", "64", "--num-steps", "16", "--num-minibatches", "4", "--width", "64", "--hidden", "64",
             "--total-timesteps", str(4 * steps), "--checkpoint-every", "2"]
    stop_after_one = ["--time-limit", "1e-6"]
    checkpoint = str(out / "checkpoint.npz")

    def train(*argv) -> str:
        done = subprocess.run([*base, *argv], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return done.stdout

    train("--gpus", "2", "--out", str(out), *stop_after_one, *flags)
    assert set(os.listdir(out)) - {"learning_curve.png"} == {"checkpoint.npz", "checkpoint.rank1.npz",
                                                             "metrics.jsonl", "skill_ladder.json"}
    assert "continue their envs exactly" in train("--gpus", "2", "--resume", checkpoint, *stop_after_one)
    assert "the envs start fresh" in train("--resume", checkpoint)
    meta = read_checkpoint(checkpoint)["meta"]
    assert (meta["update"], meta["world_size"], meta["env_steps"]) == (4, 1, 2 * 2 * steps + 2 * steps)
    lines = [json.loads(ln) for ln in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["env_steps"] for m in lines] == [2 * steps, 4 * steps, 5 * steps, 6 * steps]

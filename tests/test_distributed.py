"""Data-parallel training (pycraftax/train/distributed.py, torch_trainer.TorchTrainer with a
group) between real processes on the CPU over gloo, as torchrun starts them: the weights and
Adam moments of every rank bitwise equal after updates while their envs differ; 2 ranks over N/2
envs each take the update of 1 process over the N envs (tolerances below); a checkpoint resumes
on other world sizes; a rank that dies ends the others at once with an error naming it, and a
stop on one rank stops all at the same update. Run as a script, this file is the worker the
tests start (its role in argv[1]).

Two ranks against one process: the same weights, batch and minibatch membership (each rank's
envs the one process's envs [r n, (r + 1) n)), after 2 epochs x 2 minibatches. The update differs
only in the order of the sums (over the ranks' halves, then the all-reduce): float64, the weights
agree to TOL64 = 1e-12 (relative to their size, per tensor); float32, to TOL32 = 2e-6 (a few
roundings of the gradients, each moving Adam's step by as much, times lr 2e-4 ... 1, see
test_two_ranks_equal_one_process)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from pycraftax.train import distributed as dist
from pycraftax.train.distributed import RendezvousError, World, WorldSizeError

torch = pytest.importorskip("torch")

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))
TOL64, TOL32 = 1e-12, 2e-6
# a small run of the paper model on the C env: 2 epochs x 2 minibatches an update
SMALL = dict(num_envs=12, num_steps=6, num_minibatches=2, update_epochs=2, width=16, hidden=16, resets="auto",
             total_timesteps=12 * 6 * 4)
SMALL_FLAGS = ["--backend", "c", "--num-envs", "12", "--num-steps", "6", "--num-minibatches", "2", "--update-epochs",
               "2", "--width", "16", "--hidden", "16", "--resets", "auto", "--quiet"]


# ---- the rank variables, the env split, the seeds --------------------------------------------------
def test_no_variables_is_one_process():
    assert World.from_environ({}) == World(0, 1, 0)
    assert World.from_environ({"WORLD_SIZE": "1", "RANK": "0"}).world_size == 1


def test_torchrun_variables_parse():
    env = dict(RANK="3", WORLD_SIZE="4", LOCAL_RANK="1", MASTER_ADDR="node0", MASTER_PORT="29500")
    world = World.from_environ(env)
    assert world == World(3, 4, 1) and not world.is_main


@pytest.mark.parametrize("variables, message", [
    (dict(RANK="0"), "WORLD_SIZE"),
    (dict(WORLD_SIZE="2", RANK="2", LOCAL_RANK="0", MASTER_ADDR="h", MASTER_PORT="1"), r"RANK=2 must be in \[0, 1\]"),
    (dict(WORLD_SIZE="2", RANK="0", MASTER_ADDR="h", MASTER_PORT="1"), "LOCAL_RANK is not set"),
    (dict(WORLD_SIZE="2", RANK="0", LOCAL_RANK="0", MASTER_PORT="1"), "MASTER_ADDR is not set"),
    (dict(WORLD_SIZE="2", RANK="0", LOCAL_RANK="0", MASTER_ADDR="h", MASTER_PORT="http"), "MASTER_PORT='http'"),
    (dict(WORLD_SIZE="2", RANK="0", LOCAL_RANK="0", MASTER_ADDR="h", MASTER_PORT="70000"), r"in \[1, 65535\]"),
    (dict(WORLD_SIZE="0"), "WORLD_SIZE=0 must be >= 1"),
    (dict(WORLD_SIZE="two"), "WORLD_SIZE='two' is not an integer"),
])
def test_bad_variables_name_the_variable(variables, message):
    with pytest.raises(RendezvousError, match=message):
        World.from_environ(variables)


def test_bind_local_device():
    env = {}
    assert dist.bind_local_device(World(1, 2, 1), env) == "1" and env["CUDA_VISIBLE_DEVICES"] == "1"
    env = {"CUDA_VISIBLE_DEVICES": "4, 6"}
    assert dist.bind_local_device(World(1, 2, 1), env) == "6"
    with pytest.raises(RendezvousError, match="LOCAL_RANK=2 but CUDA_VISIBLE_DEVICES='4,6' lists 2"):
        dist.bind_local_device(World(2, 3, 2), {"CUDA_VISIBLE_DEVICES": "4,6"})


def test_envs_split_evenly_or_say_what_to_change():
    assert dist.envs_per_rank(1024, 8, 8, 16) == 128
    assert dist.envs_per_rank(12, 3, 2) == 4
    with pytest.raises(WorldSizeError, match=r"12 envs do not split over 4 ranks: .* num_minibatches \(2\), so "
                                             r"num_envs must be a multiple of 8"):
        dist.envs_per_rank(12, 4, 2)
    with pytest.raises(WorldSizeError, match=r"reset_ratio \(16\), so num_envs must be a multiple of 48"):
        dist.envs_per_rank(72, 3, 8, 16)


def test_each_ranks_streams_are_its_own():
    from pycraftax import jax_random

    key = jax_random.prng_key(5)
    keys = [dist.rank_env_key(key, r) for r in range(4)]
    assert np.array_equal(keys[0], key)  # rank 0 runs the one-process run's stream
    assert len({k.tobytes() for k in keys}) == 4
    assert dist.rank_seed(5, 0) == 5
    seeds = {dist.rank_seed(5, r, salt) for r in range(4) for salt in range(3)}
    assert len(seeds) == 12 and all(0 <= s < 2**63 for s in seeds)


def test_torchrun_command():
    command = dist.torchrun_command(4, ["train", "--recipe", "paper"], python="py")
    assert command == ["py", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=4", "-m", "pycraftax",
                       "train", "--recipe", "paper"]


# ---- real processes ---------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(world: int, argv: list[str], port: int | None = None, extra_env: dict | None = None) -> list:
    """`world` processes of `python argv...` with torchrun's variables, ranks 0 .. world - 1."""
    port = port or _free_port()
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), OMP_NUM_THREADS="1", PYTHONPATH=ROOT, **(extra_env or {}))
        procs.append(subprocess.Popen([sys.executable, *argv], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    return procs


def _finish(procs, timeout: float = 240.0) -> list[tuple[int, str, str]]:
    deadline = time.monotonic() + timeout
    out = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
        out.append((p.returncode, o, e))
    return out


def _train(world: int, flags: list[str]) -> list[tuple[int, str, str]]:
    return _finish(_start(world, ["-m", "pycraftax", "train", *flags]))


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """One launch of two worker ranks (the worker below) for the tests that read its files: two
    updates of a run, then the learn() of test_two_ranks_equal_one_process in float64 and float32."""
    out = tmp_path_factory.mktemp("two_ranks")
    results = _finish(_start(2, [HERE, str(out)]))
    assert all(code == 0 for code, _, _ in results), results
    return out


def test_weights_equal_across_ranks_after_updates(two_ranks):
    """Two ranks, two updates of 2 epochs x 2 minibatches: every rank's weights and Adam moments
    bitwise equal, their envs' obs different."""
    ranks = [dict(np.load(two_ranks / f"replicas{r}.npz")) for r in range(2)]
    names = [k for k in ranks[0] if k != "obs"]
    assert any(k.startswith("opt/mu/") for k in names) and any(k.startswith("params/") for k in names)
    for k in names:
        assert np.array_equal(ranks[1][k], ranks[0][k]), k
    assert not np.array_equal(ranks[1]["obs"], ranks[0]["obs"])
    first = np.load(two_ranks / "initial.npz")
    assert any(not np.array_equal(first[k], ranks[0][k]) for k in first.files)  # the updates moved the weights


def test_a_cell_model_trains_in_a_group(monkeypatch):
    """The fast recipe's network (some of its kernels transposed in memory) in a one-rank gloo
    group in this process: its gradients live in the flat buffer laid out as the parameters, and
    an update equals the one without a group (the moments summed in another order)."""
    from pycraftax.train.config import TrainConfig
    from pycraftax.train.torch_trainer import TorchTrainer

    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(_free_port()))
    c = TrainConfig.from_recipe("fast", num_envs=8, num_steps=4, num_minibatches=2, update_epochs=1,
                                total_timesteps=8 * 4 * 2, width=16, hidden=16, cell_dim=8)
    group = dist.Group(World(0, 1, 0), "cpu", timeout_s=60)
    try:
        grouped = TorchTrainer(c, device="cpu", group=group)
        assert any(not p.is_contiguous() for p in grouped.model.parameters())
        alone = TorchTrainer(c, device="cpu")
        for t in (grouped, alone):
            t.step()
        for p in grouped.model.parameters():
            assert p.grad.data_ptr() >= grouped.flat_grad.data_ptr() and p.grad.stride() == p.stride()
        for k, w in alone.params.items():
            np.testing.assert_allclose(grouped.params[k], w, rtol=1e-5, atol=1e-6, err_msg=k)
        for t in (grouped, alone):
            t.env.close()
    finally:
        group.close()


def _equivalence_batch(global_envs: int, T: int, obs_size: int, hidden: int, num_actions: int) -> dict:
    rng = np.random.default_rng(11)
    N = global_envs
    return dict(obs=((rng.random((T, N, obs_size)) < 0.05) * rng.random((T, N, obs_size))).astype(np.float32),
                dones=rng.random((T, N)) < 0.1, actions=rng.integers(0, num_actions, (T, N)).astype(np.int32),
                log_probs=(np.log(1 / num_actions) + rng.normal(0, 0.3, (T, N))),
                values=rng.normal(0, 1, (T, N)), advantages=rng.normal(0.5, 2, (T, N)),
                targets=rng.normal(0, 1, (T, N)), h0=rng.normal(0, 0.5, (N, hidden)))


def _orders(local_envs: int, epochs: int) -> list[np.ndarray]:
    rng = np.random.default_rng(12)
    return [rng.permutation(local_envs) for _ in range(epochs)]


def _learn_on(trainer, batch: dict, envs: slice, orders: list) -> dict:
    """trainer.learn() on the given rollout (its envs `envs` of the batch) and epoch orders."""
    T = trainer.config.num_steps
    for k, v in batch.items():
        dst = trainer.buf[k][:T] if k != "h0" else trainer.buf[k]
        src = v[:, envs] if k != "h0" else v[envs]
        dst.copy_(torch.as_tensor(src, dtype=dst.dtype))
    queue = list(orders)
    trainer.minibatch_order = lambda: torch.as_tensor(queue.pop(0))
    losses = trainer.learn()
    return dict(trainer.params, **{f"loss/{k}": np.array(v) for k, v in losses.items()})


@pytest.mark.parametrize("dtype, tol", [("float64", TOL64), ("float32", TOL32)])
def test_two_ranks_equal_one_process(two_ranks, dtype, tol):
    """One update (2 epochs x 2 minibatches) on a given rollout: 2 ranks holding envs [0, n) and
    [n, 2n) against 1 process holding all 2n, each of whose minibatches is the union of the ranks'
    (the ranks' epoch order p, the process's p's slices interleaved with n + p's)."""
    from pycraftax.train.config import TrainConfig
    from pycraftax.train.torch_trainer import TorchTrainer

    config = TrainConfig(**dict(SMALL, dtype=dtype))
    one = TorchTrainer(config, device="cpu")
    n, B = config.num_envs // 2, config.num_envs // 2 // config.num_minibatches
    batch = _equivalence_batch(config.num_envs, config.num_steps, one.env.obs_size, config.hidden,
                               one.env.num_actions)
    orders = [np.concatenate([np.concatenate([p[m * B:(m + 1) * B], n + p[m * B:(m + 1) * B]])
                              for m in range(config.num_minibatches)])
              for p in _orders(n, config.update_epochs)]
    want = _learn_on(one, batch, slice(None), orders)
    ranks = [dict(np.load(two_ranks / f"{dtype}-{r}.npz")) for r in range(2)]
    worst = 0.0
    for k, w in want.items():
        if k.startswith("params/"):
            for got in ranks:
                assert np.array_equal(got[k], ranks[0][k]), k  # the ranks agree bitwise
            err = float(np.abs(ranks[0][k] - w).max() / max(np.abs(w).max(), 1e-30))
            worst = max(worst, err)
            assert err <= tol, (k, err)
    assert ranks[0]["loss/grad_norm"] == pytest.approx(want["loss/grad_norm"], rel=max(tol, 1e-6))
    for k in ("total_loss", "value_loss", "entropy"):  # means of the ranks' halves: the mean over all
        assert ranks[0][f"loss/{k}"] == pytest.approx(want[f"loss/{k}"], rel=max(100 * tol, 1e-5)), k
    print(f"{dtype}: worst relative weight difference, 2 ranks vs 1 process: {worst:.2e}")


def _wait_for_metrics(path, procs, timeout: float = 180.0, lines: int = 1) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path) and open(path).read().count("\n") >= lines:
            return
        if any(p.poll() is not None for p in procs):
            raise AssertionError([p.communicate() for p in procs])
        time.sleep(0.2)
    raise AssertionError(f"no metrics line within {timeout} s")


def test_a_dead_rank_ends_the_others_with_a_clear_error(tmp_path):
    """Rank 1 killed (SIGKILL, as the OOM killer does) mid-run: rank 0 ends within seconds with an
    error that says another rank died, not at the 300 s timeout and not hanging."""
    out = tmp_path / "run"
    procs = _start(2, ["-m", "pycraftax", "train", *SMALL_FLAGS, "--total-timesteps", "1e6", "--out", str(out)])
    _wait_for_metrics(out / "metrics.jsonl", procs)
    procs[1].kill()
    t0 = time.monotonic()
    code, _, err = _finish(procs[:1], timeout=120)[0]
    procs[1].communicate()
    assert time.monotonic() - t0 < 60
    assert code == 1, err
    assert "pycraftax train (rank 0 of 2): error: RankFailedError: rank 0 of 2:" in err
    assert "another rank died or did not answer within 300 s" in err


def test_a_stop_on_one_rank_stops_every_rank_and_the_checkpoint_resumes_in_one_process(tmp_path):
    """SIGTERM to rank 1 alone: both finish the update, agree to stop, rank 0 checkpoints, both
    exit 0; the checkpoint of 2 ranks resumes in one process with its learner (weights, Adam
    moments, counters) and new envs."""
    from pycraftax import cli
    from pycraftax.train.loop import read_checkpoint
    from pycraftax.train.torch_trainer import TorchTrainer

    out = tmp_path / "run"
    procs = _start(2, ["-m", "pycraftax", "train", *SMALL_FLAGS, "--total-timesteps", "1e6", "--out", str(out)])
    _wait_for_metrics(out / "metrics.jsonl", procs)
    procs[1].send_signal(signal.SIGTERM)
    results = _finish(procs, timeout=120)
    assert [code for code, _, _ in results] == [0, 0], results
    assert "over 2 ranks of 6 envs" in results[0][1] and results[1][1] == ""  # rank 0 alone prints
    assert "stopped (a stop on another rank)" in results[0][1]
    assert {"checkpoint.npz", "metrics.jsonl"} <= set(os.listdir(out)) <= {
        "checkpoint.npz", "metrics.jsonl", "skill_ladder.json", "learning_curve.png"}  # rank 0's files, no shards
    saved = read_checkpoint(str(out / "checkpoint.npz"))
    meta = saved["meta"]
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert meta["world_size"] == 2 and meta["update"] == len(lines) < meta["config"]["total_timesteps"] // 72
    assert [m["env_steps"] for m in lines] == [72 * (i + 1) for i in range(len(lines))]  # both ranks' steps

    one = TorchTrainer.resume(str(out / "checkpoint.npz"), out_dir=str(tmp_path / "one"), device="cpu")
    assert (one.update, one.world_size, one.local_envs, one.opt_steps) == (meta["update"], 1, 12, 4 * meta["update"])
    for k, v in one.params.items():
        assert np.array_equal(v, saved[k]), k
    mu = {n: one.opt.state[p]["exp_avg"].numpy() for n, p in zip(one.model.names, one.model.parameters())}
    for k in one.model.names:
        assert np.array_equal(mu[k], saved[f"opt/mu/{k}"]), k
    one.env.close()
    assert cli.main(["train", "--resume", str(out / "checkpoint.npz"), "--backend", "c", "--quiet", "--out",
                     str(tmp_path / "one"), "--time-limit", "1e-6"]) == 0  # 60 us: one update outlasts it
    resumed = read_checkpoint(str(tmp_path / "one" / "checkpoint.npz"))["meta"]
    assert resumed["world_size"] == 1 and resumed["update"] == meta["update"] + 1


def test_torchrun_resumes_a_one_process_checkpoint_on_two_ranks_until_a_ctrl_c(tmp_path):
    """torchrun itself (what `pycraftax train --gpus N` runs, here on the CPU) starting two ranks of
    `pycraftax train --resume` of a one-process run's checkpoint: the learner carried over, rank
    0's run files counting both ranks' env steps; a Ctrl-C to torchrun and its ranks (torchrun
    passes it on: each rank gets it twice) stops both after the same update with a checkpoint."""
    from pycraftax.train.config import TrainConfig
    from pycraftax.train.loop import read_checkpoint
    from pycraftax.train.torch_trainer import TorchTrainer

    out = tmp_path / "run"
    first = TorchTrainer(TrainConfig(**dict(SMALL, total_timesteps=10**6)), str(out), device="cpu")
    first.run(max_updates=1, progress=False)
    first.env.close()
    command = dist.torchrun_command(2, ["train", "--resume", str(out / "checkpoint.npz"), "--backend", "c", "--quiet"])
    # in a session of its own, so that a Ctrl-C can reach torchrun and its ranks as a terminal's does
    proc = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    _wait_for_metrics(out / "metrics.jsonl", [proc], lines=2)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert "over 2 ranks of 6 envs" in stdout, stderr[-3000:]
    assert stdout.count("stopped (SIGINT)") == 1 and "continue with: pycraftax train --resume" in stdout
    meta = read_checkpoint(str(out / "checkpoint.npz"))["meta"]
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert meta["world_size"] == 2 and meta["update"] == len(lines) >= 2 and meta["opt_count"] == 4 * meta["update"]
    assert [m["env_steps"] for m in lines] == [72 * (i + 1) for i in range(len(lines))]


def test_gpus_runs_torchrun_with_the_same_options(monkeypatch, tmp_path, capsys):
    from pycraftax import cli
    from pycraftax.train import cli as train_cli

    import torch.distributed.run

    ran = []
    monkeypatch.setattr(torch.distributed.run, "main", ran.append)
    monkeypatch.setattr(train_cli, "_visible_gpus", lambda: 4)
    assert cli.main(["train", "--gpus", "4", "--backend", "cuda", "--recipe", "paper", "--lr", "0.0003", "--out",
                     str(tmp_path / "run")]) == 0
    assert ran == [dist.torchrun_command(4, ["train", "--recipe", "paper", "--backend", "cuda", "--out",
                                             str(tmp_path / "run"), "--blas-threads", "1", "--lr", "0.0003"])[3:]]
    assert cli.main(["train", "--gpus", "8", "--backend", "cuda", "--out", str(tmp_path / "x")]) == 2
    assert "--gpus 8: PyTorch sees 4 GPU(s)" in capsys.readouterr().err
    assert cli.main(["train", "--gpus", "2", "--backend", "c", "--out", str(tmp_path / "x")]) == 2
    assert "--gpus 2: training on GPUs needs --backend cuda, not --backend c" in capsys.readouterr().err
    assert cli.main(["train", "--gpus", "0", "--out", str(tmp_path / "x")]) == 2
    assert "--gpus must be an integer >= 1, got 0" in capsys.readouterr().err


def test_a_numpy_checkpoint_does_not_resume_on_several_ranks(tmp_path, monkeypatch, capsys):
    from pycraftax import cli

    out = tmp_path / "run"
    assert cli.main(["train", *SMALL_FLAGS, "--total-timesteps", "72", "--out", str(out)]) == 0
    capsys.readouterr()
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert cli.main(["train", "--resume", str(out / "checkpoint.npz"), "--backend", "c"]) == 2
    assert "a checkpoint of the NumPy trainer resumes in one process on the CPU" in capsys.readouterr().err


# ---- the workers --------------------------------------------------------------------------------------
def _worker(out: str) -> None:
    """Two updates of a run (replicas<rank>.npz: the learner and the first obs), then one learn()
    of the equivalence test per dtype (<dtype>-<rank>.npz)."""
    from pycraftax.train.config import TrainConfig
    from pycraftax.train.torch_trainer import TorchTrainer

    world = World.from_environ()
    group = dist.Group(world, "cpu", timeout_s=60)
    trainer = TorchTrainer(TrainConfig(**SMALL), out if world.is_main else None, device="cpu", group=group)
    if world.is_main:
        np.savez(os.path.join(out, "initial.npz"), **trainer.params)
    first_obs = trainer.buf["obs"][trainer.config.num_steps].numpy().copy()
    trainer.run(max_updates=2, progress=False)
    arrays = {k: v for k, v in trainer.backend_arrays().items() if k.startswith(("params/", "opt/"))}
    np.savez(os.path.join(out, f"replicas{world.rank}.npz"), obs=first_obs, **arrays)
    trainer.env.close()
    for dtype in ("float64", "float32"):
        config = TrainConfig(**dict(SMALL, dtype=dtype))
        trainer = TorchTrainer(config, None, device="cpu", group=group)
        n = trainer.local_envs
        batch = _equivalence_batch(config.num_envs, config.num_steps, trainer.env.obs_size, config.hidden,
                                   trainer.env.num_actions)
        result = _learn_on(trainer, batch, slice(world.rank * n, (world.rank + 1) * n),
                           _orders(n, config.update_epochs))
        np.savez(os.path.join(out, f"{dtype}-{world.rank}.npz"), **result)
        trainer.env.close()
    group.close()


if __name__ == "__main__":
    _worker(*sys.argv[1:])

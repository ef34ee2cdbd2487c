"""Data-parallel training's host side (pycraftax/train/distributed.py): the rendezvous variables,
the TCP store between real processes on loopback, a dead or hung rank ending the others with a
clear error within a timeout, the launcher, the checkpoint rules; and, on a host with >= 2 GPUs,
the NCCL gradient average (weights equal across ranks, and equal to one process's when both
ranks see the same data). Run as a script, this file is the worker those tests start."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from pycraftax.train import distributed as dist
from pycraftax.train.distributed import (
    RankFailedError,
    Rendezvous,
    RendezvousError,
    ReshardError,
    plan_resume,
)

HERE = os.path.abspath(__file__)
LOOPBACK = "127.0.0.1"


def _env(**kw):
    return {k: str(v) for k, v in kw.items()}


# ---- rendezvous variables --------------------------------------------------------------------------
def test_no_variables_is_one_process():
    rdv = Rendezvous.from_environ({})
    assert (rdv.rank, rdv.world_size, rdv.local_rank, rdv.is_main) == (0, 1, 0, True)


def test_torchrun_variables_parse():
    rdv = Rendezvous.from_environ(_env(RANK=3, WORLD_SIZE=4, LOCAL_RANK=1, MASTER_ADDR="node0", MASTER_PORT=29500))
    assert rdv == Rendezvous(rank=3, world_size=4, local_rank=1, master_addr="node0", master_port=29500)
    assert not rdv.is_main
    assert Rendezvous.from_environ(rdv.environ()) == rdv


def test_store_port_beside_torchruns_agent_store():
    base = _env(RANK=1, WORLD_SIZE=2, LOCAL_RANK=1, MASTER_ADDR=LOOPBACK, MASTER_PORT=29500)
    assert Rendezvous.from_environ(base).port == 29500
    assert Rendezvous.from_environ(dict(base, TORCHELASTIC_USE_AGENT_STORE="True")).port == 29501
    assert Rendezvous.from_environ(dict(base, TORCHELASTIC_USE_AGENT_STORE="True", PYCRAFTAX_STORE_PORT="4000")).port \
        == 4000
    with pytest.raises(RendezvousError, match="PYCRAFTAX_STORE_PORT=0 must be in"):
        Rendezvous.from_environ(dict(base, PYCRAFTAX_STORE_PORT="0"))


def test_world_size_one_needs_no_master():
    rdv = Rendezvous.from_environ(_env(WORLD_SIZE=1, RANK=0))
    assert (rdv.rank, rdv.world_size) == (0, 1)


@pytest.mark.parametrize("variables, message", [
    (dict(RANK=0), "WORLD_SIZE"),
    (dict(WORLD_SIZE=2, RANK=2, LOCAL_RANK=0, MASTER_ADDR=LOOPBACK, MASTER_PORT=1), r"RANK=2 must be in \[0, 1\]"),
    (dict(WORLD_SIZE=2, RANK=-1, LOCAL_RANK=0, MASTER_ADDR=LOOPBACK, MASTER_PORT=1), "RANK=-1"),
    (dict(WORLD_SIZE=2, RANK=0, MASTER_ADDR=LOOPBACK, MASTER_PORT=1), "LOCAL_RANK is not set"),
    (dict(WORLD_SIZE=2, RANK=0, LOCAL_RANK=0, MASTER_PORT=1), "MASTER_ADDR is not set"),
    (dict(WORLD_SIZE=2, RANK=0, LOCAL_RANK=0, MASTER_ADDR=LOOPBACK), "MASTER_PORT is not set"),
    (dict(WORLD_SIZE=2, RANK=0, LOCAL_RANK=0, MASTER_ADDR=LOOPBACK, MASTER_PORT="http"), "MASTER_PORT='http'"),
    (dict(WORLD_SIZE=2, RANK=0, LOCAL_RANK=0, MASTER_ADDR=LOOPBACK, MASTER_PORT=70000), r"in \[1, 65535\]"),
    (dict(WORLD_SIZE=0), "WORLD_SIZE=0 must be >= 1"),
    (dict(WORLD_SIZE="two"), "WORLD_SIZE='two' is not an integer"),
    (dict(WORLD_SIZE=1, RANK=1), r"RANK=1 must be in \[0, 0\]"),
])
def test_bad_rendezvous_variables_name_the_variable(variables, message):
    with pytest.raises(RendezvousError, match=message):
        Rendezvous.from_environ(_env(**variables))


def test_bind_local_device():
    env = {}
    assert dist.bind_local_device(Rendezvous(local_rank=1, world_size=2, rank=1), env) == "1"
    assert env["CUDA_VISIBLE_DEVICES"] == "1"
    env = {"CUDA_VISIBLE_DEVICES": "4, 6"}
    assert dist.bind_local_device(Rendezvous(local_rank=1, world_size=2, rank=1), env) == "6"
    with pytest.raises(RendezvousError, match="LOCAL_RANK=2 but CUDA_VISIBLE_DEVICES='4,6' lists 2"):
        dist.bind_local_device(Rendezvous(local_rank=2, world_size=3, rank=2), {"CUDA_VISIBLE_DEVICES": "4,6"})


def test_rank_seed():
    assert [dist.rank_seed(7, r) for r in range(3)] == [7, 8, 9]
    with pytest.raises(ValueError, match="rank must be >= 0"):
        dist.rank_seed(7, -1)


# ---- the store between processes -----------------------------------------------------------------
def _port() -> int:
    return dist._free_port(LOOPBACK)


def _worker(role: str, rank: int, world: int, port: int, timeout: float = 20.0) -> subprocess.Popen:
    env = dict(os.environ)
    env.update(Rendezvous(rank=rank, world_size=world, local_rank=rank, master_addr=LOOPBACK,
                          master_port=port).environ())
    env["WORKER_TIMEOUT"] = str(timeout)
    return subprocess.Popen([sys.executable, HERE, role], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _finish(proc: subprocess.Popen, timeout: float = 60.0) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def test_store_between_two_processes():
    port = _port()
    child = _worker("exchange", 1, 2, port)
    rdv = Rendezvous(rank=0, world_size=2, local_rank=0, master_addr=LOOPBACK, master_port=port)
    uid = bytes(range(128))
    with dist.init_process_group(rdv, timeout=20.0) as group:
        assert group.nccl_unique_id(lambda: uid) == uid
        group.broadcast_arrays("learner", {"w": np.arange(6, dtype=np.float32).reshape(2, 3),
                                           "n": np.array([7], np.int64)})
        group.check_same("config", {"num_envs": 8})
        group.barrier("after")
        assert group.store.get("from rank 1") == b"hello from 1"
        group.check()
    code, out, err = _finish(child)
    assert code == 0, err
    assert json.loads(out) == {"uid_ok": True, "arrays_ok": True}


def test_different_configurations_are_refused():
    port = _port()
    child = _worker("mismatch", 1, 2, port)
    rdv = Rendezvous(rank=0, world_size=2, local_rank=0, master_addr=LOOPBACK, master_port=port)
    group = dist.init_process_group(rdv, timeout=20.0)
    with pytest.raises(RendezvousError, match="config differs on rank 1"):
        group.check_same("config", {"num_envs": 8})
    group.close()
    code, _, err = _finish(child)
    assert code == 0, err


def test_a_second_rank_with_the_same_number_is_refused():
    port = _port()
    server = dist.StoreServer(LOOPBACK, port, 2)
    try:
        first = dist.StoreClient(LOOPBACK, port, 1, 2, timeout=5.0)
        with pytest.raises(RendezvousError, match="rank 1 already joined"):
            dist.StoreClient(LOOPBACK, port, 1, 2, timeout=5.0)
        with pytest.raises(RendezvousError, match="world size 3 != the store's 2"):
            dist.StoreClient(LOOPBACK, port, 0, 3, timeout=5.0)
        first.close()
    finally:
        server.close()


def test_dead_rank_ends_the_other_with_a_clear_error():
    port = _port()
    child = _worker("die", 1, 2, port)
    rdv = Rendezvous(rank=0, world_size=2, local_rank=0, master_addr=LOOPBACK, master_port=port)
    group = dist.init_process_group(rdv, timeout=60.0)
    start = time.monotonic()
    with pytest.raises(RankFailedError, match="rank 1 died"):
        group.barrier("never reached by rank 1")
    assert time.monotonic() - start < 30.0  # the death is seen, not the 60 s timeout
    with pytest.raises(RankFailedError, match="rank 1 died"):
        group.check()
    code, _, _ = _finish(child)
    assert code == 3
    group.close()


def test_hung_rank_ends_the_other_at_the_timeout():
    port = _port()
    child = _worker("hang", 1, 2, port)
    rdv = Rendezvous(rank=0, world_size=2, local_rank=0, master_addr=LOOPBACK, master_port=port)
    group = dist.init_process_group(rdv, timeout=20.0)
    group.store.timeout = 1.0
    start = time.monotonic()
    with pytest.raises(RankFailedError, match="waited 1 s for the other ranks"):
        group.barrier("rank 1 hangs")
    assert time.monotonic() - start < 15.0
    child.kill()
    child.communicate()
    group.store.close()
    group._server.close()


def test_rank_zero_dying_ends_the_others():
    port = _port()
    child = _worker("serve_then_die", 0, 2, port)
    rdv = Rendezvous(rank=1, world_size=2, local_rank=1, master_addr=LOOPBACK, master_port=port)
    group = dist.init_process_group(rdv, timeout=60.0)
    start = time.monotonic()
    with pytest.raises(RankFailedError, match="lost rank 0's store"):
        group.store.get("never set")
    assert time.monotonic() - start < 30.0
    code, _, _ = _finish(child)
    assert code == 4


def test_a_taken_port_is_a_clear_error():
    port = _port()
    server = dist.StoreServer(LOOPBACK, port, 2)
    try:
        rdv = Rendezvous(rank=0, world_size=2, local_rank=0, master_addr=LOOPBACK, master_port=port)
        with pytest.raises(RendezvousError, match=f"rank 0 cannot serve its store at 127.0.0.1:{port}"):
            dist.ProcessGroup(rdv, timeout=5.0)
    finally:
        server.close()


def test_connect_gives_up_with_a_clear_error():
    with pytest.raises(RankFailedError, match="cannot reach rank 0's store"):
        dist.StoreClient(LOOPBACK, _port(), 1, 2, timeout=5.0, connect_timeout=0.5)


# ---- launcher ------------------------------------------------------------------------------------
def test_launch_runs_one_process_per_gpu(tmp_path):
    code = dist.launch(2, [sys.executable, HERE, "launched", str(tmp_path)], grace_s=5.0)
    assert code == 0
    seen = sorted(json.loads(p.read_text())["rank"] for p in tmp_path.glob("rank*.json"))
    assert seen == [0, 1]
    info = json.loads((tmp_path / "rank1.json").read_text())
    assert info["world_size"] == 2 and info["local_rank"] == 1 and info["master_addr"] == LOOPBACK


def test_launch_stops_the_others_when_one_fails(tmp_path):
    start = time.monotonic()
    code = dist.launch(2, [sys.executable, HERE, "launched_fail", str(tmp_path)], grace_s=5.0)
    assert code == 5
    assert time.monotonic() - start < 40.0  # the surviving rank sleeps 600 s unless stopped


@pytest.mark.parametrize("gpus", [0, -1, 1.5, True, "2"])
def test_launch_refuses_bad_gpus(gpus):
    with pytest.raises(ValueError, match="gpus must be an integer >= 1"):
        dist.launch(gpus, [sys.executable, "-c", "pass"])


# ---- checkpoints ---------------------------------------------------------------------------------
def test_shard_path_and_split():
    assert dist.shard_path("/r/ckpt_000020.npz", 3) == "/r/ckpt_000020.rank3.npz"
    with pytest.raises(ValueError, match="shard_path needs rank >= 1"):
        dist.shard_path("/r/ckpt.npz", 0)
    arrays = {"params/Dense_0/bias": 1, "opt/mu/params/Dense_0/bias": 2, "meta": 3, "hstate": 4, "envkey": 5}
    replicated, per_rank = dist.split_checkpoint(arrays, ["params/Dense_0/bias"])
    assert set(replicated) == {"params/Dense_0/bias", "opt/mu/params/Dense_0/bias", "meta"}
    assert set(per_rank) == {"hstate", "envkey"}


def test_resume_on_the_same_layout_restores_the_envs():
    plan = plan_resume(2, 64, 2, num_minibatches=8, shards_present=[1])
    assert (plan.envs, plan.num_envs) == ("restore", 64)
    assert plan_resume(1, 64, 1).envs == "restore"


def test_resume_on_another_world_size_resets_the_envs():
    plan = plan_resume(2, 64, 4, num_minibatches=8)
    assert (plan.envs, plan.num_envs) == ("reset", 64)
    assert "cannot be resharded" in plan.note
    plan = plan_resume(2, 64, 4, num_minibatches=8, keep_global_batch=True)
    assert (plan.envs, plan.num_envs) == ("reset", 32)


def test_checkpoints_that_cannot_resume_say_why():
    with pytest.raises(ReshardError, match=r"rank\(s\) \[1, 3\] is missing"):
        plan_resume(4, 64, 4, shards_present=[2])
    with pytest.raises(ReshardError, match="does not split over 3 ranks"):
        plan_resume(2, 64, 3, keep_global_batch=True)
    with pytest.raises(ReshardError, match="num_minibatches \\(8\\) must divide"):
        plan_resume(2, 64, 32, num_minibatches=8, keep_global_batch=True)
    with pytest.raises(ReshardError, match="world_size must be an integer >= 1"):
        plan_resume(2, 64, 0)


# ---- the C API's declarations ----------------------------------------------------------------------
def test_header_declares_the_distributed_api():
    cffi = pytest.importorskip("cffi")
    from pycraftax._cdef import cdef_declarations

    header = os.path.join(os.path.dirname(HERE), "..", "cuda", "ppo_cuda.h")
    ffi = cffi.FFI()
    ffi.cdef(cdef_declarations(open(header).read()))  # what cuda_trainer.load() does
    declared = dir(ffi.dlopen(None))  # the names the cdef declared (none is resolved)
    for name in ("craftax_ppo_set_distributed", "craftax_ppo_nccl_unique_id", "craftax_ppo_set_nccl_path",
                 "craftax_ppo_world_size", "CRAFTAX_PPO_ERR_NCCL"):
        assert name in declared, name
    assert ffi.dlopen(None).CRAFTAX_PPO_NCCL_ID_BYTES == 128


def _library_without_gpu():
    """The CUDA library opened directly (cuda_env.load() wants a GPU): its NCCL loading and id
    functions touch no CUDA runtime, so they run on any host where the library was built."""
    cffi = pytest.importorskip("cffi")
    from pycraftax._cdef import cdef_declarations

    root = os.path.join(os.path.dirname(HERE), "..")
    path = os.environ.get("PYCRAFTAX_CUDA_LIB") or os.path.join(root, "cuda", "build", "libcraftax_cuda.so")
    if not os.path.exists(path):
        pytest.skip(f"{path} not built (make -C cuda)")
    ffi = cffi.FFI()
    ffi.cdef(cdef_declarations(open(os.path.join(root, "cuda", "ppo_cuda.h")).read()))
    try:
        return ffi, ffi.dlopen(path)
    except OSError as exc:
        pytest.skip(f"{path} does not load here: {exc}")


def test_missing_nccl_is_a_clear_error():
    ffi, lib = _library_without_gpu()
    try:
        assert lib.craftax_ppo_set_nccl_path(b"/nonexistent/libnccl.so.2") == 0
        uid = ffi.new("uint8_t[]", 128)
        if lib.craftax_ppo_nccl_unique_id(uid, 128) == 0:
            pytest.skip("a libnccl.so.2 is on the loader's default path: the missing case cannot be made here")
        message = ffi.string(lib.craftax_ppo_last_error()).decode()
        assert "cannot load NCCL (/nonexistent/libnccl.so.2" in message and "nvidia-nccl-cu13" in message
        assert lib.craftax_ppo_nccl_unique_id(uid, 127) == lib.CRAFTAX_PPO_ERR_ARGUMENT
        assert lib.craftax_ppo_set_distributed(ffi.NULL, 0, 1, ffi.NULL, 0, 1.0) == lib.CRAFTAX_PPO_ERR_NULL
        assert lib.craftax_ppo_world_size(ffi.NULL) == 0
    finally:
        lib.craftax_ppo_set_nccl_path(ffi.NULL)


def test_nccl_loads_and_makes_communicator_ids():
    """The real NCCL (the nvidia-nccl-cu13 wheel's libnccl.so.2, PYCRAFTAX_NCCL or on sys.path):
    dlopen, every entry point the trainer uses resolved, the version check, ncclGetUniqueId."""
    ffi, lib = _library_without_gpu()
    path = dist.find_nccl()
    if path is None:
        pytest.skip("no libnccl.so.2 (pip install nvidia-nccl-cu13, or set PYCRAFTAX_NCCL)")
    lib.craftax_ppo_set_nccl_path(path.encode())
    ids = [ffi.new("uint8_t[]", 128) for _ in range(2)]
    for uid in ids:
        assert lib.craftax_ppo_nccl_unique_id(uid, 128) == 0, ffi.string(lib.craftax_ppo_last_error()).decode()
    first, second = (bytes(ffi.buffer(u)) for u in ids)
    assert first != second and any(first)


# ---- on >= 2 GPUs: the NCCL all-reduce itself ------------------------------------------------------
def _gpu_count() -> int:
    if not shutil.which("nvidia-smi"):
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(line.startswith("GPU ") for line in out.splitlines())


def _needs_two_gpus():
    n = _gpu_count()
    if n < 2:
        pytest.skip(f"needs >= 2 GPUs for NCCL between ranks; this host has {n}")
    from pycraftax.train import cuda_trainer

    if not cuda_trainer.available():
        pytest.skip(f"CUDA trainer unavailable: {cuda_trainer.unavailable_reason()}")


def _needs_cuda_trainer():
    from pycraftax.train import cuda_trainer

    if not cuda_trainer.available():
        pytest.skip(f"CUDA trainer unavailable: {cuda_trainer.unavailable_reason()}")
    return cuda_trainer


def test_gpu_set_distributed_checks_its_arguments():
    cuda_trainer = _needs_cuda_trainer()
    ppo = cuda_trainer.PPO(_small_config(0))
    lib, ffi = ppo.lib, ppo.ffi
    uid = ffi.new("uint8_t[]", 128)
    with pytest.raises(ValueError, match=r"rank 2 not in \[0, 2\)"):
        ppo._check(lib.craftax_ppo_set_distributed(ppo._h, 2, 2, uid, 128, 10.0), "set_distributed")
    with pytest.raises(ValueError, match="world size 0 < 1"):
        ppo._check(lib.craftax_ppo_set_distributed(ppo._h, 0, 0, uid, 128, 10.0), "set_distributed")
    with pytest.raises(ValueError, match="unique id of 64 bytes, 128 expected"):
        ppo._check(lib.craftax_ppo_set_distributed(ppo._h, 0, 2, uid, 64, 10.0), "set_distributed")
    with pytest.raises(ValueError, match="NULL unique id with world size 2"):
        ppo._check(lib.craftax_ppo_set_distributed(ppo._h, 0, 2, ffi.NULL, 0, 10.0), "set_distributed")
    with pytest.raises(ValueError, match="timeout 0 s not > 0"):
        ppo._check(lib.craftax_ppo_set_distributed(ppo._h, 0, 2, uid, 128, 0.0), "set_distributed")
    # world size 1: accepted, and the trainer stays a one-process trainer
    ppo._check(lib.craftax_ppo_set_distributed(ppo._h, 0, 1, ffi.NULL, 0, 10.0), "set_distributed")
    assert lib.craftax_ppo_world_size(ppo._h) == 1
    ppo.close()


def test_gpu_set_distributed_must_come_before_the_first_iterate():
    cuda_trainer = _needs_cuda_trainer()
    trainer = cuda_trainer.CudaTrainer(_small_config(0))
    trainer.ppo.iterate()
    lib, ffi = trainer.ppo.lib, trainer.ppo.ffi
    with pytest.raises(ValueError, match="must come before the first iterate"):
        trainer.ppo._check(lib.craftax_ppo_set_distributed(trainer.ppo._h, 0, 2, ffi.new("uint8_t[]", 128), 128,
                                                           10.0), "set_distributed")
    trainer.close()


def test_gpu_nccl_unique_id():
    cuda_trainer = _needs_cuda_trainer()
    ffi, lib = cuda_trainer.load()
    path = dist.find_nccl()
    if path:
        lib.craftax_ppo_set_nccl_path(path.encode())
    ids = [ffi.new("uint8_t[]", 128) for _ in range(2)]
    codes = [lib.craftax_ppo_nccl_unique_id(i, 128) for i in ids]
    if codes[0] != 0:
        message = ffi.string(lib.craftax_ppo_last_error()).decode()
        assert "cannot load NCCL" in message and "nvidia-nccl-cu13" in message, message
        pytest.skip(f"no NCCL here ({message}); the clear error was checked")
    assert codes == [0, 0]
    assert bytes(ffi.buffer(ids[0])) != bytes(ffi.buffer(ids[1]))  # a fresh communicator each call
    assert lib.craftax_ppo_nccl_unique_id(ids[0], 127) == lib.CRAFTAX_PPO_ERR_ARGUMENT


def _launch_gpu_ranks(tmp_path, mode: str, updates: int) -> int:
    env = dict(os.environ, NCCL_NVLS_ENABLE="0")  # no NVLink multicast (it can take shared GPUs down)
    return dist.launch(2, [sys.executable, HERE, "gpu", mode, str(updates), str(tmp_path)], environ=env,
                       grace_s=10.0)


def _run_ranks(tmp_path, mode: str, updates: int) -> list[dict]:
    assert _launch_gpu_ranks(tmp_path, mode, updates) == 0
    return [dict(np.load(tmp_path / f"params{r}.npz")) for r in range(2)]


def test_gpu_weights_stay_equal_across_ranks(tmp_path):
    _needs_two_gpus()
    ranks = _run_ranks(tmp_path, "seeded", 3)
    assert ranks[0].keys() == ranks[1].keys()
    for k in ranks[0]:
        np.testing.assert_array_equal(ranks[0][k], ranks[1][k], err_msg=k)


def test_gpu_same_data_on_two_ranks_equals_one_process(tmp_path):
    """Both ranks on the same seed: the average of two equal gradients is that gradient exactly,
    so two ranks must end bitwise where one process ends."""
    _needs_two_gpus()
    ranks = _run_ranks(tmp_path, "same_seed", 3)
    single = _single_process_params(3)
    for k in single:
        np.testing.assert_array_equal(ranks[0][k], single[k], err_msg=k)
        np.testing.assert_array_equal(ranks[1][k], single[k], err_msg=k)


def test_gpu_dead_rank_ends_the_iteration_with_an_error(tmp_path):
    """Rank 1 exits after one update; rank 0's next iterate waits in the all-reduce for it and must
    end with the trainer's NCCL error within the timeout (DEAD_RANK_TIMEOUT_S), not hang."""
    _needs_two_gpus()
    assert _launch_gpu_ranks(tmp_path, "die", 3) == 0
    result = json.loads((tmp_path / "died.json").read_text())
    assert "NCCL" in result["error"] or "peers" in result["error"], result
    assert result["seconds"] < DEAD_RANK_TIMEOUT_S + 60, result
    assert "an earlier NCCL failure ended this run" in result["again"], result  # refused, not replayed


DEAD_RANK_TIMEOUT_S = 30.0


# ---- the worker: run as `python tests/test_distributed.py ROLE ...` --------------------------------
def _small_config(seed: int):
    from pycraftax.train.trainer import TrainConfig

    return TrainConfig(total_timesteps=64 * 16 * 3, num_envs=64, num_steps=16, num_minibatches=4, width=64,
                       hidden=64, seed=seed)


def _trainer_params(seed: int, updates: int, group, die_after: int | None = None, out: str = "") -> dict:
    from pycraftax.train.cuda_trainer import CudaTrainer

    trainer = CudaTrainer(_small_config(seed))
    dist.join_trainer(trainer.ppo, group, timeout=DEAD_RANK_TIMEOUT_S if die_after else dist.DEFAULT_TIMEOUT_S)
    for update in range(updates):
        if die_after is not None and update == die_after:
            if group.rank == 1:
                os._exit(0)
            start = time.monotonic()
            try:
                trainer.ppo.iterate()
                error = ""
            except RuntimeError as exc:
                error = str(exc)
            seconds = time.monotonic() - start
            try:
                trainer.ppo.iterate()
                again = ""
            except RuntimeError as exc:
                again = str(exc)
            with open(os.path.join(out, "died.json"), "w") as f:
                json.dump({"error": error, "seconds": seconds, "again": again}, f)
            os._exit(0)  # the trainer's communicator is aborted: leave without tearing it down
        trainer.ppo.iterate()
        if group is not None and die_after is None:
            group.check()
    params = {k: v.copy() for k, v in trainer.params.items()}
    trainer.close()
    return params


def _single_process_params(updates: int) -> dict:
    return _trainer_params(0, updates, None)


def _main(argv: list[str]) -> int:
    role = argv[0]
    if role == "gpu":
        mode, updates, out = argv[1], int(argv[2]), argv[3]
        rdv = Rendezvous.from_environ()
        dist.bind_local_device(rdv)
        group = dist.init_process_group(rdv)
        seed = 0 if mode == "same_seed" else dist.rank_seed(0, rdv.rank)
        params = _trainer_params(seed, updates, group, die_after=1 if mode == "die" else None, out=out)
        np.savez(os.path.join(out, f"params{rdv.rank}.npz"), **params)
        group.close()
        return 0
    if role in ("launched", "launched_fail"):
        rdv = Rendezvous.from_environ()
        with open(os.path.join(argv[1], f"rank{rdv.rank}.json"), "w") as f:
            json.dump(dict(rank=rdv.rank, world_size=rdv.world_size, local_rank=rdv.local_rank,
                           master_addr=rdv.master_addr), f)
        if role == "launched_fail":
            if rdv.rank == 1:
                return 5
            time.sleep(600)
        return 0
    rdv = Rendezvous.from_environ()
    timeout = float(os.environ.get("WORKER_TIMEOUT", "20"))
    group = dist.init_process_group(rdv, timeout=timeout)
    if role == "serve_then_die":
        time.sleep(0.5)
        os._exit(4)
    if role == "exchange":
        uid = group.nccl_unique_id(lambda: b"")
        got = group.broadcast_arrays("learner")
        arrays_ok = (got["w"].dtype == np.float32 and got["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
                     and got["n"].dtype == np.int64 and got["n"].tolist() == [7])
        group.check_same("config", {"num_envs": 8})
        group.store.set("from rank 1", b"hello from 1")
        group.barrier("after")
        print(json.dumps({"uid_ok": uid == bytes(range(128)), "arrays_ok": arrays_ok}))
        group.close()
        return 0
    if role == "mismatch":
        try:
            group.check_same("config", {"num_envs": 16})
        except RendezvousError:
            group.close()
            return 0
        return 1
    if role == "die":
        os._exit(3)
    if role == "hang":
        time.sleep(600)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))

"""Data-parallel training across GPUs: rendezvous, a small TCP store, the one-host launcher,
and the checkpoint rules of a run over several ranks.

One process per GPU (a rank). The ranks find each other through the variables torchrun sets
(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), so the same command runs one process per
GPU on one host (``launch``, behind ``pycraftax train --gpus N``) or across hosts (torchrun, SLURM).
Rank 0 serves a TCP store at MASTER_ADDR:MASTER_PORT (MASTER_PORT + 1 under torchrun, whose agent
holds MASTER_PORT; PYCRAFTAX_STORE_PORT overrides both) through which the ranks exchange the NCCL
communicator id and check that they train the same configuration; the store also notices a rank
whose process ended (its connection closes) and every wait has a timeout, so a dead rank ends the
others with ``RankFailedError`` instead of a hang. The gradients themselves go through NCCL inside
the CUDA trainer (cuda/ppo_nccl.cuh, ``craftax_ppo_set_distributed``).

Rank 0 writes metrics and the checkpoint (weights, Adam moments, counters: the same on every rank,
and its own envs' state); every other rank writes only its envs' state beside it
(``shard_path``). ``plan_resume`` says how a checkpoint resumes on a given world size.

The store is for trusted networks: it has no authentication (as torch.distributed's TCPStore).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

__all__ = [
    "RENDEZVOUS_VARIABLES", "DEFAULT_TIMEOUT_S", "RendezvousError", "RankFailedError", "ReshardError",
    "Rendezvous", "StoreServer", "StoreClient", "ProcessGroup", "init_process_group", "launch",
    "bind_local_device", "rank_seed", "shard_path", "split_checkpoint", "ResumePlan", "plan_resume", "find_nccl",
    "join_trainer",
]

RENDEZVOUS_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
DEFAULT_TIMEOUT_S = 300.0


class RendezvousError(ValueError):
    """The rendezvous variables are missing, malformed or inconsistent."""


class RankFailedError(RuntimeError):
    """Another rank died, left, or did not answer within the timeout."""


class ReshardError(ValueError):
    """A checkpoint cannot resume on the requested world size."""


# ---- rendezvous variables ---------------------------------------------------------------------
def _int_var(env, name: str, low: int, high: int | None = None) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        raise RendezvousError(f"{name} is not set (needed when WORLD_SIZE > 1; torchrun and "
                              "`pycraftax train --gpus N` set it)")
    try:
        value = int(raw.strip())
    except ValueError:
        raise RendezvousError(f"{name}={raw!r} is not an integer") from None
    if value < low or (high is not None and value > high):
        allowed = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise RendezvousError(f"{name}={value} must be {allowed}")
    return value


@dataclass(frozen=True)
class Rendezvous:
    """Where this process stands in the run: rank (0 .. world_size-1), its GPU on its host
    (local_rank), and where rank 0's store listens."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int = 0
    store_port: int | None = None  # where rank 0's store listens; None: master_port

    @property
    def port(self) -> int:
        """The store's port: store_port, else master_port."""
        return self.master_port if self.store_port is None else self.store_port

    @property
    def is_main(self) -> bool:
        """Rank 0: the rank that writes metrics and checkpoints."""
        return self.rank == 0

    @classmethod
    def from_environ(cls, environ=None) -> Rendezvous:
        """Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT. None of them set, or
        WORLD_SIZE=1: one process. Otherwise all five must be set and consistent, else
        RendezvousError naming the variable and the values it allows."""
        env = os.environ if environ is None else environ
        present = [v for v in RENDEZVOUS_VARIABLES if env.get(v, "").strip() != ""]
        if not present:
            return cls()
        if "WORLD_SIZE" not in present:
            raise RendezvousError(f"{', '.join(present)} set but WORLD_SIZE is not: set WORLD_SIZE (>= 1), or "
                                  "unset the others for a one-process run")
        world = _int_var(env, "WORLD_SIZE", 1)
        if world == 1:
            rank = _int_var(env, "RANK", 0, 0) if "RANK" in present else 0
            local = _int_var(env, "LOCAL_RANK", 0) if "LOCAL_RANK" in present else 0
            return cls(rank=rank, world_size=1, local_rank=local)
        rank = _int_var(env, "RANK", 0, world - 1)
        local = _int_var(env, "LOCAL_RANK", 0, world - 1)
        addr = env.get("MASTER_ADDR", "").strip()
        if not addr:
            raise RendezvousError("MASTER_ADDR is not set: the host name or address of rank 0 (127.0.0.1 on one "
                                  "host)")
        port = _int_var(env, "MASTER_PORT", 1, 65535)
        if env.get("PYCRAFTAX_STORE_PORT", "").strip():
            store_port = _int_var(env, "PYCRAFTAX_STORE_PORT", 1, 65535)
        elif env.get("TORCHELASTIC_USE_AGENT_STORE", "").strip().lower() == "true":
            # torchrun's agent already serves its own store on MASTER_PORT
            store_port = port + 1 if port < 65535 else port - 1
        else:
            store_port = None
        return cls(rank=rank, world_size=world, local_rank=local, master_addr=addr, master_port=port,
                   store_port=store_port)

    def environ(self) -> dict[str, str]:
        """The variables that give a child process this rendezvous."""
        env = {"RANK": str(self.rank), "WORLD_SIZE": str(self.world_size), "LOCAL_RANK": str(self.local_rank),
               "MASTER_ADDR": self.master_addr, "MASTER_PORT": str(self.master_port)}
        if self.store_port is not None:
            env["PYCRAFTAX_STORE_PORT"] = str(self.store_port)
        return env


def bind_local_device(rdv: Rendezvous, environ=None) -> str:
    """Restricts this process to GPU local_rank of its host (CUDA_VISIBLE_DEVICES, narrowed to its
    local_rank-th entry where it is already set) so that the trainer's device 0 is this rank's
    GPU. Must run before CUDA is first used in the process. Returns the value set."""
    env = os.environ if environ is None else environ
    current = env.get("CUDA_VISIBLE_DEVICES")
    if current is None or current.strip() == "":
        chosen = str(rdv.local_rank)
    else:
        devices = [d.strip() for d in current.split(",") if d.strip()]
        if rdv.local_rank >= len(devices):
            raise RendezvousError(f"LOCAL_RANK={rdv.local_rank} but CUDA_VISIBLE_DEVICES={current!r} lists "
                                  f"{len(devices)} GPU(s): LOCAL_RANK must be in [0, {len(devices) - 1}]")
        chosen = devices[rdv.local_rank]
    env["CUDA_VISIBLE_DEVICES"] = chosen
    return chosen


def rank_seed(seed: int, rank: int) -> int:
    """The seed of rank `rank`'s envs and policy sampling: seed + rank, so rank 0 runs the
    one-GPU run's streams and no two ranks share theirs."""
    if rank < 0:
        raise ValueError(f"rank must be >= 0, got {rank}")
    return int(seed) + int(rank)


# ---- the store: length-prefixed JSON requests over TCP ------------------------------------------
_HEADER = struct.Struct("!I")
_MAX_FRAME = 1 << 30  # a frame longer than this is garbage, not a peer


def _send(sock: socket.socket, obj: dict, payload: bytes = b"") -> None:
    head = json.dumps(obj).encode()
    sock.sendall(_HEADER.pack(len(head)) + head + _HEADER.pack(len(payload)) + payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _recv(sock: socket.socket) -> tuple[dict, bytes]:
    (n,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if n > _MAX_FRAME:
        raise ConnectionError(f"frame of {n} bytes")
    head = json.loads(_recv_exact(sock, n))
    (m,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    if m > _MAX_FRAME:
        raise ConnectionError(f"frame of {m} bytes")
    return head, _recv_exact(sock, m)


class StoreServer:
    """Rank 0's store: keys to bytes, counters, and which ranks are connected. A rank whose
    connection closes before it says goodbye is dead: every wait then fails naming it."""

    def __init__(self, host: str, port: int, world_size: int):
        if world_size < 1:
            raise ValueError(f"world_size must be >= 1, got {world_size}")
        self.world_size = world_size
        self._data: dict[str, bytes] = {}
        self._joined: set[int] = set()
        self._dead: set[int] = set()
        self._cond = threading.Condition()
        self._sock = socket.create_server((host, port), reuse_port=False)
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._closing = False
        self._thread = threading.Thread(target=self._serve, name="pycraftax-store", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closing = True
        self._thread.join(timeout=5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._closing:
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _first_dead(self) -> int | None:
        return min(self._dead) if self._dead else None

    def _wait(self, ready, timeout: float) -> str | None:
        """None once ready() holds; else 'dead' or 'timeout' (called with the lock held)."""
        deadline = time.monotonic() + timeout
        while not ready():
            if self._dead:
                return "dead"
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            self._cond.wait(min(left, 0.5))
        return None

    def _handle(self, conn: socket.socket) -> None:
        rank = None
        clean = False
        try:
            while True:
                req, payload = _recv(conn)
                op = req.get("op")
                if op == "hello":
                    r, world = req.get("rank"), req.get("world_size")
                    with self._cond:
                        if world != self.world_size:
                            _send(conn, {"ok": False, "error": f"world size {world} != the store's {self.world_size}"})
                            return
                        if not isinstance(r, int) or not 0 <= r < self.world_size or r in self._joined:
                            _send(conn, {"ok": False, "error": f"rank {r!r} already joined or not in "
                                                              f"[0, {self.world_size})"})
                            return
                        rank = r
                        self._joined.add(r)
                        self._cond.notify_all()
                    _send(conn, {"ok": True})
                    continue
                if op == "bye":
                    clean = True
                    _send(conn, {"ok": True})
                    return
                with self._cond:
                    if op == "set":
                        self._data[req["key"]] = payload
                        self._cond.notify_all()
                        _send(conn, {"ok": True})
                    elif op == "get":
                        key = req["key"]
                        why = self._wait(lambda: key in self._data, float(req["timeout"]))
                        if why is None:
                            _send(conn, {"ok": True}, self._data[key])
                        else:
                            _send(conn, {"ok": False, "why": why, "dead": self._first_dead()})
                    elif op == "add":
                        value = int(self._data.get(req["key"], b"0")) + int(req["amount"])
                        self._data[req["key"]] = str(value).encode()
                        self._cond.notify_all()
                        _send(conn, {"ok": True, "value": value})
                    elif op == "wait_count":
                        key, target = req["key"], int(req["target"])
                        why = self._wait(lambda: int(self._data.get(key, b"0")) >= target, float(req["timeout"]))
                        _send(conn, {"ok": why is None, "why": why, "dead": self._first_dead()})
                    elif op == "check":
                        _send(conn, {"ok": not self._dead, "why": "dead", "dead": self._first_dead()})
                    else:
                        _send(conn, {"ok": False, "error": f"unknown op {op!r}"})
        except (ConnectionError, OSError, ValueError, KeyError):
            pass
        finally:
            conn.close()
            if rank is not None and not clean:
                with self._cond:
                    self._dead.add(rank)
                    self._cond.notify_all()


class StoreClient:
    """One rank's connection to the store. Every wait takes at most `timeout` seconds and raises
    RankFailedError naming the dead rank, the store's loss, or the timeout."""

    def __init__(self, host: str, port: int, rank: int, world_size: int, timeout: float = DEFAULT_TIMEOUT_S,
                 connect_timeout: float | None = None):
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        self.host, self.port, self.rank, self.world_size, self.timeout = host, port, rank, world_size, timeout
        self._lock = threading.Lock()
        deadline = time.monotonic() + (timeout if connect_timeout is None else connect_timeout)
        last = None
        while True:
            try:
                self._sock = socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic()))
                break
            except OSError as exc:
                last = exc
                if time.monotonic() >= deadline:
                    raise RankFailedError(f"rank {rank}: cannot reach rank 0's store at {host}:{port} ({last}): is "
                                          "rank 0 running, and are MASTER_ADDR / MASTER_PORT its address?") from None
                time.sleep(0.05)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        reply, _ = self._request({"op": "hello", "rank": rank, "world_size": world_size}, wait=0.0)
        if not reply.get("ok"):
            self._sock.close()
            raise RendezvousError(f"rank {rank}: the store refused it: {reply.get('error')}")

    def _request(self, req: dict, payload: bytes = b"", wait: float = 0.0) -> tuple[dict, bytes]:
        with self._lock:
            try:
                self._sock.settimeout(wait + 30.0)
                _send(self._sock, req, payload)
                return _recv(self._sock)
            except (ConnectionError, OSError) as exc:
                raise RankFailedError(f"rank {self.rank}: lost rank 0's store at {self.host}:{self.port} ({exc}): "
                                      "rank 0 died or the network failed") from None

    def _raise(self, reply: dict, what: str) -> None:
        if reply.get("why") == "dead":
            raise RankFailedError(f"rank {self.rank}: rank {reply.get('dead')} died (its process ended) while "
                                  f"{what}")
        if reply.get("why") == "timeout":
            raise RankFailedError(f"rank {self.rank}: waited {self.timeout:g} s for the other ranks while {what}: "
                                  "a rank died or hangs")
        raise RankFailedError(f"rank {self.rank}: store error while {what}: {reply.get('error')}")

    def set(self, key: str, value: bytes) -> None:
        self._request({"op": "set", "key": key}, bytes(value))

    def get(self, key: str) -> bytes:
        """The value of key, waiting until some rank sets it."""
        reply, payload = self._request({"op": "get", "key": key, "timeout": self.timeout}, wait=self.timeout)
        if not reply.get("ok"):
            self._raise(reply, f"waiting for {key!r}")
        return payload

    def add(self, key: str, amount: int = 1) -> int:
        reply, _ = self._request({"op": "add", "key": key, "amount": int(amount)})
        return int(reply["value"])

    def wait_count(self, key: str, target: int, what: str) -> None:
        reply, _ = self._request({"op": "wait_count", "key": key, "target": int(target), "timeout": self.timeout},
                                 wait=self.timeout)
        if not reply.get("ok"):
            self._raise(reply, what)

    def check(self) -> None:
        """Raises RankFailedError if a rank has died; cheap (one round trip), for every iteration."""
        reply, _ = self._request({"op": "check"})
        if not reply.get("ok"):
            self._raise(reply, "training")

    def close(self) -> None:
        """Leaves cleanly: the store does not count this rank as dead."""
        try:
            self._request({"op": "bye"})
        except RankFailedError:
            pass
        self._sock.close()


class ProcessGroup:
    """The ranks of one run: this rank's store connection (and on rank 0 the store itself),
    barriers, the NCCL id exchange and the configuration check."""

    def __init__(self, rdv: Rendezvous, timeout: float = DEFAULT_TIMEOUT_S):
        self.rdv = rdv
        self.rank, self.world_size = rdv.rank, rdv.world_size
        self._server = None
        if rdv.is_main:
            try:
                self._server = StoreServer(rdv.master_addr, rdv.port, rdv.world_size)
            except OSError as exc:
                raise RendezvousError(f"rank 0 cannot serve its store at {rdv.master_addr}:{rdv.port} ({exc}): "
                                      "MASTER_ADDR must be this host's address and the port free (another run on "
                                      "it? choose another MASTER_PORT or PYCRAFTAX_STORE_PORT)") from None
        try:
            self.store = StoreClient(rdv.master_addr, rdv.port, rdv.rank, rdv.world_size, timeout=timeout)
        except BaseException:
            if self._server is not None:
                self._server.close()
            raise
        self._barriers = 0

    def barrier(self, name: str = "barrier") -> None:
        """Returns once every rank has reached it (the same sequence of barriers on every rank)."""
        self._barriers += 1
        key = f"barrier/{self._barriers}/{name}"
        self.store.add(key)
        self.store.wait_count(key, self.world_size, f"at barrier {name!r}")

    def broadcast_bytes(self, name: str, value: bytes | None = None) -> bytes:
        """Rank 0's value (given there) on every rank."""
        key = f"bcast/{name}"
        if self.rank == 0:
            if value is None:
                raise ValueError("broadcast_bytes: rank 0 must give the value")
            self.store.set(key, value)
            return bytes(value)
        return self.store.get(key)

    def check_same(self, name: str, value) -> None:
        """Raises RendezvousError on every rank unless all ranks give the same JSON-able value
        (the training configuration: the gradients of different models cannot be averaged)."""
        mine = json.dumps(value, sort_keys=True)
        self.store.set(f"same/{name}/{self.rank}", mine.encode())
        for r in range(self.world_size):
            theirs = self.store.get(f"same/{name}/{r}").decode()
            if theirs != mine:
                raise RendezvousError(f"rank {self.rank}: {name} differs on rank {r}: {theirs} here {mine}")

    def broadcast_arrays(self, name: str, arrays: dict | None = None) -> dict:
        """Rank 0's dict of numpy arrays (given there) on every rank, dtypes and shapes kept."""
        import numpy as np

        if self.rank == 0:
            if arrays is None:
                raise ValueError("broadcast_arrays: rank 0 must give the arrays")
            index = {k: [np.asarray(v).dtype.str, list(np.shape(v))] for k, v in arrays.items()}
            self.broadcast_bytes(f"{name}/index", json.dumps(index).encode())
            for k, v in arrays.items():
                self.broadcast_bytes(f"{name}/{k}", np.ascontiguousarray(v).tobytes())
            return {k: np.array(v) for k, v in arrays.items()}
        index = json.loads(self.broadcast_bytes(f"{name}/index"))
        return {k: np.frombuffer(self.broadcast_bytes(f"{name}/{k}"), dtype=np.dtype(dt)).reshape(shape).copy()
                for k, (dt, shape) in index.items()}

    def nccl_unique_id(self, make) -> bytes:
        """The communicator id: make() on rank 0 (craftax_ppo_nccl_unique_id), received by the others."""
        return self.broadcast_bytes("nccl_id", make() if self.rank == 0 else None)

    def check(self) -> None:
        self.store.check()

    def close(self) -> None:
        """Leaves the run: a last barrier, so that rank 0's store outlives every rank's use of it."""
        if self.world_size > 1:
            try:
                self.barrier("close")
            except RankFailedError:
                pass
        self.store.close()
        if self._server is not None:
            self._server.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def init_process_group(rdv: Rendezvous | None = None, timeout: float = DEFAULT_TIMEOUT_S) -> ProcessGroup | None:
    """The process group of the rendezvous (from the environment by default); None with one
    process, which needs none."""
    rdv = Rendezvous.from_environ() if rdv is None else rdv
    if rdv.world_size == 1:
        return None
    group = ProcessGroup(rdv, timeout=timeout)
    group.barrier("init")
    return group


# ---- launcher: one process per GPU on this host -------------------------------------------------
def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def launch(gpus: int, argv: list[str], *, master_addr: str = "127.0.0.1", master_port: int | None = None,
           environ=None, grace_s: float = 10.0, poll_s: float = 0.05) -> int:
    """Runs argv once per GPU of this host (ranks 0 .. gpus-1), each with RANK, LOCAL_RANK,
    WORLD_SIZE, MASTER_ADDR and MASTER_PORT set, as torchrun --nproc-per-node does. Returns 0 once
    all exit 0; as soon as one fails, stops the others (SIGTERM, SIGKILL after grace_s) and returns
    the failed rank's exit status (128 + signal for a signal)."""
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ValueError(f"gpus must be an integer >= 1, got {gpus!r}")
    if not argv:
        raise ValueError("argv must name the command to run on every rank")
    port = _free_port(master_addr) if master_port is None else int(master_port)
    base = dict(os.environ if environ is None else environ)
    procs = []
    for rank in range(gpus):
        env = dict(base)
        env.update(Rendezvous(rank=rank, world_size=gpus, local_rank=rank, master_addr=master_addr,
                              master_port=port).environ())
        procs.append(subprocess.Popen(list(argv), env=env))
    failed = None
    try:
        while failed is None and any(p.poll() is None for p in procs):
            for rank, p in enumerate(procs):
                if p.poll() not in (None, 0):
                    failed = rank
                    break
            time.sleep(poll_s)
        if failed is None:
            failed = next((r for r, p in enumerate(procs) if p.returncode != 0), None)
    finally:
        alive = [p for p in procs if p.poll() is None]
        for p in alive:
            p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for p in alive:
            try:
                p.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    if failed is None:
        return 0
    code = procs[failed].returncode
    print(f"pycraftax: rank {failed} of {gpus} exited with status {code}; stopped the others", file=sys.stderr)
    return 128 - code if code < 0 else code


# ---- checkpoints ----------------------------------------------------------------------------------
def shard_path(path: str, rank: int) -> str:
    """Where rank `rank` (> 0) keeps its envs' state beside rank 0's checkpoint `path`."""
    if rank < 1:
        raise ValueError(f"rank 0's env state lives in the checkpoint itself; shard_path needs rank >= 1, got {rank}")
    root, ext = os.path.splitext(path)
    return f"{root}.rank{rank}{ext or '.npz'}"


def split_checkpoint(arrays: dict, param_names) -> tuple[dict, dict]:
    """(replicated, per_rank): the learner state every rank holds alike (the parameters, the
    "opt/..." Adam moments, "meta") and the rest, this rank's envs' state."""
    names = set(param_names)
    replicated = {k: v for k, v in arrays.items() if k in names or k.startswith("opt/") or k == "meta"}
    per_rank = {k: v for k, v in arrays.items() if k not in replicated}
    return replicated, per_rank


@dataclass(frozen=True)
class ResumePlan:
    """How a checkpoint resumes: "restore" (every rank continues its own envs exactly) or
    "reset" (the learner state carries over, every rank starts fresh envs: the world size or the
    envs per rank changed); note says why, for the log."""

    envs: str
    num_envs: int
    note: str


def plan_resume(saved_world_size: int, saved_num_envs: int, world_size: int, *, num_envs: int | None = None,
                num_minibatches: int = 1, shards_present=(), keep_global_batch: bool = False) -> ResumePlan:
    """The plan for resuming a checkpoint of `saved_world_size` ranks with `saved_num_envs` envs
    each on `world_size` ranks. The learner state (weights, Adam, counters) is the same on every
    rank and loads on any world size; the envs' state (one key stream and set of envs per rank)
    continues only on the same layout. num_envs: envs per rank now (default: as saved, or with
    keep_global_batch the saved global batch split over the new ranks). shards_present: the ranks
    > 0 whose shard files exist. Raises ReshardError where it cannot resume."""
    for name, v in (("saved_world_size", saved_world_size), ("saved_num_envs", saved_num_envs),
                    ("world_size", world_size), ("num_minibatches", num_minibatches)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ReshardError(f"{name} must be an integer >= 1, got {v!r}")
    if num_envs is None:
        total = saved_world_size * saved_num_envs
        if keep_global_batch:
            if total % world_size:
                raise ReshardError(f"the checkpoint's global batch of {total} envs ({saved_world_size} ranks x "
                                   f"{saved_num_envs}) does not split over {world_size} ranks: use a world size that "
                                   f"divides {total}, or give num_envs per rank")
            num_envs = total // world_size
        else:
            num_envs = saved_num_envs
    if num_envs < 1 or num_envs % num_minibatches:
        raise ReshardError(f"{num_envs} envs per rank on {world_size} ranks: num_minibatches ({num_minibatches}) "
                           "must divide the envs per rank")
    if world_size == saved_world_size and num_envs == saved_num_envs:
        missing = sorted(set(range(1, saved_world_size)) - set(shards_present))
        if missing:
            raise ReshardError(f"the checkpoint was written by {saved_world_size} ranks but the env state of rank(s) "
                               f"{missing} is missing (shard_path): restore those files, or resume on another world "
                               "size to start fresh envs")
        return ResumePlan("restore", num_envs, f"{world_size} rank(s) continue their envs exactly")
    return ResumePlan("reset", num_envs,
                      f"checkpoint of {saved_world_size} rank(s) x {saved_num_envs} envs resumed on {world_size} "
                      f"rank(s) x {num_envs} envs: weights, Adam and counters carry over; the envs start fresh "
                      "episodes (the env key streams are per rank and cannot be resharded)")


# ---- the CUDA trainer's side ----------------------------------------------------------------------
def find_nccl() -> str | None:
    """libnccl.so.2: $PYCRAFTAX_NCCL, else the nvidia-nccl-cu13 wheel's (nvidia/nccl/lib) on
    sys.path; None: the loader's default search (libnccl.so.2 on its library path)."""
    path = os.environ.get("PYCRAFTAX_NCCL")
    if path:
        return path
    for entry in sys.path:
        candidate = os.path.join(entry or ".", "nvidia", "nccl", "lib", "libnccl.so.2")
        if os.path.exists(candidate):
            return candidate
    return None


def join_trainer(ppo, group: ProcessGroup | None, timeout: float = DEFAULT_TIMEOUT_S) -> None:
    """Makes a cuda_trainer.PPO handle this rank's replica, before its first iterate: checks that
    every rank trains the same configuration (all but the seed, which differs by rank_seed) from
    the same Adam count, copies rank 0's weights and Adam moments to every rank (the replicas start
    equal whatever their seeds), passes rank 0's NCCL id to all, and joins the communicator
    (craftax_ppo_set_distributed). group None (one process): nothing to do."""
    if group is None or group.world_size == 1:
        return
    import numpy as np

    ffi, lib = ppo.ffi, ppo.lib
    path = find_nccl()
    if path:
        lib.craftax_ppo_set_nccl_path(path.encode())
    config = {k: v for k, v in ppo.config.to_dict().items() if k != "seed"}
    group.check_same("training configuration", dict(config, num_params=int(ppo.num_params),
                                                    adam_count=int(ppo.counters[1])))
    buffers = {"params": lib.CRAFTAX_PPO_BUF_PARAMS, "adam_mu": lib.CRAFTAX_PPO_BUF_ADAM_MU,
               "adam_nu": lib.CRAFTAX_PPO_BUF_ADAM_NU}
    mine = {k: ppo.read(b, np.float32) for k, b in buffers.items()} if group.rank == 0 else None
    learner = group.broadcast_arrays("learner state", mine)
    if group.rank != 0:
        for k, b in buffers.items():
            ppo.write(b, learner[k])
    id_bytes = int(lib.CRAFTAX_PPO_NCCL_ID_BYTES)

    def make() -> bytes:
        buf = ffi.new("uint8_t[]", id_bytes)
        ppo._check(lib.craftax_ppo_nccl_unique_id(buf, id_bytes), "craftax_ppo_nccl_unique_id")
        return bytes(ffi.buffer(buf, id_bytes))

    uid = group.nccl_unique_id(make)
    if len(uid) != id_bytes:
        raise RankFailedError(f"rank {group.rank}: NCCL id of {len(uid)} bytes from rank 0, {id_bytes} expected")
    group.barrier("nccl id")
    buf = ffi.new("uint8_t[]", uid)
    ppo._check(lib.craftax_ppo_set_distributed(ppo._h, group.rank, group.world_size, buf, id_bytes, float(timeout)),
               "craftax_ppo_set_distributed")

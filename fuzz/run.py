"""The fuzz runner of `nox -s fuzz`: at least 10^5 inputs over the categories of fuzz/cases.py,
run in child processes so that a crash (a signal, an abort, a sanitizer's report) is a finding
with its reproducer, not the end of the run.

    python -m fuzz.run                                  # 100,000 inputs, one worker per core
    python -m fuzz.run --inputs 2000 --workers 2 --categories set_state,actions
    python -m fuzz.run --reproduce set_state:1234       # one input, in this process
    python -m fuzz.run --backend cuda --wrap "compute-sanitizer --tool memcheck --error-exitcode 86"

Each worker runs a batch of seeds of one category and prints a line before and after every
input; the parent watches them: a worker that dies during an input records a crash at that
seed (with the tail of its stderr) and the batch goes on from the next seed in a new worker;
an input that runs past --timeout is killed and recorded as a hang. --wrap runs every worker
under a tool (compute-sanitizer, valgrind): a line of the tool's own report during an input
makes that input a crash. The outcome table (inputs per category; ok, refused, unhelpful,
corrupted, crashes, hangs) is printed at the end, and written as JSON with --report; the run
exits 1 when anything but ok and refused was seen.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# share of the inputs per category: the entry points that write state and read arrays most
WEIGHTS = {"set_state": 20, "steps": 12, "actions": 20, "keys": 8, "key_setter": 5, "params": 10,
           "episode_progress": 5, "lifecycle": 10, "concurrency": 10}
COLUMNS = ("inputs", "ok", "refused", "unhelpful", "corrupted", "crashes", "hangs")
# lines of a --wrap tool's own report (compute-sanitizer, valgrind, ASan/UBSan in the child)
TOOL_MARKERS = ("========= ", "==ERROR:", "ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer")
TOOL_QUIET = ("COMPUTE-SANITIZER", "ERROR SUMMARY: 0 error", "LEAK SUMMARY", "========= Target application returned")


def split_inputs(total: int, categories: list[str]) -> dict[str, int]:
    weights = {c: WEIGHTS[c] for c in categories}
    scale = sum(weights.values())
    counts = {c: total * w // scale for c, w in weights.items()}
    counts[categories[0]] += total - sum(counts.values())
    return counts


# -- the worker ------------------------------------------------------------------------------
def worker(category: str, start: int, stop: int, backend: str, crash_at: int = -1, hang_at: int = -1) -> None:
    """Run seeds [start, stop) of a category, a line before and after each. crash_at / hang_at
    make the worker abort / stall at that seed: the runner's own test (tests/test_api_fuzz.py)."""
    from fuzz import cases

    for seed in range(start, stop):
        print(f"S {seed}", flush=True)
        if seed == crash_at:
            os.abort()
        if seed == hang_at:
            time.sleep(3600)
        outcome, detail = cases.run_case(category, seed, backend)
        print(f"R {seed} {outcome} {json.dumps(detail)}", flush=True)


# -- the parent -------------------------------------------------------------------------------
class Batch:
    """Seeds [start, stop) of one category, run by as many successive workers as crashes need."""

    def __init__(self, category: str, start: int, stop: int):
        self.category, self.next_seed, self.stop = category, start, stop


class Run:
    def __init__(self, args):
        self.args = args
        self.table = {c: dict.fromkeys(COLUMNS, 0) for c in args.categories}
        self.findings = []  # {category, seed, outcome, detail, reproduce}
        self.lock = threading.Lock()

    def record(self, category: str, seed: int, outcome: str, detail: str) -> None:
        column = {"crash": "crashes", "hang": "hangs"}.get(outcome, outcome)
        with self.lock:
            row = self.table[category]
            row["inputs"] += 1
            row[column] += 1
            if outcome not in ("ok", "refused"):
                self.findings.append({"category": category, "seed": seed, "outcome": outcome, "detail": detail[:2000],
                                      "reproduce": f"python -m fuzz.run --backend {self.args.backend} --reproduce "
                                                   f"{category}:{seed}"})

    def command(self, batch: Batch) -> list[str]:
        selftest = [f"--selftest-crash-at={self.args.selftest_crash_at}", f"--selftest-hang-at={self.args.selftest_hang_at}"]
        return shlex.split(self.args.wrap) + [sys.executable, "-m", "fuzz.run", "--worker", batch.category,
                                              str(batch.next_seed), str(batch.stop), "--backend", self.args.backend,
                                              *selftest]

    def run_batch(self, batch: Batch) -> None:
        """Run a batch to its end, restarting after each crash or hang."""
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        while batch.next_seed < batch.stop:
            proc = subprocess.Popen(self.command(batch), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env=env, cwd=str(ROOT))
            lines: queue.Queue = queue.Queue()
            stderr_tail: list[str] = []

            def pump(stream, tag):
                for line in stream:
                    if tag == "err":
                        stderr_tail.append(line)
                        del stderr_tail[:-60]
                    lines.put((tag, line.rstrip("\n")))
                lines.put((tag, None))

            threads = [threading.Thread(target=pump, args=(proc.stdout, "out"), daemon=True),
                       threading.Thread(target=pump, args=(proc.stderr, "err"), daemon=True)]
            for t in threads:
                t.start()
            current, started, tool_report, open_streams = None, time.monotonic(), [], 2
            killed = attributed = False
            while open_streams:
                try:
                    tag, line = lines.get(timeout=1.0)
                except queue.Empty:
                    if current is not None and time.monotonic() - started > self.args.timeout:
                        proc.kill()
                        killed = True
                        self.record(batch.category, current, "hang",
                                    f"no result after {self.args.timeout} s; stderr: {''.join(stderr_tail)[-1500:]}")
                        batch.next_seed = current + 1
                        current = None
                    continue
                if line is None:
                    open_streams -= 1
                    continue
                if any(m in line for m in TOOL_MARKERS) and not any(q in line for q in TOOL_QUIET):
                    tool_report.append(line)
                    continue
                if tag != "out":
                    continue
                if line.startswith("S "):
                    current, started, tool_report = int(line.split()[1]), time.monotonic(), []
                elif line.startswith("R "):
                    _, seed, outcome, detail = line.split(" ", 3)
                    seed = int(seed)
                    if tool_report:  # the tool reported during this input: a memory error, whatever Python saw
                        outcome, detail, attributed = "crash", json.dumps("\n".join(tool_report[:40])), True
                    self.record(batch.category, seed, outcome, json.loads(detail))
                    batch.next_seed, current, tool_report = seed + 1, None, []
            code = proc.wait()
            if current is not None:  # died during an input: a crash at that seed
                report = "\n".join(tool_report[:40]) + "\n" + "".join(stderr_tail)[-3000:]
                self.record(batch.category, current, "crash", f"exit status {code}\n{report}")
                batch.next_seed = current + 1
            elif code != 0 and not killed and batch.next_seed < batch.stop:
                # died between inputs (e.g. while importing): report it against the next seed
                self.record(batch.category, batch.next_seed, "crash",
                            f"worker exited {code} before the input; stderr: {''.join(stderr_tail)[-3000:]}")
                batch.next_seed += 1
            elif code != 0 and not killed and not attributed and self.args.wrap:  # the tool's verdict at exit
                self.findings.append({"category": batch.category, "seed": None, "outcome": "crash",
                                      "detail": f"{self.args.wrap} exited {code}: {''.join(stderr_tail)[-2000:]}",
                                      "reproduce": " ".join(self.command(batch))})

    def batches(self) -> list[Batch]:
        counts = split_inputs(self.args.inputs, self.args.categories)
        out = []
        for category, n in counts.items():
            first = self.args.first_seed
            for start in range(first, first + n, self.args.batch):
                out.append(Batch(category, start, min(first + n, start + self.args.batch)))
        # interleave the categories so that every category progresses from the start
        out.sort(key=lambda b: (b.next_seed, self.args.categories.index(b.category)))
        return out

    def go(self) -> int:
        todo: queue.Queue = queue.Queue()
        for batch in self.batches():
            todo.put(batch)
        began = time.monotonic()

        def drain():
            while True:
                try:
                    batch = todo.get_nowait()
                except queue.Empty:
                    return
                self.run_batch(batch)
                done = sum(r["inputs"] for r in self.table.values())
                print(f"  {done:,} / {self.args.inputs:,} inputs, {time.monotonic() - began:,.0f} s", flush=True)

        threads = [threading.Thread(target=drain) for _ in range(self.args.workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - began
        print(self.format_table(elapsed))
        for finding in self.findings[:50]:
            print(f"- {finding['outcome']} {finding['category']}:{finding['seed']}: "
                  f"{finding['detail'].splitlines()[0] if finding['detail'] else ''}\n    {finding['reproduce']}")
        if self.args.report:
            Path(self.args.report).write_text(json.dumps({
                "backend": self.args.backend, "wrap": self.args.wrap, "inputs": self.args.inputs,
                "workers": self.args.workers, "seconds": round(elapsed, 1), "table": self.table,
                "findings": self.findings}, indent=1))
        bad = any(self.table[c][k] for c in self.table for k in ("unhelpful", "corrupted", "crashes", "hangs"))
        return 1 if bad or self.findings else 0

    def format_table(self, elapsed: float) -> str:
        wrap = f", under {self.args.wrap}" if self.args.wrap else ""
        lines = [f"fuzz: backend={self.args.backend}{wrap}: {elapsed:,.0f} s, {self.args.workers} workers", "",
                 "| category | " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * len(COLUMNS)]
        total = dict.fromkeys(COLUMNS, 0)
        for category, row in self.table.items():
            lines.append(f"| {category} | " + " | ".join(f"{row[k]:,}" for k in COLUMNS) + " |")
            for k in COLUMNS:
                total[k] += row[k]
        lines.append("| **all** | " + " | ".join(f"**{total[k]:,}**" for k in COLUMNS) + " |")
        return "\n".join(lines)


def main(argv=None) -> int:
    from fuzz.cases import CATEGORIES

    parser = argparse.ArgumentParser(prog="python -m fuzz.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=100_000, help="inputs in all (default 100,000)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="child processes at a time")
    parser.add_argument("--backend", default="c", choices=("c", "cuda"))
    parser.add_argument("--categories", default=",".join(CATEGORIES), help="comma-separated subset")
    parser.add_argument("--batch", type=int, default=400, help="inputs per worker process")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before an input is a hang")
    parser.add_argument("--first-seed", type=int, default=0, help="the seeds of each category start here")
    parser.add_argument("--wrap", default="", help="a command every worker runs under (compute-sanitizer ...)")
    parser.add_argument("--report", default="", help="write the table and findings to this JSON file")
    parser.add_argument("--reproduce", default="", help="CATEGORY:SEED: run one input here and print its outcome")
    parser.add_argument("--worker", nargs=3, metavar=("CATEGORY", "START", "STOP"), help=argparse.SUPPRESS)
    parser.add_argument("--selftest-crash-at", type=int, default=-1, help=argparse.SUPPRESS)
    parser.add_argument("--selftest-hang-at", type=int, default=-1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        category, start, stop = args.worker
        worker(category, int(start), int(stop), args.backend, args.selftest_crash_at, args.selftest_hang_at)
        return 0
    if args.reproduce:
        from fuzz import cases

        category, seed = args.reproduce.rsplit(":", 1)
        outcome, detail = cases.run_case(category, int(seed), args.backend)
        print(outcome, detail)
        return 0 if outcome in ("ok", "refused") else 1
    args.categories = [c for c in args.categories.split(",") if c]
    unknown = [c for c in args.categories if c not in CATEGORIES]
    if unknown:
        parser.error(f"unknown categories {unknown}; choose from {list(CATEGORIES)}")
    return Run(args).go()


if __name__ == "__main__":
    sys.exit(main())

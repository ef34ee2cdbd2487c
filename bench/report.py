"""bench/REPORT.md and its plots from the newest result of each benchmark suite.

    python bench/report.py [--results bench/results] [--out bench/REPORT.md]   (nox -s report)

Reads the suites' pytest-benchmark JSON (a suite without a section here gets a generic table), `bench/results/<date>-<machine kind>-<suite>.json`
(the newest file of each suite and machine kind), and the summaries of the published
training runs, `bench/results/train-*.json`. Every figure is a benchmark's own `extra_info`
throughput (or a run summary's field); the report computes only ratios, and only between
results of one machine kind, naming the files, machine, commit and date of each table.
Plots land beside the report in bench/plots/. Files of no known kind are listed, not read.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITES = ("c", "upstream", "envpool", "trainer", "fast_trainer", "cuda", "cuda_async", "pixels")
TRAINER_SUITES = ("trainer", "fast_trainer")  # the CUDA/NumPy trainers' file and the fast recipe's sweep
RESULT_NAME = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2})-(?P<kind>[a-z0-9-]+)-(?P<suite>[a-z_]+)\.json$")
SYMBOLIC, CLASSIC = "Craftax-Symbolic-v1", "Craftax-Classic-Symbolic-v1"


class Result:
    """One suite's result file: its benchmarks' extra_info rows and where they were measured."""

    def __init__(self, path: Path, data: dict):
        m = RESULT_NAME.match(path.name)
        self.path, self.suite, self.kind = path, m["suite"], m["kind"]
        self.when = data.get("datetime", m["date"])
        info = data.get("machine_info", {}).get("pycraftax", {})
        self.cpu = info.get("cpu", "?")
        self.machine = info.get("gpu") or self.cpu
        self.cores = info.get("cores")
        self.commit = str(data.get("commit_info", {}).get("id") or info.get("commit") or "?")[:10]
        self.note = data.get("converted_from")
        self.quick = bool(info.get("bench_quick"))
        self.load = info.get("load_average_1min")
        self.rows = [dict(b.get("extra_info", {}), test=b.get("name", "?").split("[")[0],
                          median_s=b.get("stats", {}).get("median"), rounds=b.get("stats", {}).get("rounds"))
                     for b in data.get("benchmarks", [])]

    def on_device(self, gpu: bool) -> "Result":
        """A copy holding the rows measured on a GPU (gpu=True) or on the CPU: a JAX peer runs on
        the CPU of a GPU machine where its JAX has no GPU backend."""
        copy = object.__new__(Result)
        copy.__dict__.update(self.__dict__)
        copy.rows = [row for row in self.rows if ("cpu" not in str(row.get("device", "cpu")).lower()) == gpu]
        return copy

    def find(self, test: str, **match) -> dict | None:
        for row in self.rows:
            if row["test"] == test and all(row.get(k) == v for k, v in match.items()):
                return row
        return None

    def rate(self, test: str, **match) -> float | None:
        row = self.find(test, **match)
        return row["throughput"] if row else None

    def values(self, test: str, key: str, **match) -> list:
        return sorted({row[key] for row in self.rows if row["test"] == test and key in row
                       and all(row.get(k) == v for k, v in match.items())})

    def caption(self) -> str:
        gpu = self.machine != self.cpu
        where = f"{self.machine}" + (f", {self.cores} cores" if self.cores and not gpu else "")
        text = f"`{self.path.name}`: {where}, commit {self.commit}, {self.when[:16].replace('T', ' ')} UTC"
        if self.load is not None and self.cores and not gpu and self.load > 0.5 * self.cores:
            text += f", load average {self.load:.1f} on {self.cores} cores (other jobs ran: not an idle machine)"
        text += " (--bench-quick: small sizes and few rounds, a check rather than a figure)" if self.quick else ""
        return text + (f" (converted from the older `{self.note}`)" if self.note else "")


def fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and abs(value) >= 1e6:
        return f"{value / 1e6:,.1f} M"
    if isinstance(value, float) and abs(value) >= 1e4:
        return f"{value / 1e3:,.0f} k"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def ratio(a: float | None, b: float | None) -> str:
    if not (a and b):
        return "-"
    return f"{a / b:,.0f}x" if a / b >= 10 else f"{a / b:,.1f}x"


def table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" ---: " for _ in header) + "|"]
    return lines + ["| " + " | ".join(fmt(c) if not isinstance(c, str) else c for c in row) + " |" for row in rows]


def newest_results(results: Path) -> tuple[dict[tuple[str, str], Result], list[str]]:
    """{(suite, machine kind): newest Result}, and the names of files of no known kind."""
    newest, unknown = {}, []
    for path in sorted(results.glob("*.json")):
        m = RESULT_NAME.match(path.name)
        if path.name.startswith("train-") or path.name == PUBLISHED:
            continue
        if not m:
            unknown.append(path.name)
            continue
        r = Result(path, json.loads(path.read_text()))
        key = (r.suite, r.kind)
        if key not in newest or r.when > newest[key].when:
            newest[key] = r
    return newest, unknown


def cpu_sections(c: Result, up: Result | None, pool: Result | None) -> list[str]:
    n = max(c.values("test_step", "threads") + c.values("test_step_classic", "threads") or [1])
    out = [f"## C reference on the CPU, beside upstream craftax (same machine kind: {c.kind})", "",
           f"- pycraftax: {c.caption()}"]
    out += [f"- upstream: {up.caption()}"] if up else ["- upstream: not measured (no upstream result of this kind)"]
    out += [f"- EnvPool: {pool.caption()}" if pool else "- EnvPool: not measured (envpool>=1.2.7 needs Python >= 3.12)"]
    out += ["", f"Env steps/s, {SYMBOLIC}, uniformly random actions, observations every step. Upstream is "
            f"jit(vmap) over a lax.scan on all {n} cores; `C {n} thr` uses them all too. A ratio is the C "
            f"reference's better thread count (it never uses more cores than upstream) over upstream at the "
            "same batch size.", ""]
    sizes = sorted(set(c.values("test_step", "num_envs")) | set(up.values("test_step", "num_envs") if up else []))
    rows = []
    for e in sizes:
        one, alln = c.rate("test_step", num_envs=e, threads=1), c.rate("test_step", num_envs=e, threads=n)
        auto = up.rate("test_step", num_envs=e, mode="auto", env=SYMBOLIC) if up else None
        opt = up.rate("test_step", num_envs=e, mode="optimistic", env=SYMBOLIC) if up else None
        best = max((r for r in (one, alln) if r), default=None)
        rows.append([e, one, alln, auto, opt, ratio(best, auto), ratio(best, opt)])
    out += table(["envs", "C 1 thr", f"C {n} thr", "upstream auto-reset", "upstream optimistic",
                  "C / upstream auto", "C / upstream optimistic"], rows)
    compile_s = [r["setup_seconds"] for r in (up.rows if up else []) if "setup_seconds" in r]
    if compile_s:
        out += ["", f"Upstream's JIT compilation (first call, not in the rates): {min(compile_s):.0f}-"
                f"{max(compile_s):.0f} s per configuration."]
    rows = []
    for e in sorted(set(c.values("test_reset", "num_envs")) | set(up.values("test_reset", "num_envs") if up else [])):
        one, alln = c.rate("test_reset", num_envs=e, threads=1), c.rate("test_reset", num_envs=e, threads=n)
        theirs = up.rate("test_reset", num_envs=e) if up else None
        rows.append([e, one, alln, theirs, ratio(max((r for r in (one, alln) if r), default=None), theirs)])
    out += ["", "World generation (reset), worlds/s:", ""]
    out += table(["envs", "C 1 thr", f"C {n} thr", "upstream jit(vmap(reset_env))", "C / upstream"], rows)
    obs = [[e, c.rate("test_observe", num_envs=e, threads=1), c.rate("test_observe", num_envs=e, threads=n)]
           for e in c.values("test_observe", "num_envs")]
    if obs:
        out += ["", "Observation rendering alone, observations/s:", ""]
        out += table(["envs", "C 1 thr", f"C {n} thr"], obs)
    classic = sorted(set(up.values("test_step_classic", "num_envs") if up else [])
                     | set(pool.values("test_step", "num_envs") if pool else [])
                     | set(c.values("test_step_classic", "num_envs")))
    if classic:
        out += ["", f"Classic ({CLASSIC}; EnvPool's Craftax is Classic), env steps/s; upstream and EnvPool on all "
                f"{n} cores, pycraftax C (bench/test_bench_c.py) on 1 thread and on {n}. A ratio is C's better "
                "thread count over upstream in the same mode at the same batch size; per core divides C's 1-thread "
                "rate by 1 and upstream's by its cores.", ""]
        rows = []
        for e in classic:
            row = [e]
            for mode in ("auto", "optimistic"):
                theirs = up.rate("test_step_classic", num_envs=e, mode=mode) if up else None
                one = c.rate("test_step_classic", num_envs=e, mode=mode, threads=1)
                alln = c.rate("test_step_classic", num_envs=e, mode=mode, threads=n)
                best = max((r for r in (one, alln) if r), default=None)
                row += [theirs, one, alln, ratio(best, theirs), ratio(one, theirs / n if theirs else None)]
            rows.append(row + [pool.rate("test_step", num_envs=e) if pool else None])
        out += table(["envs", "upstream auto", "C auto 1 thr", f"C auto {n} thr", "C / upstream auto",
                      "per core", "upstream optimistic", "C opt 1 thr", f"C opt {n} thr",
                      "C / upstream optimistic", "per core", "EnvPool"], rows)
        worlds = [[e, c.rate("test_reset_classic", num_envs=e, threads=1),
                   c.rate("test_reset_classic", num_envs=e, threads=n)]
                  for e in c.values("test_reset_classic", "num_envs")]
        if worlds:
            out += ["", "Classic world generation (reset), worlds/s:", ""]
            out += table(["envs", "C 1 thr", f"C {n} thr"], worlds)
    return out + [""]


def pixels_section(r: Result) -> list[str]:
    """The pixel envs (bench/test_bench_pixels.py): C per core and on every core beside upstream's
    pixel env measured in the same run."""
    n = max(r.values("test_step_pixels", "threads") or [1])
    out = [f"## Pixel envs on the CPU, beside upstream craftax's pixel envs (same run, machine kind {r.kind})", "",
           f"- {r.caption()}", "",
           f"Env steps/s with the pixel obs every step. pycraftax C (auto-reset) on 1 thread and on {n}; upstream "
           f"(jit(vmap) under the optimistic-reset wrapper, its fastest mode) on all {n} cores at its best batch "
           "size. Ratios are over upstream's best: C on 1 thread, C on every core, and per core (C's 1-thread "
           f"rate over upstream's divided by its {n} cores).", ""]
    gpu_upstream = r.on_device(True)
    r = r.on_device(False)  # upstream on a GPU is the CUDA envs' peer (pixels_gpu_section), not C's
    for env in sorted({row.get("env") for row in r.rows if row.get("env") and row["test"] == "test_step_pixels"}):
        ups = [row for row in r.rows if row["test"] == "test_step_pixels_upstream" and row.get("env") == env]
        best_up = max(ups, key=lambda row: row["throughput"]) if ups else None
        theirs = best_up["throughput"] if best_up else None
        rows = []
        for e in r.values("test_step_pixels", "num_envs", env=env):
            one = r.rate("test_step_pixels", env=env, num_envs=e, threads=1)
            alln = r.rate("test_step_pixels", env=env, num_envs=e, threads=n)
            rows.append([e, one, alln, ratio(one, theirs), ratio(alln, theirs), ratio(one, theirs / n if theirs else None)])
        sizes = ", ".join(f"{row['num_envs']} envs: {fmt(row['throughput'])}" for row in ups)
        up_text = (f"upstream {fmt(theirs)} env steps/s at {best_up['num_envs']} envs ({sizes})"
                   if best_up else "upstream not measured")
        out += [f"{env}: {up_text}.", ""]
        out += table(["envs", "C 1 thr", f"C {n} thr", "C 1 thr / upstream", f"C {n} thr / upstream",
                      "per core"], rows) + [""]
    return out + pixels_gpu_section(gpu_upstream)


def pixels_gpu_section(r: Result) -> list[str]:
    """The CUDA pixel envs (test_step_pixels_cuda) beside upstream's pixel env on the same GPU,
    where that run measured them."""
    if not any(row["test"] == "test_step_pixels_cuda" for row in r.rows):
        return []
    out = [f"## Pixel envs on the GPU ({r.machine})", "", f"- {r.caption()}", "",
           "Env steps/s with the pixel obs rendered on the device every step (`backend=\"cuda\"`, actions drawn "
           "ahead on the device); upstream: jit(vmap) under the optimistic-reset wrapper on the same GPU, at its "
           "best batch size. The ratio is the better pycraftax column over upstream's best.", ""]
    for env in sorted({row.get("env") for row in r.rows if row["test"] == "test_step_pixels_cuda"}):
        ups = [row for row in r.rows if row["test"] == "test_step_pixels_upstream" and row.get("env") == env]
        best_up = max(ups, key=lambda row: row["throughput"]) if ups else None
        theirs = best_up["throughput"] if best_up else None
        sizes = ", ".join(f"{row['num_envs']} envs: {fmt(row['throughput'])}" for row in ups)
        out += [f"{env}: " + (f"upstream {fmt(theirs)} env steps/s at {best_up['num_envs']} envs ({sizes})."
                              if best_up else "upstream not measured on this GPU."), ""]
        rows = []
        for e in r.values("test_step_pixels_cuda", "num_envs", env=env):
            auto = r.rate("test_step_pixels_cuda", env=env, num_envs=e, mode="auto")
            optimistic = r.rate("test_step_pixels_cuda", env=env, num_envs=e, mode="optimistic")
            rows.append([e, auto, optimistic, ratio(max(x for x in (auto, optimistic, 0.0) if x is not None), theirs)])
        out += table(["envs", "CUDA auto-reset", "CUDA optimistic", "best / upstream best"], rows) + [""]
    return out


CUDA_COLUMNS = (("auto", "float"), ("auto", "compact"), ("optimistic", "float"), ("optimistic", "compact"))


def gpu_sections(cuda: Result, up: Result | None, async_run: Result | None = None) -> list[str]:
    """async_run: a run of the step_async benchmark and step() at some of its sizes (suite
    cuda_async), newer than the sweep; its table then comes from that one run."""
    out = [f"## CUDA env on the GPU ({cuda.kind})", "", f"- pycraftax: {cuda.caption()}"]
    out += [f"- upstream: {up.caption()}"] if up else ["- upstream: not measured on this GPU"]
    best_up = max((r["throughput"] for r in up.rows if r["test"] == "test_step"), default=None) if up else None
    out += ["", "Env steps/s after random play has settled (the timed steps follow a warm-up, see "
            "bench/test_bench_cuda.py); the ratio is the best pycraftax column over upstream's best setting "
            f"({fmt(best_up)} steps/s).", ""]
    rows = []
    for e in cuda.values("test_step", "num_envs"):
        rates = [cuda.rate("test_step", num_envs=e, mode=m, obs=o) for m, o in CUDA_COLUMNS]
        rows.append([e, *rates, ratio(max((r for r in rates if r), default=None), best_up)])
    out += table(["envs", *[f"{m}, {o} obs" for m, o in CUDA_COLUMNS], "best / upstream best"], rows)
    if up:
        out += ["", "Upstream craftax on the same GPU (compile time apart):", ""]
        out += table(["env", "mode", "envs", "steps/s", "compile s"],
                     [[r.get("env", SYMBOLIC), r.get("mode"), r.get("num_envs"), r["throughput"],
                       r.get("setup_seconds")] for r in up.rows if r["test"].startswith("test_step")])
    src = async_run or cuda
    async_rows = [[r["num_envs"], src.rate("test_step", num_envs=r["num_envs"], mode="auto", obs="compact"),
                   r["throughput"]] for r in src.rows if r["test"] == "test_step_async"]
    if async_rows:
        out += [""] + ([f"- step_async: {async_run.caption()}"] if async_run else [])
        out += ["", "The auto-reset step (compact obs) by `step_async`, 16 steps to a wait, beside `step` in the same run at the "
                "same size (blank where that run did not time `step`):", ""]
        out += table(["envs", "step, steps/s", "step_async, steps/s"], async_rows)
    worlds = [[r["num_envs"], r["throughput"]] for r in cuda.rows if r["test"] == "test_worldgen"]
    if worlds:
        out += ["", "World generation (env.reset: level 0 now, each other level at the first descent to it), worlds/s:", ""] + table(["envs", "worlds/s"], worlds)
    return out + [""]


def trainer_section(trainers: list[Result]) -> list[str]:
    out = ["## Training throughput", "", "Training steps/s: env steps consumed per second of PPO-RNN training "
           "(rollout with the env, GAE, update epochs); the first iteration is timed apart.", ""]
    rows = []
    for t in trainers:
        for r in t.rows:
            c = r.get("config", {})
            shape = f"{fmt(c.get('num_envs'))} x {c.get('num_steps')}, {c.get('update_epochs')} ep x " \
                    f"{c.get('num_minibatches')} mb, {c.get('model', 'gru')} {c.get('width')} wide"
            rows.append([r.get("recipe", "?"), r.get("backend", "?"), shape, r["throughput"], r.get("setup_seconds"),
                         f"{t.machine}, {t.commit}, {t.when[:10]}"])
    return out + table(["recipe", "backend", "shape", "steps/s", "first iteration s", "machine, commit, date"],
                       rows) + [""]


def generic_section(r: Result) -> list[str]:
    """A suite this report has no section of its own for: every benchmark's rate and parameters."""
    skip = {"test", "unit", "throughput", "throughput_median", "rate_basis", "items_per_round", "median_s", "rounds",
            "warmup_rounds"}
    rows = [[row["test"], ", ".join(f"{k}={v}" for k, v in row.items() if k not in skip) or "-", row.get("throughput"),
             row.get("unit", "?")] for row in r.rows]
    return [f"## {r.suite}", "", f"- {r.caption()}", ""] + table(["benchmark", "parameters", "rate", "unit"], rows) + [""]


def _short_commit(commit: str) -> str:
    return commit[:10] if re.fullmatch(r"[0-9a-f]{11,40}", commit) else commit  # a run in parts names each part's


def runs_section(runs: list[tuple[Path, dict]]) -> list[str]:
    out = ["## Published training runs", "", "Score: mean return of the episodes that ended in the last 1% of "
           "updates (% of the 226 maximum, as the Craftax paper reports); learning curves in "
           "`plots/learning_curves.png`.", ""]
    rows = [[d.get("run", p.stem), f"`{p.name}`", d.get("env_steps"),
             f"{d['final_return']:.1f} ({d['final_percent_of_max']:.1f}%)", f"{d['training_seconds'] / 60:.0f} min",
             _time_to_paper_rnn(d), d.get("mean_steps_per_s"), str(d.get("gpu", "?")).split(" (")[0],
             _short_commit(str(d.get("commit", "?")))]
            for p, d in runs]
    return out + ["Training time to the Craftax scoreboard's 1e9 PPO-RNN score (15.3%): the first update at which "
                  "the score over the same window of updates reaches it (Craftax runs whose metrics are kept; "
                  "`time_to_scoreboard` in each file also has PQN-RNN's 16.0% and PPO-GTrXL's 18.3%).", ""] + \
        table(["run", "file", "env steps", "score", "training", "to 15.3%", "steps/s", "GPU", "commit"], rows) + [""]


PUBLISHED = "published-scores.json"  # others' 1e9 scores and times, marked on the wall-clock plot
# The runs of the score-against-wall-clock plot, one per recipe (by their `run` name), and their labels
WALLCLOCK_RUNS = {
    "gru-256-1e9 (the former fast recipe)": "fast recipe of 2026-11-30 (GRU 256 on the floats, 8,192 envs)",
    "fast-recipe-1e9": "fast recipe (cell-gru 256, 16,384 envs)",
    "fast-w512-1e9": "strong recipe (cell-gru 512)",
    "fast-mingru-seed0-0.98e9": "fast --model cell-mingru (0.98e9 steps)",
    "paper-1e9": "paper recipe (GRU 512, 1,024 envs)",
}


def run_seconds(run: dict, env_steps: float) -> float | None:
    """Training seconds of a run at `env_steps`: the steps over its training rate (a run's rate is
    near constant after its first updates). A run that shared its GPU names the rate it trains
    at alone (`solo_steps_per_s`)."""
    rate = run.get("solo_steps_per_s") or run.get("mean_steps_per_s")
    return env_steps / rate if rate else None


def ladder_section(runs: list[tuple[Path, dict]]) -> list[str]:
    """The skill ladder of the fast recipe's published run: each achievement's first occurrence in
    training seconds and env steps."""
    fast = [(p, d) for p, d in runs if str(d.get("recipe", "")).startswith("fast: model cell-gru")
            and d.get("skill_ladder") and d.get("env_steps", 0) >= 9e8]
    if not fast:
        return []
    path, run = fast[-1]
    rows = [[name, f"{v['seconds']:.1f}", f"{v['env_steps'] / 1e6:,.1f} M"]
            for name, v in sorted(run["skill_ladder"].items(), key=lambda kv: kv[1]["env_steps"])]
    return ["## Skill ladder of the fast recipe", "",
            f"The first occurrence of each achievement in `{path.name}` ({run.get('run')}, "
            f"{str(run.get('gpu', '?')).split(' (')[0]}): training seconds and env steps.", ""] + \
        table(["achievement", "training s", "env steps"], rows) + [""]


def _time_to_paper_rnn(run: dict) -> str:
    entry = next((t for t in run.get("time_to_scoreboard") or [] if t["name"] == "PPO-RNN"), None)
    if entry is None:
        return ""
    if entry["training_seconds"] is None:
        return "not reached"
    return f"{entry['training_seconds'] / 60:.1f} min ({entry['env_steps'] / 1e6:,.0f} M steps)"


def plots(newest: dict, runs: list[tuple[Path, dict]], out_dir: Path, results: Path) -> list[str]:
    """PNGs beside the report; returns their names. Needs matplotlib (a package dependency)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    step_results = [r for (s, _), r in sorted(newest.items()) if s in ("c", "upstream", "envpool", "cuda", "cuda_async")]
    if step_results:
        fig, ax = plt.subplots(figsize=(8, 5))
        for r in step_results:
            lines = {}
            for row in r.rows:
                if not row["test"].startswith("test_step") or "num_envs" not in row:
                    continue
                if r.suite == "cuda_async" and row.get("calls") != "step_async":
                    continue  # its step() rows repeat the sweep's line
                label = " ".join(str(x) for x in (r.kind, row.get("backend"), row.get("mode", ""),
                                                  row.get("obs", ""), row.get("calls", ""),
                                                  "classic" if "Classic" in row.get("env", "")
                                                  else "", f"{row['threads']} thr" if "threads" in row else "") if x)
                lines.setdefault(label, []).append((row["num_envs"], row["throughput"]))
            for label, points in sorted(lines.items()):
                points.sort()
                ax.plot(*zip(*points), marker="o", label=label)
        ax.set(xscale="log", yscale="log", xlabel="num_envs", ylabel="env steps/s",
               title="Env steps/s vs batch size, per backend and peer")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out_dir / "steps_vs_envs.png", dpi=110)
        plt.close(fig)
        written.append("steps_vs_envs.png")
    trainers = [r for (s, _), r in sorted(newest.items()) if s in TRAINER_SUITES]
    bars = [(f"{row.get('recipe')} ({row.get('backend')}, {t.kind})", row["throughput"])
            for t in trainers for row in t.rows]
    if bars:
        fig, ax = plt.subplots(figsize=(8, 0.6 * len(bars) + 1.5))
        ax.barh([b[0] for b in bars], [b[1] for b in bars])
        ax.set(xscale="log", xlabel="training steps/s", title="Training throughput per recipe")
        fig.tight_layout()
        fig.savefig(out_dir / "training.png", dpi=110)
        plt.close(fig)
        written.append("training.png")
    published_path = results / PUBLISHED
    if runs:
        fig, ax = plt.subplots(figsize=(9, 5.5))
        for p, d in runs:
            if d.get("run") not in WALLCLOCK_RUNS:
                continue
            curve = [(run_seconds(d, c["env_steps"]), c.get("percent_of_max", 100 * c["episode_return"] / 226))
                     for c in d.get("curve", [])]
            curve = [(t, y) for t, y in curve if t]
            if curve:  # the score at the run's end closes the line
                curve.append((run_seconds(d, d["env_steps"]), d["final_percent_of_max"]))
            if curve:
                ax.plot(*zip(*curve), marker=".", label=WALLCLOCK_RUNS[d["run"]])
        if published_path.exists():
            for pt in json.loads(published_path.read_text())["points"]:
                if pt["seconds"]:
                    ax.scatter([pt["seconds"]], [pt["percent"]], marker="*", s=120, zorder=3)
                    ax.annotate(pt["name"] + " (published)", (pt["seconds"], pt["percent"]), fontsize=7,
                                xytext=(-5, 6), textcoords="offset points", ha="right")
                else:
                    ax.axhline(pt["percent"], color="grey", lw=0.8, ls="--")
                    ax.annotate(pt["name"] + " (published, time unknown)", (12, pt["percent"]), fontsize=7,
                                xytext=(0, 3), textcoords="offset points")
        ax.set(xscale="log", xlabel="training wall-clock, s (log)", ylabel="return, % of max",
               title="Score against training time, Craftax-Symbolic-v1 (one H200 unless marked)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
        fig.tight_layout()
        fig.savefig(out_dir / "score_vs_wallclock.png", dpi=110)
        plt.close(fig)
        written.append("score_vs_wallclock.png")
        fig, ax = plt.subplots(figsize=(8, 5))
        for p, d in runs:
            curve = d.get("curve", [])
            ax.plot([c["env_steps"] for c in curve], [c.get("percent_of_max", 100 * c["episode_return"] / 226)
                                                      for c in curve], label=d.get("run", p.stem))
        ax.set(xlabel="env steps", ylabel="return, % of max", title="Learning curves of the published runs")
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(out_dir / "learning_curves.png", dpi=110)
        plt.close(fig)
        written.append("learning_curves.png")
    return written


def build_report(results: Path, plot_dir: Path | None = None) -> str:
    newest, unknown = newest_results(results)
    runs = [(p, json.loads(p.read_text())) for p in sorted(results.glob("train-*.json"))]
    lines = ["# pycraftax benchmark report", "",
             "Rendered by `nox -s report` (bench/report.py) from the newest result of each suite in bench/results/; "
             "how to rerun: bench/README.md.", "",
             "Every rate is sustained: the items of all timed rounds over their total time (items / mean round "
             "time), as `pycraftax bench` prints it; the rate at the median round is in each file's "
             "`extra_info.throughput_median`.", ""]
    if plot_dir is not None:
        names = plots(newest, runs, plot_dir, results)
        lines += [" ".join(f"![{n}]({plot_dir.name}/{n})" for n in names), ""] if names else []
    for (suite, kind), c in sorted(newest.items()):
        if suite == "c":
            up = newest.get(("upstream", kind))
            lines += cpu_sections(c, up and up.on_device(gpu=False), newest.get(("envpool", kind)))
    for (suite, kind), cuda in sorted(newest.items()):
        if suite == "cuda":
            up = newest.get(("upstream", kind))
            lines += gpu_sections(cuda, up.on_device(gpu=True) if up and up.on_device(gpu=True).rows else None,
                                  newest.get(("cuda_async", kind)))
    for (suite, _), r in sorted(newest.items()):
        if suite == "pixels":
            lines += pixels_section(r)
    trainers = [r for (s, _), r in sorted(newest.items()) if s in TRAINER_SUITES]
    if trainers:
        lines += trainer_section(trainers)
    for (suite, _), r in sorted(newest.items()):
        if suite not in SUITES:
            lines += generic_section(r)
    if runs:
        lines += runs_section(runs)
        lines += ladder_section(runs)
    if unknown:
        lines += ["## Other files in bench/results (not read)", ""] + [f"- {n}" for n in unknown] + [""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "REPORT.md")
    args = parser.parse_args()
    if not args.results.is_dir():
        parser.error(f"--results {args.results} is not a directory")
    args.out.write_text(build_report(args.results.resolve(), args.out.parent / "plots"))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

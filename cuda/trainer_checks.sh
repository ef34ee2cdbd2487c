#!/bin/bash
# cuda/trainer_checks.sh: on a machine with a GPU, check and measure the CUDA PPO trainer.
#   cuda/trainer_checks.sh [OUTDIR]        (default: $OUT, else bench/results/trainer-checks)
# Every step runs even when an earlier one fails; a summary table closes the log.
#   1. build (make -C cuda) if libcraftax_cuda.so lacks the trainer or does not load;
#   2. environment report: GPU, driver, where cuBLAS is found;
#   3. smoke: a tiny trainer in debug mode (every kernel checked and synchronised);
#   4. conformance/test_cuda_trainer.py (a)-(h), verbose with all printed diffs;
#   5. compute-sanitizer memcheck and racecheck of a small iteration (SANITIZE=0 to skip);
#   6. the CUDA trainer benchmarks of bench/test_bench_trainer.py (paper + fast recipes; needs
#      pytest-benchmark) -> OUTDIR/<date>-<machine kind>-trainer.json;
#   7. a short `pycraftax train --backend cuda` run (metrics.jsonl, checkpoint, plot).
# Knobs: PYTHON, TEST_TIMEOUT, BENCH_TIMEOUT, BENCH_ARGS, TRAIN_STEPS, SANITIZE,
#   STAGES (default "build environment smoke tests sanitizer bench cli_train"). Under a
#   10-minute-per-command limit, split it, e.g.
#     STAGES="build environment smoke tests" cuda/trainer_checks.sh $OUT     (~6-8 min)
#     STAGES="bench cli_train sanitizer" cuda/trainer_checks.sh $OUT         (~5-8 min)
#   Carrying a prebuilt cuda/build/ (sm_90, CUDA 13) skips the ~3 min env build.
set -x
cd "$(dirname "$0")/.."
OUTDIR=${1:-${OUT:-bench/results/trainer-checks}}
mkdir -p "$OUTDIR"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
declare -A RESULT
STAGES=" ${STAGES:-build environment smoke tests sanitizer bench cli_train} "
want() { [[ "$STAGES" == *" $1 "* ]]; }
step() {  # step NAME TIMEOUT CMD...: run, tee to OUTDIR/NAME.log, record the exit status
    local name=$1 limit=$2
    shift 2
    timeout "$limit" "$@" > >(tee "$OUTDIR/$name.log") 2>&1
    local rc=$?
    RESULT[$name]=$rc
    echo "=== $name: exit $rc"
}

# 1. build (the C extension too, when this checkout lacks it)
if want build; then
    if ! $PY -c "import pycraftax._native" 2>/dev/null; then
        step build_c_ext 600 $PY setup.py build_ext --inplace
    fi
    if ! $PY -c "from pycraftax.train import cuda_trainer as c; c.load()" 2>/dev/null; then
        step build 600 make -C cuda
    else
        RESULT[build]=skipped
    fi
fi

# 2. environment
want environment && step environment 120 $PY - <<'EOF'
import os, sys, subprocess
from pycraftax import cuda_env
from pycraftax.train import cuda_trainer as ct
print("python", sys.version.split()[0])
print("cuda env:", cuda_env.unavailable_reason() or cuda_env.load().device_name, cuda_env.library_path())
print("cuBLAS:", ct.find_cublas())
print("trainer:", ct.unavailable_reason() or "available")
try:
    print(subprocess.check_output(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,memory.used",
                                   "--format=csv"], text=True))
except Exception as e:
    print("nvidia-smi:", e)
EOF

# 3. smoke (debug mode: a failing kernel is named)
want smoke && step smoke 180 $PY - <<'EOF'
import time, numpy as np, pycraftax
from pycraftax.train import cuda_trainer as ct, numpy_ppo as npp
from pycraftax.train.trainer import TrainConfig
for debug, graph in ((True, False), (False, True)):
    cfg = TrainConfig(total_timesteps=10**9, num_envs=32, num_steps=8, width=32, hidden=32, num_minibatches=4)
    env = pycraftax.make("Craftax-Symbolic-v1", num_envs=cfg.num_envs, backend="cuda", seed=0)
    env.reset()
    p = ct.PPO(cfg, env, tf32=False, use_graph=graph, debug=debug)
    p.begin(env._key)
    p.set_params(npp.init_params(p.model_config, seed=0))
    for i in range(3):
        t = time.perf_counter(); p.iterate()
        print(f"debug={debug} graph={graph} iteration {i}: {1e3*(time.perf_counter()-t):.1f} ms, losses {p.losses()}, "
              f"episodes {len(p.episodes())}, counters {p.counters}")
    p.close(); env.close()
print("smoke OK")
EOF

# 4. conformance tests
want tests && step tests ${TEST_TIMEOUT:-420} $PY -m pytest conformance/test_cuda_trainer.py -v -s -rs --durations=0 \
    -p no:cacheprovider

# 5. compute-sanitizer
if want sanitizer && [ "${SANITIZE:-1}" != 0 ] && command -v compute-sanitizer >/dev/null; then
    cat > "$OUTDIR/sanitize_trainer.py" <<'EOF'
import numpy as np, pycraftax
from pycraftax.train import cuda_trainer as ct, numpy_ppo as npp
from pycraftax.train.trainer import TrainConfig
# hidden 32: the update's GRU forward takes the persistent kernel (H % 32 == 0), fp32 and TF32
cfg = TrainConfig(total_timesteps=10**9, num_envs=16, num_steps=4, width=32, hidden=32, num_minibatches=2,
                  update_epochs=1)
env = pycraftax.make("Craftax-Symbolic-v1", num_envs=16, backend="cuda", seed=0)
env.reset()
for tf32 in (False, True):
    p = ct.PPO(cfg, env, tf32=tf32, use_graph=False, debug=True)
    assert p.gru_seq_blocks > 0
    p.begin(env._key)
    p.set_params(npp.init_params(p.model_config, seed=0))
    p.iterate()
    p.close()
env.close()
print("sanitize run done")
EOF
    step sanitizer ${SANITIZE_TIMEOUT:-240} compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 \
        $PY "$OUTDIR/sanitize_trainer.py"
    step racecheck ${SANITIZE_TIMEOUT:-240} compute-sanitizer --tool racecheck --racecheck-report all \
        --error-exitcode 3 $PY "$OUTDIR/sanitize_trainer.py"
else
    RESULT[sanitizer]=skipped
fi

# 6. benchmark
KIND=$($PY -c "import sys; sys.path.insert(0, 'bench'); import conftest; print(conftest.pycraftax_machine_info()['kind'])")
want bench && step bench ${BENCH_TIMEOUT:-300} $PY -m pytest -p no:cacheprovider bench/test_bench_trainer.py -k cuda \
    --benchmark-json="$OUTDIR/$(date -u +%Y-%m-%d)-$KIND-trainer.json" --benchmark-columns=median,rounds ${BENCH_ARGS:-}

# 7. CLI run
want cli_train && step cli_train 240 $PY -m pycraftax.cli train --backend cuda --total-timesteps ${TRAIN_STEPS:-1000000} \
    --num-envs 1024 --num-steps 64 --checkpoint-every 10 --out "$OUTDIR/run" --quiet
cp "$OUTDIR"/run/metrics.jsonl "$OUTDIR"/run/learning_curve.png "$OUTDIR"/ 2>/dev/null

set +x
echo
echo "==================== trainer_checks summary ===================="
for k in build environment smoke tests sanitizer bench cli_train; do
    printf "  %-12s %s\n" "$k" "${RESULT[$k]:-not run}"
done
grep -E "PASSED|FAILED|ERROR|SKIPPED" "$OUTDIR/tests.log" 2>/dev/null | grep "::" | sed 's/^/  /'
grep -E "^test_cuda_recipe" "$OUTDIR/bench.log" 2>/dev/null | sed 's/^/  /'
echo "outputs in $OUTDIR"
fail=0
for k in environment smoke tests bench; do want $k && [ "${RESULT[$k]}" != 0 ] && fail=1; done
exit $fail

#!/bin/bash
# cuda/gpu_checks.sh: every check of the CUDA build on a machine with a GPU, in one go. It is the
# one GPU-check entry point (`nox -s gpu` runs it in a prepared venv).
#   cuda/gpu_checks.sh [OUTDIR]                 (default bench/results/gpu-checks)
# Stages, in this order (STAGES="tests memcheck" runs some; every stage runs even when an earlier
# one failed; a summary closes the log and the exit status is 1 when any stage failed):
#   build      the C extension with the test hooks (when this checkout lacks it) and the CUDA library
#              (make -C cuda, when it does not load)
#   tests      every GPU test file: conformance/test_cuda*.py (anchors, C-vs-CUDA lockstep on every leaf,
#              optimistic resets, lazy levels), the PyTorch engine's models against numpy_ppo and its runs
#              (conformance/test_paper_cuda.py: model gru, the paper recipe and Classic, and the two-GPU run,
#              which skips below two GPUs; conformance/test_fast_cuda.py: the fast recipe),
#              tests/test_cuda_contract.py, the registry contract and gymnasium tests on both backends,
#              pycraftax.jax's CUDA handlers against the C backend, Craftax-Classic on CUDA against C
#              (conformance/test_cuda_classic.py, tests/test_classic_env.py), the pixel envs of both games on
#              CUDA against C (conformance/test_cuda_pixels.py, tests/test_cuda_pixels_contract.py)
#   memcheck   compute-sanitizer memcheck: cuda/sanitize_run.py (env) with leak check,
#              cuda/sanitize_trainer.py (model gru on every env) and cuda/sanitize_fast.py (the fast
#              recipe) without (PyTorch keeps its memory to the end)
#   racecheck  compute-sanitizer racecheck (shared-memory hazards) over the same three
#   bench      the CUDA env suites of both games, the pixel envs (C, CUDA and upstream where JAX is) and the
#              trainer's GPU configs (bench/test_bench_cuda.py, bench/test_bench_cuda_classic.py,
#              bench/test_bench_pixels.py, bench/test_bench_trainer.py -k "gru_recipe or fast_recipe") into
#              OUTDIR/<date>-<machine kind>-{cuda,cuda_classic,pixels,trainer}.json, the names `nox -s bench`
#              gives them
#   train      a short `pycraftax train --backend cuda --recipe paper` run (metrics, checkpoint, plot)
# Knobs: PYTHON, STAGES, TEST_TIMEOUT, SANITIZE_TIMEOUT, BENCH_TIMEOUT, BENCH_ARGS, TRAIN_STEPS.
cd "$(dirname "$0")/.."
OUTDIR=${1:-bench/results/gpu-checks}
mkdir -p "$OUTDIR"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0
STAGES=" ${STAGES:-build tests memcheck racecheck bench train} "
declare -A RESULT
want() { [[ "$STAGES" == *" $1 "* ]]; }
step() {  # step NAME TIMEOUT CMD...: run it, tee to OUTDIR/NAME.log, record its exit status
    local name=$1 limit=$2
    shift 2
    echo "=== $name: $*"
    timeout "$limit" "$@" > >(tee "$OUTDIR/$name.log") 2>&1
    RESULT[$name]=$?
    echo "=== $name: exit ${RESULT[$name]}"
}

if want build; then
    if ! $PY -c "import pycraftax._craftax_test" 2>/dev/null; then
        step build_c 600 env PYCRAFTAX_CUDA=0 PYCRAFTAX_TEST_HOOKS=1 $PY setup.py -q build_ext --inplace
    fi
    if ! $PY -c "import pycraftax, sys; sys.exit(0 if pycraftax.cuda_available() else 1)"; then
        $PY -c "from pycraftax import cuda_env; print('CUDA library does not load:', cuda_env.unavailable_reason())"
        step build_cuda 900 make -C cuda -B
    fi
    step device 60 $PY -c "from pycraftax import cuda_env; lib = cuda_env.load(); print(lib.device_name, lib.path)"
fi

if want tests; then
    step tests ${TEST_TIMEOUT:-420} $PY -m pytest -q -rs --durations=10 -p no:cacheprovider \
        conformance/test_cuda.py conformance/test_cuda_optimistic.py conformance/test_cuda_lazy_floors.py \
        conformance/test_paper_cuda.py tests/test_cuda_contract.py \
        tests/test_env_contract.py tests/test_gymnasium.py \
        conformance/test_cuda_classic.py tests/test_classic_env.py \
        conformance/test_cuda_final_obs.py tests/test_final_obs.py \
        conformance/test_fast_cuda.py tests/test_step_async.py \
        conformance/test_cuda_pixels.py tests/test_cuda_pixels_contract.py tests/test_pixels_env.py
    # conformance/conftest.py pins JAX to the CPU for the upstream comparisons: pycraftax.jax's
    # GPU tests run in a session of their own
    step tests_jax ${TEST_TIMEOUT:-420} env JAX_PLATFORMS=cuda,cpu $PY -m pytest -q -rs -p no:cacheprovider \
        tests/test_jax_cuda.py
fi

if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck; do
        want $tool || continue
        for run in sanitize_run sanitize_trainer sanitize_fast; do
            if [ $tool = racecheck ]; then args="--tool racecheck --racecheck-report all"
            elif [ $run != sanitize_run ]; then args="--tool memcheck"  # PyTorch keeps its memory to the end
            else args="--tool memcheck --leak-check full"; fi
            step ${tool}_${run#sanitize_} ${SANITIZE_TIMEOUT:-200} compute-sanitizer $args --error-exitcode 3 \
                $PY cuda/$run.py
            name=${run#sanitize_}
            if [ $tool = racecheck ] && [ $run != sanitize_run ] && [ "${RESULT[racecheck_$name]}" = 3 ]; then
                # cuBLAS's Hopper GEMMs (nvjet_*) order their shared memory with TMA barriers, which
                # racecheck does not follow, so it flags them (leaving them out with
                # --kernel-name-exclude crashes the sanitizer): the check fails on a hazard in any
                # other kernel, or when the program itself failed
                log="$OUTDIR/racecheck_$name.log"
                others=$(grep -oE "(Read|Write) Thread \([0-9,]+\) at [A-Za-z_][A-Za-z0-9_]*" "$log" \
                         | awk '{print $NF}' | grep -v '^nvjet_' | sort -u)
                if grep -q "^$run: " "$log" && [ -z "$others" ]; then
                    echo "=== racecheck_$name: every hazard is in cuBLAS's nvjet GEMMs: passed"
                    RESULT[racecheck_$name]=0
                else
                    echo "=== racecheck_$name: hazards outside cuBLAS's GEMMs: ${others:-none, but the run failed}"
                fi
            fi
        done
    done
else
    echo "compute-sanitizer not on the PATH: memcheck and racecheck not run"
    want memcheck && RESULT[memcheck]="not found"
    want racecheck && RESULT[racecheck]="not found"
fi

if want bench; then
    DATE=$(date -u +%Y-%m-%d)
    KIND=$($PY -c "import sys; sys.path.insert(0, 'bench'); import conftest; print(conftest.pycraftax_machine_info()['kind'])")
    step bench_env ${BENCH_TIMEOUT:-420} $PY -m pytest -p no:cacheprovider bench/test_bench_cuda.py \
        --benchmark-json="$OUTDIR/$DATE-$KIND-cuda.json" --benchmark-columns=median,rounds ${BENCH_ARGS:-}
    step bench_env_classic ${BENCH_TIMEOUT:-420} $PY -m pytest -p no:cacheprovider bench/test_bench_cuda_classic.py \
        --benchmark-json="$OUTDIR/$DATE-$KIND-cuda_classic.json" --benchmark-columns=median,rounds ${BENCH_ARGS:-}
    step bench_pixels ${BENCH_TIMEOUT:-420} $PY -m pytest -p no:cacheprovider bench/test_bench_pixels.py \
        --benchmark-json="$OUTDIR/$DATE-$KIND-pixels.json" --benchmark-columns=median,rounds ${BENCH_ARGS:-}
    step bench_trainer ${BENCH_TIMEOUT:-420} $PY -m pytest -p no:cacheprovider bench/test_bench_trainer.py \
        -k "gru_recipe or fast_recipe" \
        --benchmark-json="$OUTDIR/$DATE-$KIND-trainer.json" --benchmark-columns=median,rounds ${BENCH_ARGS:-}
fi

if want train; then
    rm -rf "$OUTDIR/run"
    step train 300 $PY -m pycraftax train --backend cuda --recipe paper --total-timesteps ${TRAIN_STEPS:-1000000} \
        --checkpoint-every 10 --out "$OUTDIR/run"
    cp "$OUTDIR"/run/metrics.jsonl "$OUTDIR"/run/learning_curve.png "$OUTDIR"/ 2>/dev/null
fi

echo
echo "==================== gpu_checks summary ===================="
fail=0
for name in $(printf "%s\n" "${!RESULT[@]}" | sort); do
    printf "  %-18s %s\n" "$name" "${RESULT[$name]}"
    [ "${RESULT[$name]}" = 0 ] || fail=1
done
grep -E "passed|failed" "$OUTDIR/tests.log" 2>/dev/null | tail -1 | sed 's/^/  tests: /'
echo "logs in $OUTDIR"
exit $fail

// craftax_xla_ffi.cc: XLA FFI handlers (CPU) over the C reference, the native calls of
// pycraftax.jax (pycraftax/jax/_ffi.py registers them for platform cpu as "pycraftax_reset",
// "pycraftax_step" and "pycraftax_step_autoreset").
//
// Every handler sees its operands with the env batch flattened: jax.vmap(..., vmap_method=
// "broadcast_all") prepends one axis per vmap level, so states are uint8 [..., state_size],
// keys uint32 [..., 2], actions int32 [...], params uint32 [..., params_words] (one
// CraftaxParams per env: the broadcast copies of an unbatched params are identical, and
// then the batch runs as one call of the C API; differing params run env by env).
// The states operand is aliased to the states result by the Python side, so a jitted scan
// steps in place; the handlers therefore read and write the result buffer only.

#include <cstdint>
#include <cstring>
#include <string>

#include "xla/ffi/api/ffi.h"

extern "C" {
#include "craftax_api.h"
#include "craftax_api_step.h"
#include "craftax/constants.h"
}

namespace ffi = xla::ffi;

namespace {

constexpr int64_t kParamsWords = sizeof(CraftaxParams) / sizeof(uint32_t);
static_assert(sizeof(CraftaxParams) % sizeof(uint32_t) == 0, "CraftaxParams is packed from 32-bit words");

ffi::Error CheckError(int rc, const char *call) {
    if (rc == 0) return ffi::Error::Success();
    const char *why = rc == CRAFTAX_ERR_ARGUMENT ? "invalid params: day_length must be > 0"
                      : rc == CRAFTAX_ERR_NO_MEMORY ? "out of memory"
                                                    : "bad arguments";
    return ffi::Error(ffi::ErrorCode::kInvalidArgument,
                      std::string("pycraftax: ") + call + " failed (" + why + ", code " + std::to_string(rc) + ")");
}

// The number of envs of a call, checked against every batched operand's element count.
ffi::Error CountEnvs(int64_t states_bytes, int64_t keys_words, int64_t params_words, int64_t *num_envs) {
    const int64_t state_size = static_cast<int64_t>(craftax_state_size());
    if (states_bytes % state_size != 0 || keys_words % 2 != 0 || params_words % kParamsWords != 0)
        return ffi::Error(ffi::ErrorCode::kInvalidArgument, "pycraftax: operand sizes are not whole envs");
    const int64_t n = states_bytes / state_size;
    if (keys_words / 2 != n || params_words / kParamsWords != n)
        return ffi::Error(ffi::ErrorCode::kInvalidArgument, "pycraftax: operands disagree on the number of envs");
    *num_envs = n;
    return ffi::Error::Success();
}

// Actions are checked here (the C API checks them too) to name the env and the value.
ffi::Error CheckActions(const int32_t *actions, int64_t num_envs) {
    for (int64_t i = 0; i < num_envs; i++)
        if (actions[i] < 0 || actions[i] >= CRAFTAX_NUM_ACTIONS)
            return ffi::Error(ffi::ErrorCode::kInvalidArgument,
                              "pycraftax: action " + std::to_string(actions[i]) + " of env " + std::to_string(i) +
                                  " is outside [0, " + std::to_string(CRAFTAX_NUM_ACTIONS) + ")");
    return ffi::Error::Success();
}

const CraftaxParams *ParamsAt(const uint32_t *params, int64_t env) {
    return reinterpret_cast<const CraftaxParams *>(params + env * kParamsWords);
}

bool AllParamsEqual(const uint32_t *params, int64_t num_envs) {
    for (int64_t i = 1; i < num_envs; i++)
        if (std::memcmp(params, params + i * kParamsWords, sizeof(CraftaxParams)) != 0) return false;
    return true;
}

// Runs call(first_env, count, params) over runs of envs that share params: the whole batch
// at once when every env has the same params (the usual unbatched-params case).
template <typename Call>
ffi::Error ForEachParamsRun(const uint32_t *params, int64_t num_envs, const char *name, Call call) {
    if (num_envs == 0) return ffi::Error::Success();
    if (AllParamsEqual(params, num_envs)) return CheckError(call(0, num_envs, ParamsAt(params, 0)), name);
    for (int64_t i = 0; i < num_envs; i++) {
        ffi::Error error = CheckError(call(i, 1, ParamsAt(params, i)), name);
        if (error.failure()) return error;
    }
    return ffi::Error::Success();
}

ffi::Error ResetImpl(ffi::Buffer<ffi::U32> keys, ffi::Buffer<ffi::U32> params, ffi::ResultBuffer<ffi::U8> states,
                     ffi::ResultBuffer<ffi::F32> obs) {
    int64_t n;
    ffi::Error error = CountEnvs(states->element_count(), keys.element_count(), params.element_count(), &n);
    if (error.failure()) return error;
    uint8_t *s = states->typed_data();
    float *o = obs->typed_data();
    const uint32_t *k = keys.typed_data();
    const size_t state_size = craftax_state_size();
    // XLA's result buffer is uninitialised and a reset leaves the struct's padding unwritten:
    // zero it, so that equal states are equal bytes
    std::memset(s, 0, states->size_bytes());
    return ForEachParamsRun(params.typed_data(), n, "reset", [&](int64_t first, int64_t count, const CraftaxParams *p) {
        return craftax_reset_with_keys(s + first * state_size, k + 2 * first, count, p, o + first * CRAFTAX_OBS_SIZE);
    });
}

// Upstream's EnvironmentNoAutoReset.step (= step_env): the key is the step key.
ffi::Error StepImpl(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions, ffi::Buffer<ffi::U32> keys,
                    ffi::Buffer<ffi::U32> params, ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                    ffi::ResultBuffer<ffi::F32> rewards, ffi::ResultBuffer<ffi::PRED> dones) {
    int64_t n;
    ffi::Error error = CountEnvs(states->element_count(), keys.element_count(), params.element_count(), &n);
    if (error.failure()) return error;
    if (actions.element_count() != n)
        return ffi::Error(ffi::ErrorCode::kInvalidArgument, "pycraftax: one action per env expected");
    error = CheckActions(actions.typed_data(), n);
    if (error.failure()) return error;
    uint8_t *s = states->typed_data();
    if (states_in.untyped_data() != s) std::memcpy(s, states_in.untyped_data(), states->size_bytes());
    const int32_t *a = actions.typed_data();
    const uint32_t *k = keys.typed_data();
    float *o = obs->typed_data(), *r = rewards->typed_data();
    uint8_t *d = reinterpret_cast<uint8_t *>(dones->typed_data());
    const size_t state_size = craftax_state_size();
    return ForEachParamsRun(params.typed_data(), n, "step", [&](int64_t first, int64_t count, const CraftaxParams *p) {
        return craftax_step_with_keys(s + first * state_size, a + first, k + 2 * first, count, p,
                                      o + first * CRAFTAX_OBS_SIZE, r + first, d + first);
    });
}

// Upstream's EnvironmentAutoReset.step: the C API splits each key into (step, reset) as
// upstream does, and writes the finished episode's achievements where done.
ffi::Error StepAutoResetImpl(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions,
                             ffi::Buffer<ffi::U32> keys, ffi::Buffer<ffi::U32> params,
                             ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                             ffi::ResultBuffer<ffi::F32> rewards, ffi::ResultBuffer<ffi::PRED> dones,
                             ffi::ResultBuffer<ffi::U8> final_achievements) {
    int64_t n;
    ffi::Error error = CountEnvs(states->element_count(), keys.element_count(), params.element_count(), &n);
    if (error.failure()) return error;
    if (actions.element_count() != n)
        return ffi::Error(ffi::ErrorCode::kInvalidArgument, "pycraftax: one action per env expected");
    error = CheckActions(actions.typed_data(), n);
    if (error.failure()) return error;
    uint8_t *s = states->typed_data();
    if (states_in.untyped_data() != s) std::memcpy(s, states_in.untyped_data(), states->size_bytes());
    const int32_t *a = actions.typed_data();
    const uint32_t *k = keys.typed_data();
    float *o = obs->typed_data(), *r = rewards->typed_data();
    uint8_t *d = reinterpret_cast<uint8_t *>(dones->typed_data());
    uint8_t *ach = final_achievements->typed_data();
    const size_t state_size = craftax_state_size();
    return ForEachParamsRun(
        params.typed_data(), n, "step", [&](int64_t first, int64_t count, const CraftaxParams *p) {
            return craftax_step_autoreset(s + first * state_size, a + first, k + 2 * first, count, p,
                                          o + first * CRAFTAX_OBS_SIZE, nullptr, r + first, d + first, nullptr,
                                          nullptr,
                                          ach + first * CRAFTAX_NUM_ACHIEVEMENTS);
        });
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxResetCpu, ResetImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxStepCpu, StepImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxStepAutoResetCpu, StepAutoResetImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>()
                                  .Ret<ffi::Buffer<ffi::U8>>());

// The layout the Python side packs states and params in, checked when it loads the library.
extern "C" int pycraftax_xla_abi(int64_t *state_size, int64_t *params_words, int64_t *obs_size) {
    *state_size = static_cast<int64_t>(craftax_state_size());
    *params_words = kParamsWords;
    *obs_size = CRAFTAX_OBS_SIZE;
    return craftax_api_version();
}

// craftax_xla_ffi.cc: XLA FFI handlers (CPU) over the C reference, the native calls of
// pycraftax.jax (pycraftax/jax/_ffi.py registers them for platform cpu).
//
// Each call comes in two forms (ffi_operands.h): "pycraftax_reset", "pycraftax_step" and
// "pycraftax_step_autoreset" take the params as the attribute "params" (concrete when traced),
// the "..._params_operand" twins as a per-env operand (traced params). Every handler sees its
// operands with the env batch flattened: jax.vmap(..., vmap_method="broadcast_all") prepends
// one axis per vmap level. Envs that share params run as one call of the C API; differing
// params run env by env. The states operand is aliased to the states result by the Python
// side, so a jitted scan steps in place; the handlers therefore read and write the result
// buffer only. Out-of-range actions fail the call before any state changes.

#include <cstdint>
#include <cstring>
#include <string>

#include "ffi_operands.h"
#include "xla/ffi/api/ffi.h"

extern "C" {
#include "craftax_api.h"
#include "craftax_api_step.h"
#include "craftax/constants.h"
}

namespace ffi = xla::ffi;
using pycraftax_ffi::HostParams;

namespace {

constexpr const char *kBackend = "";

ffi::Error CallFailed(const char *call, int rc) {
    const char *why = rc == CRAFTAX_ERR_ARGUMENT ? "invalid params: day_length must be > 0"
                      : rc == CRAFTAX_ERR_NO_MEMORY ? "out of memory"
                                                    : "bad arguments";
    return pycraftax_ffi::InvalidArgument(kBackend, std::string(call) + " failed (" + why + ", code " +
                                                        std::to_string(rc) + ")");
}

ffi::Error CheckActions(const int32_t *actions, int64_t num_envs) {
    for (int64_t i = 0; i < num_envs; i++)
        if (!pycraftax_ffi::ActionInRange(actions[i]))
            return pycraftax_ffi::InvalidArgument(kBackend, pycraftax_ffi::ActionMessage(actions[i], i));
    return ffi::Error::Success();
}

// The params of a call: the attribute (params_words < 0) or the per-env operand words.
ffi::Error GetParams(const uint32_t *operand_words, int64_t num_envs, ffi::Span<const uint32_t> attribute,
                     bool from_attribute, HostParams *params) {
    if (from_attribute) return pycraftax_ffi::ParamsFromAttribute(kBackend, attribute, params);
    pycraftax_ffi::ParamsFromWords(operand_words, num_envs, params);
    return ffi::Error::Success();
}

ffi::Error Reset(ffi::Buffer<ffi::U32> keys, const uint32_t *operand_words, int64_t params_words,
                 ffi::Span<const uint32_t> attribute, ffi::ResultBuffer<ffi::U8> states,
                 ffi::ResultBuffer<ffi::F32> obs) {
    int64_t n;
    ffi::Error error = pycraftax_ffi::CountEnvs(kBackend, craftax_state_size(), states->element_count(),
                                                keys.element_count(), params_words, &n);
    if (error.failure()) return error;
    HostParams params;
    error = GetParams(operand_words, n, attribute, params_words < 0, &params);
    if (error.failure()) return error;
    uint8_t *s = states->typed_data();
    float *o = obs->typed_data();
    const uint32_t *k = keys.typed_data();
    const size_t state_size = craftax_state_size();
    // XLA's result buffer is uninitialised and a reset leaves the struct's padding unwritten:
    // zero it, so that equal states are equal bytes
    std::memset(s, 0, states->size_bytes());
    return pycraftax_ffi::ForEachParamsRun(
        params, n,
        [&](int64_t first, int64_t count, const CraftaxParams *p) {
            return craftax_reset_with_keys(s + first * state_size, k + 2 * first, count, p,
                                           o + first * CRAFTAX_OBS_SIZE);
        },
        [](int rc) { return CallFailed("reset", rc); });
}

// Upstream's EnvironmentNoAutoReset.step (= step_env, the key is the step key), or with
// final_achievements its EnvironmentAutoReset.step: the C API splits each key into (step,
// reset) as upstream does, and writes the finished episode's achievements where done.
ffi::Error Step(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions, ffi::Buffer<ffi::U32> keys,
                const uint32_t *operand_words, int64_t params_words, ffi::Span<const uint32_t> attribute,
                ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                ffi::ResultBuffer<ffi::F32> rewards, ffi::ResultBuffer<ffi::PRED> dones,
                uint8_t *final_achievements) {
    int64_t n;
    ffi::Error error = pycraftax_ffi::CountEnvs(kBackend, craftax_state_size(), states->element_count(),
                                                keys.element_count(), params_words, &n);
    if (error.failure()) return error;
    error = pycraftax_ffi::CountActions(kBackend, actions.element_count(), n);
    if (error.failure()) return error;
    error = CheckActions(actions.typed_data(), n);
    if (error.failure()) return error;
    HostParams params;
    error = GetParams(operand_words, n, attribute, params_words < 0, &params);
    if (error.failure()) return error;
    uint8_t *s = states->typed_data();
    if (states_in.untyped_data() != s) std::memcpy(s, states_in.untyped_data(), states->size_bytes());
    const int32_t *a = actions.typed_data();
    const uint32_t *k = keys.typed_data();
    float *o = obs->typed_data(), *r = rewards->typed_data();
    uint8_t *d = reinterpret_cast<uint8_t *>(dones->typed_data());
    const size_t state_size = craftax_state_size();
    return pycraftax_ffi::ForEachParamsRun(
        params, n,
        [&](int64_t first, int64_t count, const CraftaxParams *p) {
            if (!final_achievements)
                return craftax_step_with_keys(s + first * state_size, a + first, k + 2 * first, count, p,
                                              o + first * CRAFTAX_OBS_SIZE, r + first, d + first);
            return craftax_step_autoreset(s + first * state_size, a + first, k + 2 * first, count, p,
                                          o + first * CRAFTAX_OBS_SIZE, nullptr, r + first, d + first, nullptr, nullptr,
                                          final_achievements + first * CRAFTAX_NUM_ACHIEVEMENTS);
        },
        [](int rc) { return CallFailed("step", rc); });
}

// The six bound forms: params as the attribute, or as the operand after the others.
ffi::Error ResetAttr(ffi::Buffer<ffi::U32> keys, ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                     ffi::Span<const uint32_t> params) {
    return Reset(keys, nullptr, -1, params, states, obs);
}

ffi::Error ResetOperand(ffi::Buffer<ffi::U32> keys, ffi::Buffer<ffi::U32> params, ffi::ResultBuffer<ffi::U8> states,
                        ffi::ResultBuffer<ffi::F32> obs) {
    return Reset(keys, params.typed_data(), params.element_count(), {}, states, obs);
}

ffi::Error StepAttr(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions, ffi::Buffer<ffi::U32> keys,
                    ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                    ffi::ResultBuffer<ffi::F32> rewards, ffi::ResultBuffer<ffi::PRED> dones,
                    ffi::Span<const uint32_t> params) {
    return Step(states_in, actions, keys, nullptr, -1, params, states, obs, rewards, dones, nullptr);
}

ffi::Error StepOperand(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions, ffi::Buffer<ffi::U32> keys,
                       ffi::Buffer<ffi::U32> params, ffi::ResultBuffer<ffi::U8> states,
                       ffi::ResultBuffer<ffi::F32> obs, ffi::ResultBuffer<ffi::F32> rewards,
                       ffi::ResultBuffer<ffi::PRED> dones) {
    return Step(states_in, actions, keys, params.typed_data(), params.element_count(), {}, states, obs, rewards,
                dones, nullptr);
}

ffi::Error StepAutoResetAttr(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions,
                             ffi::Buffer<ffi::U32> keys, ffi::ResultBuffer<ffi::U8> states,
                             ffi::ResultBuffer<ffi::F32> obs, ffi::ResultBuffer<ffi::F32> rewards,
                             ffi::ResultBuffer<ffi::PRED> dones, ffi::ResultBuffer<ffi::U8> final_achievements,
                             ffi::Span<const uint32_t> params) {
    return Step(states_in, actions, keys, nullptr, -1, params, states, obs, rewards, dones,
                final_achievements->typed_data());
}

ffi::Error StepAutoResetOperand(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions,
                                ffi::Buffer<ffi::U32> keys, ffi::Buffer<ffi::U32> params,
                                ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                                ffi::ResultBuffer<ffi::F32> rewards, ffi::ResultBuffer<ffi::PRED> dones,
                                ffi::ResultBuffer<ffi::U8> final_achievements) {
    return Step(states_in, actions, keys, params.typed_data(), params.element_count(), {}, states, obs, rewards,
                dones, final_achievements->typed_data());
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxResetCpu, ResetAttr,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<ffi::Span<const uint32_t>>("params"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxResetParamsOperandCpu, ResetOperand,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxStepCpu, StepAttr,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>()
                                  .Attr<ffi::Span<const uint32_t>>("params"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxStepParamsOperandCpu, StepOperand,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxStepAutoResetCpu, StepAutoResetAttr,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Attr<ffi::Span<const uint32_t>>("params"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxStepAutoResetParamsOperandCpu, StepAutoResetOperand,
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
    *params_words = pycraftax_ffi::kParamsWords;
    *obs_size = CRAFTAX_OBS_SIZE;
    return craftax_api_version();
}

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
//
// The "pycraftax_pixels_*" targets are the same calls of Craftax-Pixels-v1 (the pixel obs of
// craftax/pixels.h); their texture atlas is set once per process by
// pycraftax_xla_set_pixel_atlas (pycraftax/jax/_ffi.py passes pycraftax.pixels' atlas).

#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "ffi_operands.h"
#include "xla/ffi/api/ffi.h"

extern "C" {
#include "craftax_api.h"
#include "craftax_api_pixels.h"
#include "craftax_api_step.h"
#include "craftax/constants.h"
}

namespace ffi = xla::ffi;
using pycraftax_ffi::HostParams;

namespace {

constexpr const char *kBackend = "";
// Craftax-Pixels-v1's obs: 130 x 110 x 3 floats
constexpr int64_t kPixelObsSize = (9 + 4) * CRAFTAX_PIXELS_AGENT_BLOCK * 11 * CRAFTAX_PIXELS_AGENT_BLOCK * 3;

// The pixel env's texture atlas (agent block size), owned here once set.
std::mutex atlas_mutex;
std::vector<float> pixel_atlas;

// The atlas of a pixel call (nullptr for the symbolic obs), or an error where none is set.
ffi::Error Atlas(bool pixels, const float **atlas) {
    *atlas = nullptr;
    if (!pixels) return ffi::Error::Success();
    std::lock_guard<std::mutex> lock(atlas_mutex);
    if (pixel_atlas.empty())
        return pycraftax_ffi::InvalidArgument(kBackend, "the pixel env's texture atlas is not set "
                                                        "(pycraftax/jax/_ffi.py sets it before the first call)");
    *atlas = pixel_atlas.data();
    return ffi::Error::Success();
}

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
                 ffi::ResultBuffer<ffi::F32> obs, bool pixels) {
    const float *atlas;
    ffi::Error atlas_error = Atlas(pixels, &atlas);
    if (atlas_error.failure()) return atlas_error;
    const int64_t obs_size = pixels ? kPixelObsSize : CRAFTAX_OBS_SIZE;
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
            if (pixels)
                return craftax_pixels_reset_with_keys(s + first * state_size, k + 2 * first, count, p,
                                                      o + first * obs_size, atlas);
            return craftax_reset_with_keys(s + first * state_size, k + 2 * first, count, p, o + first * obs_size);
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
                uint8_t *final_achievements, bool pixels) {
    const float *atlas;
    ffi::Error atlas_error = Atlas(pixels, &atlas);
    if (atlas_error.failure()) return atlas_error;
    const int64_t obs_size = pixels ? kPixelObsSize : CRAFTAX_OBS_SIZE;
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
            uint8_t *ach = final_achievements ? final_achievements + first * CRAFTAX_NUM_ACHIEVEMENTS : nullptr;
            if (pixels && !final_achievements)
                return craftax_pixels_step_with_keys(s + first * state_size, a + first, k + 2 * first, count, p,
                                                     o + first * obs_size, r + first, d + first, atlas);
            if (pixels)
                return craftax_pixels_step_autoreset(s + first * state_size, a + first, k + 2 * first, count, p,
                                                     o + first * obs_size, nullptr, r + first, d + first, nullptr,
                                                     nullptr, ach, atlas);
            if (!final_achievements)
                return craftax_step_with_keys(s + first * state_size, a + first, k + 2 * first, count, p,
                                              o + first * obs_size, r + first, d + first);
            return craftax_step_autoreset(s + first * state_size, a + first, k + 2 * first, count, p,
                                          o + first * obs_size, nullptr, r + first, d + first, nullptr, nullptr, ach);
        },
        [](int rc) { return CallFailed("step", rc); });
}

// The six bound forms: params as the attribute, or as the operand after the others; of the
// symbolic env or (kPixels) of the pixel env.
template <bool kPixels>
ffi::Error ResetAttr(ffi::Buffer<ffi::U32> keys, ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                     ffi::Span<const uint32_t> params) {
    return Reset(keys, nullptr, -1, params, states, obs, kPixels);
}

template <bool kPixels>
ffi::Error ResetOperand(ffi::Buffer<ffi::U32> keys, ffi::Buffer<ffi::U32> params, ffi::ResultBuffer<ffi::U8> states,
                        ffi::ResultBuffer<ffi::F32> obs) {
    return Reset(keys, params.typed_data(), params.element_count(), {}, states, obs, kPixels);
}

template <bool kPixels>
ffi::Error StepAttr(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions, ffi::Buffer<ffi::U32> keys,
                    ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                    ffi::ResultBuffer<ffi::F32> rewards, ffi::ResultBuffer<ffi::PRED> dones,
                    ffi::Span<const uint32_t> params) {
    return Step(states_in, actions, keys, nullptr, -1, params, states, obs, rewards, dones, nullptr, kPixels);
}

template <bool kPixels>
ffi::Error StepOperand(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions, ffi::Buffer<ffi::U32> keys,
                       ffi::Buffer<ffi::U32> params, ffi::ResultBuffer<ffi::U8> states,
                       ffi::ResultBuffer<ffi::F32> obs, ffi::ResultBuffer<ffi::F32> rewards,
                       ffi::ResultBuffer<ffi::PRED> dones) {
    return Step(states_in, actions, keys, params.typed_data(), params.element_count(), {}, states, obs, rewards,
                dones, nullptr, kPixels);
}

template <bool kPixels>
ffi::Error StepAutoResetAttr(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions,
                             ffi::Buffer<ffi::U32> keys, ffi::ResultBuffer<ffi::U8> states,
                             ffi::ResultBuffer<ffi::F32> obs, ffi::ResultBuffer<ffi::F32> rewards,
                             ffi::ResultBuffer<ffi::PRED> dones, ffi::ResultBuffer<ffi::U8> final_achievements,
                             ffi::Span<const uint32_t> params) {
    return Step(states_in, actions, keys, nullptr, -1, params, states, obs, rewards, dones,
                final_achievements->typed_data(), kPixels);
}

template <bool kPixels>
ffi::Error StepAutoResetOperand(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions,
                                ffi::Buffer<ffi::U32> keys, ffi::Buffer<ffi::U32> params,
                                ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                                ffi::ResultBuffer<ffi::F32> rewards, ffi::ResultBuffer<ffi::PRED> dones,
                                ffi::ResultBuffer<ffi::U8> final_achievements) {
    return Step(states_in, actions, keys, params.typed_data(), params.element_count(), {}, states, obs, rewards,
                dones, final_achievements->typed_data(), kPixels);
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxResetCpu, ResetAttr<false>,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<ffi::Span<const uint32_t>>("params"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxResetParamsOperandCpu, ResetOperand<false>,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxStepCpu, StepAttr<false>,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>()
                                  .Attr<ffi::Span<const uint32_t>>("params"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxStepParamsOperandCpu, StepOperand<false>,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxStepAutoResetCpu, StepAutoResetAttr<false>,
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

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxStepAutoResetParamsOperandCpu, StepAutoResetOperand<false>,
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

// Craftax-Pixels-v1's, the same calls with the pixel obs.
XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxPixelsResetCpu, ResetAttr<true>,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<ffi::Span<const uint32_t>>("params"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxPixelsResetParamsOperandCpu, ResetOperand<true>,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxPixelsStepCpu, StepAttr<true>,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>()
                                  .Attr<ffi::Span<const uint32_t>>("params"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxPixelsStepParamsOperandCpu, StepOperand<true>,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxPixelsStepAutoResetCpu, StepAutoResetAttr<true>,
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

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxPixelsStepAutoResetParamsOperandCpu, StepAutoResetOperand<true>,
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

// Sets the pixel env's texture atlas (pycraftax.pixels.atlas("craftax", 10)): copied, so the
// caller's buffer may go. Returns 0, or CRAFTAX_ERR_ARGUMENT for an atlas of another size.
extern "C" int pycraftax_xla_set_pixel_atlas(const float *data, int64_t size) {
    if (!data || size != craftax_pixels_atlas_size(CRAFTAX_PIXELS_GAME_FULL, CRAFTAX_PIXELS_AGENT_BLOCK))
        return CRAFTAX_ERR_ARGUMENT;
    std::lock_guard<std::mutex> lock(atlas_mutex);
    pixel_atlas.assign(data, data + size);
    return 0;
}

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
// The same calls exist for four envs, one set of targets each (the Env traits below):
// "pycraftax_*" Craftax-Symbolic-v1, "pycraftax_pixels_*" Craftax-Pixels-v1 (the pixel obs of
// craftax/pixels.h), "pycraftax_classic_*" Craftax-Classic-Symbolic-v1 and
// "pycraftax_classic_pixels_*" Craftax-Classic-Pixels-v1 (craftax_api_classic.h, their params
// words CraftaxClassicParams). The pixel envs' texture atlases (one per game) are set once per
// process by pycraftax_xla_set_pixel_atlas (pycraftax/jax/_ffi.py passes pycraftax.pixels').

#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "ffi_operands.h"
#include "xla/ffi/api/ffi.h"

extern "C" {
#include "craftax_api.h"
#include "craftax_api_classic.h"
#include "craftax_api_pixels.h"
#include "craftax_api_step.h"
#include "craftax/constants.h"
#include "craftax_classic/constants.h"
}

namespace ffi = xla::ffi;
using pycraftax_ffi::HostParamsOf;

namespace {

constexpr const char *kBackend = "";

// The pixel envs' texture atlases at their agent block sizes (index: CRAFTAX_PIXELS_GAME_*),
// owned here once set.
std::mutex atlas_mutex;
std::vector<float> pixel_atlas[2];

// The atlas of game `game` (pixel envs), or an error where none is set.
ffi::Error Atlas(int game, const float **atlas) {
    std::lock_guard<std::mutex> lock(atlas_mutex);
    if (pixel_atlas[game].empty())
        return pycraftax_ffi::InvalidArgument(kBackend, "the pixel env's texture atlas is not set "
                                                        "(pycraftax/jax/_ffi.py sets it before the first call)");
    *atlas = pixel_atlas[game].data();
    return ffi::Error::Success();
}

// The four envs: their params struct, sizes, and C API calls (the symbolic envs ignore the atlas).
struct FullSymbolic {
    using Params = CraftaxParams;
    static constexpr int kGame = -1;  // no atlas
    static constexpr int32_t kNumActions = CRAFTAX_NUM_ACTIONS;
    static constexpr int64_t kNumAchievements = CRAFTAX_NUM_ACHIEVEMENTS;
    static size_t StateSize() { return craftax_state_size(); }
    static int64_t ObsSize() { return CRAFTAX_OBS_SIZE; }
    static int Reset(void *s, const uint32_t *k, int64_t n, const Params *p, float *o, const float *) {
        return craftax_reset_with_keys(s, k, n, p, o);
    }
    static int Step(void *s, const int32_t *a, const uint32_t *k, int64_t n, const Params *p, float *o, float *r,
                    uint8_t *d, const float *) {
        return craftax_step_with_keys(s, a, k, n, p, o, r, d);
    }
    static int StepAutoReset(void *s, const int32_t *a, const uint32_t *k, int64_t n, const Params *p, float *o,
                             float *r, uint8_t *d, uint8_t *ach, const float *) {
        return craftax_step_autoreset(s, a, k, n, p, o, nullptr, r, d, nullptr, nullptr, ach);
    }
};

struct FullPixels : FullSymbolic {
    static constexpr int kGame = CRAFTAX_PIXELS_GAME_FULL;
    // Craftax-Pixels-v1's obs: (9 + 4) x 11 cells of 10 x 10 pixels, 3 channels
    static int64_t ObsSize() { return (9 + 4) * CRAFTAX_PIXELS_AGENT_BLOCK * 11 * CRAFTAX_PIXELS_AGENT_BLOCK * 3; }
    static int Reset(void *s, const uint32_t *k, int64_t n, const Params *p, float *o, const float *atlas) {
        return craftax_pixels_reset_with_keys(s, k, n, p, o, atlas);
    }
    static int Step(void *s, const int32_t *a, const uint32_t *k, int64_t n, const Params *p, float *o, float *r,
                    uint8_t *d, const float *atlas) {
        return craftax_pixels_step_with_keys(s, a, k, n, p, o, r, d, atlas);
    }
    static int StepAutoReset(void *s, const int32_t *a, const uint32_t *k, int64_t n, const Params *p, float *o,
                             float *r, uint8_t *d, uint8_t *ach, const float *atlas) {
        return craftax_pixels_step_autoreset(s, a, k, n, p, o, nullptr, r, d, nullptr, nullptr, ach, atlas);
    }
};

struct ClassicSymbolic {
    using Params = CraftaxClassicParams;
    static constexpr int kGame = -1;
    static constexpr int32_t kNumActions = CRAFTAX_CLASSIC_NUM_ACTIONS;
    static constexpr int64_t kNumAchievements = CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS;
    static size_t StateSize() { return craftax_classic_state_size(); }
    static int64_t ObsSize() { return craftax_classic_obs_size(); }
    static int Reset(void *s, const uint32_t *k, int64_t n, const Params *p, float *o, const float *) {
        return craftax_classic_reset_with_keys(s, k, n, p, o);
    }
    static int Step(void *s, const int32_t *a, const uint32_t *k, int64_t n, const Params *p, float *o, float *r,
                    uint8_t *d, const float *) {
        return craftax_classic_step_with_keys(s, a, k, n, p, o, r, d);
    }
    static int StepAutoReset(void *s, const int32_t *a, const uint32_t *k, int64_t n, const Params *p, float *o,
                             float *r, uint8_t *d, uint8_t *ach, const float *) {
        return craftax_classic_step_autoreset(s, a, k, n, p, o, nullptr, r, d, nullptr, nullptr, ach);
    }
};

struct ClassicPixels : ClassicSymbolic {
    static constexpr int kGame = CRAFTAX_PIXELS_GAME_CLASSIC;
    // Craftax-Classic-Pixels-v1's obs: (7 + 2) x 9 cells of 7 x 7 pixels, 3 channels
    static int64_t ObsSize() {
        return (CRAFTAX_CLASSIC_OBS_ROWS + 2) * CRAFTAX_CLASSIC_PIXELS_AGENT_BLOCK * CRAFTAX_CLASSIC_OBS_COLS *
               CRAFTAX_CLASSIC_PIXELS_AGENT_BLOCK * 3;
    }
    static int Reset(void *s, const uint32_t *k, int64_t n, const Params *p, float *o, const float *atlas) {
        return craftax_classic_pixels_reset_with_keys(s, k, n, p, o, atlas);
    }
    static int Step(void *s, const int32_t *a, const uint32_t *k, int64_t n, const Params *p, float *o, float *r,
                    uint8_t *d, const float *atlas) {
        return craftax_classic_pixels_step_with_keys(s, a, k, n, p, o, r, d, atlas);
    }
    static int StepAutoReset(void *s, const int32_t *a, const uint32_t *k, int64_t n, const Params *p, float *o,
                             float *r, uint8_t *d, uint8_t *ach, const float *atlas) {
        return craftax_classic_pixels_step_autoreset(s, a, k, n, p, o, nullptr, r, d, nullptr, nullptr, ach, atlas);
    }
};

template <class Env>
ffi::Error EnvAtlas(const float **atlas) {
    *atlas = nullptr;
    if (Env::kGame < 0) return ffi::Error::Success();
    return Atlas(Env::kGame, atlas);
}

ffi::Error CallFailed(const char *call, int rc) {
    const char *why = rc == CRAFTAX_ERR_ARGUMENT ? "invalid params: day_length must be > 0"
                      : rc == CRAFTAX_ERR_NO_MEMORY ? "out of memory"
                                                    : "bad arguments";
    return pycraftax_ffi::InvalidArgument(kBackend, std::string(call) + " failed (" + why + ", code " +
                                                        std::to_string(rc) + ")");
}

template <class Env>
ffi::Error CheckActions(const int32_t *actions, int64_t num_envs) {
    for (int64_t i = 0; i < num_envs; i++)
        if (!pycraftax_ffi::ActionInRange(actions[i], Env::kNumActions))
            return pycraftax_ffi::InvalidArgument(kBackend,
                                                  pycraftax_ffi::ActionMessage(actions[i], i, Env::kNumActions));
    return ffi::Error::Success();
}

// The params of a call: the attribute (from_attribute) or the per-env operand words.
template <class Env>
ffi::Error GetParams(const uint32_t *operand_words, int64_t num_envs, ffi::Span<const uint32_t> attribute,
                     bool from_attribute, HostParamsOf<typename Env::Params> *params) {
    if (from_attribute) return pycraftax_ffi::ParamsFromAttribute(kBackend, attribute, params);
    pycraftax_ffi::ParamsFromWords(operand_words, num_envs, params);
    return ffi::Error::Success();
}

template <class Env>
ffi::Error Reset(ffi::Buffer<ffi::U32> keys, const uint32_t *operand_words, int64_t params_words,
                 ffi::Span<const uint32_t> attribute, ffi::ResultBuffer<ffi::U8> states,
                 ffi::ResultBuffer<ffi::F32> obs) {
    using Params = typename Env::Params;
    const float *atlas;
    ffi::Error error = EnvAtlas<Env>(&atlas);
    if (error.failure()) return error;
    const int64_t obs_size = Env::ObsSize();
    const size_t state_size = Env::StateSize();
    int64_t n = 0;
    error = pycraftax_ffi::CountEnvs(kBackend, state_size, states->element_count(), keys.element_count(),
                                     params_words, &n, pycraftax_ffi::ParamsWordsOf<Params>());
    if (error.failure()) return error;
    HostParamsOf<Params> params;
    error = GetParams<Env>(operand_words, n, attribute, params_words < 0, &params);
    if (error.failure()) return error;
    uint8_t *s = states->typed_data();
    float *o = obs->typed_data();
    const uint32_t *k = keys.typed_data();
    // XLA's result buffer is uninitialised and a reset leaves the struct's padding unwritten:
    // zero it, so that equal states are equal bytes
    std::memset(s, 0, states->size_bytes());
    return pycraftax_ffi::ForEachParamsRun(
        params, n,
        [&](int64_t first, int64_t count, const Params *p) {
            return Env::Reset(s + first * state_size, k + 2 * first, count, p, o + first * obs_size, atlas);
        },
        [](int rc) { return CallFailed("reset", rc); });
}

// Upstream's EnvironmentNoAutoReset.step (= step_env, the key is the step key), or with
// final_achievements its EnvironmentAutoReset.step: the C API splits each key into (step,
// reset) as upstream does, and writes the finished episode's achievements where done.
template <class Env>
ffi::Error Step(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions, ffi::Buffer<ffi::U32> keys,
                const uint32_t *operand_words, int64_t params_words, ffi::Span<const uint32_t> attribute,
                ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                ffi::ResultBuffer<ffi::F32> rewards, ffi::ResultBuffer<ffi::PRED> dones,
                uint8_t *final_achievements) {
    using Params = typename Env::Params;
    const float *atlas;
    ffi::Error error = EnvAtlas<Env>(&atlas);
    if (error.failure()) return error;
    const int64_t obs_size = Env::ObsSize();
    const size_t state_size = Env::StateSize();
    int64_t n = 0;
    error = pycraftax_ffi::CountEnvs(kBackend, state_size, states->element_count(), keys.element_count(),
                                     params_words, &n, pycraftax_ffi::ParamsWordsOf<Params>());
    if (error.failure()) return error;
    error = pycraftax_ffi::CountActions(kBackend, actions.element_count(), n);
    if (error.failure()) return error;
    error = CheckActions<Env>(actions.typed_data(), n);
    if (error.failure()) return error;
    HostParamsOf<Params> params;
    error = GetParams<Env>(operand_words, n, attribute, params_words < 0, &params);
    if (error.failure()) return error;
    uint8_t *s = states->typed_data();
    if (states_in.untyped_data() != s) std::memcpy(s, states_in.untyped_data(), states->size_bytes());
    const int32_t *a = actions.typed_data();
    const uint32_t *k = keys.typed_data();
    float *o = obs->typed_data(), *r = rewards->typed_data();
    uint8_t *d = reinterpret_cast<uint8_t *>(dones->typed_data());
    return pycraftax_ffi::ForEachParamsRun(
        params, n,
        [&](int64_t first, int64_t count, const Params *p) {
            uint8_t *ss = s + first * state_size;
            float *oo = o + first * obs_size;
            if (!final_achievements)
                return Env::Step(ss, a + first, k + 2 * first, count, p, oo, r + first, d + first, atlas);
            return Env::StepAutoReset(ss, a + first, k + 2 * first, count, p, oo, r + first, d + first,
                                      final_achievements + first * Env::kNumAchievements, atlas);
        },
        [](int rc) { return CallFailed("step", rc); });
}

// The six bound forms of each env: params as the attribute, or as the operand after the others.
template <class Env>
ffi::Error ResetAttr(ffi::Buffer<ffi::U32> keys, ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                     ffi::Span<const uint32_t> params) {
    return Reset<Env>(keys, nullptr, -1, params, states, obs);
}

template <class Env>
ffi::Error ResetOperand(ffi::Buffer<ffi::U32> keys, ffi::Buffer<ffi::U32> params, ffi::ResultBuffer<ffi::U8> states,
                        ffi::ResultBuffer<ffi::F32> obs) {
    return Reset<Env>(keys, params.typed_data(), params.element_count(), {}, states, obs);
}

template <class Env>
ffi::Error StepAttr(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions, ffi::Buffer<ffi::U32> keys,
                    ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                    ffi::ResultBuffer<ffi::F32> rewards, ffi::ResultBuffer<ffi::PRED> dones,
                    ffi::Span<const uint32_t> params) {
    return Step<Env>(states_in, actions, keys, nullptr, -1, params, states, obs, rewards, dones, nullptr);
}

template <class Env>
ffi::Error StepOperand(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions, ffi::Buffer<ffi::U32> keys,
                       ffi::Buffer<ffi::U32> params, ffi::ResultBuffer<ffi::U8> states,
                       ffi::ResultBuffer<ffi::F32> obs, ffi::ResultBuffer<ffi::F32> rewards,
                       ffi::ResultBuffer<ffi::PRED> dones) {
    return Step<Env>(states_in, actions, keys, params.typed_data(), params.element_count(), {}, states, obs, rewards,
                     dones, nullptr);
}

template <class Env>
ffi::Error StepAutoResetAttr(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions,
                             ffi::Buffer<ffi::U32> keys, ffi::ResultBuffer<ffi::U8> states,
                             ffi::ResultBuffer<ffi::F32> obs, ffi::ResultBuffer<ffi::F32> rewards,
                             ffi::ResultBuffer<ffi::PRED> dones, ffi::ResultBuffer<ffi::U8> final_achievements,
                             ffi::Span<const uint32_t> params) {
    return Step<Env>(states_in, actions, keys, nullptr, -1, params, states, obs, rewards, dones,
                     final_achievements->typed_data());
}

template <class Env>
ffi::Error StepAutoResetOperand(ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions,
                                ffi::Buffer<ffi::U32> keys, ffi::Buffer<ffi::U32> params,
                                ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                                ffi::ResultBuffer<ffi::F32> rewards, ffi::ResultBuffer<ffi::PRED> dones,
                                ffi::ResultBuffer<ffi::U8> final_achievements) {
    return Step<Env>(states_in, actions, keys, params.typed_data(), params.element_count(), {}, states, obs, rewards,
                     dones, final_achievements->typed_data());
}

}  // namespace

// The six handler symbols of one env: Pycraftax<Name>{Reset,Step,StepAutoReset}[ParamsOperand]Cpu.
#define PYCRAFTAX_DEFINE_CPU_HANDLERS(Name, Env)                                                             \
    XLA_FFI_DEFINE_HANDLER_SYMBOL(Pycraftax##Name##ResetCpu, ResetAttr<Env>,                                 \
                                  ffi::Ffi::Bind()                                                           \
                                      .Arg<ffi::Buffer<ffi::U32>>()                                          \
                                      .Ret<ffi::Buffer<ffi::U8>>()                                           \
                                      .Ret<ffi::Buffer<ffi::F32>>()                                          \
                                      .Attr<ffi::Span<const uint32_t>>("params"));                           \
    XLA_FFI_DEFINE_HANDLER_SYMBOL(Pycraftax##Name##ResetParamsOperandCpu, ResetOperand<Env>,                 \
                                  ffi::Ffi::Bind()                                                           \
                                      .Arg<ffi::Buffer<ffi::U32>>()                                          \
                                      .Arg<ffi::Buffer<ffi::U32>>()                                          \
                                      .Ret<ffi::Buffer<ffi::U8>>()                                           \
                                      .Ret<ffi::Buffer<ffi::F32>>());                                        \
    XLA_FFI_DEFINE_HANDLER_SYMBOL(Pycraftax##Name##StepCpu, StepAttr<Env>,                                   \
                                  ffi::Ffi::Bind()                                                           \
                                      .Arg<ffi::Buffer<ffi::U8>>()                                           \
                                      .Arg<ffi::Buffer<ffi::S32>>()                                          \
                                      .Arg<ffi::Buffer<ffi::U32>>()                                          \
                                      .Ret<ffi::Buffer<ffi::U8>>()                                           \
                                      .Ret<ffi::Buffer<ffi::F32>>()                                          \
                                      .Ret<ffi::Buffer<ffi::F32>>()                                          \
                                      .Ret<ffi::Buffer<ffi::PRED>>()                                         \
                                      .Attr<ffi::Span<const uint32_t>>("params"));                           \
    XLA_FFI_DEFINE_HANDLER_SYMBOL(Pycraftax##Name##StepParamsOperandCpu, StepOperand<Env>,                   \
                                  ffi::Ffi::Bind()                                                           \
                                      .Arg<ffi::Buffer<ffi::U8>>()                                           \
                                      .Arg<ffi::Buffer<ffi::S32>>()                                          \
                                      .Arg<ffi::Buffer<ffi::U32>>()                                          \
                                      .Arg<ffi::Buffer<ffi::U32>>()                                          \
                                      .Ret<ffi::Buffer<ffi::U8>>()                                           \
                                      .Ret<ffi::Buffer<ffi::F32>>()                                          \
                                      .Ret<ffi::Buffer<ffi::F32>>()                                          \
                                      .Ret<ffi::Buffer<ffi::PRED>>());                                       \
    XLA_FFI_DEFINE_HANDLER_SYMBOL(Pycraftax##Name##StepAutoResetCpu, StepAutoResetAttr<Env>,                 \
                                  ffi::Ffi::Bind()                                                           \
                                      .Arg<ffi::Buffer<ffi::U8>>()                                           \
                                      .Arg<ffi::Buffer<ffi::S32>>()                                          \
                                      .Arg<ffi::Buffer<ffi::U32>>()                                          \
                                      .Ret<ffi::Buffer<ffi::U8>>()                                           \
                                      .Ret<ffi::Buffer<ffi::F32>>()                                          \
                                      .Ret<ffi::Buffer<ffi::F32>>()                                          \
                                      .Ret<ffi::Buffer<ffi::PRED>>()                                         \
                                      .Ret<ffi::Buffer<ffi::U8>>()                                           \
                                      .Attr<ffi::Span<const uint32_t>>("params"));                           \
    XLA_FFI_DEFINE_HANDLER_SYMBOL(Pycraftax##Name##StepAutoResetParamsOperandCpu, StepAutoResetOperand<Env>, \
                                  ffi::Ffi::Bind()                                                           \
                                      .Arg<ffi::Buffer<ffi::U8>>()                                           \
                                      .Arg<ffi::Buffer<ffi::S32>>()                                          \
                                      .Arg<ffi::Buffer<ffi::U32>>()                                          \
                                      .Arg<ffi::Buffer<ffi::U32>>()                                          \
                                      .Ret<ffi::Buffer<ffi::U8>>()                                           \
                                      .Ret<ffi::Buffer<ffi::F32>>()                                          \
                                      .Ret<ffi::Buffer<ffi::F32>>()                                          \
                                      .Ret<ffi::Buffer<ffi::PRED>>()                                         \
                                      .Ret<ffi::Buffer<ffi::U8>>())

PYCRAFTAX_DEFINE_CPU_HANDLERS(, FullSymbolic);
PYCRAFTAX_DEFINE_CPU_HANDLERS(Pixels, FullPixels);
PYCRAFTAX_DEFINE_CPU_HANDLERS(Classic, ClassicSymbolic);
PYCRAFTAX_DEFINE_CPU_HANDLERS(ClassicPixels, ClassicPixels);

// The layout the Python side packs states and params in, checked when it loads the library.
extern "C" int pycraftax_xla_abi(int64_t *state_size, int64_t *params_words, int64_t *obs_size) {
    *state_size = static_cast<int64_t>(craftax_state_size());
    *params_words = pycraftax_ffi::kParamsWords;
    *obs_size = CRAFTAX_OBS_SIZE;
    return craftax_api_version();
}

// Craftax-Classic's layout, as pycraftax_xla_abi (a library without it predates the Classic envs).
extern "C" int pycraftax_xla_classic_abi(int64_t *state_size, int64_t *params_words, int64_t *obs_size) {
    *state_size = static_cast<int64_t>(craftax_classic_state_size());
    *params_words = pycraftax_ffi::ParamsWordsOf<CraftaxClassicParams>();
    *obs_size = craftax_classic_obs_size();
    return craftax_api_version();
}

// Sets game's (CRAFTAX_PIXELS_GAME_*) pixel atlas at its agent block size (pycraftax.pixels.atlas
// ("craftax", 10) or ("craftax_classic", 7)): copied, so the caller's buffer may go. Returns 0,
// or CRAFTAX_ERR_ARGUMENT for another game or an atlas of another size.
extern "C" int pycraftax_xla_set_pixel_atlas(int32_t game, const float *data, int64_t size) {
    if (game != CRAFTAX_PIXELS_GAME_FULL && game != CRAFTAX_PIXELS_GAME_CLASSIC) return CRAFTAX_ERR_ARGUMENT;
    const int32_t block =
        game == CRAFTAX_PIXELS_GAME_FULL ? CRAFTAX_PIXELS_AGENT_BLOCK : CRAFTAX_CLASSIC_PIXELS_AGENT_BLOCK;
    if (!data || size != craftax_pixels_atlas_size(game, block)) return CRAFTAX_ERR_ARGUMENT;
    std::lock_guard<std::mutex> lock(atlas_mutex);
    pixel_atlas[game].assign(data, data + size);
    return 0;
}

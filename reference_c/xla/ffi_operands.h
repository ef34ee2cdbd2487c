// ffi_operands.h: the operand checks and params handling that pycraftax.jax's XLA FFI handlers
// share, the CPU ones (reference_c/xla/craftax_xla_ffi.cc) and the CUDA ones
// (cuda/xla/craftax_xla_ffi.cu), so that both accept and reject the same calls with the same
// messages.
//
// Operands arrive with the env batch flattened (vmap_method="broadcast_all"): states uint8
// [..., state_size], keys uint32 [..., 2], actions int32 [...], and params either as the
// attribute "params" (uint32 [params_words], one params struct for every env: params that
// were concrete when the call was traced) or as an operand uint32 [..., params_words] (traced
// params, one struct per env). Either way the handler ends up with host params structs:
// HostParamsOf below (CraftaxParams for the full game, CraftaxClassicParams for Classic).
#ifndef PYCRAFTAX_XLA_FFI_OPERANDS_H
#define PYCRAFTAX_XLA_FFI_OPERANDS_H

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "xla/ffi/api/ffi.h"

extern "C" {
#include "craftax/constants.h"
#include "craftax/params.h"
}

namespace pycraftax_ffi {

namespace ffi = xla::ffi;

// The uint32 words of one params struct: CraftaxParams (the full game) or CraftaxClassicParams,
// both packed from 32-bit fields by pycraftax/jax/params.py.
template <typename P>
constexpr int64_t ParamsWordsOf() {
    static_assert(sizeof(P) % sizeof(uint32_t) == 0, "params structs are packed from 32-bit words");
    return static_cast<int64_t>(sizeof(P) / sizeof(uint32_t));
}
constexpr int64_t kParamsWords = ParamsWordsOf<CraftaxParams>();

inline ffi::Error InvalidArgument(const char *backend, const std::string &what) {
    return ffi::Error(ffi::ErrorCode::kInvalidArgument, std::string("pycraftax") + backend + ": " + what);
}

// The number of envs of a call, checked against every batched operand's element count.
// params_words < 0: the params came as the attribute, not per env. params_per_env: the words of
// the game's params struct.
inline ffi::Error CountEnvs(const char *backend, int64_t state_size, int64_t states_bytes, int64_t keys_words,
                            int64_t params_words, int64_t *num_envs, int64_t params_per_env = kParamsWords) {
    if (states_bytes % state_size != 0 || keys_words % 2 != 0 || (params_words >= 0 && params_words % params_per_env))
        return InvalidArgument(backend, "operand sizes are not whole envs");
    const int64_t n = states_bytes / state_size;
    if (keys_words / 2 != n || (params_words >= 0 && params_words / params_per_env != n))
        return InvalidArgument(backend, "operands disagree on the number of envs");
    *num_envs = n;
    return ffi::Error::Success();
}

inline ffi::Error CountActions(const char *backend, int64_t actions, int64_t num_envs) {
    if (actions != num_envs) return InvalidArgument(backend, "one action per env expected");
    return ffi::Error::Success();
}

// The message of an out-of-range action, the same wherever it is found.
inline std::string ActionMessage(int64_t action, int64_t env, int64_t num_actions = CRAFTAX_NUM_ACTIONS) {
    return "action " + std::to_string(action) + " of env " + std::to_string(env) + " is outside [0, " +
           std::to_string(num_actions) + ")";
}

inline bool ActionInRange(int32_t action, int32_t num_actions = CRAFTAX_NUM_ACTIONS) {
    return action >= 0 && action < num_actions;
}

// The params of a call on the host: one params struct P for all envs (shared) or one per env.
// Copied out of the attribute or operand words, which need not be aligned as the struct is.
template <typename P>
struct HostParamsOf {
    std::vector<P> values;
    bool shared = true;

    const P &Of(int64_t env) const { return values[shared ? 0 : static_cast<size_t>(env)]; }
};
using HostParams = HostParamsOf<CraftaxParams>;

template <typename P>
ffi::Error ParamsFromAttribute(const char *backend, ffi::Span<const uint32_t> words, HostParamsOf<P> *params) {
    if (static_cast<int64_t>(words.size()) != ParamsWordsOf<P>())
        return InvalidArgument(backend, "the params attribute has " + std::to_string(words.size()) +
                                            " words, the params struct " + std::to_string(ParamsWordsOf<P>()));
    params->values.resize(1);
    std::memcpy(params->values.data(), words.begin(), sizeof(P));
    params->shared = true;
    return ffi::Error::Success();
}

// Per-env params words already on the host (the CPU operand, or the CUDA operand once copied).
// The broadcast copies of unbatched params are identical: then they are stored once.
template <typename P>
void ParamsFromWords(const uint32_t *words, int64_t num_envs, HostParamsOf<P> *params) {
    constexpr int64_t kWords = ParamsWordsOf<P>();
    bool same = true;
    for (int64_t i = 1; i < num_envs && same; i++) same = std::memcmp(words, words + i * kWords, sizeof(P)) == 0;
    const int64_t stored = num_envs == 0 ? 0 : same ? 1 : num_envs;
    params->values.resize(static_cast<size_t>(stored));
    if (stored) std::memcpy(params->values.data(), words, sizeof(P) * stored);
    params->shared = same;
}

// Runs call(first_env, count, params) over runs of envs that share params (the whole batch
// at once when they all do, else env by env); `fail(rc)` turns a nonzero code into the error.
template <typename P, typename Call, typename Fail>
ffi::Error ForEachParamsRun(const HostParamsOf<P> &params, int64_t num_envs, Call call, Fail fail) {
    if (num_envs == 0) return ffi::Error::Success();
    const int64_t run = params.shared ? num_envs : 1;
    for (int64_t first = 0; first < num_envs; first += run) {
        const int rc = call(first, run, &params.Of(first));
        if (rc != 0) return fail(rc);
    }
    return ffi::Error::Success();
}

}  // namespace pycraftax_ffi

#endif

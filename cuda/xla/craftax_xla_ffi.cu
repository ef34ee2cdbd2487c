// craftax_xla_ffi.cu: XLA FFI handlers (CUDA) over the CUDA library (cuda/craftax_cuda.h),
// the GPU twins of reference_c/xla/craftax_xla_ffi.cc, registered by pycraftax/jax/_ffi.py
// as "pycraftax_reset" / "pycraftax_step" for platform CUDA when libcraftax_xla_cuda.so is
// installed. The auto-reset step composes these two in JAX on the GPU (pycraftax/jax/env.py).
//
// Operand layout as on the CPU: the env batch flattened (vmap_method="broadcast_all"), params
// uint32 [..., params_words] per env, the states operand aliased to the states result.
//
// The library's reset and step calls run on the legacy default stream and synchronise before
// they return (craftax_cuda.h), and take params as a host pointer. So each handler waits for
// XLA's stream (its inputs), copies the params to the host, and returns with its outputs
// ready: one host synchronisation per call. Resets generate all nine floors, so that states
// equal the C reference's byte for byte (to_upstream_state reads every level).

#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "xla/ffi/api/ffi.h"

extern "C" {
#include "craftax_cuda.h"
#include "craftax/constants.h"
}

namespace ffi = xla::ffi;

namespace {

constexpr int64_t kParamsWords = sizeof(CraftaxParams) / sizeof(uint32_t);
static_assert(sizeof(CraftaxParams) % sizeof(uint32_t) == 0, "CraftaxParams is packed from 32-bit words");

ffi::Error Failed(const char *call, int rc) {
    const char *detail = craftax_cuda_last_error();
    std::string message = std::string("pycraftax (CUDA): ") + call + " failed (code " + std::to_string(rc) + ")";
    if (rc == CRAFTAX_ERR_ARGUMENT) message += ": an action outside [0, 43) or invalid params (day_length must be > 0)";
    if (detail && *detail) message += std::string(": ") + detail;
    return ffi::Error(ffi::ErrorCode::kInvalidArgument, message);
}

ffi::Error Prepare(cudaStream_t stream, int64_t states_bytes, int64_t keys_words, int64_t params_words,
                   int64_t *num_envs) {
    static const int init_rc = craftax_cuda_init(0);
    if (init_rc != 0) return Failed("craftax_cuda_init", init_rc);
    const int64_t state_size = static_cast<int64_t>(craftax_cuda_state_size());
    if (states_bytes % state_size != 0 || keys_words % 2 != 0 || params_words % kParamsWords != 0 ||
        keys_words / 2 != states_bytes / state_size || params_words / kParamsWords != states_bytes / state_size)
        return ffi::Error(ffi::ErrorCode::kInvalidArgument, "pycraftax (CUDA): operands disagree on the number of envs");
    *num_envs = states_bytes / state_size;
    const int rc = craftax_cuda_stream_synchronize(reinterpret_cast<uintptr_t>(stream));
    if (rc != 0) return Failed("waiting for XLA's stream", rc);
    return ffi::Error::Success();
}

// The params of every env, on the host.
ffi::Error HostParams(const uint32_t *device_params, int64_t num_envs, std::vector<CraftaxParams> *params) {
    params->resize(static_cast<size_t>(num_envs));
    if (num_envs == 0) return ffi::Error::Success();
    const int rc = craftax_cuda_memcpy_dtoh(params->data(), device_params, sizeof(CraftaxParams) * num_envs);
    if (rc != 0) return Failed("copying params", rc);
    return ffi::Error::Success();
}

// Runs call(first_env, count, params) over the whole batch when every env has the same params,
// else env by env.
template <typename Call>
ffi::Error ForEachParamsRun(const std::vector<CraftaxParams> &params, const char *name, Call call) {
    const int64_t n = static_cast<int64_t>(params.size());
    if (n == 0) return ffi::Error::Success();
    bool same = true;
    for (int64_t i = 1; i < n && same; i++) same = std::memcmp(&params[0], &params[i], sizeof(CraftaxParams)) == 0;
    for (int64_t first = 0; first < n; first += same ? n : 1) {
        const int rc = call(first, same ? n : 1, &params[first]);
        if (rc != 0) return Failed(name, rc);
    }
    return ffi::Error::Success();
}

// World-generation scratch of the handlers, grown to the largest batch and kept: XLA's FFI
// scratch allocator refused these requests on the GPU. The library's calls wait before they
// return, so holding the lock for a whole call is what keeps two executions off one scratch.
std::mutex g_scratch_lock;
void *g_scratch = nullptr;
size_t g_scratch_bytes = 0;

void *Scratch(int64_t num_envs) {
    const size_t bytes = craftax_cuda_scratch_size() * static_cast<size_t>(craftax_cuda_scratch_entries(num_envs));
    if (bytes <= g_scratch_bytes) return g_scratch;
    if (g_scratch) craftax_cuda_free(g_scratch);
    g_scratch = nullptr;
    g_scratch_bytes = 0;
    if (craftax_cuda_malloc(&g_scratch, bytes > 0 ? bytes : 1) != 0) return nullptr;
    g_scratch_bytes = bytes;
    return g_scratch;
}

ffi::Error ResetImpl(cudaStream_t stream, ffi::Buffer<ffi::U32> keys,
                     ffi::Buffer<ffi::U32> params, ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs) {
    int64_t n;
    ffi::Error error = Prepare(stream, states->element_count(), keys.element_count(), params.element_count(), &n);
    if (error.failure()) return error;
    std::vector<CraftaxParams> host_params;
    error = HostParams(params.typed_data(), n, &host_params);
    if (error.failure()) return error;
    std::lock_guard<std::mutex> hold(g_scratch_lock);
    void *scratch = Scratch(n);
    if (!scratch) return ffi::Error(ffi::ErrorCode::kResourceExhausted, "pycraftax (CUDA): no scratch memory");
    uint8_t *s = states->typed_data();
    float *o = obs->typed_data();
    const uint32_t *k = keys.typed_data();
    const size_t state_size = craftax_cuda_state_size();
    const int obs_size = CRAFTAX_OBS_SIZE;
    // XLA's result buffer is uninitialised and a reset leaves the struct's padding unwritten:
    // zero it, so that equal states are equal bytes
    const int rc = craftax_cuda_memset(s, 0, states->size_bytes());
    if (rc != 0) return Failed("clearing the states", rc);
    return ForEachParamsRun(host_params, "reset", [&](int64_t first, int64_t count, const CraftaxParams *p) {
        int rc = craftax_cuda_reset_with_keys_ex(s + first * state_size, k + 2 * first, count, p,
                                                 o + first * obs_size, nullptr, scratch);
        if (rc == 0) rc = craftax_cuda_complete_floors(s + first * state_size, count, p, scratch);
        return rc;
    });
}

ffi::Error StepImpl(cudaStream_t stream, ffi::Buffer<ffi::U8> states_in,
                    ffi::Buffer<ffi::S32> actions, ffi::Buffer<ffi::U32> keys, ffi::Buffer<ffi::U32> params,
                    ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                    ffi::ResultBuffer<ffi::F32> rewards, ffi::ResultBuffer<ffi::PRED> dones) {
    int64_t n;
    ffi::Error error = Prepare(stream, states->element_count(), keys.element_count(), params.element_count(), &n);
    if (error.failure()) return error;
    if (actions.element_count() != n)
        return ffi::Error(ffi::ErrorCode::kInvalidArgument, "pycraftax (CUDA): one action per env expected");
    if (states_in.untyped_data() != states->untyped_data())
        return ffi::Error(ffi::ErrorCode::kInternal, "pycraftax (CUDA): states operand not aliased to the result");
    std::vector<CraftaxParams> host_params;
    error = HostParams(params.typed_data(), n, &host_params);
    if (error.failure()) return error;
    std::lock_guard<std::mutex> hold(g_scratch_lock);
    void *scratch = Scratch(n);
    if (!scratch) return ffi::Error(ffi::ErrorCode::kResourceExhausted, "pycraftax (CUDA): no scratch memory");
    uint8_t *s = states->typed_data();
    const int32_t *a = actions.typed_data();
    const uint32_t *k = keys.typed_data();
    float *o = obs->typed_data(), *r = rewards->typed_data();
    uint8_t *d = reinterpret_cast<uint8_t *>(dones->typed_data());
    const size_t state_size = craftax_cuda_state_size();
    const int obs_size = CRAFTAX_OBS_SIZE;
    return ForEachParamsRun(host_params, "step", [&](int64_t first, int64_t count, const CraftaxParams *p) {
        return craftax_cuda_step_with_keys_ex(s + first * state_size, a + first, k + 2 * first, count, p,
                                              o + first * obs_size, nullptr, r + first, d + first, scratch);
    });
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxResetCuda, ResetImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxStepCuda, StepImpl,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>());

// The layout the Python side packs states and params in, checked when it loads the library.
extern "C" int pycraftax_xla_cuda_abi(int64_t *state_size, int64_t *params_words, int64_t *obs_size) {
    *state_size = static_cast<int64_t>(craftax_cuda_state_size());
    *params_words = kParamsWords;
    *obs_size = CRAFTAX_OBS_SIZE;
    return craftax_cuda_api_version();
}

// craftax_xla_ffi.cu: XLA FFI handlers (CUDA) over the CUDA library (cuda/craftax_cuda.h), the
// GPU twins of reference_c/xla/craftax_xla_ffi.cc, registered by pycraftax/jax/_ffi.py for
// platform CUDA under the same targets when _craftax_xla_cuda.so is installed. Operands and
// their checks are the CPU's (reference_c/xla/ffi_operands.h).
//
// Everything is enqueued on XLA's stream with the library's *_stream calls: no host wait and no
// host copy when the params come as the attribute (params concrete at trace time, the common
// case). Params that come as an operand (traced) are copied to the host first, waiting for
// XLA's stream once per call, because the kernels take CraftaxParams by value at launch. The
// first call on a device loads the library there (craftax_cuda_init) and the first step
// allocates the invalid-action record (pinned memory): one-off calls that may synchronise.
//
// Each stream has its own workspace (world-generation scratch, the checked actions, the
// auto-reset done list), grown with stream-ordered allocations, so concurrent calls on two
// streams never share memory and a call on one stream never waits for another.
//
// Actions: a kernel copies them into the workspace, NOOP (0) where outside [0, 43), and
// stores such an (env, action) in host-mapped memory. The handlers cannot return that as the
// call's error without waiting for the GPU; the next handler call whose host part finds the
// record returns it as its error, and pycraftax_xla_cuda_take_invalid_action (pycraftax.jax.
// raise_if_invalid_actions) waits for the GPU and reports it.
//
// Resets and auto-resets complete all nine floors, so that states equal the C reference's
// byte for byte (to_upstream_state reads every level).

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <cuda_runtime.h>

#include "ffi_operands.h"
#include "xla/ffi/api/ffi.h"

extern "C" {
#include "craftax_cuda.h"
#include "craftax/constants.h"
}

namespace ffi = xla::ffi;
using pycraftax_ffi::HostParams;

namespace {

constexpr const char *kBackend = " (CUDA)";
constexpr int kMaxDevices = 64;

ffi::Error LibraryFailed(const char *call, int rc) {
    const char *detail = craftax_cuda_last_error();
    std::string message = std::string(call) + " failed (code " + std::to_string(rc) + ")";
    if (rc == CRAFTAX_ERR_ARGUMENT) message += ": invalid params (day_length must be > 0)";
    if (detail && *detail) message += std::string(": ") + detail;
    return pycraftax_ffi::InvalidArgument(kBackend, message);
}

ffi::Error CudaFailed(const char *what, cudaError_t err) {
    return ffi::Error(ffi::ErrorCode::kInternal,
                      std::string("pycraftax (CUDA): ") + what + ": " + cudaGetErrorString(err));
}

// ---- the invalid-action record ---------------------------------------------------------------
// One 64-bit word of host-mapped memory: 0, or (env + 1) << 32 | action. Written by the check
// kernel with one store (whichever bad env stores last is recorded), read and cleared by the host.
// g_host_lock guards it and the devices the library was loaded on.
std::mutex g_host_lock;
unsigned long long *g_record = nullptr;
bool g_device_used[kMaxDevices] = {};

ffi::Error Record(unsigned long long **record) {
    std::lock_guard<std::mutex> hold(g_host_lock);
    if (!g_record) {
        void *host = nullptr;
        const cudaError_t err = cudaHostAlloc(&host, sizeof(unsigned long long), cudaHostAllocMapped |
                                                                                    cudaHostAllocPortable);
        if (err != cudaSuccess) return CudaFailed("cudaHostAlloc(invalid-action record)", err);
        g_record = static_cast<unsigned long long *>(host);
        *static_cast<volatile unsigned long long *>(g_record) = 0;
    }
    *record = g_record;
    return ffi::Error::Success();
}

// The recorded (env, action), cleared; false when none is recorded.
bool TakeRecord(int64_t *env, int64_t *action) {
    std::lock_guard<std::mutex> hold(g_host_lock);
    if (!g_record) return false;
    volatile unsigned long long *word = g_record;
    const unsigned long long value = *word;
    if (value == 0) return false;
    *word = 0;
    *env = static_cast<int64_t>(value >> 32) - 1;
    *action = static_cast<int32_t>(static_cast<uint32_t>(value & 0xffffffffu));
    return true;
}

// A record left by an earlier call, as this call's error.
ffi::Error EarlierInvalidAction() {
    int64_t env, action;
    if (!TakeRecord(&env, &action)) return ffi::Error::Success();
    return pycraftax_ffi::InvalidArgument(kBackend, pycraftax_ffi::ActionMessage(action, env) +
                                                        " (in an earlier GPU step; that env took NOOP instead)");
}

__global__ void CheckActionsKernel(const int32_t *actions, int32_t *checked, int64_t num_envs,
                                   unsigned long long *record) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= num_envs) return;
    const int32_t action = actions[i];
    const bool valid = action >= 0 && action < CRAFTAX_NUM_ACTIONS;
    checked[i] = valid ? action : 0;
    if (!valid) {
        *reinterpret_cast<volatile unsigned long long *>(record) =
            (static_cast<unsigned long long>(i + 1) << 32) | static_cast<uint32_t>(action);
        __threadfence_system();
    }
}

// ---- per-stream workspaces -------------------------------------------------------------------
struct Workspace {
    std::mutex lock;  // held while a call enqueues its work on the stream
    void *scratch = nullptr;
    size_t scratch_bytes = 0;
    int32_t *actions = nullptr;  // [envs] checked actions, then [envs + 1] the done list
    int64_t envs = 0;
};

std::mutex g_workspaces_lock;
std::map<cudaStream_t, std::unique_ptr<Workspace>> g_workspaces;

Workspace *WorkspaceOf(cudaStream_t stream) {
    std::lock_guard<std::mutex> hold(g_workspaces_lock);
    std::unique_ptr<Workspace> &ws = g_workspaces[stream];
    if (!ws) ws.reset(new Workspace());
    return ws.get();
}

// Grows `ws` (its lock held) for num_envs envs; the old buffers are freed in stream order.
ffi::Error Reserve(Workspace *ws, cudaStream_t stream, int64_t num_envs) {
    const size_t scratch_bytes =
        craftax_cuda_scratch_size() * static_cast<size_t>(craftax_cuda_scratch_entries(num_envs > 0 ? num_envs : 1));
    if (scratch_bytes > ws->scratch_bytes) {
        if (ws->scratch) cudaFreeAsync(ws->scratch, stream);
        ws->scratch = nullptr;
        ws->scratch_bytes = 0;
        const cudaError_t err = cudaMallocAsync(&ws->scratch, scratch_bytes, stream);
        if (err != cudaSuccess) return CudaFailed("cudaMallocAsync(world-generation scratch)", err);
        ws->scratch_bytes = scratch_bytes;
    }
    if (num_envs > ws->envs) {
        if (ws->actions) cudaFreeAsync(ws->actions, stream);
        ws->actions = nullptr;
        ws->envs = 0;
        const cudaError_t err = cudaMallocAsync(reinterpret_cast<void **>(&ws->actions),
                                                sizeof(int32_t) * (2 * num_envs + 1), stream);
        if (err != cudaSuccess) return CudaFailed("cudaMallocAsync(actions and done list)", err);
        ws->envs = num_envs;
    }
    return ffi::Error::Success();
}

// ---- the handlers ------------------------------------------------------------------------------
// The library loaded on the calling thread's device (XLA's for this call), once per device.
ffi::Error InitDevice() {
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return CudaFailed("cudaGetDevice", err);
    if (device < 0 || device >= kMaxDevices) return CudaFailed("device ordinal", cudaErrorInvalidDevice);
    std::lock_guard<std::mutex> hold(g_host_lock);
    if (g_device_used[device]) return ffi::Error::Success();
    const int rc = craftax_cuda_init(device);
    if (rc != 0) return LibraryFailed("craftax_cuda_init", rc);
    g_device_used[device] = true;
    return ffi::Error::Success();
}

// The params on the host: the attribute as it is, the operand copied (a wait for the stream).
ffi::Error GetParams(cudaStream_t stream, const uint32_t *operand_words, int64_t num_envs,
                     ffi::Span<const uint32_t> attribute, bool from_attribute, HostParams *params) {
    if (from_attribute) return pycraftax_ffi::ParamsFromAttribute(kBackend, attribute, params);
    std::vector<uint32_t> words(static_cast<size_t>(num_envs * pycraftax_ffi::kParamsWords));
    if (!words.empty()) {
        cudaError_t err = cudaMemcpyAsync(words.data(), operand_words, sizeof(uint32_t) * words.size(),
                                          cudaMemcpyDeviceToHost, stream);
        if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
        if (err != cudaSuccess) return CudaFailed("copying the traced params to the host", err);
    }
    pycraftax_ffi::ParamsFromWords(words.data(), num_envs, params);
    return ffi::Error::Success();
}

// What every call does first: the device, an earlier invalid action, the env count, the params.
ffi::Error Begin(cudaStream_t stream, int64_t states_bytes, int64_t keys_words, const uint32_t *operand_words,
                 int64_t params_words, ffi::Span<const uint32_t> attribute, int64_t *num_envs, HostParams *params) {
    ffi::Error error = InitDevice();
    if (error.failure()) return error;
    error = EarlierInvalidAction();
    if (error.failure()) return error;
    error = pycraftax_ffi::CountEnvs(kBackend, static_cast<int64_t>(craftax_cuda_state_size()), states_bytes,
                                     keys_words, params_words, num_envs);
    if (error.failure()) return error;
    return GetParams(stream, operand_words, *num_envs, attribute, params_words < 0, params);
}

ffi::Error Reset(cudaStream_t stream, ffi::Buffer<ffi::U32> keys, const uint32_t *operand_words,
                 int64_t params_words, ffi::Span<const uint32_t> attribute, ffi::ResultBuffer<ffi::U8> states,
                 ffi::ResultBuffer<ffi::F32> obs) {
    int64_t n;
    HostParams params;
    ffi::Error error = Begin(stream, states->element_count(), keys.element_count(), operand_words, params_words,
                             attribute, &n, &params);
    if (error.failure()) return error;
    Workspace *ws = WorkspaceOf(stream);
    std::lock_guard<std::mutex> hold(ws->lock);
    error = Reserve(ws, stream, n);
    if (error.failure()) return error;
    uint8_t *s = states->typed_data();
    float *o = obs->typed_data();
    const uint32_t *k = keys.typed_data();
    const size_t state_size = craftax_cuda_state_size();
    // XLA's result buffer is uninitialised and a reset leaves the struct's padding unwritten:
    // zero it, so that equal states are equal bytes
    const cudaError_t err = cudaMemsetAsync(s, 0, states->size_bytes(), stream);
    if (err != cudaSuccess) return CudaFailed("clearing the states", err);
    const uintptr_t st = reinterpret_cast<uintptr_t>(stream);
    return pycraftax_ffi::ForEachParamsRun(
        params, n,
        [&](int64_t first, int64_t count, const CraftaxParams *p) {
            int rc = craftax_cuda_reset_stream(s + first * state_size, k + 2 * first, count, p,
                                               o + first * CRAFTAX_OBS_SIZE, ws->scratch, st);
            if (rc == 0) rc = craftax_cuda_complete_floors_stream(s + first * state_size, count, p, ws->scratch, st);
            return rc;
        },
        [](int rc) { return LibraryFailed("reset", rc); });
}

// step_env, or with final_achievements the auto-reset step (the library's native one: it
// splits each key into (step, reset) as the C reference does and resets only the ended envs).
ffi::Error Step(cudaStream_t stream, ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions,
                ffi::Buffer<ffi::U32> keys, const uint32_t *operand_words, int64_t params_words,
                ffi::Span<const uint32_t> attribute, ffi::ResultBuffer<ffi::U8> states,
                ffi::ResultBuffer<ffi::F32> obs, ffi::ResultBuffer<ffi::F32> rewards,
                ffi::ResultBuffer<ffi::PRED> dones, uint8_t *final_achievements) {
    int64_t n;
    HostParams params;
    ffi::Error error = Begin(stream, states->element_count(), keys.element_count(), operand_words, params_words,
                             attribute, &n, &params);
    if (error.failure()) return error;
    error = pycraftax_ffi::CountActions(kBackend, actions.element_count(), n);
    if (error.failure()) return error;
    unsigned long long *record;
    error = Record(&record);
    if (error.failure()) return error;
    Workspace *ws = WorkspaceOf(stream);
    std::lock_guard<std::mutex> hold(ws->lock);
    error = Reserve(ws, stream, n);
    if (error.failure()) return error;
    uint8_t *s = states->typed_data();
    if (states_in.untyped_data() != s) {
        const cudaError_t err = cudaMemcpyAsync(s, states_in.untyped_data(), states->size_bytes(),
                                                cudaMemcpyDeviceToDevice, stream);
        if (err != cudaSuccess) return CudaFailed("copying the states", err);
    }
    if (n == 0) return ffi::Error::Success();
    int32_t *a = ws->actions, *done_list = ws->actions + n;
    constexpr int kThreads = 256;
    CheckActionsKernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
        actions.typed_data(), a, n, record);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return CudaFailed("the action check", err);
    const uint32_t *k = keys.typed_data();
    float *o = obs->typed_data(), *r = rewards->typed_data();
    uint8_t *d = reinterpret_cast<uint8_t *>(dones->typed_data());
    const size_t state_size = craftax_cuda_state_size();
    const uintptr_t st = reinterpret_cast<uintptr_t>(stream);
    return pycraftax_ffi::ForEachParamsRun(
        params, n,
        [&](int64_t first, int64_t count, const CraftaxParams *p) {
            void *sf = s + first * state_size;
            if (!final_achievements)
                return craftax_cuda_step_stream(sf, a + first, k + 2 * first, count, p, o + first * CRAFTAX_OBS_SIZE,
                                                r + first, d + first, ws->scratch, st);
            int rc = craftax_cuda_step_autoreset_stream(
                sf, a + first, k + 2 * first, count, p, o + first * CRAFTAX_OBS_SIZE, r + first, d + first, nullptr,
                nullptr, final_achievements + first * CRAFTAX_NUM_ACHIEVEMENTS, ws->scratch, done_list, st);
            // the ended envs' new worlds have levels 1-8 pending: generated now, as the C reference has them
            if (rc == 0) rc = craftax_cuda_complete_floors_stream(sf, count, p, ws->scratch, st);
            return rc;
        },
        [](int rc) { return LibraryFailed("step", rc); });
}

// The six bound forms, as on the CPU: params as the attribute, or as the operand after the others.
ffi::Error ResetAttr(cudaStream_t stream, ffi::Buffer<ffi::U32> keys, ffi::ResultBuffer<ffi::U8> states,
                     ffi::ResultBuffer<ffi::F32> obs, ffi::Span<const uint32_t> params) {
    return Reset(stream, keys, nullptr, -1, params, states, obs);
}

ffi::Error ResetOperand(cudaStream_t stream, ffi::Buffer<ffi::U32> keys, ffi::Buffer<ffi::U32> params,
                        ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs) {
    return Reset(stream, keys, params.typed_data(), params.element_count(), {}, states, obs);
}

ffi::Error StepAttr(cudaStream_t stream, ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions,
                    ffi::Buffer<ffi::U32> keys, ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                    ffi::ResultBuffer<ffi::F32> rewards, ffi::ResultBuffer<ffi::PRED> dones,
                    ffi::Span<const uint32_t> params) {
    return Step(stream, states_in, actions, keys, nullptr, -1, params, states, obs, rewards, dones, nullptr);
}

ffi::Error StepOperand(cudaStream_t stream, ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions,
                       ffi::Buffer<ffi::U32> keys, ffi::Buffer<ffi::U32> params, ffi::ResultBuffer<ffi::U8> states,
                       ffi::ResultBuffer<ffi::F32> obs, ffi::ResultBuffer<ffi::F32> rewards,
                       ffi::ResultBuffer<ffi::PRED> dones) {
    return Step(stream, states_in, actions, keys, params.typed_data(), params.element_count(), {}, states, obs,
                rewards, dones, nullptr);
}

ffi::Error StepAutoResetAttr(cudaStream_t stream, ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions,
                             ffi::Buffer<ffi::U32> keys, ffi::ResultBuffer<ffi::U8> states,
                             ffi::ResultBuffer<ffi::F32> obs, ffi::ResultBuffer<ffi::F32> rewards,
                             ffi::ResultBuffer<ffi::PRED> dones, ffi::ResultBuffer<ffi::U8> final_achievements,
                             ffi::Span<const uint32_t> params) {
    return Step(stream, states_in, actions, keys, nullptr, -1, params, states, obs, rewards, dones,
                final_achievements->typed_data());
}

ffi::Error StepAutoResetOperand(cudaStream_t stream, ffi::Buffer<ffi::U8> states_in, ffi::Buffer<ffi::S32> actions,
                                ffi::Buffer<ffi::U32> keys, ffi::Buffer<ffi::U32> params,
                                ffi::ResultBuffer<ffi::U8> states, ffi::ResultBuffer<ffi::F32> obs,
                                ffi::ResultBuffer<ffi::F32> rewards, ffi::ResultBuffer<ffi::PRED> dones,
                                ffi::ResultBuffer<ffi::U8> final_achievements) {
    return Step(stream, states_in, actions, keys, params.typed_data(), params.element_count(), {}, states, obs,
                rewards, dones, final_achievements->typed_data());
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxResetCuda, ResetAttr,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<ffi::Span<const uint32_t>>("params"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxResetParamsOperandCuda, ResetOperand,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxStepCuda, StepAttr,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>()
                                  .Attr<ffi::Span<const uint32_t>>("params"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxStepParamsOperandCuda, StepOperand,
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

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxStepAutoResetCuda, StepAutoResetAttr,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::Buffer<ffi::U8>>()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Arg<ffi::Buffer<ffi::U32>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::PRED>>()
                                  .Ret<ffi::Buffer<ffi::U8>>()
                                  .Attr<ffi::Span<const uint32_t>>("params"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(PycraftaxStepAutoResetParamsOperandCuda, StepAutoResetOperand,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
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
extern "C" int pycraftax_xla_cuda_abi(int64_t *state_size, int64_t *params_words, int64_t *obs_size) {
    *state_size = static_cast<int64_t>(craftax_cuda_state_size());
    *params_words = pycraftax_ffi::kParamsWords;
    *obs_size = CRAFTAX_OBS_SIZE;
    return craftax_cuda_api_version();
}

// pycraftax.jax.raise_if_invalid_actions: waits for every device the handlers ran on (none
// where they never ran, as on a machine without a GPU), then takes the invalid-action record.
// 1 with *env, *action set; 0 when none; < 0 when a wait failed.
extern "C" int pycraftax_xla_cuda_take_invalid_action(int64_t *env, int64_t *action) {
    bool used[kMaxDevices];
    bool any = false;
    {
        std::lock_guard<std::mutex> hold(g_host_lock);
        for (int device = 0; device < kMaxDevices; device++) any |= used[device] = g_device_used[device];
    }
    if (any) {
        int current = 0;
        if (cudaGetDevice(&current) != cudaSuccess) return CRAFTAX_ERR_CUDA;
        for (int device = 0; device < kMaxDevices; device++) {
            if (!used[device]) continue;
            if (cudaSetDevice(device) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
                cudaSetDevice(current);
                return CRAFTAX_ERR_CUDA;
            }
        }
        if (cudaSetDevice(current) != cudaSuccess) return CRAFTAX_ERR_CUDA;
    }
    return TakeRecord(env, action) ? 1 : 0;
}

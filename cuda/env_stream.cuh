/* cuda/env_stream.cuh: the env calls of pycraftax.jax's CUDA FFI handlers (cuda/xla/
 * craftax_xla_ffi.cu): reset, step without reset and floor completion enqueued on the caller's
 * stream (XLA's), without a wait, an action check or the library's shared buffers, so that
 * calls on different streams never share memory. Included at the end of craftax_cuda.cu (it
 * uses the kernels and launchers of the parts included at its top); declared at the end of
 * craftax_cuda.h. */
#ifndef CRAFTAX_CUDA_ENV_STREAM_CUH
#define CRAFTAX_CUDA_ENV_STREAM_CUH

extern "C" {

int craftax_cuda_reset_stream(void *states, const uint32_t *keys, int64_t num_envs, const CraftaxParams *params,
                              float *obs, void *scratch, uintptr_t stream) {
    if (!states || !keys || !params || !scratch) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    const KeyedWorlds src = {(CraftaxState *)states, keys, num_envs, obs, NULL};
    return launch_worlds(src, num_envs, *params, (CraftaxCudaScratch *)scratch, craftax_cuda_scratch_entries(num_envs),
                         (cudaStream_t)stream, "reset_stream");
}

int craftax_cuda_step_stream(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                             const CraftaxParams *params, float *obs, float *rewards, uint8_t *dones, void *scratch,
                             uintptr_t stream) {
    if (!states || !actions || !keys || !params || !scratch) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    const cudaStream_t s = (cudaStream_t)stream;
    const int rc = launch_pending_floors((CraftaxState *)states, actions, num_envs, *params,
                                         (CraftaxCudaScratch *)scratch, craftax_cuda_scratch_entries(num_envs), s,
                                         "step_stream (floors)");
    if (rc) return rc;
    step_kernel<<<grid_for(num_envs), THREADS, 0, s>>>((CraftaxState *)states, actions, keys, num_envs, *params, obs,
                                                       rewards, dones, (CraftaxCudaScratch *)scratch);
    CUDA_TRY(cudaGetLastError(), "step_stream");
    if (obs)
        observe_kernel<<<grid_for_warps(num_envs), THREADS, 0, s>>>((const CraftaxState *)states, num_envs, obs, NULL,
                                                                    NULL);
    CUDA_TRY(cudaGetLastError(), "step_stream (obs)");
    return 0;
}

int craftax_cuda_complete_floors_stream(void *states, int64_t num_envs, const CraftaxParams *params, void *scratch,
                                        uintptr_t stream) {
    if (!states || !params || !scratch) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (num_envs == 0) return 0;
    return launch_pending_floors((CraftaxState *)states, NULL, num_envs, *params, (CraftaxCudaScratch *)scratch,
                                 craftax_cuda_scratch_entries(num_envs), (cudaStream_t)stream,
                                 "complete_floors_stream");
}

}  // extern "C"

#endif

/* craftax_cuda.h: the public C API of the CUDA env library (cuda/craftax_cuda.cu ->
 * cuda/build/libcraftax_cuda.so).
 *
 * The calls follow the C reference's API (reference_c/include/craftax_api.h,
 * craftax_api_step.h), prefixed craftax_cuda_, with the same argument order and meaning,
 * except that every array argument is a DEVICE pointer; `params` (and the `key` of
 * craftax_cuda_env_step and craftax_cuda_env_step_optimistic) stay host pointers. Every call
 * runs on the legacy default stream and synchronizes before it returns, so outputs are ready
 * when it returns, except the *_stream calls, which only enqueue on the caller's stream.
 * Functions return 0 or a negative CRAFTAX_ERR_* code; craftax_cuda_last_error() gives the
 * message of the last CUDA failure.
 *
 * pycraftax/cuda_env.py reads this file as a cffi cdef (ABI mode, ffi.dlopen): below the
 * includes it holds plain declarations and integer #defines only.
 */
#ifndef CRAFTAX_CUDA_H
#define CRAFTAX_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "craftax/params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this API and of craftax_classic_cuda.h, which the same library exports;
 * craftax_cuda_api_version() returns it, so a caller can tell a library built from another
 * version of these headers. 13: the pixel envs (craftax_cuda_pixels_*,
 * craftax_classic_cuda_pixels_*). */
#define CRAFTAX_CUDA_API_VERSION 13

#define CRAFTAX_ERR_NULL -1
#define CRAFTAX_ERR_NUM_ENVS -2
#define CRAFTAX_ERR_NO_MEMORY -3
#define CRAFTAX_ERR_ARGUMENT -4
#define CRAFTAX_ERR_CUDA -5
#define CRAFTAX_ERR_NO_DEVICE -6

int craftax_cuda_api_version(void);
/* The rules fingerprint of this library (pycraftax/_rules_hash.py: a hash of the rules headers it
 * compiled, both games'), 12 hex digits; Python refuses a library whose fingerprint is not the C
 * extension's. */
const char *craftax_cuda_rules_fingerprint(void);
size_t craftax_cuda_state_size(void);
size_t craftax_cuda_scratch_size(void);
/* World-generation scratch entries (craftax_cuda_scratch_size() bytes each) that the calls
 * taking `scratch` accept for num_envs envs: min(num_envs, the warps the GPU runs of the floor
 * kernel at once), at most 4,224 on an H200 (45 KB each: a floor's noise blends and cell
 * lists, 186 MiB) however many envs; craftax_cuda_generate_worlds_stream takes an entry per
 * world. */
int64_t craftax_cuda_scratch_entries(int64_t num_envs);
size_t craftax_cuda_params_size(void);
int craftax_cuda_obs_size(void);
const char *craftax_cuda_last_error(void);

/* Selects the device (default 0), checks it is usable and loads the kernels, so that their
 * local memory is reserved before free memory is measured. CRAFTAX_ERR_NO_DEVICE when no
 * GPU (or no driver) is visible. */
int craftax_cuda_init(int device);
int craftax_cuda_device_name(char *out, int out_size);
int craftax_cuda_mem_info(size_t *free_bytes, size_t *total_bytes);
int craftax_cuda_synchronize(void);
/* Waits for a CUDA stream given by its handle (a __cuda_array_interface__ "stream"). */
int craftax_cuda_stream_synchronize(uintptr_t stream);

/* Allocation helpers. craftax_cuda_malloc_many allocates `count` buffers of the given
 * sizes all or nothing: on any failure it frees what it took, sets every pointer to NULL
 * and returns CRAFTAX_ERR_NO_MEMORY (out of memory) or CRAFTAX_ERR_CUDA. */
int craftax_cuda_malloc(void **ptr, size_t bytes);
int craftax_cuda_malloc_many(void **ptrs, const size_t *bytes, int count);
int craftax_cuda_free(void *ptr);
int craftax_cuda_memcpy_htod(void *dst, const void *src, size_t bytes);
int craftax_cuda_memcpy_dtoh(void *dst, const void *src, size_t bytes);
int craftax_cuda_memset(void *dst, int value, size_t bytes);
/* `height` rows of `width` bytes, row pitches in bytes (e.g. one leaf of every state). */
int craftax_cuda_memcpy2d_dtoh(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width,
                               size_t height);

/* Frees the buffers the library keeps between calls (the auto-reset done list and the action
 * check's flag); the next call allocates them again. */
void craftax_cuda_release_scratch(void);

/* As craftax_reset_with_keys / craftax_observe / craftax_step_with_keys of the C API, on
 * device arrays, with caller-owned scratch (craftax_cuda_scratch_entries(num_envs) entries of
 * craftax_cuda_scratch_size() bytes: world-generation space) and the obs as float32
 * [N, 8268] (`obs`) and/or compact uint8 records [N, 1008] (`obs_compact`: obs.h, 51 float32
 * scalars then 8 bytes per view cell, expanding exactly); either may be NULL (observe: not
 * both). craftax_cuda_observe is craftax_cuda_observe_ex with the float obs only.
 * craftax_cuda_expand_obs writes the float obs of N compact records (bitwise the rendered
 * obs; obs 16-byte aligned). */
int craftax_cuda_reset_with_keys_ex(void *states, const uint32_t *keys, int64_t num_envs, const CraftaxParams *params,
                                    float *obs, uint8_t *obs_compact, void *scratch);
int craftax_cuda_observe_ex(const void *states, int64_t num_envs, float *obs, uint8_t *obs_compact);
int craftax_cuda_observe(const void *states, int64_t num_envs, float *obs);
int craftax_cuda_step_with_keys_ex(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                   const CraftaxParams *params, float *obs, uint8_t *obs_compact, float *rewards,
                                   uint8_t *dones, void *scratch);
int craftax_cuda_step_with_keys_scratch(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                        const CraftaxParams *params, float *obs, float *rewards, uint8_t *dones,
                                        void *scratch);
int craftax_cuda_expand_obs(const uint8_t *obs_compact, int64_t num_envs, float *obs);

/* The info of a step without reset, for either game (its state size and the byte offset of its
 * uint8 achievements leaf): achievements_scaled float [N, num_achievements] = the states'
 * achievements * dones * 100 (log_achievements_to_info) and discount float [N] = 1 - dones. */
int craftax_cuda_done_info(const void *states, int64_t state_size, int64_t achievements_offset,
                           int32_t num_achievements, const uint8_t *dones, int64_t num_envs,
                           float *achievements_scaled, float *discount);

/* Resets generate level 0 of a world and leave levels 1-8 pending (CraftaxState's
 * floors_pending; PYCRAFTAX_CUDA_EAGER_FLOORS=1 generates all nine); each step generates the
 * floors its descents reach first, so the calls above see the full game. Before reading states
 * back (get_state, a host copy of map, item_map, mob_map, light_map or the ladders), generate
 * every pending floor with this call: the states then equal eagerly reset ones byte for byte. */
int craftax_cuda_complete_floors(void *states, int64_t num_envs, const CraftaxParams *params, void *scratch);

/* The auto-reset step enqueued on `stream` (a cudaStream_t) without synchronising, action
 * check or chunking, for callers that launch it inside their own stream work or CUDA graph
 * (pycraftax.jax's GPU handlers): actions must be valid; done_list is caller-owned device
 * memory of num_envs + 1 int32 (the list and its counter); dones is required (it also
 * carries the done flags between the step, obs and reset kernels). Same results as
 * craftax_cuda_env_step's step. */
int craftax_cuda_step_autoreset_stream(void *states, const int32_t *actions, const uint32_t *keys,
                                       int64_t num_envs, const CraftaxParams *params, float *obs, float *rewards,
                                       uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                       uint8_t *final_achievements, void *scratch, int32_t *done_list,
                                       uintptr_t stream);

/* The auto-reset step runs a step kernel over all envs (collecting the done ones in a list)
 * and then a reset kernel over that list only, densely packed. With chunks > 1 (1..16,
 * default 1) envs are stepped in that many consecutive chunks of at least min_chunk_envs
 * envs (default 16384), each chunk's resets overlapping the next chunk's step (slower on an
 * H200; kept as a knob for other GPUs). Results do not depend on it. */
int craftax_cuda_set_autoreset_chunks(int chunks, int64_t min_chunk_envs);

/* Device-time split of the synchronous auto-reset step (chunks = 1), for benchmarks: with
 * profiling on, each craftax_cuda_env_step call times its kernels with
 * CUDA events, and craftax_cuda_last_profile gives the last call's ms[4]: the step kernel
 * (game logic of every env), the obs kernel (not-done envs), the reset kernel (world
 * generation + obs of the done envs; it overlaps the obs kernel), and the whole (step start
 * to the later of obs and reset). */
int craftax_cuda_set_profiling(int on);
int craftax_cuda_last_profile(float *ms);

/* CraftaxEnv.step in one call, one wait: keys = jax.random.split(key, N) (key: the host's
 * two uint32 words; keys: device [N, 2], written), the auto-reset step (obs, rewards, dones,
 * terminated, truncated and final_achievements as CraftaxSymbolicEnv.step gives them), then
 * the episode bookkeeping, enqueued together. Bookkeeping, for every env i:
 *   ret_acc[i] += rewards[i]; len_acc[i] += 1;
 *   ep_return[i], ep_length[i] = done ? (ret_acc, len_acc) : (0, 0); then zero the
 *   accumulators where done; discount[i] = 1 - done;
 *   achievements_scaled[i, k] = final_achievements[i, k] * done * 100 (float32 [N, 67]).
 * ep_return, ep_length, discount and achievements_scaled may be NULL. Actions outside [0, 43) return
 * CRAFTAX_ERR_ARGUMENT with no state or accumulator changed (the outputs are undefined).
 * This call and craftax_cuda_env_step_optimistic update final_achievements and
 * achievements_scaled in place: only the rows of envs that end in this call or ended in the
 * previous one (`dones` as the previous call left it) are written. Pass the same dones and
 * row buffers at every call, the rows zeroed before the first call and after anything else
 * writes `dones`. final_obs (device float [N, 8268], may be NULL: then nothing more is
 * launched): for every env that ends in this call, the obs of the state it ended in
 * (step_env's obs before the reset replaces it; float also when obs_compact is the obs
 * asked for); other rows are left as they were. */
int craftax_cuda_env_step(void *states, const int32_t *actions, const uint32_t *key, uint32_t *keys,
                          int64_t num_envs, const CraftaxParams *params, float *obs, uint8_t *obs_compact,
                          float *final_obs, float *rewards, uint8_t *dones, uint8_t *terminated,
                          uint8_t *truncated, uint8_t *final_achievements, float *ret_acc, int32_t *len_acc,
                          float *ep_return, int32_t *ep_length, float *discount, float *achievements_scaled,
                          void *scratch);

/* craftax_cuda_env_step enqueued on `stream` (a cudaStream_t) without waiting, for a caller that
 * keeps the GPU busy by launching its next work (a policy's forward) before this step ends: the
 * same launches and results, `key` still a HOST pointer (read before the call returns). `work`
 * is device memory of craftax_cuda_step_async_work_size(num_envs) bytes, owned by one env; its
 * first int32 is the action check's flag, zeroed by the caller before the first call: any action
 * outside [0, 43) sets it and it stays set, and while it is set these calls change no state or
 * output. Read it after the stream's work is done. */
size_t craftax_cuda_step_async_work_size(int64_t num_envs);
int craftax_cuda_env_step_async(void *states, const int32_t *actions, const uint32_t *key, uint32_t *keys,
                                int64_t num_envs, const CraftaxParams *params, float *obs, uint8_t *obs_compact,
                                float *final_obs, float *rewards, uint8_t *dones, uint8_t *terminated,
                                uint8_t *truncated, uint8_t *final_achievements, float *ret_acc, int32_t *len_acc,
                                float *ep_return, int32_t *ep_length, float *discount, float *achievements_scaled,
                                void *scratch, void *work, uintptr_t stream);

/* Optimistic resets (reference_c/include/craftax/step.h: craftax_optimistic_keys; the C API's
 * craftax_step_optimistic): one step of Craftax_Baselines' OptimisticResetVecEnvWrapper.
 * `work` is device memory of craftax_cuda_optimistic_work_size(num_envs) bytes, `scratch`
 * craftax_cuda_scratch_entries(num_envs) world-generation scratch entries.
 * craftax_cuda_env_step_optimistic: `key` (uint32 [2]) is a HOST pointer, synchronous (one
 * wait), actions checked; the taken worlds are generated after the step (only those).
 * craftax_cuda_step_optimistic_stream: `key` is a DEVICE pointer,
 * enqueued on `stream` (graph-capturable), actions must be valid; with `worlds` (the step's
 * num_envs / reset_ratio worlds, from craftax_cuda_generate_worlds_stream) the ended envs
 * copy them instead. craftax_cuda_generate_worlds_stream: worlds[s * num_worlds + j] = the
 * j-th fresh world of the wrapper step with key keys[s] (device uint32 [num_keys, 2]), for
 * generating a rollout's worlds ahead of it; scratch: num_keys * num_worlds entries; like a
 * reset, it generates level 0 and leaves levels 1-8 pending (craftax_cuda_complete_floors).
 * The obs of an env that took a world is that world's reset obs. */
size_t craftax_cuda_optimistic_work_size(int64_t num_envs);
/* CraftaxEnv.step with optimistic resets in one call, one wait: the optimistic step, then the
 * episode bookkeeping (as craftax_cuda_env_step, final_obs too), enqueued together. Actions
 * outside [0, 43) return CRAFTAX_ERR_ARGUMENT with no state or accumulator changed (the outputs
 * are undefined). */
int craftax_cuda_env_step_optimistic(void *states, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                                     int32_t reset_ratio, const CraftaxParams *params, float *obs,
                                     uint8_t *obs_compact, float *final_obs, float *rewards, uint8_t *dones,
                                     uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements,
                                     float *ret_acc, int32_t *len_acc, float *ep_return, int32_t *ep_length,
                                     float *discount, float *achievements_scaled, void *scratch, void *work);
int craftax_cuda_step_optimistic_stream(void *states, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                                        int32_t reset_ratio, const CraftaxParams *params, const void *worlds,
                                        float *obs, uint8_t *obs_compact, float *rewards, uint8_t *dones,
                                        uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements,
                                        int32_t *reset_worlds, void *scratch, void *work, uintptr_t stream);
int craftax_cuda_generate_worlds_stream(void *worlds, const uint32_t *keys, int64_t num_keys, int32_t num_worlds,
                                        const CraftaxParams *params, void *scratch, uintptr_t stream);

/* Reset, step without reset and floor completion enqueued on `stream` (a cudaStream_t) without
 * waiting, for pycraftax.jax's FFI handlers (cuda/env_stream.cuh): as craftax_cuda_reset_with_keys_ex
 * (float obs, levels 1-8 left pending), craftax_cuda_step_with_keys_ex (float obs, may be NULL)
 * and craftax_cuda_complete_floors, except that actions are not checked (they must be valid) and
 * nothing is shared between calls but the caller's `scratch`. */
int craftax_cuda_reset_stream(void *states, const uint32_t *keys, int64_t num_envs, const CraftaxParams *params,
                              float *obs, void *scratch, uintptr_t stream);
int craftax_cuda_step_stream(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                             const CraftaxParams *params, float *obs, float *rewards, uint8_t *dones, void *scratch,
                             uintptr_t stream);
int craftax_cuda_complete_floors_stream(void *states, int64_t num_envs, const CraftaxParams *params, void *scratch,
                                        uintptr_t stream);

/* Craftax-Pixels-v1 (cuda/env_pixels.cuh): the calls above with the obs rendered as the C
 * pixel env renders it (reference_c/include/craftax/pixels.h, craftax_api_pixels.h): float32
 * [N, 130, 110, 3], upstream's picture / 255, and reset_env generating the world from its key
 * itself (upstream's pixel env does not split it as the symbolic env does). `atlas` is a DEVICE
 * copy of the texture atlas at the agent's block size (craftax_cuda_pixels_atlas_size() floats,
 * the C API's craftax_pixels_atlas_size(0, 10) atlas, pycraftax.pixels.atlas); it may be NULL only
 * where no obs is asked for. final_obs as in craftax_cuda_env_step, [N, 130, 110, 3]. The
 * auto-reset step runs on the legacy stream only (no chunks, no reset stream); neither step
 * has an async or stream form. */
int craftax_cuda_pixels_obs_size(void);
int64_t craftax_cuda_pixels_atlas_size(void);
int craftax_cuda_pixels_observe(const void *states, int64_t num_envs, float *obs, const float *atlas);
int craftax_cuda_pixels_reset_with_keys(void *states, const uint32_t *keys, int64_t num_envs,
                                        const CraftaxParams *params, float *obs, const float *atlas, void *scratch);
int craftax_cuda_pixels_step_with_keys(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                       const CraftaxParams *params, float *obs, float *rewards, uint8_t *dones,
                                       const float *atlas, void *scratch);
int craftax_cuda_pixels_env_step(void *states, const int32_t *actions, const uint32_t *key, uint32_t *keys,
                                 int64_t num_envs, const CraftaxParams *params, float *obs, float *final_obs,
                                 float *rewards, uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                 uint8_t *final_achievements, float *ret_acc, int32_t *len_acc, float *ep_return,
                                 int32_t *ep_length, float *discount, float *achievements_scaled, const float *atlas,
                                 void *scratch);
/* `work`: craftax_cuda_optimistic_work_size(num_envs) bytes of device memory. */
int craftax_cuda_pixels_env_step_optimistic(void *states, const int32_t *actions, const uint32_t *key,
                                            int64_t num_envs, int32_t reset_ratio, const CraftaxParams *params,
                                            float *obs, float *final_obs, float *rewards, uint8_t *dones,
                                            uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements,
                                            float *ret_acc, int32_t *len_acc, float *ep_return, int32_t *ep_length,
                                            float *discount, float *achievements_scaled, const float *atlas,
                                            void *scratch, void *work);

#ifdef __cplusplus
}
#endif

#endif

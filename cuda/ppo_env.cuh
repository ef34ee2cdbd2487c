/* ppo_env.cuh: the envs the CUDA PPO trainer rolls out in, behind one table (CraftaxPPOEnvOps):
 * the full game (craftax_cuda.h) and Craftax-Classic (craftax_classic_cuda.h), picked by
 * CraftaxPPOConfig.env at create.
 *
 * The trainer's rollout is the same for both; only the env's own calls differ (Classic's take
 * no world-generation scratch and its own params struct), so each entry of the table adapts one
 * call to the trainer's arguments. The rollout makes one indirect call per env step, and the
 * episode log's kernel is the env's instantiation of one template: its achievement count is a
 * compile-time constant, so the full game's kernel is the one it has always been.
 */
#ifndef CRAFTAX_PPO_ENV_CUH
#define CRAFTAX_PPO_ENV_CUH

#include "craftax/constants.h"
#include "craftax_classic/constants.h"
#include "craftax_classic_cuda.h"
#include "ppo_common.cuh"

/* The episode bookkeeping of the env's step (CudaCraftaxEnv.step), logged per (step, env) for
 * the host: the return and length of every episode that ended, and its achievement bits. */
template <int NUM_ACH>
static __device__ __forceinline__ void track_episode(const float *rewards, const uint8_t *dones,
                                                     const uint8_t *final_ach, int N, float *ret_acc,
                                                     int32_t *len_acc, float *ep_return, int32_t *ep_length,
                                                     uint32_t *ep_ach) {
    static_assert(NUM_ACH <= 32 * ACH_WORDS, "the episode log holds 32 * ACH_WORDS achievement bits");
    const int64_t i = gtid();
    if (i >= N) return;
    const int done = dones[i] != 0;
    const float ret = ret_acc[i] + rewards[i];
    const int32_t len = len_acc[i] + 1;
    ep_return[i] = done ? ret : 0.0f;
    ep_length[i] = done ? len : 0;
    ret_acc[i] = done ? 0.0f : ret;
    len_acc[i] = done ? 0 : len;
    uint32_t w[ACH_WORDS] = {0, 0, 0};
    if (done)
        for (int k = 0; k < NUM_ACH; k++)
            if (final_ach[i * NUM_ACH + k]) w[k >> 5] |= 1u << (k & 31);
    for (int k = 0; k < ACH_WORDS; k++) ep_ach[i * ACH_WORDS + k] = w[k];
}

__global__ void track_kernel(const float *rewards, const uint8_t *dones, const uint8_t *final_ach, int N,
                             float *ret_acc, int32_t *len_acc, float *ep_return, int32_t *ep_length, uint32_t *ep_ach) {
    track_episode<CRAFTAX_NUM_ACHIEVEMENTS>(rewards, dones, final_ach, N, ret_acc, len_acc, ep_return, ep_length,
                                            ep_ach);
}

__global__ void track_classic_kernel(const float *rewards, const uint8_t *dones, const uint8_t *final_ach, int N,
                                     float *ret_acc, int32_t *len_acc, float *ep_return, int32_t *ep_length,
                                     uint32_t *ep_ach) {
    track_episode<CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS>(rewards, dones, final_ach, N, ret_acc, len_acc, ep_return,
                                                    ep_length, ep_ach);
}

struct CraftaxPPOEnvOps {
    const char *name;
    int num_actions, num_achievements;
    size_t params_size; /* bytes of the env's params struct */
    int (*obs_size)(void);
    size_t (*state_size)(void);
    /* bytes of one world's generation scratch; 0: the env takes none (env_scratch unused) */
    size_t (*world_scratch_size)(void);
    size_t (*optimistic_work_size)(int64_t num_envs);
    int (*observe)(const void *states, int64_t num_envs, float *obs);
    /* the auto-reset step with the keys in t->env_keys */
    int (*step_autoreset)(CraftaxPPO *t, const int32_t *actions, float *obs, float *rewards, uint8_t *dones);
    /* the optimistic step with the wrapper key in t->scal_sub_key and the step's fresh worlds */
    int (*step_optimistic)(CraftaxPPO *t, const int32_t *actions, float *obs, float *rewards, uint8_t *dones,
                           const void *worlds);
    /* the next rollout's T * W fresh worlds into t->pool_worlds from the keys t->pool_keys */
    int (*generate_worlds)(CraftaxPPO *t);
    /* the episode log of one step (track_episode of the env's achievement count) */
    void (*track)(const float *, const uint8_t *, const uint8_t *, int, float *, int32_t *, float *, int32_t *,
                  uint32_t *);
};

/* ---- the full game ---------------------------------------------------------------------- */
static int craftax_step_autoreset(CraftaxPPO *t, const int32_t *actions, float *obs, float *rewards, uint8_t *dones) {
    return craftax_cuda_step_autoreset_stream(t->env_states, actions, t->env_keys, t->N, &t->env_params.craftax,
                                              obs, rewards, dones, t->terminated, t->truncated,
                                              t->final_ach, t->env_scratch, t->done_list, (uintptr_t)t->stream);
}

static int craftax_step_optimistic(CraftaxPPO *t, const int32_t *actions, float *obs, float *rewards, uint8_t *dones,
                                   const void *worlds) {
    return craftax_cuda_step_optimistic_stream(t->env_states, actions, t->scal_sub_key, t->N, t->c.reset_ratio,
                                               &t->env_params.craftax, worlds, obs, NULL, rewards, dones,
                                               t->terminated, t->truncated, t->final_ach, NULL, t->env_scratch,
                                               t->opt_work, (uintptr_t)t->stream);
}

static int craftax_generate_worlds(CraftaxPPO *t) {
    return craftax_cuda_generate_worlds_stream(t->pool_worlds, t->pool_keys, t->T, t->W, &t->env_params.craftax,
                                               t->pool_scratch, (uintptr_t)t->pool_stream);
}

static const CraftaxPPOEnvOps CRAFTAX_ENV_OPS = {
    "Craftax-Symbolic-v1",
    CRAFTAX_NUM_ACTIONS,
    CRAFTAX_NUM_ACHIEVEMENTS,
    sizeof(CraftaxParams),
    craftax_cuda_obs_size,
    craftax_cuda_state_size,
    craftax_cuda_scratch_size,
    craftax_cuda_optimistic_work_size,
    craftax_cuda_observe,
    craftax_step_autoreset,
    craftax_step_optimistic,
    craftax_generate_worlds,
    track_kernel,
};

/* ---- Craftax-Classic -------------------------------------------------------------------- */
static int classic_step_autoreset(CraftaxPPO *t, const int32_t *actions, float *obs, float *rewards, uint8_t *dones) {
    return craftax_classic_cuda_step_autoreset_stream(t->env_states, actions, t->env_keys, t->N,
                                                      &t->env_params.classic, obs, rewards, dones,
                                                      t->terminated, t->truncated, t->final_ach, t->done_list,
                                                      (uintptr_t)t->stream);
}

static int classic_step_optimistic(CraftaxPPO *t, const int32_t *actions, float *obs, float *rewards, uint8_t *dones,
                                   const void *worlds) {
    return craftax_classic_cuda_step_optimistic_stream(t->env_states, actions, t->scal_sub_key, t->N,
                                                       t->c.reset_ratio, &t->env_params.classic, worlds, obs,
                                                       rewards, dones, t->terminated, t->truncated,
                                                       t->final_ach, NULL, t->opt_work, (uintptr_t)t->stream);
}

static int classic_generate_worlds(CraftaxPPO *t) {
    return craftax_classic_cuda_generate_worlds_stream(t->pool_worlds, t->pool_keys, t->T, t->W,
                                                       &t->env_params.classic, (uintptr_t)t->pool_stream);
}

static size_t no_world_scratch(void) { return 0; }

/* craftax_classic_cuda_observe's float obs only (the trainer keeps no compact records) */
static int classic_observe(const void *states, int64_t num_envs, float *obs) {
    return craftax_classic_cuda_observe(states, num_envs, obs, NULL);
}

static const CraftaxPPOEnvOps CLASSIC_ENV_OPS = {
    "Craftax-Classic-Symbolic-v1",
    CRAFTAX_CLASSIC_NUM_ACTIONS,
    CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS,
    sizeof(CraftaxClassicParams),
    craftax_classic_cuda_obs_size,
    craftax_classic_cuda_state_size,
    no_world_scratch,
    craftax_classic_cuda_optimistic_work_size,
    classic_observe,
    classic_step_autoreset,
    classic_step_optimistic,
    classic_generate_worlds,
    track_classic_kernel,
};

/* The table of CraftaxPPOConfig.env (CRAFTAX_PPO_ENV_*), NULL for an unknown id. */
static const CraftaxPPOEnvOps *env_ops_of(int env) {
    switch (env) {
    case CRAFTAX_PPO_ENV_CRAFTAX: return &CRAFTAX_ENV_OPS;
    case CRAFTAX_PPO_ENV_CLASSIC: return &CLASSIC_ENV_OPS;
    default: return NULL;
    }
}

#endif

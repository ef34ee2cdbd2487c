/* ppo_cuda.h: the C API of the CUDA PPO-RNN trainer (cuda/ppo_cuda.cu and the parts ppo_*.cuh it
 * includes, linked into cuda/build/libcraftax_cuda.so beside the env).
 *
 * The trainer is the NumPy reference pycraftax/train/numpy_ppo.py on the GPU: same model,
 * loss, GAE, global-norm clip and Adam. Weights, Adam moments, rollout and minibatch
 * buffers live on the device; an iteration (rollout of num_steps env steps + GAE +
 * update_epochs x num_minibatches Adam steps) runs on the trainer's own stream with no host
 * round-trip, captured once as a CUDA graph and replayed.
 *
 * cuBLAS is loaded at run time (dlopen, see craftax_ppo_set_cublas_path): the env part of
 * the library keeps working where cuBLAS is absent. So is NCCL, and only for data-parallel
 * training across GPUs (craftax_ppo_set_distributed, cuda/ppo_nccl.cuh).
 *
 * Functions return 0 or a negative CRAFTAX_PPO_ERR_* code; craftax_ppo_last_error() gives
 * the message. pycraftax/train/cuda_trainer.py reads this file as a cffi cdef: plain
 * declarations and integer #defines only (named CRAFTAX_*, which the cdef reader keeps).
 */
#ifndef CRAFTAX_PPO_CUDA_H
#define CRAFTAX_PPO_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this API (the CraftaxPPOConfig layout included); craftax_ppo_api_version() is the
 * library's, so that a binding can refuse a library built from another header. */
#define CRAFTAX_PPO_API_VERSION 2

#define CRAFTAX_PPO_ERR_NULL -1
#define CRAFTAX_PPO_ERR_CONFIG -2
#define CRAFTAX_PPO_ERR_NO_MEMORY -3
#define CRAFTAX_PPO_ERR_ARGUMENT -4
#define CRAFTAX_PPO_ERR_CUDA -5
#define CRAFTAX_PPO_ERR_CUBLAS -6
#define CRAFTAX_PPO_ERR_NO_ENV -7
#define CRAFTAX_PPO_ERR_NCCL -8

/* The env the trainer rolls out in (CraftaxPPOConfig.env): the full game (craftax_cuda.h,
 * Craftax-Symbolic-v1) or Craftax-Classic (craftax_classic_cuda.h, Craftax-Classic-Symbolic-v1). */
#define CRAFTAX_PPO_ENV_CRAFTAX 0
#define CRAFTAX_PPO_ENV_CLASSIC 1

/* Encoder (obs -> Dense_0): dense (forward GEMM, cuBLAS kernel gradient), or sparse (the
 * default in Python): the nonzeros of every obs row are listed once (index, value) as the env
 * writes it; the forward is a fixed-order gather-sum of kernel rows, the kernel gradient a
 * per-feature-row sum over the minibatch rows holding that feature (bitmap, no sort) with tf32
 * off, a TF32 GEMM over the gathered dense minibatch obs with tf32 on. */
#define CRAFTAX_PPO_ENCODER_DENSE 0
#define CRAFTAX_PPO_ENCODER_SPARSE 1

/* Buffers readable/writable with craftax_ppo_read / craftax_ppo_write (host copies).
 * (Comments sit above the #defines: the cffi cdef reader keeps bare integer #defines only.) */
/* BUF_PARAMS: float [num_params], layout: craftax_ppo_param_info */
#define CRAFTAX_PPO_BUF_PARAMS 0
/* BUF_GRADS: float [num_params], of the last loss/grad (before clipping) */
#define CRAFTAX_PPO_BUF_GRADS 1
/* BUF_ADAM_MU: float [num_params] */
#define CRAFTAX_PPO_BUF_ADAM_MU 2
/* BUF_ADAM_NU: float [num_params] */
#define CRAFTAX_PPO_BUF_ADAM_NU 3
/* BUF_COUNTERS: int64 [4]: iteration, adam count, env-key splits, policy-rng draws */
#define CRAFTAX_PPO_BUF_COUNTERS 4
/* BUF_HSTATE: float [N, H]: GRU state after the last rollout step */
#define CRAFTAX_PPO_BUF_HSTATE 5
/* BUF_LAST_DONE: uint8 [N] */
#define CRAFTAX_PPO_BUF_LAST_DONE 6
/* BUF_ENV_KEY: uint32 [2]: the env's key stream (CudaCraftaxEnv._key) */
#define CRAFTAX_PPO_BUF_ENV_KEY 7
/* BUF_RET_ACC: float [N] episode return so far */
#define CRAFTAX_PPO_BUF_RET_ACC 8
/* BUF_LEN_ACC: int32 [N] episode length so far */
#define CRAFTAX_PPO_BUF_LEN_ACC 9
/* BUF_OBS: float [T + 1, N, D]: slot 0 = obs before step 0 */
#define CRAFTAX_PPO_BUF_OBS 10
/* BUF_DONES: uint8 [T + 1, N]: dones[t] = reset flag of step t's input */
#define CRAFTAX_PPO_BUF_DONES 11
/* BUF_ACTIONS: int32 [T, N] */
#define CRAFTAX_PPO_BUF_ACTIONS 12
/* BUF_LOGP: float [T, N] */
#define CRAFTAX_PPO_BUF_LOGP 13
/* BUF_VALUES: float [T + 1, N]: values[T] = bootstrap value */
#define CRAFTAX_PPO_BUF_VALUES 14
/* BUF_REWARDS: float [T, N] */
#define CRAFTAX_PPO_BUF_REWARDS 15
/* BUF_ADVANTAGES: float [T, N] raw GAE */
#define CRAFTAX_PPO_BUF_ADVANTAGES 16
/* BUF_TARGETS: float [T, N] */
#define CRAFTAX_PPO_BUF_TARGETS 17
/* BUF_H0: float [N, H]: GRU state before step 0 */
#define CRAFTAX_PPO_BUF_H0 18
/* BUF_EPISODES: the last rollout's episode log (layout below NUM_LOSS_STATS) */
#define CRAFTAX_PPO_BUF_EPISODES 19
/* BUF_LOSSES: double [epochs * minibatches, CRAFTAX_PPO_NUM_LOSS_STATS] */
#define CRAFTAX_PPO_BUF_LOSSES 20
/* BUF_REPLAY: float [2, T, N]: log-probs then values of craftax_ppo_replay */
#define CRAFTAX_PPO_BUF_REPLAY 21
/* BUF_CUR_OBS: float [N, D]: the current obs (slot T of BUF_OBS) */
#define CRAFTAX_PPO_BUF_CUR_OBS 22
#define CRAFTAX_PPO_NUM_BUFFERS 23

/* Per-minibatch statistics, in this order. */
/* NUM_LOSS_STATS: total, value_loss, actor_loss, entropy, approx_kl, clip_frac, grad_norm, lr */
#define CRAFTAX_PPO_NUM_LOSS_STATS 8
/* Episode log of one iteration: float ep_return [T, N], then int32 ep_length [T, N] (0
 * where no episode ended), then uint32 achievement bits [T, N, 3] (bit k: the env's achievement
 * k; 67 bits used by the full game, 22 by Classic). */

typedef struct {
    int32_t num_envs;
    int32_t num_steps;
    int32_t obs_size;
    int32_t num_actions;
    int32_t width;
    int32_t hidden;
    int32_t update_epochs;
    int32_t num_minibatches;
    int64_t num_updates;      /* for the linear learning-rate schedule */
    float lr;
    int32_t anneal_lr;
    float gamma;
    float gae_lambda;
    float clip_eps;
    float ent_coef;
    float vf_coef;
    float max_grad_norm;
    uint64_t seed;            /* policy sampling and minibatch permutations */
    int32_t tf32;             /* 1: TF32 tensor cores for the GEMMs; 0: exact fp32 (checks) */
    int32_t encoder;          /* CRAFTAX_PPO_ENCODER_* */
    int32_t max_nnz;          /* sparse encoder: capacity of one obs row's nonzero list */
    int32_t use_graph;        /* 1: craftax_ppo_iterate captures and replays a CUDA graph */
    int32_t debug;            /* 1: synchronise and check after every kernel */
    int32_t reset_ratio;      /* 0: auto-reset env (CraftaxSymbolicEnv.step); > 0: optimistic resets with this
                                 ratio (OptimisticResetVecEnvWrapper, ppo_rnn.py's default), each rollout's
                                 worlds generated during the previous update */
    int32_t env;              /* CRAFTAX_PPO_ENV_*: obs_size and num_actions must be the env's */
} CraftaxPPOConfig;

typedef struct CraftaxPPO CraftaxPPO;

const char *craftax_ppo_last_error(void);
int craftax_ppo_api_version(void);
/* Where to dlopen cuBLAS from (NULL: only the default names libcublas.so.13, libcublas.so). */
int craftax_ppo_set_cublas_path(const char *path);

/* env_states / env_scratch: device pointers of the env's buffers (CudaCraftaxEnv's or
 * CudaClassicEnv's native_handles; NULL for a trainer without env: losses, gradients, GAE and
 * Adam only). Classic has no world-generation scratch: its env_scratch is not used. env_params:
 * host pointer to the params of config->env (CraftaxParams or CraftaxClassicParams, copied), of
 * env_params_size bytes. *out receives the handle. */
int craftax_ppo_create(const CraftaxPPOConfig *config, void *env_states, void *env_scratch, const void *env_params,
                       size_t env_params_size, CraftaxPPO **out);
void craftax_ppo_destroy(CraftaxPPO *t);

int64_t craftax_ppo_num_params(const CraftaxPPO *t);
/* Parameter tensor i (0 .. craftax_ppo_num_tensors()-1) in numpy_ppo's flax naming:
 * name, shape [rows, cols] (rows = 1 for a bias), and where it lies in the flat buffer:
 * element (r, c) is flat[offset + r * ld + c]. */
int craftax_ppo_num_tensors(void);
int craftax_ppo_param_info(const CraftaxPPO *t, int i, char *name, int name_size, int64_t *rows, int64_t *cols,
                           int64_t *offset, int64_t *ld);
size_t craftax_ppo_buffer_bytes(const CraftaxPPO *t, int which);
int craftax_ppo_read(CraftaxPPO *t, int which, void *host, size_t bytes);
int craftax_ppo_write(CraftaxPPO *t, int which, const void *host, size_t bytes);

/* Starts a run: the obs of the env's current states into obs slot 0 (the env must have
 * been reset), zero GRU state, last_done and episode accumulators, and the env key. */
int craftax_ppo_begin(CraftaxPPO *t, const uint32_t *env_key);

/* One iteration: rollout, bootstrap value, GAE, update. Synchronises before returning;
 * with use_graph, the first call captures the graph and every call replays it. */
int craftax_ppo_iterate(CraftaxPPO *t);
/* Rollout and GAE only (no update; counters still advance). */
int craftax_ppo_rollout(CraftaxPPO *t);
/* The update's forward over the stored rollout for the envs env_index[0..count) as one
 * minibatch (env_index NULL: all envs in order): log-probs and values into
 * CRAFTAX_PPO_BUF_REPLAY as [2, T, N], columns 0..count used (the rest zero). */
int craftax_ppo_replay(CraftaxPPO *t, const int32_t *env_index, int count);
/* GAE over the stored rewards / values / dones (values[T] and dones[T] bootstrap). */
int craftax_ppo_gae(CraftaxPPO *t);
/* Loss and gradients (into CRAFTAX_PPO_BUF_GRADS) on the minibatch of envs env_index[0..B)
 * of the stored rollout (B = num_envs / num_minibatches). out_stats: the
 * CRAFTAX_PPO_NUM_LOSS_STATS doubles (grad_norm of the raw gradients, lr of the current count). */
int craftax_ppo_loss_grads(CraftaxPPO *t, const int32_t *env_index, double *out_stats);
/* Clip by global norm and one Adam step with the gradients in CRAFTAX_PPO_BUF_GRADS. */
int craftax_ppo_apply_grads(CraftaxPPO *t);
/* Nonzeros beyond max_nnz seen by the sparse encoder since creation (0 = all exact). */
int64_t craftax_ppo_nnz_overflow(CraftaxPPO *t);
/* Benchmarks: device milliseconds per repetition (mean of reps, CUDA events; graph-replayed
 * unless use_graph is 0) of one part of an iteration alone. It disturbs the run (policy:
 * GRU state, actions, values; env: env states; update: weights): for benchmarks only. */
/* PROFILE_POLICY: the rollout's policy work over the stored obs, without env steps */
#define CRAFTAX_PPO_PROFILE_POLICY 0
/* PROFILE_ENV: the rollout's env steps (stored actions), without the policy */
#define CRAFTAX_PPO_PROFILE_ENV 1
/* PROFILE_UPDATE: epochs x minibatches of the update over the stored rollout */
#define CRAFTAX_PPO_PROFILE_UPDATE 2
/* Phases of one minibatch's update (its first minibatch of the current permutation), each
 * timed alone; their sum is about update / (epochs x minibatches). */
/* PROFILE_GATHER: minibatch gather (dones, actions, old log-probs, ..., dense obs) */
#define CRAFTAX_PPO_PROFILE_GATHER 3
/* PROFILE_ENCODE: Dense_0 forward (sparse gather-sum or GEMM) */
#define CRAFTAX_PPO_PROFILE_ENCODE 4
/* PROFILE_GRU_INPUT: the GRU's input projection of all steps (one GEMM) */
#define CRAFTAX_PPO_PROFILE_GRU_INPUT 5
/* PROFILE_GRU_FORWARD: the GRU's T recurrent steps */
#define CRAFTAX_PPO_PROFILE_GRU_FORWARD 6
/* PROFILE_HEADS_FORWARD: actor and critic MLPs */
#define CRAFTAX_PPO_PROFILE_HEADS_FORWARD 7
/* PROFILE_LOSS: advantage statistics, per-row PPO loss and its gradient, reduction */
#define CRAFTAX_PPO_PROFILE_LOSS 8
/* PROFILE_HEADS_BACKWARD: the heads' gradients down to dy */
#define CRAFTAX_PPO_PROFILE_HEADS_BACKWARD 9
/* PROFILE_GRU_BPTT: the GRU's T backward steps */
#define CRAFTAX_PPO_PROFILE_GRU_BPTT 10
/* PROFILE_GRU_WEIGHTS: dWh, dWi, GRU biases, demb */
#define CRAFTAX_PPO_PROFILE_GRU_WEIGHTS 11
/* PROFILE_ENCODER_BACKWARD: Dense_0's gradients as the trainer computes them */
#define CRAFTAX_PPO_PROFILE_ENCODER_BACKWARD 12
/* PROFILE_OPTIMIZER: global norm, clip, Adam */
#define CRAFTAX_PPO_PROFILE_OPTIMIZER 13
/* PROFILE_ENCODER_BACKWARD_ALT: sparse encoder only: dW0 by the method not in use (bitmap walk
 * vs TF32 GEMM; the GEMM needs TF32 on), for comparison */
#define CRAFTAX_PPO_PROFILE_ENCODER_BACKWARD_ALT 14
#define CRAFTAX_PPO_PROFILE_COUNT 15
int craftax_ppo_profile(CraftaxPPO *t, int part, int reps, float *ms);
/* The learning rate of the optimiser steps of update `update` (0-based: Adam steps so far divided
 * by num_minibatches * update_epochs): base_lr * (1 - update / num_updates) with anneal, else
 * base_lr; the arithmetic the trainer's device code runs, in double. num_updates >= 1. Needs no GPU
 * (touches no CUDA runtime), for tests against the Python schedule. */
double craftax_ppo_learning_rate(double base_lr, int anneal, int64_t update, int64_t num_updates);
/* Milliseconds of the last craftax_ppo_iterate (device time, CUDA events). */
float craftax_ppo_last_iterate_ms(const CraftaxPPO *t);
/* Whether the update's GRU forward runs as one persistent launch (the blocks the GPU holds at
 * once, > 0) or one launch a step (0: PYCRAFTAX_PPO_GRU_SEQ=0 or the legacy kernels at create,
 * H % 32 != 0, no cooperative launch, or a minibatch grid larger than this number). */
int craftax_ppo_gru_seq_blocks(const CraftaxPPO *t);

/* ---- data-parallel training across GPUs (cuda/ppo_nccl.cuh) ------------------------------- */
/* Bytes of an NCCL communicator id (ncclUniqueId) */
#define CRAFTAX_PPO_NCCL_ID_BYTES 128
/* Where to dlopen NCCL from (NULL: only the default names libnccl.so.2, libnccl.so). */
int craftax_ppo_set_nccl_path(const char *path);
/* A new communicator id into out (CRAFTAX_PPO_NCCL_ID_BYTES bytes): rank 0 makes it and hands it
 * to the other ranks (pycraftax/train/distributed.py's store). Loads NCCL; needs no trainer. */
int craftax_ppo_nccl_unique_id(uint8_t *out, size_t bytes);
/* Makes t rank `rank` of `world` data-parallel replicas, before its first craftax_ppo_iterate:
 * joins the NCCL communicator of unique_id (blocks until every rank has joined); from then on
 * every minibatch's gradients are averaged over the ranks before the clip and Adam (inside the
 * graph), so every replica takes the same step. Each rank runs its own num_envs envs: the
 * global batch is world * num_envs. timeout_s: the longest an iteration waits for its peers
 * before it fails (CRAFTAX_PPO_ERR_NCCL, the communicator aborted, the trainer unusable). world 1
 * (rank 0, unique_id may be NULL) changes nothing: no NCCL is loaded. Only the update inside an
 * iteration (and craftax_ppo_profile's CRAFTAX_PPO_PROFILE_UPDATE, which every rank must then call
 * together) all-reduces; craftax_ppo_loss_grads and craftax_ppo_apply_grads stay local (checks). */
int craftax_ppo_set_distributed(CraftaxPPO *t, int rank, int world, const uint8_t *unique_id, size_t id_bytes,
                                double timeout_s);
/* The world size t trains in (1 without craftax_ppo_set_distributed), 0 for NULL. */
int craftax_ppo_world_size(const CraftaxPPO *t);

#ifdef __cplusplus
}
#endif

#endif

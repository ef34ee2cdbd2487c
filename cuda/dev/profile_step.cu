/* cuda/dev/profile_step.cu: where one env step's time goes, subsystem by subsystem
 * (clock64 around each call of craftax_step_before_spawn's and craftax_step_after_spawn's
 * list, replicated here), on the rules headers' kernels (one thread per env, AoS states).
 *
 *   nvcc -O3 -fmad=false -arch=sm_90 -std=c++17 -diag-suppress 20091 -Ireference_c/include \
 *        cuda/dev/profile_step.cu -o cuda/build/profile_step
 *   cuda/build/profile_step 1024 16384 262144
 *
 * Per size: worlds from a warp-per-env reset, then 64 steps of random actions (done envs
 * keep stepping; timing only). Prints, per subsystem, the mean cycles per env-step and the
 * mean over warps of the slowest lane's cycles (what a warp waits for; the two agree when the
 * lanes run converged, as they did), and the kernel's wall time per step with and without
 * the clock reads (alternate steps). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "craftax/obs.h"
#include "craftax/step.h"
#include "craftax/worldgen.h"

#define NPARTS 20
static const char *PART_NAMES[NPARTS] = {
    "prologue", "change_floor", "do_crafting", "do_action", "place_block", "shoot_projectile", "cast_spell",
    "drink_potion", "read_book", "enchant", "boss_logic", "level_up_attributes", "move_player", "update_mobs",
    "spawn_mobs", "update_plants", "intrinsics", "clip_inventory", "inventory_achievements", "epilogue(reward,obs?)"};

typedef struct {
    CraftaxWorldGenScratch worldgen;
} Scratch;

__global__ void reset_k(CraftaxState *states, int64_t n, CraftaxParams params, Scratch *scratch, uint32_t seed) {
    const int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (i >= n) return;
    CraftaxKey key = {{seed, (uint32_t)i}};
    craftax_reset_env_lanes(key, &params, &states[i], &scratch[i].worldgen, lane, 32);
}

__device__ unsigned long long g_sum[NPARTS], g_warpmax[NPARTS];

template <bool PROF>
__global__ void step_k(CraftaxState *states, int64_t n, CraftaxParams params, Scratch *scratch, uint32_t t) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    CraftaxState *state = &states[i];
    CraftaxKey rng = craftax_split_at(CraftaxKey{{t * 7919u + 1u, (uint32_t)i}}, 0);
    int32_t action = (int32_t)(craftax_random_bits(rng, 99) % CRAFTAX_NUM_ACTIONS);
    long long acc[NPARTS];
    for (int k = 0; k < NPARTS; k++) acc[k] = 0;
    long long c0 = PROF ? clock64() : 0;
    int part = 0;
#define MARK()                                \
    if (PROF) {                               \
        long long c1 = clock64();             \
        acc[part++] += c1 - c0;               \
        c0 = c1;                              \
    }
    uint8_t init_achievements[CRAFTAX_NUM_ACHIEVEMENTS];
    memcpy(init_achievements, state->achievements, sizeof(init_achievements));
    const float init_health = state->player_health;
    if (state->is_sleeping) action = ACTION_NOOP;
    if (state->is_resting) action = ACTION_NOOP;
    MARK();
    craftax_change_floor(state, action, &params); MARK();
    craftax_do_crafting(state, action); MARK();
    craftax_do_action(state, craftax_split_next(&rng), action, &params); MARK();
    craftax_place_block(state, action, &params); MARK();
    craftax_shoot_projectile(state, action, &params); MARK();
    craftax_cast_spell(state, action, &params); MARK();
    craftax_drink_potion(state, action); MARK();
    craftax_read_book(state, craftax_split_next(&rng), action); MARK();
    craftax_enchant(state, craftax_split_next(&rng), action); MARK();
    craftax_boss_logic(state, &params); MARK();
    craftax_level_up_attributes(state, action, &params); MARK();
    craftax_move_player(state, action, &params); MARK();
    craftax_update_mobs(state, craftax_split_next(&rng), &params); MARK();
    craftax_spawn_mobs(state, craftax_split_next(&rng), &params); MARK();
    craftax_update_plants(state); MARK();
    craftax_update_player_intrinsics(state, action); MARK();
    craftax_clip_inventory_and_intrinsics(state, &params); MARK();
    craftax_calculate_inventory_achievements(state); MARK();
    const float reward = craftax_step_reward(init_achievements, init_health, state);
    const CraftaxKey state_rng = craftax_split_next(&rng);
    state->timestep = state->timestep + 1;
    state->light_level = craftax_light_level(state->timestep, params.day_length);
    state->state_rng[0] = state_rng.k[0];
    state->state_rng[1] = state_rng.k[1];
    volatile float sink = reward;
    (void)sink;
    MARK();
    if (PROF) {
        for (int k = 0; k < NPARTS; k++) {
            unsigned long long v = (unsigned long long)acc[k];
            atomicAdd(&g_sum[k], v);
            unsigned long long m = v;
            for (int o = 16; o > 0; o /= 2) {
                unsigned long long y = __shfl_xor_sync(__activemask(), m, o);
                m = y > m ? y : m;
            }
            if ((threadIdx.x & 31) == 0) atomicAdd(&g_warpmax[k], m);
        }
    }
}

#define CK(x)                                                                      \
    do {                                                                           \
        cudaError_t e = (x);                                                       \
        if (e != cudaSuccess) {                                                    \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

int main(int argc, char **argv) {
    CraftaxParams params; /* craftax_default_params (reference_c/src/craftax_api.c) */
    memset(&params, 0, sizeof(params));
    params.max_timesteps = 100000;
    params.day_length = 300;
    params.mob_despawn_distance = 14;
    params.max_attribute = 5;
    for (int a = 1; a < argc; a++) {
        const int64_t n = atoll(argv[a]);
        CraftaxState *states;
        Scratch *scratch;
        CK(cudaMalloc(&states, n * sizeof(CraftaxState)));
        CK(cudaMalloc(&scratch, n * sizeof(Scratch)));
        reset_k<<<(unsigned)((n * 32 + 127) / 128), 128>>>(states, n, params, scratch, 12345u);
        CK(cudaDeviceSynchronize());
        unsigned long long zero[NPARTS] = {0};
        CK(cudaMemcpyToSymbol(g_sum, zero, sizeof(zero)));
        CK(cudaMemcpyToSymbol(g_warpmax, zero, sizeof(zero)));
        const int steps = 64;
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        float ms_plain = 0, ms_prof = 0;
        for (int t = 0; t < steps; t++) {
            float ms;
            cudaEventRecord(e0);
            if (t % 2 == 0) step_k<false><<<(unsigned)((n + 127) / 128), 128>>>(states, n, params, scratch, t);
            else step_k<true><<<(unsigned)((n + 127) / 128), 128>>>(states, n, params, scratch, t);
            cudaEventRecord(e1);
            CK(cudaEventSynchronize(e1));
            cudaEventElapsedTime(&ms, e0, e1);
            if (t % 2 == 0) ms_plain += ms; else ms_prof += ms;
        }
        unsigned long long sum[NPARTS], wmax[NPARTS];
        CK(cudaMemcpyFromSymbol(sum, g_sum, sizeof(sum)));
        CK(cudaMemcpyFromSymbol(wmax, g_warpmax, sizeof(wmax)));
        const double env_steps = (double)n * (steps / 2), warp_steps = (double)((n + 31) / 32) * (steps / 2);
        double tot = 0, totw = 0;
        for (int k = 0; k < NPARTS; k++) tot += sum[k] / env_steps, totw += wmax[k] / warp_steps;
        printf("== %lld envs: step kernel %.3f ms/step plain, %.3f ms/step with clocks; cycles per env-step %.0f, "
               "per warp (slowest lane, summed per part) %.0f\n",
               (long long)n, ms_plain / (steps / 2), ms_prof / (steps / 2), tot, totw);
        for (int k = 0; k < NPARTS; k++)
            printf("  %-24s mean %9.0f (%5.1f%%)   warp-max %9.0f (%5.1f%%)\n", PART_NAMES[k], sum[k] / env_steps,
                   100.0 * sum[k] / env_steps / tot, wmax[k] / warp_steps, 100.0 * wmax[k] / warp_steps / totw);
        fflush(stdout);
        cudaFree(states);
        cudaFree(scratch);
    }
    return 0;
}

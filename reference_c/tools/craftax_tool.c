/* craftax_tool: command-line driver of the C reference, without Python.
 *
 *   cc -O3 -std=c11 -ffp-contract=off -fopenmp -Ireference_c/include \
 *      reference_c/tools/craftax_tool.c reference_c/src/\*.c -lm -o build/craftax_tool
 *   build/craftax_tool bench-reset [num_worlds]          worlds per second, one thread
 *   build/craftax_tool hash-reset [num_envs] [seed]      FNV-1a of the obs and states of reset_env
 *   build/craftax_tool hash-steps num_envs steps seed    trajectory hash anchor (CONFORMANCE.md)
 *
 * Keys follow pycraftax: env i of seed S resets with split(PRNGKey(S), num_envs)[i]; step t
 * uses the env key stream of CraftaxEnv.step (key, sub = split(key); keys = split(sub, N),
 * key starting at PRNGKey(S)); actions are floor(43 * uniform(ACTION_KEY, t * N + i)) with
 * ACTION_KEY = (0x41435449, S). The hash chains FNV-1a over each step's obs, reward and done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "craftax/rng.h"
#include "craftax_api.h"
#include "craftax_api_step.h"

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint32_t *make_keys(int64_t num_envs, uint32_t seed) {
    uint32_t root[2] = {0u, seed};
    uint32_t *keys = malloc(sizeof(uint32_t) * 2 * (size_t)num_envs);
    if (keys) craftax_key_split(root, (uint32_t)num_envs, keys);
    return keys;
}


int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s bench-reset [num_worlds] | hash-reset [num_envs] [seed] | "
                        "hash-steps num_envs steps seed\n", argv[0]);
        return 2;
    }
    CraftaxParams params;
    craftax_default_params(&params);
    if (strcmp(argv[1], "bench-reset") == 0) {
        int64_t n = argc > 2 ? atoll(argv[2]) : 2000;
        craftax_set_num_threads(1);
        void *states = malloc(craftax_state_size());
        uint32_t *keys = make_keys(n, 0);
        if (!states || !keys) return 1;
        double t0 = now_seconds();
        for (int64_t i = 0; i < n; i++)
            if (craftax_reset_with_keys(states, keys + 2 * i, 1, &params, NULL) != 0) return 1;
        double dt = now_seconds() - t0;
        printf("%lld worlds in %.3f s: %.0f worlds/s on one thread (%.1f us/world)\n", (long long)n, dt, n / dt,
               1e6 * dt / n);
        free(states);
        free(keys);
        return 0;
    }
    if (strcmp(argv[1], "hash-reset") == 0) {
        int64_t n = argc > 2 ? atoll(argv[2]) : 16;
        uint32_t seed = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 0;
        size_t ss = craftax_state_size();
        void *states = malloc(ss * (size_t)n);
        float *obs = malloc(sizeof(float) * (size_t)craftax_obs_size() * (size_t)n);
        uint32_t *keys = make_keys(n, seed);
        if (!states || !obs || !keys) return 1;
        if (craftax_reset_with_keys(states, keys, n, &params, obs) != 0) return 1;
        uint64_t h = craftax_fnv1a(0xcbf29ce484222325ULL, obs, sizeof(float) * (size_t)craftax_obs_size() * (size_t)n);
        h = craftax_fnv1a(h, states, ss * (size_t)n);
        printf("reset obs+state fnv1a (envs=%lld seed=%u): %016llx\n", (long long)n, seed, (unsigned long long)h);
        free(states);
        free(obs);
        free(keys);
        return 0;
    }
    if (strcmp(argv[1], "hash-steps") == 0 && argc == 5) {
        const int64_t n = atoll(argv[2]);
        const int64_t steps = atoll(argv[3]);
        const uint32_t seed = (uint32_t)strtoul(argv[4], NULL, 10);
        if (n < 1 || steps < 0) return 2;
        const size_t obs_floats = (size_t)craftax_obs_size() * (size_t)n;
        void *states = malloc(craftax_state_size() * (size_t)n);
        float *obs = malloc(sizeof(float) * obs_floats);
        float *rewards = malloc(sizeof(float) * (size_t)n);
        float *uniforms = malloc(sizeof(float) * (size_t)n * (size_t)(steps > 0 ? steps : 1));
        uint8_t *dones = malloc((size_t)n);
        int32_t *actions = malloc(sizeof(int32_t) * (size_t)n);
        uint32_t *step_keys = malloc(sizeof(uint32_t) * 2 * (size_t)n);
        uint32_t *reset_keys = make_keys(n, seed);
        if (!states || !obs || !rewards || !uniforms || !dones || !actions || !step_keys || !reset_keys) return 1;
        if (craftax_reset_with_keys(states, reset_keys, n, &params, obs) != 0) return 1;
        const CraftaxKey action_key = {{0x41435449u, seed}};
        for (uint32_t i = 0; i < (uint32_t)(n * steps); i++) uniforms[i] = craftax_uniform(action_key, i);
        uint32_t key[2] = {0u, seed}, pair[4];
        uint64_t h = 0xcbf29ce484222325ULL;
        for (int64_t t = 0; t < steps; t++) {
            craftax_key_split(key, 2, pair);
            key[0] = pair[0];
            key[1] = pair[1];
            craftax_key_split(pair + 2, (uint32_t)n, step_keys);
            for (int64_t i = 0; i < n; i++) actions[i] = (int32_t)(uniforms[t * n + i] * 43.0f);
            if (craftax_step_autoreset(states, actions, step_keys, n, &params, obs, NULL, rewards, dones, NULL, NULL,
                                       NULL))
                return 1;
            h = craftax_fnv1a(h, obs, sizeof(float) * obs_floats);
            h = craftax_fnv1a(h, rewards, sizeof(float) * (size_t)n);
            h = craftax_fnv1a(h, dones, (size_t)n);
        }
        printf("%016llx\n", (unsigned long long)h);
        free(states), free(obs), free(rewards), free(uniforms), free(dones), free(actions), free(step_keys);
        free(reset_keys);
        return 0;
    }
    fprintf(stderr, "unknown command %s\n", argv[1]);
    return 2;
}

/* classic_api.c: the C API of Craftax-Classic (craftax_api_classic.h) over the rules in
 * craftax_classic/, batched with OpenMP like the full game's (craftax_api.c, step_api.c).
 */
#include "craftax_api_classic.h"

#include <float.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "craftax/step.h"
#include "craftax_classic/step.h"
#include "env_variants.h"
#include "optimistic_step.h"
#include "state_domain.h"

int craftax_classic_obs_size(void) { return CRAFTAX_CLASSIC_OBS_SIZE; }
int craftax_classic_num_actions(void) { return CRAFTAX_CLASSIC_NUM_ACTIONS; }
int craftax_classic_num_achievements(void) { return CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS; }
size_t craftax_classic_state_size(void) { return sizeof(CraftaxClassicState); }

#define U8 CRAFTAX_DTYPE_UINT8
#define I32 CRAFTAX_DTYPE_INT32
#define F32 CRAFTAX_DTYPE_FLOAT32
#define U32 CRAFTAX_DTYPE_UINT32
#define BOOL CRAFTAX_DTYPE_BOOL
#define M CRAFTAX_CLASSIC_MAP_SIZE
/* The player's position, as the full game's (craftax_api.c): upstream's move accepts a step off
 * the map onto a cell whose wrapped read is lava, so a player walks off the map (from there on
 * only onto lava, which kills: with resets the episode ends, without them step_with_keys walks
 * on). In this range every map cell is within 32,767 cells on each axis, so upstream's squared
 * int32 distances do not wrap; the Python layer refuses a step_with_keys from its edge. */
#define POSITION_MAX 32767
#define POSITION_MIN (M - 1 - POSITION_MAX)
#define LEAF(name, member, storage, dtype, ndim, s0, s1, lo, hi) \
    {name, (uint32_t)offsetof(CraftaxClassicState, member), storage, dtype, ndim, {s0, s1, 0, 0}, lo, hi, 0, 0.0f, 0.0f}
/* A float32 leaf: finite values in [lo, hi]. */
#define FLOAT_LEAF(name, member, lo, hi) \
    {name, (uint32_t)offsetof(CraftaxClassicState, member), F32, F32, 0, {0, 0, 0, 0}, 0, 0, 0, lo, hi}
#define MOBS(prefix, member, n, pos_lo, pos_hi, health_lo)                                   \
    LEAF(prefix ".position", member.position, I32, I32, 2, n, 2, pos_lo, pos_hi),             \
        LEAF(prefix ".health", member.health, I32, I32, 1, n, 0, health_lo, INT_MAX),          \
        LEAF(prefix ".mask", member.mask, U8, BOOL, 1, n, 0, 0, 1),                             \
        LEAF(prefix ".attack_cooldown", member.attack_cooldown, I32, I32, 1, n, 0, INT_MIN, INT_MAX)
#define INV(name) LEAF("inventory." #name, inventory.name, I32, I32, 0, 0, 0, 0, 9)

/* Leaves in upstream EnvState field order. The domain set_state accepts (docs/STATE_DOMAIN.md)
 * holds every state reset or step can reach under any params make() accepts, and nothing the
 * step can leave: block ids, map coordinates, intrinsics and inventory as a step leaves them
 * (0..9; health 9 at most, the obs shows counts / 10 as float16); counters that upstream lets
 * run freely and wrap in int32 as XLA's do (cooldowns, plant ages, the timestep, dead arrows'
 * positions and health) take any int32; floats are finite, the light level (which the obs
 * shows) in 0..1. */
static const CraftaxLeaf LEAVES[] = {
    LEAF("map", map, U8, I32, 2, M, M, 0, CRAFTAX_CLASSIC_NUM_BLOCK_TYPES - 1),
    LEAF("mob_map", mob_map, U8, BOOL, 2, M, M, 0, 1),
    LEAF("player_position", player_position, I32, I32, 1, 2, 0, POSITION_MIN, POSITION_MAX),
    LEAF("player_direction", player_direction, I32, I32, 0, 0, 0, 0, 4),
    LEAF("player_health", player_health, I32, I32, 0, 0, 0, 0, 9),
    LEAF("player_food", player_food, I32, I32, 0, 0, 0, 0, 9),
    LEAF("player_drink", player_drink, I32, I32, 0, 0, 0, 0, 9),
    LEAF("player_energy", player_energy, I32, I32, 0, 0, 0, 0, 9),
    LEAF("is_sleeping", is_sleeping, U8, BOOL, 0, 0, 0, 0, 1),
    FLOAT_LEAF("player_recover", player_recover, -FLT_MAX, FLT_MAX),
    FLOAT_LEAF("player_hunger", player_hunger, -FLT_MAX, FLT_MAX),
    FLOAT_LEAF("player_thirst", player_thirst, -FLT_MAX, FLT_MAX),
    FLOAT_LEAF("player_fatigue", player_fatigue, -FLT_MAX, FLT_MAX),
    INV(wood),
    INV(stone),
    INV(coal),
    INV(iron),
    INV(diamond),
    INV(sapling),
    INV(wood_pickaxe),
    INV(stone_pickaxe),
    INV(iron_pickaxe),
    INV(wood_sword),
    INV(stone_sword),
    INV(iron_sword),
    MOBS("zombies", zombies, CRAFTAX_CLASSIC_MAX_ZOMBIES, 0, M - 1, INT_MIN),
    MOBS("cows", cows, CRAFTAX_CLASSIC_MAX_COWS, 0, M - 1, INT_MIN),
    MOBS("skeletons", skeletons, CRAFTAX_CLASSIC_MAX_SKELETONS, 0, M - 1, INT_MIN),
    MOBS("arrows", arrows, CRAFTAX_CLASSIC_MAX_ARROWS, INT_MIN, INT_MAX, INT_MIN),
    LEAF("arrow_directions", arrow_directions, I32, I32, 2, CRAFTAX_CLASSIC_MAX_ARROWS, 2, -1, 1),
    LEAF("growing_plants_positions", growing_plants_positions, I32, I32, 2, CRAFTAX_CLASSIC_MAX_GROWING_PLANTS, 2, 0,
         M - 1),
    LEAF("growing_plants_age", growing_plants_age, I32, I32, 1, CRAFTAX_CLASSIC_MAX_GROWING_PLANTS, 0, INT_MIN, INT_MAX),
    LEAF("growing_plants_mask", growing_plants_mask, U8, BOOL, 1, CRAFTAX_CLASSIC_MAX_GROWING_PLANTS, 0, 0, 1),
    FLOAT_LEAF("light_level", light_level, 0.0f, 1.0f),
    LEAF("achievements", achievements, U8, BOOL, 1, CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS, 0, 0, 1),
    LEAF("state_rng", state_rng, U32, U32, 1, 2, 0, 0, 0),
    LEAF("timestep", timestep, I32, I32, 0, 0, 0, INT_MIN, INT_MAX),
};

int craftax_classic_num_leaves(void) { return (int)(sizeof(LEAVES) / sizeof(LEAVES[0])); }

const CraftaxLeaf *craftax_classic_leaf(int index) {
    if (index < 0 || index >= craftax_classic_num_leaves()) return NULL;
    return &LEAVES[index];
}

static int leaf_index(const char *name) {
    for (int i = 0; i < craftax_classic_num_leaves(); i++)
        if (strcmp(LEAVES[i].name, name) == 0) return i;
    return -1;
}

/* Every masked zombie, cow and skeleton has health > 0 in the states reachable from reset,
 * and the step relies on it (the C reference's mask updates, as the full game's). */
#define LIVING_CLASS(member, name)                                                          \
    for (int k = 0; k < (int)(sizeof(s->member.mask)); k++)                                 \
        if (s->member.mask[k] && !(s->member.health[k] > 0)) {                              \
            error->leaf = leaf_index(name);                                                 \
            error->rule = CRAFTAX_STATE_RULE_LIVING_MOB;                                    \
            error->element = k;                                                             \
            error->value = s->member.health[k];                                             \
            return 1;                                                                       \
        }

static int state_error(const uint8_t *state, CraftaxStateError *error) {
    if (craftax_leaf_table_error(state, LEAVES, craftax_classic_num_leaves(), error)) return 1;
    const CraftaxClassicState *s = (const CraftaxClassicState *)(const void *)state;
    LIVING_CLASS(zombies, "zombies.health")
    LIVING_CLASS(cows, "cows.health")
    LIVING_CLASS(skeletons, "skeletons.health")
    return 0;
}
#undef LIVING_CLASS

int craftax_classic_check_states(const void *states, int64_t num_envs, CraftaxStateError *error) {
    if (!states || !error) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    return craftax_check_states_with(states, num_envs, sizeof(CraftaxClassicState), state_error, error,
                                     craftax_get_num_threads());
}

void craftax_classic_default_params(CraftaxClassicParams *p) {
    memset(p, 0, sizeof(*p));
    p->max_timesteps = 10000;
    p->day_length = 300;
    p->always_diamond = 1;
    p->zombie_health = 5;
    p->cow_health = 3;
    p->skeleton_health = 3;
    p->mob_despawn_distance = 14;
    p->spawn_cow_chance = 0.1f;
    p->spawn_zombie_base_chance = 0.02f;
    p->spawn_zombie_night_chance = 0.1f;
    p->spawn_skeleton_chance = 0.05f;
}

static int check_params(const CraftaxClassicParams *params) { return params->day_length > 0 ? 0 : CRAFTAX_ERR_ARGUMENT; }

static int check_actions(const int32_t *actions, int64_t num_envs) {
    for (int64_t i = 0; i < num_envs; i++)
        if (actions[i] < 0 || actions[i] >= CRAFTAX_CLASSIC_NUM_ACTIONS) return CRAFTAX_ERR_ARGUMENT;
    return 0;
}

static int reset_with_keys(void *states, const uint32_t *keys, int64_t num_envs, const CraftaxClassicParams *params,
                           const CraftaxEnvVariant *variant, float *obs) {
    if (!states || !keys || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (check_params(params)) return CRAFTAX_ERR_ARGUMENT;
    CraftaxClassicState *all = (CraftaxClassicState *)states;
    int failed = 0;
#pragma omp parallel num_threads(craftax_get_num_threads()) reduction(| : failed)
    {
        CraftaxClassicWorldGenScratch *scratch = NULL;
#pragma omp for schedule(dynamic, 4)
        for (int64_t i = 0; i < num_envs; i++) {
            if (!scratch) scratch = (CraftaxClassicWorldGenScratch *)malloc(sizeof(CraftaxClassicWorldGenScratch));
            if (!scratch) {
                failed = 1;
                continue;
            }
            const CraftaxKey key = {{keys[2 * i], keys[2 * i + 1]}};
            craftax_classic_reset_env(key, params, &all[i], scratch);
            if (obs) variant->render(variant->context, &all[i], obs + i * variant->obs_size, 1);
        }
        free(scratch);
    }
    return failed ? CRAFTAX_ERR_NO_MEMORY : 0;
}

static int observe(const void *states, int64_t num_envs, const CraftaxEnvVariant *variant, float *obs) {
    if (!states || !obs) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    const CraftaxClassicState *all = (const CraftaxClassicState *)states;
#pragma omp parallel for num_threads(craftax_get_num_threads()) schedule(static)
    for (int64_t i = 0; i < num_envs; i++) variant->render(variant->context, &all[i], obs + i * variant->obs_size, 0);
    return 0;
}

static int step_with_keys(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                          const CraftaxClassicParams *params, const CraftaxEnvVariant *variant, float *obs,
                          float *rewards, uint8_t *dones) {
    if (!states || !actions || !keys || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (check_params(params) || check_actions(actions, num_envs)) return CRAFTAX_ERR_ARGUMENT;
    CraftaxClassicState *all = (CraftaxClassicState *)states;
#pragma omp parallel for num_threads(craftax_get_num_threads()) schedule(dynamic, 8)
    for (int64_t i = 0; i < num_envs; i++) {
        const CraftaxKey key = {{keys[2 * i], keys[2 * i + 1]}};
        uint8_t done;
        const float r = craftax_classic_step_env(&all[i], key, actions[i], params, NULL, &done);
        if (obs) variant->render(variant->context, &all[i], obs + i * variant->obs_size, 0);
        if (rewards) rewards[i] = r;
        if (dones) dones[i] = done;
    }
    return 0;
}

static int step_autoreset(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                          const CraftaxClassicParams *params, const CraftaxEnvVariant *variant, float *obs,
                          float *final_obs, float *rewards, uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                          uint8_t *final_achievements) {
    if (!states || !actions || !keys || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (check_params(params) || check_actions(actions, num_envs)) return CRAFTAX_ERR_ARGUMENT;
    CraftaxClassicState *all = (CraftaxClassicState *)states;
    const CraftaxStepOutputs out = {obs, final_obs, rewards, dones, terminated, truncated, final_achievements, NULL};
    int failed = 0;
#pragma omp parallel num_threads(craftax_get_num_threads()) reduction(| : failed)
    {
        CraftaxClassicWorldGenScratch *scratch = NULL;
#pragma omp for schedule(dynamic, 8)
        for (int64_t i = 0; i < num_envs; i++) {
            if (!scratch) scratch = (CraftaxClassicWorldGenScratch *)malloc(sizeof(CraftaxClassicWorldGenScratch));
            if (!scratch) {
                failed = 1;
                continue;
            }
            const CraftaxKey key = {{keys[2 * i], keys[2 * i + 1]}};
            uint8_t done, term;
            const float r = craftax_classic_step_autoreset_one(
                &all[i], key, actions[i], params, variant, obs ? obs + i * variant->obs_size : NULL,
                final_obs ? final_obs + i * variant->obs_size : NULL, &done, &term,
                final_achievements ? final_achievements + i * CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS : NULL, scratch);
            if (rewards) rewards[i] = r;
            if (dones) dones[i] = done;
            craftax_write_ending(&out, i, CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS, done, term);
        }
        free(scratch);
    }
    return failed ? CRAFTAX_ERR_NO_MEMORY : 0;
}

/* Classic as the optimistic step drives it (optimistic_step.h). */
static float optimistic_step_env(void *state, CraftaxKey key, int32_t action, const void *params, void *step_scratch,
                                 uint8_t *done, uint8_t *terminated, uint8_t *achievements) {
    CraftaxClassicState *s = (CraftaxClassicState *)state;
    const CraftaxClassicParams *p = (const CraftaxClassicParams *)params;
    (void)step_scratch; /* Classic's step needs none */
    const float r = craftax_classic_step(s, key, action, p);
    *done = (uint8_t)craftax_classic_is_game_over(s, p);
    *terminated = (uint8_t)craftax_classic_is_terminated(s);
    if (achievements) memcpy(achievements, s->achievements, CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS);
    return r;
}
static void optimistic_reset_env(const CraftaxEnvVariant *variant, CraftaxKey key, const void *params, void *state,
                                 void *reset_scratch) {
    (void)variant; /* both of Classic's envs generate the world from the key itself */
    craftax_classic_reset_env(key, (const CraftaxClassicParams *)params, (CraftaxClassicState *)state,
                              (CraftaxClassicWorldGenScratch *)reset_scratch);
}
static const CraftaxOptimisticGame CLASSIC_GAME = {
    .state_size = sizeof(CraftaxClassicState),
    .num_achievements = CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS,
    .step_scratch_size = 0,
    .reset_scratch_size = sizeof(CraftaxClassicWorldGenScratch),
    .step = optimistic_step_env,
    .reset = optimistic_reset_env,
};

static int step_optimistic(void *states, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                           int32_t reset_ratio, const CraftaxClassicParams *params, const CraftaxEnvVariant *variant,
                           float *obs, float *final_obs, float *rewards, uint8_t *dones, uint8_t *terminated,
                           uint8_t *truncated, uint8_t *final_achievements, int32_t *reset_worlds) {
    if (!states || !actions || !key || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0 || num_envs > (int64_t)UINT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (reset_ratio < 1 || num_envs % reset_ratio != 0) return CRAFTAX_ERR_ARGUMENT;
    if (check_params(params) || check_actions(actions, num_envs)) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    const CraftaxStepOutputs out = {obs, final_obs, rewards, dones, terminated, truncated, final_achievements,
                                    reset_worlds};
    return craftax_optimistic_step(&CLASSIC_GAME, variant, states, actions, (CraftaxKey){{key[0], key[1]}}, num_envs,
                                   reset_ratio, params, &out);
}

int craftax_classic_reset_with_keys(void *states, const uint32_t *keys, int64_t num_envs,
                                    const CraftaxClassicParams *params, float *obs) {
    return reset_with_keys(states, keys, num_envs, params, &CRAFTAX_CLASSIC_SYMBOLIC_ENV, obs);
}

int craftax_classic_observe(const void *states, int64_t num_envs, float *obs) {
    return observe(states, num_envs, &CRAFTAX_CLASSIC_SYMBOLIC_ENV, obs);
}

int craftax_classic_step_with_keys(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                   const CraftaxClassicParams *params, float *obs, float *rewards, uint8_t *dones) {
    return step_with_keys(states, actions, keys, num_envs, params, &CRAFTAX_CLASSIC_SYMBOLIC_ENV, obs, rewards, dones);
}

int craftax_classic_step_autoreset(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                   const CraftaxClassicParams *params, float *obs, float *final_obs, float *rewards,
                                   uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                   uint8_t *final_achievements) {
    return step_autoreset(states, actions, keys, num_envs, params, &CRAFTAX_CLASSIC_SYMBOLIC_ENV, obs, final_obs,
                          rewards, dones, terminated, truncated, final_achievements);
}

int craftax_classic_step_optimistic(void *states, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                                    int32_t reset_ratio, const CraftaxClassicParams *params, float *obs,
                                    float *final_obs, float *rewards, uint8_t *dones, uint8_t *terminated,
                                    uint8_t *truncated, uint8_t *final_achievements, int32_t *reset_worlds) {
    return step_optimistic(states, actions, key, num_envs, reset_ratio, params, &CRAFTAX_CLASSIC_SYMBOLIC_ENV, obs,
                           final_obs, rewards, dones, terminated, truncated, final_achievements, reset_worlds);
}

/* The pixel env's calls. */

int craftax_classic_pixels_reset_with_keys(void *states, const uint32_t *keys, int64_t num_envs,
                                           const CraftaxClassicParams *params, float *obs, const float *atlas) {
    CRAFTAX_PIXEL_ENV_VARIANT(CRAFTAX_PIXELS_GAME_CLASSIC, obs);
    return reset_with_keys(states, keys, num_envs, params, &variant, obs);
}

int craftax_classic_pixels_observe(const void *states, int64_t num_envs, float *obs, const float *atlas) {
    CRAFTAX_PIXEL_ENV_VARIANT(CRAFTAX_PIXELS_GAME_CLASSIC, 1);
    return observe(states, num_envs, &variant, obs);
}

int craftax_classic_pixels_step_with_keys(void *states, const int32_t *actions, const uint32_t *keys,
                                          int64_t num_envs, const CraftaxClassicParams *params, float *obs,
                                          float *rewards, uint8_t *dones, const float *atlas) {
    CRAFTAX_PIXEL_ENV_VARIANT(CRAFTAX_PIXELS_GAME_CLASSIC, obs);
    return step_with_keys(states, actions, keys, num_envs, params, &variant, obs, rewards, dones);
}

int craftax_classic_pixels_step_autoreset(void *states, const int32_t *actions, const uint32_t *keys,
                                          int64_t num_envs, const CraftaxClassicParams *params, float *obs,
                                          float *final_obs, float *rewards, uint8_t *dones, uint8_t *terminated,
                                          uint8_t *truncated, uint8_t *final_achievements, const float *atlas) {
    CRAFTAX_PIXEL_ENV_VARIANT(CRAFTAX_PIXELS_GAME_CLASSIC, obs || final_obs);
    return step_autoreset(states, actions, keys, num_envs, params, &variant, obs, final_obs, rewards, dones,
                          terminated, truncated, final_achievements);
}

int craftax_classic_pixels_step_optimistic(void *states, const int32_t *actions, const uint32_t *key,
                                           int64_t num_envs, int32_t reset_ratio, const CraftaxClassicParams *params,
                                           float *obs, float *final_obs, float *rewards, uint8_t *dones,
                                           uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements,
                                           int32_t *reset_worlds, const float *atlas) {
    CRAFTAX_PIXEL_ENV_VARIANT(CRAFTAX_PIXELS_GAME_CLASSIC, obs || final_obs);
    return step_optimistic(states, actions, key, num_envs, reset_ratio, params, &variant, obs, final_obs, rewards,
                           dones, terminated, truncated, final_achievements, reset_worlds);
}

int craftax_classic_test_fractal_noise(const uint32_t *key, int32_t res0, int32_t res1, const float *angles,
                                       float *out) {
    if (!craftax_classic_noise_res_ok(res0) || !craftax_classic_noise_res_ok(res1)) return CRAFTAX_ERR_ARGUMENT;
    float grad_x[CRAFTAX_CLASSIC_NOISE_GRADS], grad_y[CRAFTAX_CLASSIC_NOISE_GRADS];
    CraftaxNoiseGrid g =
        craftax_classic_noise_grid((CraftaxKey){{key[0], key[1]}}, res0, res1, angles, grad_x, grad_y);
    float(*field)[CRAFTAX_CLASSIC_NOISE_N] = (float(*)[CRAFTAX_CLASSIC_NOISE_N])out;
    craftax_classic_noise_fill(&g, field);
    for (int i = 0; i < CRAFTAX_CLASSIC_NOISE_N; i++)
        for (int j = 0; j < CRAFTAX_CLASSIC_NOISE_N; j++) field[i][j] = craftax_noise_normalised(field[i][j], &g);
    return 0;
}

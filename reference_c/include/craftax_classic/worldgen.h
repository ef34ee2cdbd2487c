/* craftax_classic/worldgen.h: generate_world of craftax/craftax_classic/world_gen.py.
 *
 * Four noise fields (water, mountain, paths, trees) thresholded into the 64 x 64 map, three
 * ore draws, the tree draw and the always-diamond cell, then the initial player and empty
 * mob records. Keys follow upstream's chain of `rng, _rng = split(rng)` exactly, including
 * the two that upstream splits off and never reads ("Water" and "Caves"), and the tree
 * draw's use of the carry key itself.
 */
#ifndef CRAFTAX_CLASSIC_WORLDGEN_H
#define CRAFTAX_CLASSIC_WORLDGEN_H

#include "craftax/mathf.h"
#include "craftax_classic/game_logic.h"
#include "craftax_classic/noise.h"
#include "craftax_classic/state.h"


/* Caller-provided space of world generation (kept off a GPU thread's stack), shared by the
 * lanes that generate one world. */
typedef struct {
    float blend[4][CRAFTAX_CLASSIC_M][CRAFTAX_CLASSIC_M]; /* water, mountain, path, tree */
    float grad_x[4][CRAFTAX_CLASSIC_NOISE_GRADS], grad_y[4][CRAFTAX_CLASSIC_NOISE_GRADS];
} CraftaxClassicWorldGenScratch;

/* water = noise + proximity - 1 and mountain = noise + 0.05 + proximity - 1, in the forms of
 * the full game's map kernel (craftax/worldgen.h: craftax_water_field, craftax_mountain_field). */
static inline CRAFTAX_HD float craftax_classic_water_field(float blend, const CraftaxNoiseGrid *g, float proximity) {
    return fmaf(fmaf(blend, CRAFTAX_SQRT2_F, -g->min), g->inv_range, proximity) - 1.0f;
}
static inline CRAFTAX_HD float craftax_classic_mountain_field(float blend, const CraftaxNoiseGrid *g,
                                                             float proximity) {
    return fmaf(fmaf(blend, CRAFTAX_SQRT2_F, -g->min), g->inv_range, 0.05f) + proximity - 1.0f;
}

/* clip(get_distance_map(player) / 5, 0, 1), the division folded into a multiply by 0.2f. */
static inline CRAFTAX_HD float craftax_classic_proximity(int i, int j, int32_t px, int32_t py) {
    const int32_t d = (i > px ? i - px : px - i) + (j > py ? j - py : py - j);
    return craftax_clip_f32((float)d * 0.2f, 0.0f, 1.0f);
}

static inline CRAFTAX_HD void craftax_classic_clear_mobs3(CraftaxClassicMobs3 *m, int32_t health) {
    memset(m, 0, sizeof(*m));
    for (int i = 0; i < 3; i++) m->health[i] = health;
}

/* The always-diamond cell: choice(arange(4096), p=valid / valid.sum()), valid = stone: every
 * p is 0 or 1 / count (the float sum of 0/1 values is the exact count), the choice of the bit
 * mask (game_logic.h), the same in every lane (the lanes' ballots build the rows; a GPU warp
 * shares one cell choice in shared memory and its lanes share the block totals); no stone
 * gives upstream's 0/0 = NaN probabilities, whose search ends at index 0. */
static inline CRAFTAX_HD int32_t craftax_classic_diamond_cell(CraftaxKey key, const CraftaxClassicState *s, int lane,
                                                             int lanes) {
    CraftaxClassicCellChoice own;
    CraftaxClassicCellChoice *c = &own;
#ifdef __CUDA_ARCH__
    if (lanes == CRAFTAX_WARP_LANES) c = craftax_classic_warp_choice();
#endif
    int32_t num_stone = 0;
    for (int x = 0; x < CRAFTAX_CLASSIC_M; x++) {
        uint64_t row = 0;
        for (int y0 = 0; y0 < CRAFTAX_CLASSIC_M; y0 += CRAFTAX_LANE_STRIDE(lanes)) {
            const int y = y0 + CRAFTAX_LANE_FIRST(lane);
            row |= (uint64_t)craftax_lanes_ballot(s->map[x][y] == BLOCK_STONE, lanes) << y0;
        }
        if (lane == 0 || c == &own) c->rows[x] = row;
        num_stone += craftax_popc32((uint32_t)row) + craftax_popc32((uint32_t)(row >> 32));
    }
    if (c != &own) craftax_lanes_sync(lanes); /* the rows are visible to the whole warp */
    return num_stone > 0 ? craftax_classic_cell_choice(key, c, num_stone, c == &own ? 0 : lane, c == &own ? 1 : lanes)
                         : 0;
}

/* The rest of generate_world after the map pass and the diamond draw (one lane). */
static inline CRAFTAX_HD void craftax_classic_init_world_state(int32_t diamond_index, CraftaxKey state_key,
                                                              const CraftaxClassicParams *params,
                                                              CraftaxClassicState *s) {
    const int32_t px = CRAFTAX_CLASSIC_M / 2, py = CRAFTAX_CLASSIC_M / 2;
    s->map[diamond_index / CRAFTAX_CLASSIC_M][diamond_index % CRAFTAX_CLASSIC_M] =
        (uint8_t)(params->always_diamond ? BLOCK_DIAMOND : BLOCK_STONE);

    memset(s->mob_map, 0, sizeof(s->mob_map));
    s->player_position[0] = px;
    s->player_position[1] = py;
    s->player_direction = CLASSIC_ACTION_UP;
    s->player_health = s->player_food = s->player_drink = s->player_energy = 9;
    s->is_sleeping = 0;
    s->player_recover = s->player_hunger = s->player_thirst = s->player_fatigue = 0.0f;
    memset(&s->inventory, 0, sizeof(s->inventory));
    craftax_classic_clear_mobs3(&s->zombies, 1);
    craftax_classic_clear_mobs3(&s->cows, params->cow_health);
    memset(&s->skeletons, 0, sizeof(s->skeletons));
    craftax_classic_clear_mobs3(&s->arrows, 0);
    for (int i = 0; i < CRAFTAX_CLASSIC_MAX_ARROWS; i++) s->arrow_directions[i][0] = s->arrow_directions[i][1] = 1;
    memset(s->growing_plants_positions, 0, sizeof(s->growing_plants_positions));
    memset(s->growing_plants_age, 0, sizeof(s->growing_plants_age));
    memset(s->growing_plants_mask, 0, sizeof(s->growing_plants_mask));
    memset(s->achievements, 0, sizeof(s->achievements));
    s->light_level = craftax_light_level(0, params->day_length);
    s->state_rng[0] = state_key.k[0];
    s->state_rng[1] = state_key.k[1];
    s->timestep = 0;
}

/* world_gen.py:generate_world. Lanes (craftax/common.h: one on a CPU, a GPU warp's 32) share
 * the noise fields, the per-cell map pass and the always-diamond draw's mask; lane 0 writes
 * the rest of the state. The state is visible to every lane on return. */
static inline CRAFTAX_HD void craftax_classic_generate_world_lanes(CraftaxKey rng, const CraftaxClassicParams *params,
                                                                  CraftaxClassicState *s,
                                                                  CraftaxClassicWorldGenScratch *w, int lane,
                                                                  int lanes) {
    const int32_t px = CRAFTAX_CLASSIC_M / 2, py = CRAFTAX_CLASSIC_M / 2;
    CraftaxKey field_keys[4], coal_key, iron_key, diamond_key, diamond_choice_key, state_key;
    field_keys[0] = craftax_split_next(&rng);
    craftax_split_next(&rng); /* "Water" */
    field_keys[1] = craftax_split_next(&rng);
    field_keys[2] = craftax_split_next(&rng);
    craftax_split_next(&rng); /* "Caves" */
    coal_key = craftax_split_next(&rng);
    iron_key = craftax_split_next(&rng);
    diamond_key = craftax_split_next(&rng);
    field_keys[3] = craftax_split_next(&rng);
    const CraftaxKey tree_key = rng;
    diamond_choice_key = craftax_split_next(&rng);
    state_key = craftax_split_next(&rng);

    /* (64/16, 64/16), (64/16, 64/16), (64/8, 64/2), (64/4, 64/4) */
    const int res[4][2] = {{4, 4}, {4, 4}, {8, 32}, {16, 16}};
    const float *angles[4] = {params->has_angles[0] ? params->angles_water : 0,
                              params->has_angles[1] ? params->angles_mountain : 0,
                              params->has_angles[2] ? params->angles_path : 0,
                              params->has_angles[3] ? params->angles_tree : 0};
    CraftaxNoiseGrid grids[4];
    for (int f = 0; f < 4; f++) {
        grids[f] = craftax_classic_noise_grid_lanes(field_keys[f], res[f][0], res[f][1], angles[f], w->grad_x[f],
                                                    w->grad_y[f], lane, lanes);
        craftax_classic_noise_fill_lanes(&grids[f], w->blend[f], lane, lanes);
    }

    CRAFTAX_FOR_LANE(c, CRAFTAX_CLASSIC_CELLS, lane, lanes) {
        const int i = c / CRAFTAX_CLASSIC_M, j = c % CRAFTAX_CLASSIC_M;
        const uint32_t cell = (uint32_t)c;
        const float proximity = craftax_classic_proximity(i, j, px, py);
        const float water = craftax_classic_water_field(w->blend[0][i][j], &grids[0], proximity);
        const float mountain = craftax_classic_mountain_field(w->blend[1][i][j], &grids[1], proximity);
        const float path_x = craftax_noise_normalised(w->blend[2][i][j], &grids[2]);
        const float path_y = craftax_noise_normalised(w->blend[2][j][i], &grids[2]); /* path_x.T */
        const float tree_noise = craftax_noise_normalised(w->blend[3][i][j], &grids[3]);
        int block = water > 0.7f ? BLOCK_WATER : BLOCK_GRASS;
        if (water < 0.75f && water > 0.6f && block != BLOCK_WATER) block = BLOCK_SAND;
        if (mountain > 0.7f) block = BLOCK_STONE;
        if (mountain > 0.7f && path_x > 0.8f) block = BLOCK_PATH;
        if (mountain > 0.7f && path_y > 0.8f) block = BLOCK_PATH;
        if (mountain > 0.85f && water > 0.4f) block = BLOCK_PATH; /* caves */
        if (block == BLOCK_STONE && craftax_uniform(coal_key, cell) < 0.04f) block = BLOCK_COAL;
        if (block == BLOCK_STONE && craftax_uniform(iron_key, cell) < 0.03f) block = BLOCK_IRON;
        if (mountain > 0.8f && craftax_uniform(diamond_key, cell) < 0.005f && block == BLOCK_STONE)
            block = BLOCK_DIAMOND;
        /* (tree_noise > 0.5) * uniform > 0.8 */
        if (tree_noise > 0.5f && craftax_uniform(tree_key, cell) > 0.8f && block == BLOCK_GRASS) block = BLOCK_TREE;
        if (mountain > 0.85f && tree_noise > 0.7f) block = BLOCK_LAVA;
        s->map[i][j] = (uint8_t)block;
    }
    craftax_lanes_sync(lanes);
    if (lane == 0) s->map[px][py] = BLOCK_GRASS;
    craftax_lanes_sync(lanes);
    const int32_t diamond_index = craftax_classic_diamond_cell(diamond_choice_key, s, lane, lanes);
    if (lane == 0) craftax_classic_init_world_state(diamond_index, state_key, params, s);
    craftax_lanes_sync(lanes);
}

/* CraftaxClassicSymbolicEnv.reset_env: generate_world of the key itself (lanes: as
 * craftax_classic_generate_world_lanes). */
static inline CRAFTAX_HD void craftax_classic_reset_env_lanes(CraftaxKey key, const CraftaxClassicParams *params,
                                                             CraftaxClassicState *s, CraftaxClassicWorldGenScratch *w,
                                                             int lane, int lanes) {
    craftax_classic_generate_world_lanes(key, params, s, w, lane, lanes);
}
static inline CRAFTAX_HD void craftax_classic_reset_env(CraftaxKey key, const CraftaxClassicParams *params,
                                                       CraftaxClassicState *s, CraftaxClassicWorldGenScratch *w) {
    craftax_classic_reset_env_lanes(key, params, s, w, 0, 1);
}

#endif

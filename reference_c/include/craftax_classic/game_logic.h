/* craftax_classic/game_logic.h: craftax/craftax_classic/game_logic.py, one function per
 * upstream function, named after it with the craftax_classic_ prefix.
 *
 * Conventions (those of the full game's rules, craftax/game_logic_utils.h):
 *  - state is modified in place: `craftax_classic_f(s, ...)` is upstream's `state = f(state, ...)`.
 *  - JAX indexing: a read x[i] wraps a negative index once and clamps (craftax_jread); a
 *    scatter x.at[i].set wraps once and drops out-of-range writes (craftax_jwrite). Upstream
 *    reads and writes cells next to the player without bounds checks and gates the result
 *    afterwards; where the gate does not cover a write the wrap is observable (quirks in
 *    docs/CLASSIC_CONFORMANCE.md).
 *  - int32 arithmetic that upstream lets run freely (cooldowns and dead arrows' positions)
 *    wraps as XLA's does (craftax_classic_wrap_add).
 */
#ifndef CRAFTAX_CLASSIC_GAME_LOGIC_H
#define CRAFTAX_CLASSIC_GAME_LOGIC_H

#include "craftax/game_logic_utils.h"
#include "craftax/mathf.h"
#include "craftax/rng.h"
#include "craftax_classic/state.h"

#define CRAFTAX_CLASSIC_M CRAFTAX_CLASSIC_MAP_SIZE

static inline CRAFTAX_HD int32_t craftax_classic_wrap_add(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

/* map[p0, p1] as a gather reads it. */
static inline CRAFTAX_HD uint8_t craftax_classic_read(const uint8_t m[CRAFTAX_CLASSIC_M][CRAFTAX_CLASSIC_M],
                                                     const int32_t p[2]) {
    return m[craftax_jread(p[0], CRAFTAX_CLASSIC_M)][craftax_jread(p[1], CRAFTAX_CLASSIC_M)];
}
/* map.at[p0, p1].set(v) as a scatter writes it. */
static inline CRAFTAX_HD void craftax_classic_write(uint8_t m[CRAFTAX_CLASSIC_M][CRAFTAX_CLASSIC_M], const int32_t p[2],
                                                   uint8_t v) {
    const int32_t x = craftax_jwrite(p[0], CRAFTAX_CLASSIC_M), y = craftax_jwrite(p[1], CRAFTAX_CLASSIC_M);
    if (x >= 0 && y >= 0) m[x][y] = v;
}

/* One mob class of the state (Mobs), [slot]. */
typedef struct {
    int32_t (*position)[2];
    int32_t *health;
    uint8_t *mask;
    int32_t *attack_cooldown;
    int n;
} CraftaxClassicMobsRef;
static inline CRAFTAX_HD CraftaxClassicMobsRef craftax_classic_mobs3_ref(CraftaxClassicMobs3 *m) {
    CraftaxClassicMobsRef r = {m->position, m->health, m->mask, m->attack_cooldown, 3};
    return r;
}
static inline CRAFTAX_HD CraftaxClassicMobsRef craftax_classic_mobs2_ref(CraftaxClassicMobs2 *m) {
    CraftaxClassicMobsRef r = {m->position, m->health, m->mask, m->attack_cooldown, 2};
    return r;
}

/* DIRECTIONS[i] as a gather of the 16-row table reads it. */
static inline CRAFTAX_HD const int32_t *craftax_classic_direction(int32_t i) {
    return CRAFTAX_CLASSIC_DIRECTIONS[craftax_jread(i, 16)];
}

/* ---- game_logic.py ------------------------------------------------------------------ */

static inline CRAFTAX_HD int craftax_classic_is_game_over(const CraftaxClassicState *s,
                                                         const CraftaxClassicParams *params) {
    const int done_steps = s->timestep >= params->max_timesteps;
    const int in_lava = craftax_classic_read(s->map, s->player_position) == BLOCK_LAVA;
    return done_steps || in_lava || s->player_health <= 0;
}

static inline CRAFTAX_HD int craftax_classic_in_bounds(const int32_t p[2]) {
    return p[0] >= 0 && p[0] < CRAFTAX_CLASSIC_M && p[1] >= 0 && p[1] < CRAFTAX_CLASSIC_M;
}

static inline CRAFTAX_HD int craftax_classic_is_in_wall(const CraftaxClassicState *s, const int32_t p[2]) {
    return craftax_classic_is_solid_block(craftax_classic_read(s->map, p));
}

static inline CRAFTAX_HD int craftax_classic_is_in_mob(const CraftaxClassicState *s, const int32_t p[2]) {
    return craftax_classic_read(s->mob_map, p) || (s->player_position[0] == p[0] && s->player_position[1] == p[1]);
}

static inline CRAFTAX_HD int craftax_classic_is_position_in_bounds_not_in_wall_not_in_mob_not_in_lava(
    const CraftaxClassicState *s, const int32_t p[2]) {
    return craftax_classic_in_bounds(p) && !craftax_classic_is_in_wall(s, p) && !craftax_classic_is_in_mob(s, p) &&
           craftax_classic_read(s->map, p) != BLOCK_LAVA;
}

static inline CRAFTAX_HD int32_t craftax_classic_get_player_attack_damage(const CraftaxClassicState *s) {
    int32_t d = 1;
    d = craftax_max_i32(d, 2 * s->inventory.wood_sword);
    d = craftax_max_i32(d, 3 * s->inventory.stone_sword);
    return craftax_max_i32(d, 5 * s->inventory.iron_sword);
}

/* The age of the first plant (mask or not) at `position` set to 0 (plant 0 where none is). */
static inline CRAFTAX_HD void craftax_classic_update_plants_with_eat(CraftaxClassicState *s, const int32_t position[2]) {
    int index = 0;
    for (int i = CRAFTAX_CLASSIC_MAX_GROWING_PLANTS - 1; i >= 0; i--)
        if (s->growing_plants_positions[i][0] == position[0] && s->growing_plants_positions[i][1] == position[1])
            index = i;
    s->growing_plants_age[index] = 0;
}

/* do_action's attack on one mob class: the first living mob of the class at the target cell
 * loses the player's damage; then every slot's mask becomes health > 0 (upstream recomputes
 * the whole mask, so a slot that is not alive but has health > 0, as world generation leaves
 * zombies and cows, comes alive on any DO: a reproduced quirk). Returns whether a mob was
 * attacked; *killed whether the target's mask went from set to clear. */
static inline CRAFTAX_HD int craftax_classic_attack_mobs(CraftaxClassicMobsRef m, const int32_t target[2],
                                                        int32_t damage, int *killed) {
    int index = -1;
    for (int i = 0; i < m.n; i++)
        if (index < 0 && m.mask[i] && m.position[i][0] == target[0] && m.position[i][1] == target[1]) index = i;
    const int attacking = index >= 0;
    if (!attacking) index = 0;
    m.health[index] = m.health[index] - damage * attacking;
    const uint8_t old_mask = m.mask[index];
    for (int i = 0; i < m.n; i++) m.mask[i] = m.health[i] > 0;
    *killed = old_mask && !m.mask[index];
    return attacking;
}

static inline CRAFTAX_HD void craftax_classic_do_action(CraftaxClassicState *s, CraftaxKey rng, int32_t action) {
    if (action != CLASSIC_ACTION_DO) return; /* upstream computes it all and selects the old state */
    const int32_t *d = craftax_classic_direction(s->player_direction);
    const int32_t bp[2] = {s->player_position[0] + d[0], s->player_position[1] + d[1]};
    const int32_t damage = craftax_classic_get_player_attack_damage(s);

    int killed_zombie, killed_cow, killed_skeleton;
    const int attacked_zombie = craftax_classic_attack_mobs(craftax_classic_mobs3_ref(&s->zombies), bp, damage,
                                                            &killed_zombie);
    s->achievements[CLASSIC_ACH_DEFEAT_ZOMBIE] |= (uint8_t)killed_zombie;
    const int attacked_cow = craftax_classic_attack_mobs(craftax_classic_mobs3_ref(&s->cows), bp, damage, &killed_cow);
    s->achievements[CLASSIC_ACH_EAT_COW] |= (uint8_t)killed_cow;
    if (killed_cow) {
        s->player_food = craftax_min_i32(9, s->player_food + 6);
        s->player_hunger = 0.0f;
    }
    const int attacked_skeleton = craftax_classic_attack_mobs(craftax_classic_mobs2_ref(&s->skeletons), bp, damage,
                                                              &killed_skeleton);
    s->achievements[CLASSIC_ACH_DEFEAT_SKELETON] |= (uint8_t)killed_skeleton;
    const int did_attack_mob = attacked_zombie || attacked_cow || attacked_skeleton;
    const int did_kill_mob = killed_zombie || killed_cow || killed_skeleton;
    craftax_classic_write(s->mob_map, bp, (uint8_t)(craftax_classic_read(s->mob_map, bp) && !did_kill_mob));

    /* Blocks. The sapling draw is made whatever the target. */
    const CraftaxKey sapling_key = craftax_split_next(&rng);
    if (!craftax_classic_in_bounds(bp) || did_attack_mob) return;
    const uint8_t block = craftax_classic_read(s->map, bp);
    CraftaxClassicInventory *inv = &s->inventory;
    uint8_t *ach = s->achievements;
    if (block == BLOCK_TREE) {
        s->map[bp[0]][bp[1]] = BLOCK_GRASS;
        inv->wood += 1;
        ach[CLASSIC_ACH_COLLECT_WOOD] = 1;
    } else if (block == BLOCK_STONE && inv->wood_pickaxe) {
        s->map[bp[0]][bp[1]] = BLOCK_PATH;
        inv->stone += 1;
        ach[CLASSIC_ACH_COLLECT_STONE] = 1;
    } else if (block == BLOCK_COAL && inv->wood_pickaxe) {
        s->map[bp[0]][bp[1]] = BLOCK_PATH;
        inv->coal += 1;
        ach[CLASSIC_ACH_COLLECT_COAL] = 1;
    } else if (block == BLOCK_IRON && inv->stone_pickaxe) {
        s->map[bp[0]][bp[1]] = BLOCK_PATH;
        inv->iron += 1;
        ach[CLASSIC_ACH_COLLECT_IRON] = 1;
    } else if (block == BLOCK_DIAMOND && inv->iron_pickaxe) {
        s->map[bp[0]][bp[1]] = BLOCK_PATH;
        inv->diamond += 1;
        ach[CLASSIC_ACH_COLLECT_DIAMOND] = 1;
    } else if (block == BLOCK_GRASS) {
        if (craftax_uniform(sapling_key, 0) < 0.1f) {
            inv->sapling += 1;
            ach[CLASSIC_ACH_COLLECT_SAPLING] = 1;
        }
    } else if (block == BLOCK_WATER) {
        s->player_drink = craftax_min_i32(9, s->player_drink + 1);
        s->player_thirst = 0.0f;
        ach[CLASSIC_ACH_COLLECT_DRINK] = 1;
    } else if (block == BLOCK_RIPE_PLANT) {
        s->map[bp[0]][bp[1]] = BLOCK_PLANT;
        s->player_food = craftax_min_i32(9, s->player_food + 4);
        s->player_hunger = 0.0f;
        ach[CLASSIC_ACH_EAT_PLANT] = 1;
        craftax_classic_update_plants_with_eat(s, bp);
    }
}

static inline CRAFTAX_HD int craftax_classic_is_near_block(const CraftaxClassicState *s, int block) {
    for (int k = 0; k < 8; k++) {
        const int32_t p[2] = {s->player_position[0] + CRAFTAX_CLASSIC_CLOSE_BLOCKS[k][0],
                              s->player_position[1] + CRAFTAX_CLASSIC_CLOSE_BLOCKS[k][1]};
        if (craftax_classic_in_bounds(p) && s->map[p[0]][p[1]] == block) return 1;
    }
    return 0;
}

static inline CRAFTAX_HD void craftax_classic_do_crafting(CraftaxClassicState *s, int32_t action) {
    if (action < CLASSIC_ACTION_MAKE_WOOD_PICKAXE) return;
    const int table = craftax_classic_is_near_block(s, BLOCK_CRAFTING_TABLE);
    const int furnace = craftax_classic_is_near_block(s, BLOCK_FURNACE);
    CraftaxClassicInventory *inv = &s->inventory;
    uint8_t *ach = s->achievements;
    const int has_iron_kit = inv->wood >= 1 && inv->stone >= 1 && inv->iron >= 1 && inv->coal >= 1;
    switch (action) {
    case CLASSIC_ACTION_MAKE_WOOD_PICKAXE:
        if (table && inv->wood >= 1) {
            inv->wood -= 1;
            inv->wood_pickaxe += 1;
            ach[CLASSIC_ACH_MAKE_WOOD_PICKAXE] = 1;
        }
        break;
    case CLASSIC_ACTION_MAKE_STONE_PICKAXE:
        if (table && inv->wood >= 1 && inv->stone >= 1) {
            inv->wood -= 1;
            inv->stone -= 1;
            inv->stone_pickaxe += 1;
            ach[CLASSIC_ACH_MAKE_STONE_PICKAXE] = 1;
        }
        break;
    case CLASSIC_ACTION_MAKE_IRON_PICKAXE:
        if (table && furnace && has_iron_kit) {
            inv->wood -= 1;
            inv->stone -= 1;
            inv->iron -= 1;
            inv->coal -= 1;
            inv->iron_pickaxe += 1;
            ach[CLASSIC_ACH_MAKE_IRON_PICKAXE] = 1;
        }
        break;
    case CLASSIC_ACTION_MAKE_WOOD_SWORD:
        if (table && inv->wood >= 1) {
            inv->wood -= 1;
            inv->wood_sword += 1;
            ach[CLASSIC_ACH_MAKE_WOOD_SWORD] = 1;
        }
        break;
    case CLASSIC_ACTION_MAKE_STONE_SWORD:
        if (table && inv->wood >= 1 && inv->stone >= 1) {
            inv->wood -= 1;
            inv->stone -= 1;
            inv->stone_sword += 1;
            ach[CLASSIC_ACH_MAKE_STONE_SWORD] = 1;
        }
        break;
    case CLASSIC_ACTION_MAKE_IRON_SWORD:
        if (table && furnace && has_iron_kit) {
            inv->wood -= 1;
            inv->stone -= 1;
            inv->iron -= 1;
            inv->coal -= 1;
            inv->iron_sword += 1;
            ach[CLASSIC_ACH_MAKE_IRON_SWORD] = 1;
        }
        break;
    default:
        break;
    }
}

/* The first free plant slot takes the sapling (none is taken when all ten are in use). */
static inline CRAFTAX_HD void craftax_classic_add_new_growing_plant(CraftaxClassicState *s, const int32_t position[2]) {
    for (int i = 0; i < CRAFTAX_CLASSIC_MAX_GROWING_PLANTS; i++)
        if (!s->growing_plants_mask[i]) {
            s->growing_plants_positions[i][0] = position[0];
            s->growing_plants_positions[i][1] = position[1];
            s->growing_plants_age[i] = 0;
            s->growing_plants_mask[i] = 1;
            return;
        }
}

static inline CRAFTAX_HD float craftax_classic_calculate_light_level(int32_t timestep,
                                                                    const CraftaxClassicParams *params) {
    return craftax_light_level(timestep, params->day_length);
}

/* Placing at the facing cell, gated by in_bounds and not in a mob (or the player). The
 * furnace needs one stone and no nearby table; stone can go onto water. */
static inline CRAFTAX_HD void craftax_classic_place_block(CraftaxClassicState *s, int32_t action) {
    if (action < CLASSIC_ACTION_PLACE_STONE || action > CLASSIC_ACTION_PLACE_PLANT) return;
    const int32_t *d = craftax_classic_direction(s->player_direction);
    const int32_t bp[2] = {s->player_position[0] + d[0], s->player_position[1] + d[1]};
    if (!craftax_classic_in_bounds(bp) || craftax_classic_is_in_mob(s, bp)) return;
    const uint8_t block = s->map[bp[0]][bp[1]];
    const int in_wall = craftax_classic_is_solid_block(block);
    CraftaxClassicInventory *inv = &s->inventory;
    uint8_t *ach = s->achievements;
    if (action == CLASSIC_ACTION_PLACE_TABLE && !in_wall && inv->wood >= 2) {
        s->map[bp[0]][bp[1]] = BLOCK_CRAFTING_TABLE;
        inv->wood -= 2;
        ach[CLASSIC_ACH_PLACE_TABLE] = 1;
    } else if (action == CLASSIC_ACTION_PLACE_FURNACE && !in_wall && inv->stone > 0) {
        s->map[bp[0]][bp[1]] = BLOCK_FURNACE;
        inv->stone -= 1;
        ach[CLASSIC_ACH_PLACE_FURNACE] = 1;
    } else if (action == CLASSIC_ACTION_PLACE_STONE && (block == BLOCK_WATER || !in_wall) && inv->stone > 0) {
        s->map[bp[0]][bp[1]] = BLOCK_STONE;
        inv->stone -= 1;
        ach[CLASSIC_ACH_PLACE_STONE] = 1;
    } else if (action == CLASSIC_ACTION_PLACE_PLANT && block == BLOCK_GRASS && inv->sapling > 0) {
        s->map[bp[0]][bp[1]] = BLOCK_PLANT;
        inv->sapling -= 1;
        ach[CLASSIC_ACH_PLACE_PLANT] = 1;
        craftax_classic_add_new_growing_plant(s, bp);
    }
}

/* Moving into lava is always allowed (the episode then ends); the cell read wraps, so lava
 * on the opposite edge lets the player step one cell off the map. */
static inline CRAFTAX_HD void craftax_classic_move_player(CraftaxClassicState *s, int32_t action) {
    const int32_t *d = craftax_classic_direction(action);
    const int32_t proposed[2] = {s->player_position[0] + d[0], s->player_position[1] + d[1]};
    const int valid = craftax_classic_is_position_in_bounds_not_in_wall_not_in_mob_not_in_lava(s, proposed) ||
                      craftax_classic_read(s->map, proposed) == BLOCK_LAVA;
    if (valid) {
        s->player_position[0] = proposed[0];
        s->player_position[1] = proposed[1];
    }
    if (d[0] != 0 || d[1] != 0) s->player_direction = action;
}

static inline CRAFTAX_HD int32_t craftax_classic_sign(int32_t x) { return (x > 0) - (x < 0); }

/* The step towards the player that zombies and skeletons take: along an axis drawn with
 * choice(arange(2), p=(|delta| == max|delta|) / sum|delta|). */
static inline CRAFTAX_HD void craftax_classic_towards_player(const CraftaxClassicState *s, const int32_t pos[2],
                                                            CraftaxKey key, int32_t out[2]) {
    const int32_t a0 = craftax_max_i32(s->player_position[0] - pos[0], pos[0] - s->player_position[0]);
    const int32_t a1 = craftax_max_i32(s->player_position[1] - pos[1], pos[1] - s->player_position[1]);
    const int32_t mx = craftax_max_i32(a0, a1);
    const float sum = (float)(a0 + a1);
    const float p[2] = {(a0 == mx ? 1.0f : 0.0f) / sum, (a1 == mx ? 1.0f : 0.0f) / sum};
    float scratch[2];
    const int32_t axis = craftax_choice_p(key, p, 2, scratch);
    out[0] = out[1] = 0;
    out[axis] = craftax_classic_sign(s->player_position[axis] - pos[axis]);
}

static inline CRAFTAX_HD int32_t craftax_classic_distance_to_player(const CraftaxClassicState *s, const int32_t p[2]) {
    const int32_t a0 = p[0] - s->player_position[0], a1 = p[1] - s->player_position[1];
    return (a0 < 0 ? -a0 : a0) + (a1 < 0 ? -a1 : a1);
}

/* The end of every mob's move: the old mob_map cell cleared if alive, the mask kept while
 * within the despawn distance (measured from the old position), the new cell marked. */
static inline CRAFTAX_HD void craftax_classic_commit_mob_move(CraftaxClassicState *s, CraftaxClassicMobsRef m, int i,
                                                             const int32_t position[2],
                                                             const CraftaxClassicParams *params) {
    const int should_not_despawn = craftax_classic_distance_to_player(s, m.position[i]) < params->mob_despawn_distance;
    craftax_classic_write(s->mob_map, m.position[i],
                          (uint8_t)(craftax_classic_read(s->mob_map, m.position[i]) && !m.mask[i]));
    const uint8_t new_mask = (uint8_t)(m.mask[i] && should_not_despawn);
    craftax_classic_write(s->mob_map, position, (uint8_t)(craftax_classic_read(s->mob_map, position) || new_mask));
    m.position[i][0] = position[0];
    m.position[i][1] = position[1];
    m.mask[i] = new_mask;
}

static inline CRAFTAX_HD CraftaxKey craftax_classic_move_zombie(CraftaxClassicState *s, CraftaxKey rng, int i,
                                                               const CraftaxClassicParams *params) {
    CraftaxClassicMobsRef z = craftax_classic_mobs3_ref(&s->zombies);
    const int32_t *pos = z.position[i];
    const int32_t *rd = CRAFTAX_CLASSIC_DIRECTIONS[1 + craftax_randint(craftax_split_next(&rng), 0, 0, 4)];
    const int32_t random_proposed[2] = {pos[0] + rd[0], pos[1] + rd[1]};
    int32_t pd[2];
    craftax_classic_towards_player(s, pos, craftax_split_next(&rng), pd);
    const int32_t player_proposed[2] = {pos[0] + pd[0], pos[1] + pd[1]};
    const int32_t distance = craftax_classic_distance_to_player(s, pos);
    const float close_draw = craftax_uniform(craftax_split_next(&rng), 0);
    const int close = distance < 10 && close_draw < 0.75f;
    int32_t proposed[2] = {close ? player_proposed[0] : random_proposed[0],
                           close ? player_proposed[1] : random_proposed[1]};
    const int attacking = distance == 1 && z.attack_cooldown[i] <= 0 && z.mask[i];
    if (attacking) {
        proposed[0] = pos[0];
        proposed[1] = pos[1];
    }
    const int32_t damage = s->is_sleeping ? 7 : 2;
    z.attack_cooldown[i] = attacking ? 5 : craftax_classic_wrap_add(z.attack_cooldown[i], -1);
    if (attacking) {
        if (s->is_sleeping) s->achievements[CLASSIC_ACH_WAKE_UP] = 1;
        s->player_health -= damage;
        s->is_sleeping = 0;
    }
    const int valid = craftax_classic_is_position_in_bounds_not_in_wall_not_in_mob_not_in_lava(s, proposed);
    const int32_t position[2] = {valid ? proposed[0] : pos[0], valid ? proposed[1] : pos[1]};
    const CraftaxKey next = craftax_split_next(&rng);
    craftax_classic_commit_mob_move(s, z, i, position, params);
    return next; /* the zombie scan carries the second half of its last split */
}

static inline CRAFTAX_HD CraftaxKey craftax_classic_move_cow(CraftaxClassicState *s, CraftaxKey rng, int i,
                                                            const CraftaxClassicParams *params) {
    CraftaxClassicMobsRef c = craftax_classic_mobs3_ref(&s->cows);
    const int32_t *pos = c.position[i];
    /* DIRECTIONS[1:9]: half of the draws are no move */
    const int32_t *rd = CRAFTAX_CLASSIC_DIRECTIONS[1 + craftax_randint(craftax_split_next(&rng), 0, 0, 8)];
    const int32_t proposed[2] = {pos[0] + rd[0], pos[1] + rd[1]};
    const int valid = craftax_classic_is_position_in_bounds_not_in_wall_not_in_mob_not_in_lava(s, proposed);
    const int32_t position[2] = {valid ? proposed[0] : pos[0], valid ? proposed[1] : pos[1]};
    craftax_classic_commit_mob_move(s, c, i, position, params);
    return rng;
}

static inline CRAFTAX_HD CraftaxKey craftax_classic_move_skeleton(CraftaxClassicState *s, CraftaxKey rng, int i,
                                                                 const CraftaxClassicParams *params) {
    CraftaxClassicMobsRef k = craftax_classic_mobs2_ref(&s->skeletons);
    const int32_t *pos = k.position[i];
    const int32_t *rd = CRAFTAX_CLASSIC_DIRECTIONS[1 + craftax_randint(craftax_split_next(&rng), 0, 0, 4)];
    const int32_t random_proposed[2] = {pos[0] + rd[0], pos[1] + rd[1]};
    int32_t pd[2];
    craftax_classic_towards_player(s, pos, craftax_split_next(&rng), pd);
    const int32_t distance = craftax_classic_distance_to_player(s, pos);
    const int far_from_player = distance >= 10, too_close = distance <= 3;
    int32_t proposed[2] = {random_proposed[0], random_proposed[1]};
    if (far_from_player) {
        proposed[0] = pos[0] + pd[0];
        proposed[1] = pos[1] + pd[1];
    }
    if (too_close) {
        proposed[0] = pos[0] - pd[0];
        proposed[1] = pos[1] - pd[1];
    }
    const float keep_draw = craftax_uniform(craftax_split_next(&rng), 0);
    if (!(keep_draw > 0.85f)) {
        proposed[0] = random_proposed[0];
        proposed[1] = random_proposed[1];
    }
    /* shoots at distance 4..5, or when too close and its proposed cell is blocked */
    int attacking = (distance >= 4 && distance <= 5) ||
                    (too_close && !craftax_classic_is_position_in_bounds_not_in_wall_not_in_mob_not_in_lava(s, proposed));
    attacking = attacking && k.attack_cooldown[i] <= 0 && k.mask[i];

    int num_arrows = 0, arrow = -1;
    for (int a = 0; a < CRAFTAX_CLASSIC_MAX_ARROWS; a++) {
        num_arrows += s->arrows.mask[a];
        if (arrow < 0 && !s->arrows.mask[a]) arrow = a;
    }
    if (attacking && num_arrows < CRAFTAX_CLASSIC_MAX_ARROWS) {
        s->arrows.position[arrow][0] = pos[0];
        s->arrows.position[arrow][1] = pos[1];
        s->arrows.mask[arrow] = 1;
        s->arrow_directions[arrow][0] = pd[0];
        s->arrow_directions[arrow][1] = pd[1];
    }
    if (attacking) {
        proposed[0] = pos[0];
        proposed[1] = pos[1];
    }
    k.attack_cooldown[i] = attacking ? 4 : craftax_classic_wrap_add(k.attack_cooldown[i], -1);
    const int valid = craftax_classic_is_position_in_bounds_not_in_wall_not_in_mob_not_in_lava(s, proposed);
    const int32_t position[2] = {valid ? proposed[0] : pos[0], valid ? proposed[1] : pos[1]};
    craftax_classic_commit_mob_move(s, k, i, position, params);
    return rng;
}

/* Arrows fly on whatever they meet: a dead arrow keeps moving too (it changes nothing); a
 * living one stops at walls other than water, mobs and the player (2 damage, wakes without
 * the achievement), and turns a table or furnace it reaches into path. */
static inline CRAFTAX_HD void craftax_classic_move_arrow(CraftaxClassicState *s, int i) {
    int32_t *pos = s->arrows.position[i];
    const int32_t proposed[2] = {craftax_classic_wrap_add(pos[0], s->arrow_directions[i][0]),
                                 craftax_classic_wrap_add(pos[1], s->arrow_directions[i][1])};
    const int in_player = proposed[0] == s->player_position[0] && proposed[1] == s->player_position[1];
    const uint8_t block = craftax_classic_read(s->map, proposed);
    const int in_wall = craftax_classic_is_solid_block(block) && block != BLOCK_WATER;
    const int continue_move = craftax_classic_in_bounds(proposed) && !in_wall && !craftax_classic_is_in_mob(s, proposed);
    const uint8_t mask = s->arrows.mask[i];
    const int hit_player = in_player && mask;
    const int removing_block = (block == BLOCK_FURNACE || block == BLOCK_CRAFTING_TABLE) && mask;
    pos[0] = proposed[0];
    pos[1] = proposed[1];
    s->arrows.mask[i] = (uint8_t)(continue_move && mask);
    s->player_health -= 2 * hit_player;
    if (hit_player) s->is_sleeping = 0;
    craftax_classic_write(s->map, proposed, removing_block ? (uint8_t)BLOCK_PATH : block);
}

static inline CRAFTAX_HD void craftax_classic_update_mobs(CraftaxClassicState *s, CraftaxKey rng,
                                                         const CraftaxClassicParams *params) {
    craftax_split_next(&rng); /* each scan's `rng, _rng = split(rng)` carries rng and drops _rng */
    for (int i = 0; i < CRAFTAX_CLASSIC_MAX_ZOMBIES; i++) rng = craftax_classic_move_zombie(s, rng, i, params);
    craftax_split_next(&rng);
    for (int i = 0; i < CRAFTAX_CLASSIC_MAX_COWS; i++) rng = craftax_classic_move_cow(s, rng, i, params);
    craftax_split_next(&rng);
    for (int i = 0; i < CRAFTAX_CLASSIC_MAX_SKELETONS; i++) rng = craftax_classic_move_skeleton(s, rng, i, params);
    for (int i = 0; i < CRAFTAX_CLASSIC_MAX_ARROWS; i++) craftax_classic_move_arrow(s, i);
}

/* choice(arange(4096), p=mask / mask.sum()) of spawn_mobs and of world generation's
 * always-diamond cell, from the 0/1 mask held as rows of bits (bit y of rows[x]: cell (x, y)),
 * so no 4096-float array is built (a GPU thread per env could not keep one). Every p[j] is 0
 * or q = 1 / count, so the blocked cumulative sum of rng.h (craftax_cumsum_f32: blocks of 16
 * sequential, the 256 block totals scanned the same way) at j is t[k] = ((0 + q) + q) ...
 * with k the cells of j's block up to j, plus, past the first block, that scan of the block
 * totals at the block before (craftax_cumsum_f32_lanes of the totals t[popc(block)], whose
 * lanes share the 256 totals on a GPU warp): evaluated where searchsorted looks (the
 * cell_choice.h argument for the full game's 48 x 48 map). */
typedef struct {
    uint64_t rows[CRAFTAX_CLASSIC_M];
    float t[17];
    float block_scan[CRAFTAX_CLASSIC_CELLS / 16]; /* the cumulative sum of the block totals */
    float block_prefix[16];                        /* craftax_cumsum_f32_lanes' second level */
} CraftaxClassicCellChoice;

static inline CRAFTAX_HD uint32_t craftax_classic_block_bits(const CraftaxClassicCellChoice *c, int b) {
    return (uint32_t)(c->rows[b >> 2] >> (16 * (b & 3))) & 0xFFFFu;
}
static inline CRAFTAX_HD float craftax_classic_cell_cumsum_at(const CraftaxClassicCellChoice *c, int j) {
    const int b = j >> 4;
    const float first = c->t[craftax_popc32(craftax_classic_block_bits(c, b) & (0xFFFFu >> (15 - (j & 15))))];
    return j < 16 ? first : first + c->block_scan[b - 1];
}
/* choice(key, arange(4096), p=mask / count) for count > 0 cells in c->rows, in every lane
 * (lanes: common.h; with lanes > 1, c is the warp's, and the lanes share the block totals and
 * their scan, then each runs the same search). Ends synced. */
static inline CRAFTAX_HD int32_t craftax_classic_cell_choice(CraftaxKey key, CraftaxClassicCellChoice *c,
                                                            int32_t count, int lane, int lanes) {
    const float q = 1.0f / (float)count;
    if (lane == 0) {
        c->t[0] = 0.0f;
        for (int k = 1; k <= 16; k++) c->t[k] = c->t[k - 1] + q;
    }
    craftax_lanes_sync(lanes);
    CRAFTAX_FOR_LANE(b, CRAFTAX_CLASSIC_CELLS / 16, lane, lanes)
    c->block_scan[b] = c->t[craftax_popc32(craftax_classic_block_bits(c, b))];
    craftax_lanes_sync(lanes);
    /* in place: each index is read before it is written, by the lane that writes it */
    craftax_cumsum_f32_lanes(c->block_scan, CRAFTAX_CLASSIC_CELLS / 16, c->block_scan, c->block_prefix, lane, lanes);
    craftax_lanes_sync(lanes);
    const float r = craftax_classic_cell_cumsum_at(c, CRAFTAX_CLASSIC_CELLS - 1) * (1.0f - craftax_uniform(key, 0));
    uint32_t high;
#define CRAFTAX_CLASSIC_CUMSUM_AT(j) craftax_classic_cell_cumsum_at(c, (j))
    CRAFTAX_SEARCHSORTED_LEFT(CRAFTAX_CLASSIC_CELLS, r, CRAFTAX_CLASSIC_CUMSUM_AT, high);
#undef CRAFTAX_CLASSIC_CUMSUM_AT
    craftax_lanes_sync(lanes); /* c is free again */
    return (int32_t)high < CRAFTAX_CLASSIC_CELLS ? (int32_t)high : CRAFTAX_CLASSIC_CELLS - 1;
}

/* Cell classes that a mob class spawns on. */
enum { CLASSIC_SPAWN_GRASS, CLASSIC_SPAWN_GRASS_OR_PATH, CLASSIC_SPAWN_PATH };

static inline CRAFTAX_HD int craftax_classic_is_spawn_block(uint8_t b, int cells) {
    return cells == CLASSIC_SPAWN_GRASS  ? b == BLOCK_GRASS
           : cells == CLASSIC_SPAWN_PATH ? b == BLOCK_PATH
                                         : (b == BLOCK_GRASS || b == BLOCK_PATH);
}

/* The spawn candidates of a mob class into c->rows: the free cells of the class at distance
 * (min_distance, despawn distance) from the player; returns their number. Only the box
 * |dx|, |dy| < despawn distance can hold such a cell (the distance is |dx| + |dy|). */
static inline CRAFTAX_HD int32_t craftax_classic_spawn_candidates(const CraftaxClassicState *s, int cells,
                                                                 int32_t min_distance,
                                                                 const CraftaxClassicParams *params,
                                                                 CraftaxClassicCellChoice *c) {
    const int32_t px = s->player_position[0], py = s->player_position[1];
    const int32_t r = craftax_min_i32(craftax_max_i32(params->mob_despawn_distance, 0), CRAFTAX_CLASSIC_M);
    const int32_t x_lo = craftax_max_i32(px - r + 1, 0), x_hi = craftax_min_i32(px + r - 1, CRAFTAX_CLASSIC_M - 1);
    int32_t count = 0;
    for (int x = 0; x < CRAFTAX_CLASSIC_M; x++) c->rows[x] = 0;
    for (int32_t x = x_lo; x <= x_hi; x++) {
        /* dist = dx + |dy|: dist < despawn <=> |dy| <= far, dist > min_distance <=> |dy| >= near,
         * so the row's candidates lie in the runs py - far .. py - near and py + near .. py + far */
        const int32_t dx = x > px ? x - px : px - x;
        const int32_t far = craftax_min_i32(params->mob_despawn_distance - 1 - dx, CRAFTAX_CLASSIC_M);
        const int32_t near = craftax_max_i32(min_distance + 1 - dx, 0);
        if (far < near) continue;
        uint64_t row = 0;
        for (int side = 0; side < 2; side++) {
            const int32_t first = craftax_max_i32(side == 0 ? py - far : py + craftax_max_i32(near, 1), 0);
            const int32_t last = craftax_min_i32(side == 0 ? py - near : py + far, CRAFTAX_CLASSIC_M - 1);
            for (int32_t y = first; y <= last; y++)
                row |= (uint64_t)(craftax_classic_is_spawn_block(s->map[x][y], cells) && !s->mob_map[x][y]) << y;
        }
        c->rows[x] = row;
        count += craftax_popc32((uint32_t)row) + craftax_popc32((uint32_t)(row >> 32));
    }
    return count;
}

/* The most warps in a block of the GPU step kernels (each has its cell choice in shared memory). */
#define CRAFTAX_CLASSIC_BLOCK_WARPS 4
#ifdef __CUDA_ARCH__
/* craftax_classic_spawn_candidates by the 32 lanes of a warp together, into the warp's c:
 * lanes take consecutive cells of a box row (one transaction a map for the warp, where a
 * thread alone reads its box cell by cell), rows go four at a time with their loads first,
 * and a row's candidates come together by ballot. The same cells: the box's cells with
 * min_distance < |dx| + |dy| < despawn distance. Every lane gets the count; ends synced. */
#define CRAFTAX_CLASSIC_WARP_ROWS 4
static __device__ __forceinline__ int32_t craftax_classic_spawn_candidates_warp(const CraftaxClassicState *s,
                                                                               int cells, int32_t min_distance,
                                                                               const CraftaxClassicParams *params,
                                                                               CraftaxClassicCellChoice *c,
                                                                               int lane) {
    const int32_t px = s->player_position[0], py = s->player_position[1];
    const int32_t despawn = params->mob_despawn_distance;
    /* the rows of craftax_classic_spawn_candidates, and every column its runs can reach
     * (|dy| <= 64: a player one cell off the map still sees the far edge) */
    const int32_t r = craftax_min_i32(craftax_max_i32(despawn, 0), CRAFTAX_CLASSIC_M);
    const int32_t ry = craftax_min_i32(craftax_max_i32(despawn, 0), CRAFTAX_CLASSIC_M + 1);
    const int32_t x_lo = craftax_max_i32(px - r + 1, 0), x_hi = craftax_min_i32(px + r - 1, CRAFTAX_CLASSIC_M - 1);
    const int32_t y_lo = craftax_max_i32(py - ry + 1, 0), y_hi = craftax_min_i32(py + ry - 1, CRAFTAX_CLASSIC_M - 1);
    c->rows[lane] = 0;
    c->rows[lane + CRAFTAX_WARP_LANES] = 0;
    __syncwarp();
    int32_t count = 0;
    for (int32_t y0 = y_lo; y0 <= y_hi; y0 += CRAFTAX_WARP_LANES) {
        const int32_t y = y0 + lane;
        const int in_cols = y <= y_hi;
        const int32_t dy = y > py ? y - py : py - y;
        for (int32_t x0 = x_lo; x0 <= x_hi; x0 += CRAFTAX_CLASSIC_WARP_ROWS) {
            uint8_t b[CRAFTAX_CLASSIC_WARP_ROWS], mob[CRAFTAX_CLASSIC_WARP_ROWS];
#pragma unroll
            for (int k = 0; k < CRAFTAX_CLASSIC_WARP_ROWS; k++) {
                const int in_box = in_cols && x0 + k <= x_hi;
                b[k] = in_box ? s->map[x0 + k][y] : (uint8_t)0;
                mob[k] = in_box ? s->mob_map[x0 + k][y] : (uint8_t)1;
            }
#pragma unroll
            for (int k = 0; k < CRAFTAX_CLASSIC_WARP_ROWS; k++) {
                if (x0 + k > x_hi) break; /* the same in every lane */
                const int32_t x = x0 + k, dx = x > px ? x - px : px - x, dist = dx + dy;
                const int cand = in_cols && dist < despawn && dist > min_distance &&
                                 craftax_classic_is_spawn_block(b[k], cells) && !mob[k];
                const uint32_t bits = __ballot_sync(0xffffffffu, cand); /* bit l: cell y0 + l */
                if (bits && lane == 0) c->rows[x] |= (uint64_t)bits << y0;
                count += craftax_popc32(bits);
            }
        }
    }
    __syncwarp();
    return count;
}

/* A warp's CraftaxClassicCellChoice in shared memory, for the lanes that scan and choose
 * together. */
static __device__ __forceinline__ CraftaxClassicCellChoice *craftax_classic_warp_choice(void) {
    __shared__ CraftaxClassicCellChoice space[CRAFTAX_CLASSIC_BLOCK_WARPS];
    if (threadIdx.x >= CRAFTAX_WARP_LANES * CRAFTAX_CLASSIC_BLOCK_WARPS) __trap();
    return &space[threadIdx.x / CRAFTAX_WARP_LANES];
}
#endif

/* The cell choice of one class of spawn_mobs: the candidate count (0 where !can) and, where
 * can and the count is > 0, the chosen cell index into *index (key: the choice's key).
 * share_scans (GPU only): each lane steps its own env and all 32 lanes of the warp call this
 * together; the lanes that need a spawn are then served one after another by the whole warp
 * (craftax_classic_spawn_candidates_warp and the lanes' cell choice). Every lane gets its
 * own result. */
static inline CRAFTAX_HD int32_t craftax_classic_spawn_cell(const CraftaxClassicState *s, int can, int cells,
                                                           int32_t min_distance, CraftaxKey key,
                                                           const CraftaxClassicParams *params, int share_scans,
                                                           int32_t *index) {
#ifdef __CUDA_ARCH__
    if (share_scans) {
        CraftaxClassicCellChoice *c = craftax_classic_warp_choice();
        const int me = (int)(threadIdx.x % CRAFTAX_WARP_LANES);
        __syncwarp(); /* the lanes' own writes so far are visible to the whole warp */
        uint32_t need = __ballot_sync(0xffffffffu, can);
        int32_t count = 0;
        while (need) {
            const int owner = __ffs(need) - 1;
            need &= need - 1;
            const CraftaxClassicState *so = (const CraftaxClassicState *)(uintptr_t)__shfl_sync(
                0xffffffffu, (unsigned long long)(uintptr_t)s, owner);
            const CraftaxKey key_o = {{__shfl_sync(0xffffffffu, key.k[0], owner),
                                       __shfl_sync(0xffffffffu, key.k[1], owner)}};
            const int32_t t = craftax_classic_spawn_candidates_warp(so, cells, min_distance, params, c, me);
            const int32_t chosen = t > 0 ? craftax_classic_cell_choice(key_o, c, t, me, CRAFTAX_WARP_LANES) : 0;
            if (me == owner) {
                count = t;
                *index = chosen;
            }
        }
        return count;
    }
#endif
    (void)share_scans;
    if (!can) return 0;
    CraftaxClassicCellChoice c;
    const int32_t count = craftax_classic_spawn_candidates(s, cells, min_distance, params, &c);
    if (count > 0) *index = craftax_classic_cell_choice(key, &c, count, 0, 1);
    return count;
}

/* One class of spawn_mobs: a chance draw, then (where it passes and a cell is free) a cell
 * from choice(arange(4096), p=mask / mask.sum()) of the class's candidates
 * (craftax_classic_spawn_cell); the first free slot takes it. */
static inline CRAFTAX_HD void craftax_classic_spawn_class(CraftaxClassicState *s, CraftaxKey *rng,
                                                         CraftaxClassicMobsRef m, float chance, int cells,
                                                         int32_t min_distance, int32_t health,
                                                         const CraftaxClassicParams *params, int share_scans) {
    int alive = 0, slot = -1;
    for (int i = 0; i < m.n; i++) {
        alive += m.mask[i];
        if (slot < 0 && !m.mask[i]) slot = i;
    }
    if (slot < 0) slot = 0;
    const float chance_draw = craftax_uniform(craftax_split_next(rng), 0);
    int can_spawn = alive < m.n && chance_draw < chance;
    const CraftaxKey cell_key = craftax_split_next(rng);
    int32_t index = 0;
    const int32_t count =
        craftax_classic_spawn_cell(s, can_spawn, cells, min_distance, cell_key, params, share_scans, &index);
    can_spawn = can_spawn && count > 0;
    int32_t position[2] = {m.position[slot][0], m.position[slot][1]};
    if (can_spawn) {
        position[0] = index / CRAFTAX_CLASSIC_M;
        position[1] = index % CRAFTAX_CLASSIC_M;
        m.position[slot][0] = position[0];
        m.position[slot][1] = position[1];
        m.health[slot] = health;
        m.mask[slot] = 1;
    }
    craftax_classic_write(s->mob_map, position, (uint8_t)(craftax_classic_read(s->mob_map, position) || m.mask[slot]));
}

/* zombie chance = base + night * (1 - light)^2, in XLA's fused form. */
static inline CRAFTAX_HD float craftax_classic_zombie_spawn_chance(const CraftaxClassicState *s,
                                                                  const CraftaxClassicParams *params) {
    const float d = 1.0f - s->light_level;
    return fmaf(params->spawn_zombie_night_chance, d * d, params->spawn_zombie_base_chance);
}

/* share_scans: see craftax_classic_spawn_cell (0 on a CPU). */
static inline CRAFTAX_HD void craftax_classic_spawn_mobs(CraftaxClassicState *s, CraftaxKey rng,
                                                        const CraftaxClassicParams *params, int share_scans) {
    craftax_classic_spawn_class(s, &rng, craftax_classic_mobs3_ref(&s->cows), params->spawn_cow_chance,
                                CLASSIC_SPAWN_GRASS, 3, params->cow_health, params, share_scans);
    craftax_classic_spawn_class(s, &rng, craftax_classic_mobs3_ref(&s->zombies),
                                craftax_classic_zombie_spawn_chance(s, params), CLASSIC_SPAWN_GRASS_OR_PATH, 9,
                                params->zombie_health, params, share_scans);
    craftax_classic_spawn_class(s, &rng, craftax_classic_mobs2_ref(&s->skeletons), params->spawn_skeleton_chance,
                                CLASSIC_SPAWN_PATH, 9, params->skeleton_health, params, share_scans);
}

static inline CRAFTAX_HD void craftax_classic_update_plants(CraftaxClassicState *s) {
    for (int i = 0; i < CRAFTAX_CLASSIC_MAX_GROWING_PLANTS; i++) {
        s->growing_plants_age[i] = craftax_classic_wrap_add(s->growing_plants_age[i], 1) * s->growing_plants_mask[i];
        if (s->growing_plants_age[i] >= 600)
            craftax_classic_write(s->map, s->growing_plants_positions[i], BLOCK_RIPE_PLANT);
    }
}

static inline CRAFTAX_HD void craftax_classic_update_player_intrinsics(CraftaxClassicState *s, int32_t action) {
    if (action == CLASSIC_ACTION_SLEEP && s->player_energy < 9) s->is_sleeping = 1;
    if (s->player_energy >= 9 && s->is_sleeping) {
        s->is_sleeping = 0;
        s->achievements[CLASSIC_ACH_WAKE_UP] = 1;
    }
    const int sleeping = s->is_sleeping;

    float hunger = s->player_hunger + (sleeping ? 0.5f : 1.0f);
    if (hunger > 25.0f) {
        s->player_food = craftax_max_i32(s->player_food - 1, 0);
        hunger = 0.0f;
    }
    s->player_hunger = hunger;

    float thirst = s->player_thirst + (sleeping ? 0.5f : 1.0f);
    if (thirst > 20.0f) {
        s->player_drink = craftax_max_i32(s->player_drink - 1, 0);
        thirst = 0.0f;
    }
    s->player_thirst = thirst;

    float fatigue = sleeping ? fminf(s->player_fatigue - 1.0f, 0.0f) : s->player_fatigue + 1.0f;
    int32_t energy = s->player_energy;
    if (fatigue > 30.0f) {
        energy = craftax_max_i32(s->player_energy - 1, 0);
        fatigue = 0.0f;
    }
    if (fatigue < -10.0f) {
        energy = craftax_min_i32(s->player_energy + 1, 9);
        fatigue = 0.0f;
    }
    s->player_fatigue = fatigue;
    s->player_energy = energy;

    const int all_necessities = s->player_food > 0 && s->player_drink > 0 && (s->player_energy > 0 || sleeping);
    const float recover_add = all_necessities ? (sleeping ? 2.0f : 1.0f) : (sleeping ? -0.5f : -1.0f);
    float recover = s->player_recover + recover_add;
    int32_t health = s->player_health;
    if (recover > 25.0f) {
        health = craftax_min_i32(s->player_health + 1, 9);
        recover = 0.0f;
    }
    if (recover < -15.0f) {
        health = s->player_health - 1;
        recover = 0.0f;
    }
    s->player_recover = recover;
    s->player_health = health;
}

static inline CRAFTAX_HD void craftax_classic_cap_inventory(CraftaxClassicState *s) {
#ifdef PYCRAFTAX_TEST_PERTURB
    /* The deliberately wrong rule of the perturbed test build (conformance/test_porting.py; never
     * defined by setup.py or cuda/Makefile): the inventory holds at most 8 of each item. */
    const int32_t cap = 8;
#else
    const int32_t cap = 9;
#endif
    int32_t *v = &s->inventory.wood;
    for (int k = 0; k < (int)(sizeof(s->inventory) / sizeof(int32_t)); k++) v[k] = craftax_min_i32(v[k], cap);
}

static inline CRAFTAX_HD void craftax_classic_update_health(CraftaxClassicState *s) {
    if (craftax_classic_read(s->map, s->player_position) == BLOCK_LAVA) s->player_health = 0;
    s->player_health = craftax_max_i32(0, s->player_health);
}

/* reward = (sum of achievements after - before, float32) + (health after - before) * 0.1,
 * the sum fused into the multiply as XLA does it. */
static inline CRAFTAX_HD float craftax_classic_step_reward(const uint8_t *init_achievements, int32_t init_health,
                                                          const CraftaxClassicState *s) {
    int32_t after = 0, before = 0;
    for (int i = 0; i < CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS; i++) {
        after += s->achievements[i];
        before += init_achievements[i];
    }
    return fmaf((float)(s->player_health - init_health), 0.1f, (float)after - (float)before);
}

/* game_logic.py:craftax_step. Modifies *s in place; returns the reward. share_scans: a GPU
 * warp's lanes, one env each, share spawn_mobs' scans (craftax_classic_spawn_cell; every lane
 * of the warp must step then); 0 on a CPU. */
static inline CRAFTAX_HD float craftax_classic_step_sharing(CraftaxClassicState *s, CraftaxKey rng, int32_t action,
                                                           const CraftaxClassicParams *params, int share_scans) {
    uint8_t init_achievements[CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS];
    memcpy(init_achievements, s->achievements, sizeof(init_achievements));
    const int32_t init_health = s->player_health;

    if (s->is_sleeping) action = CLASSIC_ACTION_NOOP;
    craftax_classic_do_crafting(s, action);
    craftax_classic_do_action(s, craftax_split_next(&rng), action);
    craftax_classic_place_block(s, action);
    craftax_classic_move_player(s, action);
    craftax_classic_update_mobs(s, craftax_split_next(&rng), params);
    craftax_classic_spawn_mobs(s, craftax_split_next(&rng), params, share_scans);
    craftax_classic_update_plants(s);
    craftax_classic_update_player_intrinsics(s, action);
    craftax_classic_cap_inventory(s);
    craftax_classic_update_health(s);

    const float reward = craftax_classic_step_reward(init_achievements, init_health, s);
    const CraftaxKey state_rng = craftax_split_next(&rng);
    s->timestep = s->timestep + 1;
    s->light_level = craftax_classic_calculate_light_level(s->timestep, params);
    s->state_rng[0] = state_rng.k[0];
    s->state_rng[1] = state_rng.k[1];
    return reward;
}

static inline CRAFTAX_HD float craftax_classic_step(CraftaxClassicState *s, CraftaxKey rng, int32_t action,
                                                   const CraftaxClassicParams *params) {
    return craftax_classic_step_sharing(s, rng, action, params, 0);
}

#endif

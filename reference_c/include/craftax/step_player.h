/* craftax/step_player.h: the player-side subsystems of craftax 1.6.1
 * craftax/craftax/game_logic.py:craftax_step, one function per upstream function:
 * change_floor, do_crafting, do_action (add_items_from_chest, update_plants_with_eat),
 * place_block (add_new_growing_plant), shoot_projectile, cast_spell, drink_potion,
 * read_book, enchant, boss_logic, level_up_attributes, move_player.
 *
 * `craftax_f(state, [rng,] action, params)` modifies the state in place and equals
 * upstream's `state = f(...)` line of craftax_step. Upstream evaluates every branch and
 * selects; the C code branches only where the unselected branch leaves no trace (the
 * key is an argument, so skipped draws change nothing). Where upstream's "unused"
 * branch still writes (chests_opened, boss_progress, achievement 0, ...) the C code does
 * the same write. Index reads and writes follow JAX (game_logic_utils.h).
 */
#ifndef CRAFTAX_STEP_PLAYER_H
#define CRAFTAX_STEP_PLAYER_H

#include "game_logic_utils.h"
#include "rng.h"

static inline CRAFTAX_HD void craftax_facing(const CraftaxState *state, int32_t out[2]) {
    const int32_t d = craftax_jread(state->player_direction, 16);
    out[0] = state->player_position[0] + CRAFTAX_DIRECTIONS[d][0];
    out[1] = state->player_position[1] + CRAFTAX_DIRECTIONS[d][1];
}

/* ---- change_floor ----------------------------------------------------------------- */

static inline CRAFTAX_HD void craftax_change_floor(CraftaxState *state, int32_t action, const CraftaxParams *params) {
    const int32_t l = state->player_level;
    const uint8_t item = craftax_read_level_map(&state->item_map[craftax_jread(l, 9)][0][0], state->player_position);
    const int on_down = item == ITEM_LADDER_DOWN;
    int down = action == ACTION_DESCEND &&
               (params->god_mode || (on_down && state->monsters_killed[craftax_jread(l, 9)] >= CRAFTAX_MONSTERS_KILLED_TO_CLEAR_LEVEL));
    down = down && l < CRAFTAX_NUM_LEVELS - 1;
    const int32_t *down_pos = state->up_ladders[craftax_jread(l + 1, 9)];
    const int on_up = item == ITEM_LADDER_UP;
    int up = action == ACTION_ASCEND && (params->god_mode || on_up);
    up = up && l > 0;
    const int32_t *up_pos = state->down_ladders[craftax_jread(l - 1, 9)];
    const int not_moving = !(up || down);
    const int32_t delta = down - up;
    int32_t pos[2];
    for (int k = 0; k < 2; k++) pos[k] = state->player_position[k] * not_moving + down * down_pos[k] + up * up_pos[k];
    const int32_t new_level = l + delta;
    const int32_t ach = CRAFTAX_LEVEL_ACHIEVEMENT_MAP[craftax_jread(new_level, 9)];
    const uint8_t old_ach = state->achievements[ach];
    state->achievements[ach] = (uint8_t)(new_level != 0 || old_ach);
    const int new_floor = new_level != 0 && !old_ach;
    state->player_level = new_level;
    state->player_position[0] = pos[0];
    state->player_position[1] = pos[1];
    state->player_xp += new_floor;
}

/* ---- do_crafting ------------------------------------------------------------------ */

static inline CRAFTAX_HD void craftax_do_crafting(CraftaxState *state, int32_t action) {
    /* Every recipe below needs its own action, so other actions change nothing; they return
     * before the 16 map reads of the two is_near_block checks. */
    switch (action) {
    case ACTION_MAKE_WOOD_PICKAXE: case ACTION_MAKE_STONE_PICKAXE: case ACTION_MAKE_IRON_PICKAXE:
    case ACTION_MAKE_DIAMOND_PICKAXE: case ACTION_MAKE_WOOD_SWORD: case ACTION_MAKE_STONE_SWORD:
    case ACTION_MAKE_IRON_SWORD: case ACTION_MAKE_DIAMOND_SWORD: case ACTION_MAKE_IRON_ARMOUR:
    case ACTION_MAKE_DIAMOND_ARMOUR: case ACTION_MAKE_ARROW: case ACTION_MAKE_TORCH: break;
    default: return;
    }
    const int table = craftax_is_near_block(state, BLOCK_CRAFTING_TABLE);
    const int furnace = craftax_is_near_block(state, BLOCK_FURNACE);
    CraftaxInventory *inv = &state->inventory;
    int c;

    c = action == ACTION_MAKE_WOOD_PICKAXE && inv->wood >= 1 && table && inv->pickaxe < 1;
    if (c) { inv->wood -= 1; inv->pickaxe = 1; }
    c = action == ACTION_MAKE_STONE_PICKAXE && inv->wood >= 1 && inv->stone >= 1 && table && inv->pickaxe < 2;
    if (c) { inv->stone -= 1; inv->wood -= 1; inv->pickaxe = 2; }
    c = action == ACTION_MAKE_IRON_PICKAXE && inv->wood >= 1 && inv->stone >= 1 && inv->iron >= 1 && inv->coal >= 1 &&
        furnace && table && inv->pickaxe < 3;
    if (c) { inv->iron -= 1; inv->wood -= 1; inv->stone -= 1; inv->coal -= 1; inv->pickaxe = 3; }
    c = action == ACTION_MAKE_DIAMOND_PICKAXE && inv->wood >= 1 && inv->diamond >= 3 && table && inv->pickaxe < 4;
    if (c) { inv->diamond -= 3; inv->wood -= 1; inv->pickaxe = 4; }

    c = action == ACTION_MAKE_WOOD_SWORD && inv->wood >= 1 && table && inv->sword < 1;
    if (c) { inv->wood -= 1; inv->sword = 1; }
    c = action == ACTION_MAKE_STONE_SWORD && inv->stone >= 1 && inv->wood >= 1 && table && inv->sword < 2;
    if (c) { inv->wood -= 1; inv->stone -= 1; inv->sword = 2; }
    c = action == ACTION_MAKE_IRON_SWORD && inv->iron >= 1 && inv->wood >= 1 && inv->stone >= 1 && inv->coal >= 1 &&
        furnace && table && inv->sword < 3;
    if (c) { inv->wood -= 1; inv->iron -= 1; inv->stone -= 1; inv->coal -= 1; inv->sword = 3; }
    c = action == ACTION_MAKE_DIAMOND_SWORD && inv->diamond >= 2 && inv->wood >= 1 && table && inv->sword < 4;
    if (c) { inv->wood -= 1; inv->diamond -= 2; inv->sword = 4; }

    {
        int any = 0, idx = 0;
        for (int k = 3; k >= 0; k--)
            if (inv->armour[k] < 1) { any = 1; idx = k; }
        c = action == ACTION_MAKE_IRON_ARMOUR && any && inv->iron >= 3 && inv->coal >= 3 && table && furnace;
        if (c) { inv->iron -= 3; inv->coal -= 3; inv->armour[idx] = 1; }
        state->achievements[ACH_MAKE_IRON_ARMOUR] |= (uint8_t)c;
    }
    {
        int any = 0, idx = 0;
        for (int k = 3; k >= 0; k--)
            if (inv->armour[k] < 2) { any = 1; idx = k; }
        c = action == ACTION_MAKE_DIAMOND_ARMOUR && any && inv->diamond >= 3 && table;
        if (c) { inv->diamond -= 3; inv->armour[idx] = 2; }
        state->achievements[ACH_MAKE_DIAMOND_ARMOUR] |= (uint8_t)c;
    }
    c = action == ACTION_MAKE_ARROW && inv->stone >= 1 && inv->wood >= 1 && table && inv->arrows < 99;
    if (c) { inv->wood -= 1; inv->stone -= 1; inv->arrows += 2; }
    c = action == ACTION_MAKE_TORCH && inv->coal >= 1 && inv->wood >= 1 && table && inv->torches < 99;
    if (c) { inv->wood -= 1; inv->coal -= 1; inv->torches += 4; }
}

/* ---- do_action -------------------------------------------------------------------- */

/* update_plants_with_eat: the growing_plants_age that results (written to `age`). */
static inline CRAFTAX_HD void craftax_update_plants_with_eat(const CraftaxState *state, const int32_t plant_position[2],
                                                             int32_t age[CRAFTAX_MAX_GROWING_PLANTS]) {
    int idx = 0;
    for (int i = CRAFTAX_MAX_GROWING_PLANTS - 1; i >= 0; i--)
        if (state->growing_plants_positions[i][0] == plant_position[0] &&
            state->growing_plants_positions[i][1] == plant_position[1])
            idx = i;
    for (int i = 0; i < CRAFTAX_MAX_GROWING_PLANTS; i++) age[i] = state->growing_plants_age[i];
    age[idx] = 0;
}

/* add_items_from_chest(rng, state, inventory, is_opening_chest): updates *inventory.
 * All 14 draws are made whatever the flags (they are cheap and keep the code linear). */
static inline CRAFTAX_HD void craftax_add_items_from_chest(CraftaxKey rng, const CraftaxState *state,
                                                           CraftaxInventory *inventory, int is_opening_chest) {
    const float ore_p[5] = {0.3f, 0.3f, 0.15f, 0.125f, 0.125f};
    const float tool_p[4] = {0.4f, 0.3f, 0.2f, 0.1f};
    float scratch[5];
    const int oc = is_opening_chest;

    const int torch = craftax_uniform(craftax_split_next(&rng), 0) < 0.6f;
    const int32_t torch_amount = craftax_randint(craftax_split_next(&rng), 0, 4, 8) * torch;

    const int ore = craftax_uniform(craftax_split_next(&rng), 0) < 0.6f;
    const int32_t ore_id = craftax_choice_p(craftax_split_next(&rng), ore_p, 5, scratch);
    const CraftaxKey ore_key = craftax_split_next(&rng);
    const int32_t coal_amount = craftax_randint(ore_key, 0, 1, 4) * (ore_id == 0) * ore;
    const int32_t iron_amount = craftax_randint(ore_key, 0, 1, 3) * (ore_id == 1) * ore;
    const int32_t diamond_amount = craftax_randint(ore_key, 0, 1, 2) * (ore_id == 2) * ore;
    const int32_t sapphire_amount = craftax_randint(ore_key, 0, 1, 2) * (ore_id == 3) * ore;
    const int32_t ruby_amount = craftax_randint(ore_key, 0, 1, 2) * (ore_id == 4) * ore;

    const int potion = craftax_uniform(craftax_split_next(&rng), 0) < 0.5f;
    const int32_t potion_index = craftax_randint(craftax_split_next(&rng), 0, 0, 6);
    const int32_t potion_amount = craftax_randint(craftax_split_next(&rng), 0, 1, 3);

    const int arrows = craftax_uniform(craftax_split_next(&rng), 0) < 0.25f;
    const int32_t arrows_amount = craftax_randint(craftax_split_next(&rng), 0, 1, 5) * arrows;

    const int tool = craftax_uniform(craftax_split_next(&rng), 0) < 0.2f;
    const int32_t tool_id = craftax_randint(craftax_split_next(&rng), 0, 0, 2);

    const int looting_pickaxe = tool && tool_id == 0 && oc;
    int32_t pickaxe_level = (craftax_choice_p(craftax_split_next(&rng), tool_p, 4, scratch) + 1) * looting_pickaxe;
    pickaxe_level = craftax_max_i32(pickaxe_level, inventory->pickaxe);
    const int32_t new_pickaxe = looting_pickaxe ? pickaxe_level : inventory->pickaxe;

    const int looting_sword = tool && tool_id == 1 && oc;
    int32_t sword_level = (craftax_choice_p(craftax_split_next(&rng), tool_p, 4, scratch) + 1) * looting_sword;
    sword_level = craftax_max_i32(sword_level, inventory->sword);
    const int32_t new_sword = looting_sword ? sword_level : inventory->sword;

    const int l = craftax_jread(state->player_level, 9);
    const int looting_bow = oc && state->player_level == 1 && !state->chests_opened[l];
    const int looting_book = !state->chests_opened[l] && (state->player_level == 3 || state->player_level == 4);

    inventory->torches += torch_amount * oc;
    inventory->coal += coal_amount * oc;
    inventory->iron += iron_amount * oc;
    inventory->diamond += diamond_amount * oc;
    inventory->sapphire += sapphire_amount * oc;
    inventory->ruby += ruby_amount * oc;
    inventory->arrows += arrows_amount * oc;
    inventory->pickaxe = new_pickaxe;
    inventory->sword = new_sword;
    inventory->potions[potion_index] += potion_amount * potion * oc;
    inventory->bow = looting_bow ? 1 : inventory->bow;
    inventory->books += looting_book * oc;
}

static inline CRAFTAX_HD void craftax_do_action(CraftaxState *state, CraftaxKey rng, int32_t action,
                                                const CraftaxParams *params) {
    (void)params;
    if (action != ACTION_DO) return; /* upstream selects old_state; the key is not state */

    int32_t bp[2];
    craftax_facing(state, bp);
    float damage[3];
    craftax_get_player_damage_vector(state, damage);
    int did_attack_mob, did_kill_mob;
    craftax_attack_mob(state, bp, damage, 1, &did_attack_mob, &did_kill_mob);

    const int l = state->player_level;
    const uint8_t b = craftax_read_level_map(&state->map[l][0][0], bp);
    const CraftaxInventory *inv0 = &state->inventory;
    CraftaxInventory inv = state->inventory;
    int32_t new_block = b;

    /* trees */
    if (b == BLOCK_TREE) { new_block = BLOCK_GRASS; inv.wood += 1; }
    if (b == BLOCK_FIRE_TREE) { new_block = BLOCK_FIRE_GRASS; inv.wood += 1; }
    if (b == BLOCK_ICE_SHRUB) { new_block = BLOCK_ICE_GRASS; inv.wood += 1; }
    if (b == BLOCK_STONE && inv0->pickaxe >= 1) { new_block = BLOCK_PATH; inv.stone += 1; }
    if (b == BLOCK_FURNACE) new_block = BLOCK_PATH;
    if (b == BLOCK_CRAFTING_TABLE) new_block = BLOCK_PATH;
    if (b == BLOCK_COAL && inv0->pickaxe >= 1) { new_block = BLOCK_PATH; inv.coal += 1; }
    if (b == BLOCK_IRON && inv0->pickaxe >= 2) { new_block = BLOCK_PATH; inv.iron += 1; }
    if (b == BLOCK_DIAMOND && inv0->pickaxe >= 3) { new_block = BLOCK_PATH; inv.diamond += 1; }
    if (b == BLOCK_SAPPHIRE && inv0->pickaxe >= 4) { new_block = BLOCK_PATH; inv.sapphire += 1; }
    if (b == BLOCK_RUBY && inv0->pickaxe >= 4) { new_block = BLOCK_PATH; inv.ruby += 1; }

    const CraftaxKey sapling_key = craftax_split_next(&rng);
    if (b == BLOCK_GRASS && craftax_uniform(sapling_key, 0) < 0.1f) inv.sapling += 1;

    const int drinking = b == BLOCK_WATER || b == BLOCK_FOUNTAIN;
    const int32_t new_drink =
        drinking ? craftax_min_i32(craftax_get_max_drink(state), state->player_drink + 1) : state->player_drink;
    const float new_thirst = drinking ? 0.0f : state->player_thirst;

    const int eating = b == BLOCK_RIPE_PLANT;
    if (eating) new_block = BLOCK_PLANT;
    const int32_t new_food =
        eating ? craftax_min_i32(craftax_get_max_food(state), state->player_food + 4) : state->player_food;
    const float new_hunger = eating ? 0.0f : state->player_hunger;
    int32_t new_age[CRAFTAX_MAX_GROWING_PLANTS];
    craftax_update_plants_with_eat(state, bp, new_age);

    if (b == BLOCK_STALAGMITE && inv0->pickaxe >= 1) { new_block = BLOCK_PATH; inv.stone += 1; }

    const int opening_chest = b == BLOCK_CHEST;
    if (opening_chest) new_block = BLOCK_PATH;
    const CraftaxKey chest_key = craftax_split_next(&rng);
    craftax_add_items_from_chest(chest_key, state, &inv, opening_chest);

    const int damaging_boss = b == BLOCK_NECROMANCER && craftax_is_boss_vulnerable(state) && craftax_is_fighting_boss(state);

    const int ok = craftax_in_bounds(state, bp) && !did_attack_mob;
    if (ok) {
        craftax_store_u8(&state->map[l][bp[0]][bp[1]], (uint8_t)new_block);
        state->inventory = inv;
        state->player_drink = new_drink;
        state->player_thirst = new_thirst;
        state->player_food = new_food;
        state->player_hunger = new_hunger;
        if (eating)
            for (int i = 0; i < CRAFTAX_MAX_GROWING_PLANTS; i++) state->growing_plants_age[i] = new_age[i];
        state->achievements[ACH_COLLECT_DRINK] |= (uint8_t)drinking;
        state->achievements[ACH_EAT_PLANT] |= (uint8_t)eating;
        state->achievements[ACH_OPEN_CHEST] |= (uint8_t)opening_chest;
        state->achievements[ACH_DAMAGE_NECROMANCER] |= (uint8_t)damaging_boss;
    }
    /* not gated by the in-bounds check */
    state->chests_opened[l] |= (uint8_t)opening_chest;
    state->boss_progress += damaging_boss;
    state->boss_timesteps_to_spawn_this_round =
        damaging_boss ? CRAFTAX_BOSS_FIGHT_SPAWN_TURNS : state->boss_timesteps_to_spawn_this_round;
}

/* ---- place_block ------------------------------------------------------------------ */

/* add_new_growing_plant(state, position, is_placing_sapling): applied in place. */
static inline CRAFTAX_HD void craftax_add_new_growing_plant(CraftaxState *state, const int32_t position[2],
                                                            int is_placing_sapling) {
    int idx = -1;
    for (int i = 0; i < CRAFTAX_MAX_GROWING_PLANTS; i++)
        if (!state->growing_plants_mask[i]) { idx = i; break; }
    if (idx < 0 || !is_placing_sapling) return;
    state->growing_plants_positions[idx][0] = position[0];
    state->growing_plants_positions[idx][1] = position[1];
    state->growing_plants_age[idx] = 0;
    state->growing_plants_mask[idx] = 1;
}

static inline CRAFTAX_HD void craftax_place_block(CraftaxState *state, int32_t action, const CraftaxParams *params) {
    (void)params;
    int32_t p[2];
    craftax_facing(state, p);
    if (!(craftax_in_bounds(state, p) && !craftax_is_in_mob(state, p))) return;
    const int l = state->player_level;
    const uint8_t b = state->map[l][p[0]][p[1]];
    const uint8_t item = state->item_map[l][p[0]][p[1]];
    const int solid_or_item = CRAFTAX_SOLID_BLOCK_MAPPING[b] || item != ITEM_NONE;
    CraftaxInventory *inv = &state->inventory;

    const int table = action == ACTION_PLACE_TABLE && !solid_or_item && inv->wood >= 2;
    if (table) { state->map[l][p[0]][p[1]] = BLOCK_CRAFTING_TABLE; inv->wood -= 2; }
    state->achievements[ACH_PLACE_TABLE] |= (uint8_t)table;

    const int furnace = action == ACTION_PLACE_FURNACE && !solid_or_item && inv->stone > 0;
    if (furnace) { state->map[l][p[0]][p[1]] = BLOCK_FURNACE; inv->stone -= 1; }
    state->achievements[ACH_PLACE_FURNACE] |= (uint8_t)furnace;

    const int stone = action == ACTION_PLACE_STONE && (b == BLOCK_WATER || !solid_or_item) && inv->stone > 0;
    if (stone) { state->map[l][p[0]][p[1]] = BLOCK_STONE; inv->stone -= 1; }
    state->achievements[ACH_PLACE_STONE] |= (uint8_t)stone;

    const int torch = action == ACTION_PLACE_TORCH && CRAFTAX_CAN_PLACE_ITEM_MAPPING[b] && item == ITEM_NONE &&
                      inv->torches > 0;
    if (torch) {
        state->item_map[l][p[0]][p[1]] = ITEM_TORCH;
        inv->torches -= 1;
        for (int i = 0; i < 9; i++) {
            const int x = p[0] - 4 + i;
            if (x < 0 || x >= CRAFTAX_MAP_SIZE) continue;
            for (int j = 0; j < 9; j++) {
                const int y = p[1] - 4 + j;
                if (y < 0 || y >= CRAFTAX_MAP_SIZE) continue;
                float v = CRAFTAX_TORCH_LIGHT_MAP[i][j] + state->light_map[l][x][y];
                state->light_map[l][x][y] = craftax_jmin_f32(craftax_jmax_f32(v, 0.0f), 1.0f);
            }
        }
    }
    state->achievements[ACH_PLACE_TORCH] |= (uint8_t)torch;

    const int sapling = action == ACTION_PLACE_PLANT && state->map[l][p[0]][p[1]] == BLOCK_GRASS && inv->sapling > 0 &&
                        state->item_map[l][p[0]][p[1]] == ITEM_NONE;
    if (sapling) { state->map[l][p[0]][p[1]] = BLOCK_PLANT; inv->sapling -= 1; }
    state->achievements[ACH_PLACE_PLANT] |= (uint8_t)sapling;
    craftax_add_new_growing_plant(state, p, sapling);
}

/* ---- projectiles and spells ------------------------------------------------------- */

static inline CRAFTAX_HD int craftax_player_projectile_count(const CraftaxState *state) {
    int n = 0;
    for (int i = 0; i < CRAFTAX_MAX_PLAYER_PROJECTILES; i++) n += state->mobs[state->player_level].player_projectiles.mask[i] != 0;
    return n;
}

static inline CRAFTAX_HD void craftax_shoot_projectile(CraftaxState *state, int32_t action, const CraftaxParams *params) {
    (void)params;
    const int shooting = action == ACTION_SHOOT_ARROW && state->inventory.bow >= 1 && state->inventory.arrows >= 1 &&
                         craftax_player_projectile_count(state) < CRAFTAX_MAX_PLAYER_PROJECTILES;
    const int32_t d = craftax_jread(state->player_direction, 16);
    const int32_t pos[2] = {state->player_position[0], state->player_position[1]};
    craftax_spawn_projectile(state, 1, pos, shooting, CRAFTAX_DIRECTIONS[d], PROJECTILE_ARROW2);
    state->inventory.arrows -= shooting;
    state->achievements[ACH_FIRE_BOW] |= (uint8_t)shooting;
}

static inline CRAFTAX_HD void craftax_cast_spell(CraftaxState *state, int32_t action, const CraftaxParams *params) {
    (void)params;
    const int can = state->player_mana >= 2 && craftax_player_projectile_count(state) < CRAFTAX_MAX_PLAYER_PROJECTILES;
    const int fire = action == ACTION_CAST_FIREBALL && can && state->learned_spells[0];
    const int ice = action == ACTION_CAST_ICEBALL && can && state->learned_spells[1];
    const int casting = fire || ice;
    const int32_t type = fire * PROJECTILE_FIREBALL + ice * PROJECTILE_ICEBALL;
    const int32_t d = craftax_jread(state->player_direction, 16);
    const int32_t pos[2] = {state->player_position[0], state->player_position[1]};
    craftax_spawn_projectile(state, 1, pos, casting, CRAFTAX_DIRECTIONS[d], type);
    const int32_t ach = fire * ACH_CAST_FIREBALL + ice * ACH_CAST_ICEBALL;
    state->achievements[ach] |= (uint8_t)casting;
    state->player_mana -= casting * 2;
}

/* ---- potions, books, enchanting --------------------------------------------------- */

static inline CRAFTAX_HD void craftax_drink_potion(CraftaxState *state, int32_t action) {
    int32_t idx = -1;
    int drinking = 0;
    for (int c = 0; c < 6; c++) {
        const int this_one = action == ACTION_DRINK_POTION_RED + c && state->inventory.potions[c] > 0;
        if (this_one) idx = c;
        drinking = drinking || this_one;
    }
    const int32_t effect = state->potion_mapping[craftax_jread(idx, 6)];
    const int32_t dh = drinking * (effect == 0) * 8 + drinking * (effect == 1) * (-3);
    const int32_t dm = drinking * (effect == 2) * 8 + drinking * (effect == 3) * (-3);
    const int32_t de = drinking * (effect == 4) * 8 + drinking * (effect == 5) * (-3);
    state->achievements[ACH_DRINK_POTION] |= (uint8_t)drinking;
    state->inventory.potions[craftax_jread(idx, 6)] -= drinking;
    state->player_health = state->player_health + (float)dh;
    state->player_mana += dm;
    state->player_energy += de;
}

static inline CRAFTAX_HD void craftax_read_book(CraftaxState *state, CraftaxKey rng, int32_t action) {
    const int reading = action == ACTION_READ_BOOK && state->inventory.books > 0;
    float p[2] = {state->learned_spells[0] ? 0.0f : 1.0f, state->learned_spells[1] ? 0.0f : 1.0f};
    const float total = p[0] + p[1];
    p[0] = p[0] / total;
    p[1] = p[1] / total;
    float scratch[2];
    const int32_t idx = craftax_choice_p(craftax_split_next(&rng), p, 2, scratch);
    const int32_t ach = idx ? ACH_LEARN_ICEBALL : ACH_LEARN_FIREBALL;
    state->achievements[ach] |= (uint8_t)reading;
    state->inventory.books -= reading;
    state->learned_spells[idx] |= (uint8_t)reading;
}

static inline CRAFTAX_HD void craftax_enchant(CraftaxState *state, CraftaxKey rng, int32_t action) {
    int32_t p[2];
    craftax_facing(state, p);
    const uint8_t tb = craftax_read_level_map(&state->map[state->player_level][0][0], p);
    const int is_table = tb == BLOCK_ENCHANTMENT_TABLE_FIRE || tb == BLOCK_ENCHANTMENT_TABLE_ICE;
    const int32_t type = tb == BLOCK_ENCHANTMENT_TABLE_FIRE ? 1 : 2;
    const int32_t gems = tb == BLOCK_ENCHANTMENT_TABLE_FIRE ? state->inventory.ruby : state->inventory.sapphire;
    const int could = state->player_mana >= 9 && is_table && gems >= 1;
    const int bow = could && action == ACTION_ENCHANT_BOW && state->inventory.bow > 0;
    const int sword = could && action == ACTION_ENCHANT_SWORD && state->inventory.sword > 0;
    int32_t armour_sum = 0;
    for (int k = 0; k < 4; k++) armour_sum += state->inventory.armour[k];
    const int armour = could && action == ACTION_ENCHANT_ARMOUR && armour_sum > 0;

    int unenchanted = 0;
    for (int k = 0; k < 4; k++) unenchanted += state->armour_enchantments[k] == 0;
    float targets[4], scratch[4];
    for (int k = 0; k < 4; k++) {
        const int32_t e = state->armour_enchantments[k];
        const int opposite = e != 0 && e != type;
        targets[k] = ((e == 0) || (unenchanted == 0 && opposite)) ? 1.0f : 0.0f;
    }
    const int32_t target = craftax_choice_p(craftax_split_next(&rng), targets, 4, scratch);
    const int enchanting = sword || bow || armour;
    if (sword) state->sword_enchantment = type;
    if (bow) state->bow_enchantment = type;
    if (armour) state->armour_enchantments[target] = type;
    state->inventory.sapphire -= enchanting && type == 2;
    state->inventory.ruby -= enchanting && type == 1;
    state->player_mana -= 9 * enchanting;
    state->achievements[ACH_ENCHANT_SWORD] |= (uint8_t)sword;
    state->achievements[ACH_ENCHANT_ARMOUR] |= (uint8_t)armour;
}

/* ---- boss, attributes, movement --------------------------------------------------- */

static inline CRAFTAX_HD void craftax_boss_logic(CraftaxState *state, const CraftaxParams *params) {
    (void)params;
    state->achievements[ACH_DEFEAT_NECROMANCER] |= (uint8_t)craftax_has_beaten_boss(state);
    state->boss_timesteps_to_spawn_this_round -= craftax_is_fighting_boss(state);
}

static inline CRAFTAX_HD void craftax_level_up_attributes(CraftaxState *state, int32_t action, const CraftaxParams *params) {
    const int can = state->player_xp >= 1;
    const int dex = can && action == ACTION_LEVEL_UP_DEXTERITY && state->player_dexterity < params->max_attribute;
    const int str = can && action == ACTION_LEVEL_UP_STRENGTH && state->player_strength < params->max_attribute;
    const int intel = can && action == ACTION_LEVEL_UP_INTELLIGENCE && state->player_intelligence < params->max_attribute;
    state->player_dexterity += dex;
    state->player_strength += str;
    state->player_intelligence += intel;
    state->player_xp -= dex || str || intel;
}

static inline CRAFTAX_HD void craftax_move_player(CraftaxState *state, int32_t action, const CraftaxParams *params) {
    const int32_t a = craftax_jread(action, 16);
    const int32_t d0 = CRAFTAX_DIRECTIONS[a][0], d1 = CRAFTAX_DIRECTIONS[a][1];
    const int32_t proposed[2] = {state->player_position[0] + d0, state->player_position[1] + d1};
    const int32_t land[3] = {0, 1, 1}; /* COLLISION_LAND_CREATURE */
    const int valid = craftax_is_position_in_bounds_not_in_mob_not_colliding(state, proposed, land) || params->god_mode;
    state->player_position[0] += valid * d0;
    state->player_position[1] += valid * d1;
    if ((d0 < 0 ? -d0 : d0) + (d1 < 0 ? -d1 : d1) != 0) state->player_direction = action;
}

#endif

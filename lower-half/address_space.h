/* Process-wide address-space preparation of the lower half, done once before the upper half
 * exists: a deterministic layout, the brk wall and the window reservation. */
#ifndef MANA_ADDRESS_SPACE_H
#define MANA_ADDRESS_SPACE_H

/* Names (comma-separated) of the variables mana_lh added to its own environment; they are
 * removed again from the upper half's. */
#define MANA_LH_ENV_ADDED "MANA_LH_ENV_ADDED"

/* Re-executes the program once, with ASLR off and the lower half's library settings in its
 * environment.  Returns only in the re-executed image, or if no re-exec was needed or possible. */
void mana_prepare_process(char **argv);

/* Maps one PROT_NONE page just above the current program break, so neither libc's malloc can
 * grow the break that both would otherwise share. */
int mana_build_brk_wall(void);

/* Reserves the whole window PROT_NONE and maps the boundary page at its start. */
int mana_reserve_window(void);

#endif

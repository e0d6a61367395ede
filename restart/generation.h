/* Finding a committed generation in a checkpoint directory and checking it is complete. */
#ifndef MANA_GENERATION_H
#define MANA_GENERATION_H

#include <stddef.h>
#include <stdint.h>

struct mana_generation {
  uint64_t number;
  uint32_t world_size;
  char dir[4096];   /* DIR/gen-NNNNNN */
  uint64_t *hashes; /* per rank, the image's header hash MANIFEST lists (malloc'd) */
};

/* Resolves generation `wanted` (0: the one LATEST names) of checkpoint directory `ckptdir`,
 * reads its MANIFEST and checks that every rank's image is there with its recorded size.
 * Returns 0, or -1 with one line in err (missing directory, nothing committed, a generation
 * that was never committed, a missing or truncated image). */
int mana_generation_find(const char *ckptdir, uint64_t wanted, struct mana_generation *g, char *err,
                         size_t errlen);

/* The same for a generation directory DIR/gen-NNNNNN named directly, reading MANIFEST only
 * (a restarting rank checks its own image, not every rank's). */
int mana_generation_of_dir(const char *gendir, struct mana_generation *g, char *err, size_t errlen);

struct mana_image_info;
/* Whether an image opened from g (file `name`) is the one g's MANIFEST lists for its rank:
 * of g's generation and with the header hash recorded at commit.  0, or -1 with one line in
 * err (an image copied from another generation or another job). */
int mana_generation_check_image(const struct mana_generation *g, const char *name,
                                const struct mana_image_info *info, char *err, size_t errlen);

/* Where an incremental image of rank `rank` in generation directory `gendir` finds the older
 * images it refers to: DIR/gen-G/rank-R.img beside it (a mana_image_resolve_fn with arg a
 * struct mana_generation_resolver). */
struct mana_image_reader;
struct mana_generation_resolver {
  char ckptdir[4096];
  uint32_t rank;
};
void mana_generation_resolver_init(struct mana_generation_resolver *res, const char *gendir,
                                   uint32_t rank);
int mana_generation_resolve(void *arg, uint64_t generation, struct mana_image_reader **base,
                            char *err, size_t errlen);

/* Frees what find and of_dir allocated (the hashes). */
void mana_generation_release(struct mana_generation *g);

/* Verifies every image's checksums (and that each is the one MANIFEST lists) without
 * restoring anything, with every page an incremental image keeps in older generations. */
int mana_generation_verify(const struct mana_generation *g, char *err, size_t errlen);

#endif

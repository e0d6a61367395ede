/* coord_manifest: the text of a generation's MANIFEST, the record that makes it a complete
 * checkpoint (docs/coordinator-protocol.md, "MANIFEST"): written by the coordinator, read
 * back by restart/generation.c, both here.
 *
 * Formatting into memory and parsing from a stream; coord_store writes it durably. The lines
 * use the protocol's own syntax (VERB key=value).  In the client library, which mana_restart
 * and mana_lh link.
 */
#ifndef MANA_COORD_MANIFEST_H
#define MANA_COORD_MANIFEST_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#define COORD_MANIFEST_VERSION 1

struct manifest_rank {
  const char *file;
  uint64_t bytes;
  const char *xxh;
  const char *host;
  uint64_t pid;
};

struct manifest {
  uint64_t gen;
  uint64_t previous;                 /* last committed generation before this one, 0 if none */
  size_t size;                       /* world size */
  int64_t started_ms;                /* wall clock (CLOCK_REALTIME) when CKPT was sent */
  int64_t committed_ms;              /* wall clock when every rank had written */
  uint64_t needs;                    /* oldest generation its images refer to, 0: gen */
  uint64_t depth;                    /* incremental generations since the last full one */
  const char *command;               /* the job's launch command, or NULL when unknown */
  const struct manifest_rank *ranks; /* size entries, by rank */
};

/* Returns the MANIFEST text (malloc'ed, *len bytes, NUL-terminated) or NULL when out of
 * memory. */
char *manifest_format(const struct manifest *m, size_t *len);

/* What a restart needs of one RANK line. */
struct manifest_image {
  char file[128]; /* a plain file name in the generation directory */
  uint64_t bytes; /* the image's size */
  uint64_t xxh;   /* the checksum its header carries */
};

/* Reads a MANIFEST from f (path names it in messages): *world_size from GENERATION, and one
 * entry per RANK line, in rank order (*images malloc'ed, world_size entries).  0, or -1 with
 * one line in err: not a manifest, a bad line, or incomplete (no END, ranks missing). */
int manifest_read(FILE *f, const char *path, uint32_t *world_size, struct manifest_image **images,
                  char *err, size_t errlen);

/* Where a generation stands in a chain of incremental generations (GENERATION needs= and
 * depth=; a MANIFEST written before they existed reads as a full generation). */
struct manifest_chain {
  uint64_t gen;   /* this generation */
  uint64_t needs; /* the oldest generation whose images a restart from gen reads (<= gen) */
  uint64_t depth; /* 0: full; else the base's depth + 1 */
};

/* manifest_read that also fills chain; images may be NULL when only the chain is wanted.
 * The whole MANIFEST is checked either way. */
int manifest_read_chain(FILE *f, const char *path, uint32_t *world_size,
                        struct manifest_image **images, struct manifest_chain *chain, char *err,
                        size_t errlen);

/* The chain of the generation in gendir (an absolute gen-N directory), from its MANIFEST.
 * 0, or -1 with one line in err (no MANIFEST, or one that does not read). */
int manifest_chain_of(const char *gendir, struct manifest_chain *chain, char *err, size_t errlen);

/* "2025-05-01T10:00:00.123Z" for a CLOCK_REALTIME time in milliseconds. */
void manifest_time(int64_t ms, char *out, size_t len);

#endif

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

/* "2025-05-01T10:00:00.123Z" for a CLOCK_REALTIME time in milliseconds. */
void manifest_time(int64_t ms, char *out, size_t len);

#endif

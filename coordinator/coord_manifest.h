/* coord_manifest: the text of a generation's MANIFEST, the record that makes it a complete
 * checkpoint (docs/coordinator-protocol.md, "MANIFEST").
 *
 * Pure formatting into memory; coord_store writes it durably. The lines use the protocol's
 * own syntax (VERB key=value), so a restart reads them with coord_msg_parse().
 */
#ifndef MANA_COORD_MANIFEST_H
#define MANA_COORD_MANIFEST_H

#include <stddef.h>
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

/* "2025-05-01T10:00:00.123Z" for a CLOCK_REALTIME time in milliseconds. */
void manifest_time(int64_t ms, char *out, size_t len);

#endif

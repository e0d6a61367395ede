/* coord_layout: the names of everything in a checkpoint directory, spelled here only.
 *
 *   DIR/                      default ./mana-ckpt (or $MANA_CKPTDIR); 0700 when mana makes it
 *     .mana/                  0700: the coordinator's own files
 *       lock                  flock()ed while a coordinator serves DIR; holds its pid
 *       coordinator           HOST:PORT of the live coordinator (removed when it exits)
 *       secret                the job secret (0600), unless --secret-file says otherwise
 *       coordinator.log       the daemon's log
 *     gen-000001/             one generation: the ranks' images and, once complete,
 *       rank-000000.img ...   one image per rank
 *       MANIFEST              the record that makes it a checkpoint
 *     .aborted-000002-PID/    an aborted attempt on its way out
 *     LATEST                  the number of the newest committed generation
 *
 * Who writes what: coord_store.c (the coordinator: lock, port file, generations, MANIFEST,
 * LATEST), the ranks (their images), coord_store_sweep.c (removing what can never be
 * committed).  Readers: mana_status, mana_launch (port file, secret), restart/generation.c
 * (LATEST, MANIFEST, images).  Plain libc, in the client library every program links. */
#ifndef MANA_COORD_LAYOUT_H
#define MANA_COORD_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define STORE_DEFAULT_DIR "mana-ckpt"
#define STORE_META_DIR ".mana"
#define STORE_LOCK_FILE "lock"
#define STORE_PORT_FILE "coordinator"
#define STORE_SECRET_FILE "secret"
#define STORE_LOG_FILE "coordinator.log"
#define STORE_LATEST_FILE "LATEST"
#define STORE_MANIFEST_FILE "MANIFEST"
/* What an aborted attempt is renamed to before it is removed (".aborted-N-PID"). */
#define STORE_ABORTED_PREFIX ".aborted-"

/* DIR/.mana/NAME */
void store_meta_file(const char *dir, const char *name, char *out, size_t len);

/* DIR/gen-NNNNNN */
void store_gen_dir(const char *dir, uint64_t gen, char *out, size_t len);

/* N of a "gen-N" directory name (digits only after the dash). */
bool store_gen_dir_number(const char *name, uint64_t *gen);

/* The file name of rank's image in a generation directory. */
static inline void mana_image_name(uint32_t rank, char *out, size_t outlen)
{
  snprintf(out, outlen, "rank-%06u.img", rank);
}

/* The generation in DIR/LATEST (0 when there is none).  With err: -1 when it cannot be
 * read, -2 when it does not hold a number (damaged). */
int store_read_latest(const char *dir, uint64_t *gen, char *err, size_t errlen);

#endif

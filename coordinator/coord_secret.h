/* coord_secret: the per-job secret every connection to the coordinator must present.
 *
 * 32 random bytes from getrandom(2), stored as 64 lowercase hex digits and a newline in a
 * file of mode 0600. The file is the credential: whoever can read it can steer the job, so
 * a file that group or others can read, or that belongs to someone else, is refused by
 * both the coordinator and the clients.
 */
#ifndef MANA_COORD_SECRET_H
#define MANA_COORD_SECRET_H

#include <stdbool.h>
#include <stddef.h>

#define COORD_SECRET_BYTES 32
#define COORD_SECRET_HEX (2 * COORD_SECRET_BYTES)

/* Reads and checks the secret in path. Returns 0 with out filled (NUL-terminated), or -1
 * with one line in err naming the file and the problem. */
int coord_secret_load(const char *path, char out[COORD_SECRET_HEX + 1], char *err, size_t errlen);

/* Creates path (O_EXCL, mode 0600) holding a fresh secret. Fails if it exists. */
int coord_secret_create(const char *path, char out[COORD_SECRET_HEX + 1], char *err, size_t errlen);

/* Loads path, or creates it when it does not exist; *created says which happened. */
int coord_secret_load_or_create(const char *path, char out[COORD_SECRET_HEX + 1], bool *created,
                                char *err, size_t errlen);

/* Compares a presented secret with the expected one in time that does not depend on where
 * they differ (it depends only on the expected length, which is public). */
bool coord_secret_equal(const char *expected, const char *given);

#endif

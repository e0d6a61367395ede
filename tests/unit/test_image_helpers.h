/* Shared pieces of the image library's unit tests (test_image_*.c). */
#ifndef TEST_IMAGE_HELPERS_H
#define TEST_IMAGE_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include "image.h"
#include "image_format.h"

#define PAGE 4096UL

/* A fresh directory under $TMPDIR (or /tmp); removed with everything in it by
 * tmpdir_remove. */
struct tmpdir {
  char path[256];
  int fd;
};
void tmpdir_make(struct tmpdir *d);
void tmpdir_remove(struct tmpdir *d);
int tmpdir_count(const struct tmpdir *d); /* entries other than . and .. */
int file_exists(const struct tmpdir *d, const char *name);

/* Address space of our own: PROT_NONE, so that regions can be mapped and restored inside
 * with MAP_FIXED without ever touching someone else's mapping. A test that must restore
 * without MAP_FIXED unmaps its range only right before the restore, after the reader has
 * made its buffers and thread (mana_image_verify does): any allocation in between could be
 * placed by the kernel in the hole. */
void *reserve(size_t len);
void *map_rw_at(void *at, size_t len);
void rereserve(void *at, size_t len); /* back to PROT_NONE, contents gone */

void fill_random(void *p, size_t len, uint64_t seed);
struct mana_image_info test_info(void);

/* The protection /proc/self/maps shows at addr ("rw-p", ...), or "" if unmapped. */
const char *maps_perms(const void *addr);
int page_resident(const void *addr);

/* A small image with two regions (mixed content; read-only) and two blobs, written into
 * `d` under `name`. Its regions live in a reservation that is given back (PROT_NONE) before
 * returning, so they can be restored with MAP_FIXED. */
struct std_image {
  char *base;   /* the reservation: STD_RESERVE bytes */
  char *expect; /* expected content of region 0 */
  uint64_t region0_len, region1_len;
  uint64_t file_size, digest;
};
#define STD_RESERVE (64 * PAGE)
#define STD_BLOB_TYPE 7u
void write_std_image(const struct tmpdir *d, const char *name, struct std_image *img);
void free_std_image(struct std_image *img);

struct img_header read_header(const struct tmpdir *d, const char *name);
void write_header(const struct tmpdir *d, const char *name, struct img_header *h, int rehash);
void flip_byte(const struct tmpdir *d, const char *name, uint64_t off);
void truncate_file(const struct tmpdir *d, const char *name, uint64_t len);

/* mana_image_open's message for the file, or NULL if it opened fine. */
const char *open_error(const struct tmpdir *d, const char *name);

#endif

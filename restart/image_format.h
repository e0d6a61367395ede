/* The on-disk layout of an image, version 2 (described in docs/image-format.md).
 *
 *   [0, 4096)            header block: struct img_header, then zeros
 *   [4096, data_end)     data area: each region's saved pages (4 KiB-aligned), blob bytes
 *   [data_end, ...)      region table, run table, blob table, reference table, page hash
 *                        table, back to back; end of file
 *
 * Version 1 had neither the reference nor the page hash table (its header holds zeros
 * there); it is still read.
 *
 * All integers are little-endian; the structures are written as they are in memory, which
 * is why the build refuses big-endian hosts and every offset is pinned below. */
#ifndef MANA_IMAGE_FORMAT_H
#define MANA_IMAGE_FORMAT_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the image format is little-endian and this code writes it from memory"
#endif

#define IMG_MAGIC "MANAIMG\n" /* 8 bytes; the newline catches text-mode mangling */
#define IMG_MAGIC_LEN 8
#define IMG_VERSION 2u
#define IMG_VERSION_OLDEST 1u /* the oldest version the reader still takes */
#define IMG_PAGE 4096u
#define IMG_PAGE_SHIFT 12
#define IMG_HEADER_SIZE 512u /* sizeof(struct img_header) */
#define IMG_DATA_START 4096u /* the header block is one page */
#define IMG_LABEL_LEN 64
#define IMG_MAX_REGION_PAGES 0xffffffffull /* run fields are 32-bit page numbers */

/* Where one table lives and what it holds. */
struct img_section {
  uint64_t offset; /* from the start of the file */
  uint64_t size;   /* bytes: count * entry size */
  uint64_t count;  /* entries */
  uint64_t hash;   /* XXH3_64bits of the `size` bytes */
};

struct img_header {
  char magic[IMG_MAGIC_LEN];
  uint32_t version;
  uint32_t header_size; /* IMG_HEADER_SIZE */
  uint32_t page_size;   /* IMG_PAGE */
  uint32_t flags;       /* 0: none defined */
  uint32_t rank;
  uint32_t world_size;
  uint64_t generation;
  uint64_t window_base;
  uint64_t window_end;
  uint64_t vdso_base;
  int64_t created_unix_ns;
  uint32_t thread_level;
  uint32_t reserved0;
  char hostname[72]; /* NUL-terminated, NUL-padded */
  char kernel_release[72];
  uint64_t data_offset; /* IMG_DATA_START */
  uint64_t data_end;    /* end of the data area = region table offset */
  uint64_t file_size;
  uint64_t reserved1;
  struct img_section regions;
  struct img_section runs;
  struct img_section blobs;
  struct img_section refs;        /* version 2: pages kept in older generations' images */
  struct img_section page_hashes; /* version 2: one XXH3_64bits per present page */
  uint8_t reserved2[88];
  uint64_t header_hash; /* XXH3_64bits of bytes [0, 504); also the image digest */
};

/* One saved memory range. Its stored pages are runs[first_run .. first_run+run_count), whose
 * pages lie back to back from data_offset on. */
struct img_region {
  uint64_t start;
  uint64_t length; /* multiple of IMG_PAGE */
  uint32_t prot;
  uint32_t flags;
  uint64_t data_offset;  /* multiple of IMG_PAGE */
  uint64_t stored_pages; /* sum of the runs' page counts */
  uint64_t first_run;
  uint64_t run_count;
  uint64_t content_hash;     /* see img_content_hash in image_util.h */
  char label[IMG_LABEL_LEN]; /* NUL-terminated, NUL-padded */
};

/* Stored pages [first_page, first_page + page_count) of a region (page numbers from the
 * region's start). Runs of a region are in ascending order and do not touch or overlap. */
struct img_run {
  uint32_t first_page;
  uint32_t page_count;
};

/* Present pages [first_page, first_page + page_count) of region `region` whose content is
 * the same as when generation `generation` wrote them: they lie back to back at `offset`
 * in that generation's image of the same rank, whose digest (header hash) is
 * `image_digest`. Always the image that stores them, never one that refers on, so a
 * restart reads each page from exactly one older file. Refs are ordered by region, then
 * page, and overlap neither each other nor the region's runs. */
struct img_ref {
  uint32_t region;
  uint32_t first_page;
  uint32_t page_count;
  uint32_t reserved; /* 0 */
  uint64_t generation;
  uint64_t offset; /* multiple of IMG_PAGE */
  uint64_t image_digest;
};

/* The page hash table holds, region after region and in ascending page order, the
 * XXH3_64bits of every present page (in a run, filler pages included, or in a ref): it is
 * what a restart checks each page against, wherever it was read from, and what the next
 * incremental generation compares the live pages with. */

struct img_blob {
  uint32_t type;
  uint32_t reserved; /* 0 */
  uint64_t offset;   /* inside the data area */
  uint64_t length;
  uint64_t hash; /* XXH3_64bits of the blob's bytes */
};

static_assert(sizeof(struct img_section) == 32, "img_section layout");
static_assert(sizeof(struct img_header) == IMG_HEADER_SIZE, "img_header layout");
static_assert(offsetof(struct img_header, hostname) == 80, "img_header layout");
static_assert(offsetof(struct img_header, data_offset) == 224, "img_header layout");
static_assert(offsetof(struct img_header, regions) == 256, "img_header layout");
static_assert(offsetof(struct img_header, blobs) == 320, "img_header layout");
static_assert(offsetof(struct img_header, refs) == 352, "img_header layout");
static_assert(offsetof(struct img_header, page_hashes) == 384, "img_header layout");
static_assert(offsetof(struct img_header, header_hash) == 504, "img_header layout");
static_assert(sizeof(struct img_region) == 128, "img_region layout");
static_assert(offsetof(struct img_region, label) == 64, "img_region layout");
static_assert(sizeof(struct img_run) == 8, "img_run layout");
static_assert(sizeof(struct img_blob) == 32, "img_blob layout");
static_assert(sizeof(struct img_ref) == 40, "img_ref layout");

#endif

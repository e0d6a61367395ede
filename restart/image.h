/* The checkpoint image library: one file per rank and generation holding the upper half's
 * memory regions and a few small typed state blobs.
 *
 * The writer copies memory of the calling process straight from where it lives, skipping
 * pages that were never touched and pages that are all zero; the reader maps each region
 * back at its recorded address and reads the saved pages into place. Everything in the file
 * is checksummed (XXH3); the byte layout is in docs/image-format.md.
 *
 * All functions return 0 on success and -1 on failure with errno set. Functions that take
 * `err`/`errlen` also leave there one line saying what failed on which object; the writer
 * keeps its first error for mana_image_writer_error() and refuses further work after it.
 * Nothing here prints or exits. Needs only libc and libxxhash.
 *
 * Resources: a writer or reader holds a few MiB of buffers (plus 8 bytes per run of saved
 * pages, see mana_image_writer_set_run_budget), two descriptors of its file (one O_DIRECT
 * where the file system allows it; MANA_IMAGE_DIRECT=0 in the environment turns that off),
 * and one helper thread that moves data while the caller's thread scans and checksums; a
 * reader has a second one that faults big regions' pages in ahead of the reads
 * (MANA_IMAGE_PREFAULT=0 turns its work off). The reader starts both threads, whose stacks
 * the kernel places, on the first restore or verify: reserve the ranges you restore into
 * before that. A writer saves the memory of the process
 * that opened it (it reads /proc/self/pagemap): in a forked writer, open it in the child.
 */
#ifndef MANA_IMAGE_H
#define MANA_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/* What the header says about the process that wrote the image. */
struct mana_image_info {
  uint32_t rank, world_size;
  uint64_t generation;
  uint64_t window_base, window_end;
  char hostname[65]; /* a Linux host name is up to 64 bytes */
  char kernel_release[65];
  uint64_t vdso_base;    /* where the vDSO was mapped in the writing process */
  uint32_t thread_level; /* MPI thread level the job was initialized with */
  int64_t created_unix_ns;
  uint64_t header_hash; /* the header's checksum: the image's digest in MANIFEST */
};

/* Region flags. Bits 0-15 belong to the library (unknown ones are refused); bits 16-31 are
 * the caller's, stored and returned unchanged.
 *
 * SCAN_ALL: a page missing from the page table may still hold data (file-backed or shared
 * mapping), so read every page instead of trusting /proc/self/pagemap. */
#define MANA_IMAGE_REGION_SCAN_ALL 0x1u
/* Copy the range first and save the copy: for small ranges other threads may still write to
 * while the image is written (the page hashed and the page written must be the same).  Not
 * stored in the image. */
#define MANA_IMAGE_REGION_SNAPSHOT 0x2u
#define MANA_IMAGE_REGION_LIB_FLAGS 0xffffu

#define MANA_IMAGE_LABEL_MAX 63 /* longer labels are cut */

/* Counters of the writer so far (pages are 4 KiB). */
struct mana_image_stats {
  uint64_t regions, blobs;
  uint64_t pages;        /* pages of all regions */
  uint64_t pages_saved;  /* non-zero pages written to the file */
  uint64_t pages_absent; /* never touched: not saved */
  uint64_t pages_zero;   /* present but all zero: not saved */
  uint64_t pages_filler; /* zero pages written anyway to stay within the run budget */
  uint64_t runs;         /* runs of consecutive saved pages */
  uint64_t blob_bytes;
  uint64_t pages_referenced;  /* unchanged since the base: referred to, not written */
  uint64_t refs;              /* references to runs of pages in older images */
  uint64_t oldest_generation; /* the oldest image referred to; the image's own if none */
};

/* ---- writing ---------------------------------------------------------------------------- */

struct mana_image_writer;

/* Starts an image that will be called `final_name` in directory `dirfd` (or AT_FDCWD); until
 * commit it is "<final_name>.tmp" (mode 0600, replaced if left over). Fields of `info` left
 * empty/zero are filled in from this process: hostname, kernel_release (uname), vdso_base
 * (AT_SYSINFO_EHDR), created_unix_ns (CLOCK_REALTIME). */
int mana_image_writer_open(struct mana_image_writer **w, int dirfd, const char *final_name,
                           const struct mana_image_info *info, char *err, size_t errlen);

/* Saves memory [start, start+len) of this process. `start` must be page-aligned; `len` is
 * rounded up to whole pages, as mmap does (the reader reports the rounded length). `prot` must
 * be the range's current protection (PROT_*); a range without PROT_READ is made readable
 * while it is copied and set back to `prot`. Pages never touched (per /proc/self/pagemap,
 * unless MANA_IMAGE_REGION_SCAN_ALL) and pages that are all zero are not stored. The label
 * (may be NULL) is for messages and tools. Regions must not overlap; the caller ensures it.
 * When this returns, the region's pages are in the file (not yet synced): the memory may
 * change or go away. */
int mana_image_add_region(struct mana_image_writer *w, uint64_t start, uint64_t len, uint32_t prot,
                          uint32_t flags, const char *label);

/* Saves a small typed section (thread contexts, signal state, the stub's records, ...).
 * `type` is the caller's; several blobs may share a type. Written at once, not kept. */
int mana_image_add_blob(struct mana_image_writer *w, uint32_t type, const void *data, size_t len);

/* Writes the tables and the header, fsyncs the file, renames it to its final name and fsyncs
 * the directory. Frees `w` whatever the outcome; on failure the temporary file is removed
 * (and, if only the directory sync failed, the renamed file too). `bytes_written` gets the
 * file size, `file_hash` the image digest (the header checksum, which commits to every table
 * and region checksum and thus to the whole content). Either pointer may be NULL. */
int mana_image_writer_commit(struct mana_image_writer *w, uint64_t *bytes_written,
                             uint64_t *file_hash, char *err, size_t errlen);

/* Forgets the image: removes the temporary file and frees `w`. NULL is fine. */
void mana_image_writer_abort(struct mana_image_writer *w);

/* Bytes handed to the file so far; safe to call from another thread while `w` works. */
void mana_image_progress(const struct mana_image_writer *w, uint64_t *bytes);

/* Has `fn` called, on the thread that adds the data, each time another `every` bytes (at
 * least) have been handed to the file, with the total so far: a writer of a large image can
 * say how far it is (mana_status's WRITTEN column during a write). */
typedef void mana_image_progress_fn(uint64_t bytes, void *arg);
void mana_image_writer_on_progress(struct mana_image_writer *w, mana_image_progress_fn *fn,
                                   void *arg, uint64_t every);

/* The writer's first error ("" if none). */
const char *mana_image_writer_error(const struct mana_image_writer *w);

void mana_image_writer_stats(const struct mana_image_writer *w, struct mana_image_stats *stats);

/* At most `runs` run records are kept in memory (default 1 Mi = 8 MiB). Past it, holes inside
 * a region are filled with stored zero pages instead of starting new runs: the image grows,
 * memory does not. Only extremely fragmented memory (millions of holes) ever gets there. */
void mana_image_writer_set_run_budget(struct mana_image_writer *w, size_t runs);

struct mana_image_reader;

/* Makes the image incremental against `base`, an open image of the same rank (the last
 * committed generation): a page whose XXH3_64bits equals the one base recorded for the
 * same address is not written but referred to in the image that stores it (base's own
 * file, or the older one base refers to). Base must be of format version 2, of an older
 * generation, and of the same rank, world size and window; otherwise this fails (EINVAL,
 * with the reason) and the image stays a full one. Call before the first region; base must
 * stay open until commit or abort. */
int mana_image_writer_set_base(struct mana_image_writer *w, const struct mana_image_reader *base,
                               char *err, size_t errlen);

/* ---- reading ---------------------------------------------------------------------------- */

struct mana_image_reader;

/* Opens and validates an image: magic, version, header checksum, every section's place and
 * size against the file size, the tables' checksums, the region and blob entries, and every
 * blob's checksum (blobs are loaded). Region contents are checked by restore and verify. */
int mana_image_open(struct mana_image_reader **r, int dirfd, const char *name,
                    struct mana_image_info *info, char *err, size_t errlen);

size_t mana_image_region_count(const struct mana_image_reader *r);

/* Regions of at least `min_len` bytes that hold anonymous private memory (not SCAN_ALL) are
 * advised MADV_HUGEPAGE once their saved pages are read in, so that their later faults get
 * transparent huge pages where the kernel allows; the saved pages themselves come back as
 * 4 KiB pages, which the caller may collapse afterwards (MADV_COLLAPSE). Reading into huge
 * pages instead ran at 0.3 to 0.6 times the speed on our VM: faulting in 2 MiB pages of
 * memory the guest had reported free to the host ran at 0.5-0.7 GB/s on one thread, 4 KiB
 * pages at 3.7 GB/s (docs/image-format.md, section 9). 0 (the default): never. */
void mana_image_set_huge_pages(struct mana_image_reader *r, uint64_t min_len);

/* Any output pointer may be NULL. `label` stays valid until mana_image_close. */
int mana_image_region_info(const struct mana_image_reader *r, size_t i, uint64_t *start,
                           uint64_t *len, uint32_t *prot, uint32_t *flags, const char **label);

/* Maps region i anonymous private read-write at exactly its address, reads its saved pages
 * into place, checks its checksum, then sets its protection. The mapping is made with
 * MAP_FIXED_NOREPLACE, or with MAP_FIXED when `map_flags_extra` has MAP_FIXED (the caller
 * reserved the range itself); MAP_NORESERVE, MAP_STACK, MAP_LOCKED and MAP_POPULATE may be
 * added too. A range already taken is reported with the colliding line of /proc/self/maps.
 * On failure the range is left as it was found: unmapped, or (MAP_FIXED) a PROT_NONE
 * MAP_NORESERVE reservation. */
int mana_image_restore_region(struct mana_image_reader *r, size_t i, int map_flags_extra, char *err,
                              size_t errlen);

/* The first blob of `type`. Returns -1 with errno ENOENT if there is none. */
int mana_image_blob(const struct mana_image_reader *r, uint32_t type, const void **data,
                    size_t *len);
size_t mana_image_blob_count(const struct mana_image_reader *r);
int mana_image_blob_at(const struct mana_image_reader *r, size_t i, uint32_t *type,
                       const void **data, size_t *len);
/* The blobs of `type` one after the other: 1 with the next one from *cursor on (start at 0),
 * 0 when there is no more. */
int mana_image_next_blob(const struct mana_image_reader *r, uint32_t type, size_t *cursor,
                         const void **data, size_t *len);

/* Reads every region's saved pages (without mapping anything) and checks their checksums;
 * for an incremental image also the pages it refers to, in the older images. */
int mana_image_verify(struct mana_image_reader *r, char *err, size_t errlen);

/* How a reader finds the older images an incremental image refers to: opens generation
 * `generation`'s image of the same rank into *base (with mana_image_open), or fails with
 * one line in err. The reader checks what it gets (rank, generation, digest) and closes it
 * with itself. Without a resolver, reading a page kept in another image fails. */
typedef int mana_image_resolve_fn(void *arg, uint64_t generation, struct mana_image_reader **base,
                                  char *err, size_t errlen);
void mana_image_set_resolver(struct mana_image_reader *r, mana_image_resolve_fn *fn, void *arg);

/* The oldest generation this image refers to (its own when it refers to none), and the
 * number of pages it refers to. */
uint64_t mana_image_oldest_generation(const struct mana_image_reader *r);
uint64_t mana_image_referenced_pages(const struct mana_image_reader *r);

/* The image digest, as returned by mana_image_writer_commit. */
uint64_t mana_image_digest(const struct mana_image_reader *r);

void mana_image_close(struct mana_image_reader *r);

#endif

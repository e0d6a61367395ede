/* Unit tests for coordinator/coord_store.c and coord_manifest.c: the checkpoint directory
 * (lock, generations, atomic MANIFEST and LATEST, clean-up) and the MANIFEST text. */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coord_manifest.h"
#include "coord_proto.h"
#include "coord_store.h"
#include "coord_store_prune.h"
#include "coord_store_sweep.h"

static char top[64], dir[128];
static char err[1024];
static struct coord_store store;

static void setup(void)
{
  snprintf(top, sizeof(top), "/tmp/test_coord_store.XXXXXX");
  cr_assert_not_null(mkdtemp(top));
  snprintf(dir, sizeof(dir), "%s/a/b/ckpt", top);
}

static void teardown(void)
{
  char cmd[128];

  store_close(&store);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
  cr_assert_eq(system(cmd), 0);
}

TestSuite(coord_store, .init = setup, .fini = teardown);

static mode_t mode_of(const char *path)
{
  struct stat st;

  cr_assert_eq(stat(path, &st), 0, "%s is missing", path);
  return st.st_mode & 07777;
}

static void make_file(const char *path, size_t bytes)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  char zero[64] = {0};

  cr_assert_geq(fd, 0, "cannot create %s", path);
  for (size_t done = 0; done < bytes; done += sizeof(zero))
    cr_assert_gt(write(fd, zero, bytes - done < sizeof(zero) ? bytes - done : sizeof(zero)), 0);
  close(fd);
}

static void gen_file(uint64_t gen, const char *name, size_t bytes)
{
  char path[PATH_MAX + 64];

  store_gen_path(&store, gen, path, sizeof(path));
  strcat(path, "/");
  strcat(path, name);
  make_file(path, bytes);
}

Test(coord_store, open_creates_private_directories)
{
  char meta[256];

  cr_assert_eq(store_open(&store, dir, 0, err, sizeof(err)), 0, "%s", err);
  snprintf(meta, sizeof(meta), "%s/.mana", dir);
  cr_assert_eq(mode_of(dir), 0700);
  cr_assert_eq(mode_of(meta), 0700);
  cr_assert_eq(store_newest_dir(&store), 0);
}

Test(coord_store, relative_directory_refused)
{
  cr_assert_eq(store_open(&store, "relative/dir", 0, err, sizeof(err)), -1);
  cr_assert(strstr(err, "absolute"), "%s", err);
}

Test(coord_store, second_owner_refused)
{
  struct coord_store other;

  cr_assert_eq(store_open(&store, dir, 0, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(store_open(&other, dir, 200, err, sizeof(err)), -1);
  cr_assert(strstr(err, "in use by another coordinator"), "%s", err);
  char pid[32];
  snprintf(pid, sizeof(pid), "pid %d", (int)getpid());
  cr_assert(strstr(err, pid), "the holder is named: %s", err);
  store_close(&store);
  cr_assert_eq(store_open(&other, dir, 0, err, sizeof(err)), 0, "%s", err);
  store_close(&other);
}

Test(coord_store, commit_writes_manifest_and_latest)
{
  char path[512], text[64];
  uint64_t latest;
  FILE *f;

  cr_assert_eq(store_open(&store, dir, 0, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(store_latest(&store, &latest, err, sizeof(err)), 0);
  cr_assert_eq(latest, 0);
  cr_assert_eq(store_gen_create(&store, 7, err, sizeof(err)), 0, "%s", err);
  store_gen_path(&store, 7, path, sizeof(path));
  cr_assert(strstr(path, "/gen-000007"), "%s", path);
  cr_assert_eq(mode_of(path), 0700);
  cr_assert_eq(store_gen_create(&store, 7, err, sizeof(err)), -1, "exists already");
  gen_file(7, "rank-0.img", 100);
  cr_assert_eq(store_check_image(&store, 7, "rank-0.img", 100, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(store_check_image(&store, 7, "rank-0.img", 99, err, sizeof(err)), -1);
  cr_assert(strstr(err, "has 100 bytes, the rank reported 99"), "%s", err);
  cr_assert_eq(store_check_image(&store, 7, "rank-1.img", 0, err, sizeof(err)), -1);
  cr_assert(strstr(err, "No such file"), "%s", err);

  cr_assert_eq(store_commit(&store, 7, "MANA_MANIFEST v=1\n", 18, err, sizeof(err)), 0);
  cr_assert_eq(store_latest(&store, &latest, err, sizeof(err)), 0);
  cr_assert_eq(latest, 7);
  snprintf(path, sizeof(path), "%s/LATEST", dir);
  f = fopen(path, "r");
  cr_assert_not_null(f);
  cr_assert_not_null(fgets(text, sizeof(text), f));
  fclose(f);
  cr_assert_str_eq(text, "7\n");
  snprintf(path, sizeof(path), "%s/LATEST.tmp", dir);
  cr_assert_neq(access(path, F_OK), 0, "no temporary file is left");
  snprintf(path, sizeof(path), "%s/gen-000007/MANIFEST", dir);
  cr_assert_eq(access(path, F_OK), 0);
  cr_assert_eq(store_newest_dir(&store), 7);
}

Test(coord_store, bad_latest_is_an_error)
{
  char path[256];

  cr_assert_eq(store_open(&store, dir, 0, err, sizeof(err)), 0, "%s", err);
  snprintf(path, sizeof(path), "%s/LATEST", dir);
  make_file(path, 3);
  uint64_t latest;
  cr_assert_eq(store_latest(&store, &latest, err, sizeof(err)), -1);
  cr_assert(strstr(err, "does not hold a generation number"), "%s", err);
}

Test(coord_store, remove_generation)
{
  char path[512];

  cr_assert_eq(store_open(&store, dir, 0, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(store_gen_create(&store, 2, err, sizeof(err)), 0, "%s", err);
  gen_file(2, "a.img", 10);
  gen_file(2, "b.img", 10);
  cr_assert_eq(store_gen_remove(&store, 2, err, sizeof(err)), 0, "%s", err);
  store_gen_path(&store, 2, path, sizeof(path));
  cr_assert_neq(access(path, F_OK), 0);
  cr_assert_eq(store_gen_remove(&store, 2, err, sizeof(err)), 0, "already gone is fine");
}

Test(coord_store, incomplete_generations_are_cleaned)
{
  char path[512];

  cr_assert_eq(store_open(&store, dir, 0, err, sizeof(err)), 0, "%s", err);
  for (uint64_t g = 1; g <= 4; g++)
    cr_assert_eq(store_gen_create(&store, g, err, sizeof(err)), 0, "%s", err);
  gen_file(1, "MANIFEST", 5); /* complete */
  gen_file(3, "rank.img", 5); /* incomplete, with data */
  snprintf(path, sizeof(path), "%s/.aborted-000009-1", dir);
  cr_assert_eq(mkdir(path, 0700), 0);
  snprintf(path, sizeof(path), "%s/gen-notanumber", dir);
  cr_assert_eq(mkdir(path, 0700), 0);

  cr_assert_eq(store_newest_dir(&store), 4);
  store_remove_incomplete(&store, 2); /* 2 is LATEST: kept even without MANIFEST */
  store_gen_path(&store, 1, path, sizeof(path));
  cr_assert_eq(access(path, F_OK), 0);
  store_gen_path(&store, 2, path, sizeof(path));
  cr_assert_eq(access(path, F_OK), 0);
  store_gen_path(&store, 3, path, sizeof(path));
  cr_assert_neq(access(path, F_OK), 0);
  store_gen_path(&store, 4, path, sizeof(path));
  cr_assert_neq(access(path, F_OK), 0);
  snprintf(path, sizeof(path), "%s/.aborted-000009-1", dir);
  cr_assert_neq(access(path, F_OK), 0);
  snprintf(path, sizeof(path), "%s/gen-notanumber", dir);
  cr_assert_eq(access(path, F_OK), 0, "not ours: left alone");
}

/* A rank whose coordinator died sweeps only once it holds the lock: never while a
 * coordinator serves the directory, and never the generation LATEST names. */
Test(coord_store, orphaned_generations_are_swept_only_without_a_coordinator)
{
  char path[512];

  cr_assert_eq(store_open(&store, dir, 0, err, sizeof(err)), 0, "%s", err);
  for (uint64_t g = 1; g <= 3; g++)
    cr_assert_eq(store_gen_create(&store, g, err, sizeof(err)), 0, "%s", err);
  gen_file(1, "MANIFEST", 5);
  gen_file(3, "rank-000000.img", 5); /* the half-written one */
  snprintf(path, sizeof(path), "%s/LATEST", dir);
  cr_assert_eq(store_write_atomic(path, "2\n", 2, 0600, err, sizeof(err)), 0, "%s", err);

  cr_assert_eq(store_sweep_orphaned(dir, NULL, NULL), 0, "the coordinator holds the lock");
  store_gen_path(&store, 3, path, sizeof(path));
  cr_assert_eq(access(path, F_OK), 0, "swept under a live coordinator");

  store_close(&store); /* the coordinator dies */
  cr_assert_eq(store_sweep_orphaned(dir, NULL, NULL), 1);
  cr_assert_neq(access(path, F_OK), 0, "the uncommitted generation 3 is still there");
  store_gen_path(&store, 1, path, sizeof(path));
  cr_assert_eq(access(path, F_OK), 0, "the committed generation 1 was removed");
  store_gen_path(&store, 2, path, sizeof(path));
  cr_assert_eq(access(path, F_OK), 0, "the generation LATEST names was removed");

  snprintf(path, sizeof(path), "%s/LATEST", dir);
  cr_assert_eq(store_write_atomic(path, "x\n", 2, 0600, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(store_sweep_orphaned(dir, NULL, NULL), 0, "a damaged LATEST: hands off");
  store_gen_path(&store, 2, path, sizeof(path));
  cr_assert_eq(access(path, F_OK), 0);
}

Test(coord_store, atomic_write_mode)
{
  char path[256];

  cr_assert_eq(store_open(&store, dir, 0, err, sizeof(err)), 0, "%s", err);
  snprintf(path, sizeof(path), "%s/.mana/coordinator", dir);
  cr_assert_eq(store_write_atomic(path, "h:1\n", 4, 0600, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(mode_of(path), 0600);
  cr_assert_eq(store_write_atomic("/nonexistent/dir/x", "h", 1, 0600, err, sizeof(err)), -1);
  cr_assert(strstr(err, "/nonexistent/dir/x.tmp"), "%s", err);
}

/* --- MANIFEST ----------------------------------------------------------------------------- */

Test(coord_store, manifest_text)
{
  const struct manifest_rank ranks[2] = {
      {"rank-000000.img", 100, "0123456789abcdef", "node 1", 11},
      {"rank-000001.img", 200, "fedcba9876543210", "node2", 22},
  };
  const struct manifest m = {
      .gen = 5,
      .previous = 3,
      .size = 2,
      .started_ms = 1700000000123,
      .committed_ms = 1700000001500,
      .command = "mana_launch mpirun -n 2 ./app",
      .ranks = ranks,
  };
  char err_text[COORD_ERR_LEN];
  size_t len, nlines = 0;
  char *text = manifest_format(&m, &len), *line, *save;
  struct coord_msg msg;
  const char *verbs[8];

  cr_assert_not_null(text);
  cr_assert_eq(strlen(text), len);
  cr_assert_eq(text[len - 1], '\n');
  for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    cr_assert_eq(coord_msg_parse(line, strlen(line), &msg, err_text, sizeof(err_text)), 0, "%s: %s",
                 line, err_text);
    cr_assert_lt(nlines, 8);
    verbs[nlines++] = msg.verb;
    if (strcmp(msg.verb, "GENERATION") == 0) {
      cr_assert_str_eq(coord_msg_get(&msg, "gen"), "5");
      cr_assert_str_eq(coord_msg_get(&msg, "previous"), "3");
      cr_assert_str_eq(coord_msg_get(&msg, "size"), "2");
      cr_assert_str_eq(coord_msg_get(&msg, "bytes"), "300");
    } else if (strcmp(msg.verb, "TIME") == 0) {
      cr_assert_str_eq(coord_msg_get(&msg, "started"), "2023-11-14T22:13:20.123Z");
      cr_assert_str_eq(coord_msg_get(&msg, "seconds"), "1.377");
    } else if (strcmp(msg.verb, "COMMAND") == 0) {
      cr_assert_str_eq(coord_msg_get(&msg, "line"), "mana_launch mpirun -n 2 ./app");
    } else if (strcmp(msg.verb, "RANK") == 0 && strcmp(coord_msg_get(&msg, "rank"), "0") == 0) {
      cr_assert_str_eq(coord_msg_get(&msg, "host"), "node 1");
      cr_assert_str_eq(coord_msg_get(&msg, "xxh"), "0123456789abcdef");
      cr_assert_str_eq(coord_msg_get(&msg, "bytes"), "100");
    }
  }
  cr_assert_eq(nlines, 7);
  cr_assert_str_eq(verbs[0], "MANA_MANIFEST");
  cr_assert_str_eq(verbs[6], "END");
  free(text);
}

Test(coord_store, manifest_without_command)
{
  const struct manifest_rank ranks[1] = {{"r.img", 1, "aaaaaaaa", "h", 1}};
  const struct manifest m = {.gen = 1, .size = 1, .ranks = ranks};
  size_t len;
  char *text = manifest_format(&m, &len);

  cr_assert_not_null(text);
  cr_assert_null(strstr(text, "COMMAND"));
  cr_assert(strstr(text, "previous=0"), "%s", text);
  free(text);
}

/* What the coordinator writes, a restart reads back: the one owner of the format. */
Test(coord_store, manifest_read_back)
{
  const struct manifest_rank ranks[2] = {
      {"rank-000000.img", 100, "0123456789abcdef", "n1", 11},
      {"rank-000001.img", 200, "fedcba9876543210", "n2", 22},
  };
  const struct manifest m = {.gen = 2, .size = 2, .ranks = ranks};
  size_t len;
  char *text = manifest_format(&m, &len);
  struct manifest_image *images = NULL;
  uint32_t size = 0;

  cr_assert_not_null(text);
  FILE *f = fmemopen(text, len, "r");
  cr_assert_eq(manifest_read(f, "M", &size, &images, err, sizeof(err)), 0, "%s", err);
  fclose(f);
  cr_assert_eq(size, 2);
  cr_assert_str_eq(images[1].file, "rank-000001.img");
  cr_assert_eq(images[1].bytes, 200);
  cr_assert_eq(images[1].xxh, 0xfedcba9876543210ull);
  free(images);

  /* cut before END: incomplete, whatever came before */
  f = fmemopen(text, (size_t)(strstr(text, "END") - text), "r");
  cr_assert_eq(manifest_read(f, "M", &size, &images, err, sizeof(err)), -1);
  fclose(f);
  cr_assert(strstr(err, "incomplete") && strstr(err, "no END line"), "%s", err);
  cr_assert_null(images);
  free(text);

  f = fmemopen("RANK rank=0\n", 12, "r");
  cr_assert_eq(manifest_read(f, "M", &size, &images, err, sizeof(err)), -1);
  fclose(f);
  cr_assert(strstr(err, "not a mana manifest"), "%s", err);
}

/* needs= and depth= on GENERATION: written, read back; absent they mean a full generation. */
Test(coord_store, manifest_chain)
{
  const struct manifest_rank ranks[1] = {{"r.img", 1, "aaaaaaaa", "h", 1}};
  const struct manifest m = {.gen = 9, .size = 1, .needs = 5, .depth = 3, .ranks = ranks};
  struct manifest_chain chain;
  size_t len;
  char *text = manifest_format(&m, &len);
  uint32_t size;

  cr_assert_not_null(text);
  cr_assert(strstr(text, "\nGENERATION gen=9 previous=0 size=1 bytes=1 needs=5 depth=3\n"), "%s",
            text);
  FILE *f = fmemopen(text, len, "r");
  cr_assert_eq(manifest_read_chain(f, "M", &size, NULL, &chain, err, sizeof(err)), 0, "%s", err);
  fclose(f);
  cr_assert_eq(chain.gen, 9);
  cr_assert_eq(chain.needs, 5);
  cr_assert_eq(chain.depth, 3);
  cr_assert_eq(size, 1);
  free(text);

  const struct manifest full = {.gen = 4, .size = 1, .ranks = ranks};
  text = manifest_format(&full, &len);
  cr_assert(strstr(text, " needs=4 depth=0\n"), "needs defaults to the generation: %s", text);
  free(text);

  static const char old[] =
      "MANA_MANIFEST v=1\nGENERATION gen=6 previous=2 size=1 bytes=1\n"
      "RANK rank=0 file=r.img bytes=1 xxh=aaaaaaaa host=h pid=1\nEND ranks=1\n";
  f = fmemopen((char *)old, sizeof(old) - 1, "r");
  cr_assert_eq(manifest_read_chain(f, "M", &size, NULL, &chain, err, sizeof(err)), 0, "%s", err);
  fclose(f);
  cr_assert_eq(chain.gen, 6);
  cr_assert_eq(chain.needs, 6, "an older MANIFEST is a full generation");
  cr_assert_eq(chain.depth, 0);

  static const char newer[] =
      "MANA_MANIFEST v=1\nGENERATION gen=6 previous=2 size=1 bytes=1 "
      "needs=7 depth=1\n"
      "RANK rank=0 file=r.img bytes=1 xxh=aaaaaaaa host=h pid=1\nEND ranks=1\n";
  f = fmemopen((char *)newer, sizeof(newer) - 1, "r");
  cr_assert_eq(manifest_read_chain(f, "M", &size, NULL, &chain, err, sizeof(err)), -1);
  fclose(f);
  cr_assert(strstr(err, "generation 6 needs generation 7"), "%s", err);
}

static uint64_t floor_of(const struct prune_entry *e, size_t n, unsigned keep, uint64_t latest)
{
  return prune_floor(e, n, keep, latest);
}

Test(coord_store, prune_floor)
{
  /* 1 full, 2 and 3 on 1, 4 full, 5 on 4 */
  struct prune_entry e[] = {
      {1, 1, true}, {2, 1, true}, {3, 1, true}, {4, 4, true}, {5, 4, true},
  };

  cr_assert_eq(floor_of(e, 5, 0, 5), 0, "keep 0: keep everything");
  cr_assert_eq(floor_of(e, 5, 2, 5), 4);
  cr_assert_eq(floor_of(e, 5, 1, 5), 4);
  cr_assert_eq(floor_of(e, 4, 2, 4), 1, "3 is among the two newest and needs 1");
  cr_assert_eq(floor_of(e, 5, 3, 5), 1);
  cr_assert_eq(floor_of(e, 5, 9, 5), 1, "fewer than keep: the oldest need");
  cr_assert_eq(floor_of(e, 5, 2, 6), 0, "LATEST is not among them: nothing goes");
  e[3].readable = false;
  cr_assert_eq(floor_of(e, 5, 2, 5), 0, "a kept MANIFEST does not read: nothing goes");
  cr_assert_eq(floor_of(e, 5, 1, 5), 4, "an unreadable one below the newest does not matter");
  cr_assert_eq(floor_of(NULL, 0, 2, 5), 0);
}

static void commit_fake(uint64_t gen, uint64_t needs, uint64_t depth)
{
  const struct manifest_rank ranks[1] = {{"r.img", 1, "aaaaaaaa", "h", 1}};
  const struct manifest m = {.gen = gen, .size = 1, .needs = needs, .depth = depth, .ranks = ranks};
  size_t len;
  char *text = manifest_format(&m, &len);

  cr_assert_eq(store_gen_create(&store, gen, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(store_commit(&store, gen, text, len, err, sizeof(err)), 0, "%s", err);
  free(text);
}

static bool gen_exists(uint64_t gen)
{
  char path[PATH_MAX + 32];

  store_gen_path(&store, gen, path, sizeof(path));
  return access(path, F_OK) == 0;
}

Test(coord_store, prune_removes_what_is_not_needed)
{
  char path[PATH_MAX + 64];

  cr_assert_eq(store_open(&store, dir, 0, err, sizeof(err)), 0, "%s", err);
  commit_fake(1, 1, 0);
  commit_fake(2, 1, 1);
  commit_fake(3, 3, 0);
  commit_fake(4, 3, 1);
  cr_assert_eq(store_gen_create(&store, 5, err, sizeof(err)), 0); /* being written */
  store_gen_path(&store, 2, path, sizeof(path));
  strcat(path, "/MANIFEST");
  FILE *f = fopen(path, "w");
  fputs("garbage\n", f);
  fclose(f);

  store_prune(&store, 4, 2);
  cr_assert(!gen_exists(1));
  cr_assert(gen_exists(2), "a MANIFEST that does not read is kept");
  cr_assert(gen_exists(3) && gen_exists(4));
  cr_assert(gen_exists(5), "never committed: not pruning's business");
  store_prune(&store, 4, 1);
  cr_assert(gen_exists(3), "4 needs 3");
}

/* Upper-half construction (see loader.h). */
#define _GNU_SOURCE
#include "loader.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "mana/upper_window.h"
#include "elf_load.h"
#include "stack.h"
#include "mana/fail.h"

#define MIB (1UL << 20)

/* The main thread's stack: the soft RLIMIT_STACK as the kernel would give it, within bounds; it
 * is MAP_NORESERVE, so untouched pages cost nothing and are never written to an image. */
static uint64_t stack_size(void)
{
  struct rlimit rl;
  uint64_t size = 8 * MIB;
  if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > size)
    size = rl.rlim_cur;
  if (size > 1024 * MIB)
    size = 1024 * MIB;
  return (size + 4095) & ~4095UL;
}

static int place(struct mana_window *w, const char *path, struct mana_elf_image *img, char *err,
                 size_t errlen)
{
  struct mana_elf_image probe;
  if (mana_elf_inspect(path, &probe, err, errlen) != 0)
    return -1;
  uint64_t bias = 0;
  if (probe.is_pie) {
    /* 2 MiB alignment keeps the objects' huge-page-friendly layout and leaves a gap between them. */
    uint64_t at = mana_window_alloc(w, probe.hi - probe.lo, 2 * MIB);
    if (!at) {
      return mana_fail(err, errlen, 0, "the window has no room for %s", path);
    }
    bias = at - probe.lo;
  } else {
    void *p = mmap((void *)probe.lo, probe.hi - probe.lo, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      return mana_fail(err, errlen, 0,
                       "%s is not position-independent and its link address %#lx-%#lx is taken in "
                       "this process; rebuild it with -fPIE -pie",
                       path, (unsigned long)probe.lo, (unsigned long)probe.hi);
    }
  }
  return mana_elf_map(path, bias, img, err, errlen);
}

int mana_load_upper(struct mana_window *w, const char *app_path, const char *vdso_path,
                    char *const argv[], char *const envp[], const Elf64_auxv_t *kernel_auxv,
                    struct mana_upper_start *out, char *err, size_t errlen)
{
  memset(out, 0, sizeof(*out));
  struct mana_elf_image app, ldso, vdso;
  if (mana_elf_inspect(app_path, &app, err, errlen) != 0)
    return -1;
  if (!app.interp[0]) {
    return mana_fail(err, errlen, 0,
                     "%s is statically linked; mana needs a dynamically linked MPI program",
                     app_path);
  }
  if (place(w, app.interp, &ldso, err, errlen) != 0 || place(w, app_path, &app, err, errlen) != 0 ||
      place(w, vdso_path, &vdso, err, errlen) != 0)
    return -1;
  /* ld.so reads a vDSO's header where AT_SYSINFO_EHDR points: the stand-in is linked at 0 */
  if (!vdso.is_pie || vdso.lo != vdso.bias) {
    return mana_fail(err, errlen, 0, "%s is not a shared object linked at address 0", vdso_path);
  }

  uint64_t size = stack_size();
  uint64_t low = mana_window_alloc(w, size, 2 * MIB);
  if (!low) {
    return mana_fail(err, errlen, 0,
                     "the window has no room for the upper half's stack (%lu bytes)",
                     (unsigned long)size);
  }
  if (mmap((void *)low, size, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED) {
    return mana_fail(err, errlen, errno, "cannot map the upper half's stack (%lu bytes at %#lx)",
                     (unsigned long)size, (unsigned long)low);
  }
  struct mana_auxv_overrides ov = {.phdr = app.phdr,
                                   .phnum = app.phnum,
                                   .entry = app.entry,
                                   .base = ldso.bias,
                                   .sysinfo_ehdr = vdso.bias,
                                   .execfn = app_path};
  out->sp = mana_build_stack(low, low + size, argv, envp, kernel_auxv, &ov, &out->app_path);
  if (!out->sp) {
    return mana_fail(err, errlen, 0, "arguments and environment do not fit the upper half's stack");
  }
  out->entry = ldso.entry;
  out->app_base = app.lo;
  out->ldso_base = ldso.lo;
  out->stack_low = low;
  out->stack_high = low + size;
  out->vdso_base = vdso.bias;
  if (!app.is_pie) {
    out->non_pie.start = app.lo;
    out->non_pie.end = app.hi;
  }
  return 0;
}

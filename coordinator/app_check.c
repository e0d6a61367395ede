/* app_check: is this program something mana can run? (see app_check.h)
 *
 * The ELF side reads only what the dynamic loader reads: the program headers (PT_INTERP,
 * PT_DYNAMIC, PT_LOAD) and the dynamic section they point to. Section headers are not
 * used, so stripped programs are judged the same as unstripped ones.
 */
#include "app_check.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* SONAMEs through which a program reaches an MPICH-ABI library (the stub mana installs in
 * the upper half answers to these). */
static const char *const mpich_sonames[] = {
    "libmpich.so.12",   "libmpi.so.12",      "libmpichfort.so.12",
    "libmpifort.so.12", "libmpichcxx.so.12", "libmpicxx.so.12",
};

/* Where the dynamic loader finds libraries on Debian x86-64 when nothing else says. */
static const char *const standard_lib_dirs[] = {
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/local/lib/x86_64-linux-gnu",
    "/usr/local/lib",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_NEEDED 256
#define MAX_LOADS 16

/* What app_check needs to know about one ELF file. */
struct elf_summary {
  unsigned char elf_class;
  unsigned machine;
  unsigned type;
  bool has_interp;
  bool has_dynamic;
  bool pie_flag; /* DF_1_PIE: a static-pie program rather than a shared library */
  size_t needed_count;
  char *needed[MAX_NEEDED];
  char *rpath;
  char *runpath;
};

enum scan_status {
  SCAN_OK,
  SCAN_NOT_ELF,
  SCAN_DAMAGED, /* ELF, but its dynamic section cannot be read */
  SCAN_LIBELF   /* libelf itself failed */
};

static int set_error(struct app_check_result *res, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int set_error(struct app_check_result *res, int status, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(res->error, sizeof(res->error), fmt, ap);
  va_end(ap);
  return status;
}

static void summary_free(struct elf_summary *sum)
{
  for (size_t i = 0; i < sum->needed_count; i++)
    free(sum->needed[i]);
  free(sum->rpath);
  free(sum->runpath);
  memset(sum, 0, sizeof(*sum));
}

/* ------------------------------------------------------------------------------------- */
/* Reading ELF                                                                           */
/* ------------------------------------------------------------------------------------- */

/* File offset of a virtual address, through the PT_LOAD segments that map it. */
static bool vaddr_to_offset(const GElf_Phdr *loads, size_t nloads, uint64_t vaddr, uint64_t *offset)
{
  for (size_t i = 0; i < nloads; i++) {
    if (vaddr >= loads[i].p_vaddr && vaddr < loads[i].p_vaddr + loads[i].p_filesz) {
      *offset = vaddr - loads[i].p_vaddr + loads[i].p_offset;
      return true;
    }
  }
  return false;
}

/* A NUL-terminated string at off inside the string table, or NULL. */
static char *strtab_dup(const Elf_Data *strtab, uint64_t off)
{
  const char *base = strtab->d_buf;

  if (off >= strtab->d_size || !memchr(base + off, '\0', strtab->d_size - off))
    return NULL;
  return strdup(base + off);
}

/* The dynamic entries this check cares about, before the string table is known. */
struct dyn_refs {
  uint64_t strtab_vaddr, strsz;
  uint64_t needed[MAX_NEEDED];
  size_t needed_count;
  uint64_t rpath, runpath;
  bool has_rpath, has_runpath;
};

static void collect_dyn(Elf *elf, const Elf_Data *dyn, struct dyn_refs *refs,
                        struct elf_summary *sum)
{
  size_t entsize = gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
  size_t count = entsize ? dyn->d_size / entsize : 0;

  for (size_t i = 0; i < count; i++) {
    GElf_Dyn d;

    if (!gelf_getdyn((Elf_Data *)dyn, (int)i, &d) || d.d_tag == DT_NULL)
      break;
    switch (d.d_tag) {
    case DT_NEEDED:
      if (refs->needed_count < MAX_NEEDED)
        refs->needed[refs->needed_count++] = d.d_un.d_val;
      break;
    case DT_STRTAB:
      refs->strtab_vaddr = d.d_un.d_ptr;
      break;
    case DT_STRSZ:
      refs->strsz = d.d_un.d_val;
      break;
    case DT_RPATH:
      refs->rpath = d.d_un.d_val;
      refs->has_rpath = true;
      break;
    case DT_RUNPATH:
      refs->runpath = d.d_un.d_val;
      refs->has_runpath = true;
      break;
    case DT_FLAGS_1:
      sum->pie_flag = (d.d_un.d_val & DF_1_PIE) != 0;
      break;
    default:
      break;
    }
  }
}

static enum scan_status read_dynamic(Elf *elf, const GElf_Phdr *dynamic, const GElf_Phdr *loads,
                                     size_t nloads, struct elf_summary *sum)
{
  struct dyn_refs refs = {0};
  Elf_Data *dyn, *strtab;
  uint64_t strtab_off;

  dyn = elf_getdata_rawchunk(elf, (int64_t)dynamic->p_offset, dynamic->p_filesz, ELF_T_DYN);
  if (!dyn)
    return SCAN_DAMAGED;
  collect_dyn(elf, dyn, &refs, sum);
  if (refs.needed_count == 0 && !refs.has_rpath && !refs.has_runpath)
    return SCAN_OK;
  if (!vaddr_to_offset(loads, nloads, refs.strtab_vaddr, &strtab_off) || refs.strsz == 0)
    return SCAN_DAMAGED;
  strtab = elf_getdata_rawchunk(elf, (int64_t)strtab_off, refs.strsz, ELF_T_BYTE);
  if (!strtab)
    return SCAN_DAMAGED;

  for (size_t i = 0; i < refs.needed_count; i++) {
    char *name = strtab_dup(strtab, refs.needed[i]);

    if (!name)
      return SCAN_DAMAGED;
    sum->needed[sum->needed_count++] = name;
  }
  if (refs.has_rpath && !(sum->rpath = strtab_dup(strtab, refs.rpath)))
    return SCAN_DAMAGED;
  if (refs.has_runpath && !(sum->runpath = strtab_dup(strtab, refs.runpath)))
    return SCAN_DAMAGED;
  return SCAN_OK;
}

static enum scan_status scan_segments(Elf *elf, struct elf_summary *sum)
{
  GElf_Phdr loads[MAX_LOADS], dynamic = {0};
  size_t nloads = 0, phnum;

  if (elf_getphdrnum(elf, &phnum) != 0)
    return SCAN_DAMAGED;
  for (size_t i = 0; i < phnum; i++) {
    GElf_Phdr ph;

    if (!gelf_getphdr(elf, (int)i, &ph))
      return SCAN_DAMAGED;
    if (ph.p_type == PT_INTERP)
      sum->has_interp = true;
    else if (ph.p_type == PT_DYNAMIC) {
      sum->has_dynamic = true;
      dynamic = ph;
    } else if (ph.p_type == PT_LOAD && nloads < MAX_LOADS)
      loads[nloads++] = ph;
  }
  if (!sum->has_dynamic)
    return SCAN_OK;
  return read_dynamic(elf, &dynamic, loads, nloads, sum);
}

/* Fills sum from the ELF file open on fd. Only x86-64 files get their segments read: for
 * anything else the class and machine are all the caller needs. */
static enum scan_status elf_scan(int fd, struct elf_summary *sum)
{
  enum scan_status status = SCAN_OK;
  GElf_Ehdr ehdr;
  Elf *elf;

  memset(sum, 0, sizeof(*sum));
  if (elf_version(EV_CURRENT) == EV_NONE)
    return SCAN_LIBELF;
  elf = elf_begin(fd, ELF_C_READ, NULL);
  if (!elf)
    return SCAN_LIBELF;
  if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr)) {
    elf_end(elf);
    return SCAN_NOT_ELF;
  }
  sum->elf_class = ehdr.e_ident[EI_CLASS];
  sum->machine = ehdr.e_machine;
  sum->type = ehdr.e_type;
  if (sum->elf_class == ELFCLASS64 && sum->machine == EM_X86_64)
    status = scan_segments(elf, sum);
  elf_end(elf);
  return status;
}

static enum scan_status elf_scan_path(const char *path, struct elf_summary *sum)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  enum scan_status status;

  if (fd < 0)
    return SCAN_LIBELF;
  status = elf_scan(fd, sum);
  close(fd);
  return status;
}

/* ------------------------------------------------------------------------------------- */
/* Finding the program (as execvp would)                                                 */
/* ------------------------------------------------------------------------------------- */

enum candidate {
  CANDIDATE_MISSING,
  CANDIDATE_OK,
  CANDIDATE_DIRECTORY,
  CANDIDATE_NOT_REGULAR,
  CANDIDATE_NOT_EXECUTABLE,
  CANDIDATE_ERROR /* stat failed for another reason; errno is kept */
};

static enum candidate probe(const char *path)
{
  struct stat st;

  if (stat(path, &st) != 0)
    return errno == ENOENT || errno == ENOTDIR ? CANDIDATE_MISSING : CANDIDATE_ERROR;
  if (S_ISDIR(st.st_mode))
    return CANDIDATE_DIRECTORY;
  if (!S_ISREG(st.st_mode))
    return CANDIDATE_NOT_REGULAR;
  if (access(path, X_OK) != 0)
    return CANDIDATE_NOT_EXECUTABLE;
  return CANDIDATE_OK;
}

static int report_candidate(enum candidate c, const char *app, struct app_check_result *res)
{
  switch (c) {
  case CANDIDATE_OK:
    return 0;
  case CANDIDATE_MISSING:
    return set_error(res, APP_CHECK_NOT_FOUND, "%s: not found", app);
  case CANDIDATE_DIRECTORY:
    return set_error(res, APP_CHECK_CANNOT_RUN, "%s: is a directory", app);
  case CANDIDATE_NOT_REGULAR:
    return set_error(res, APP_CHECK_CANNOT_RUN, "%s: is not a regular file", app);
  case CANDIDATE_NOT_EXECUTABLE:
    return set_error(res, APP_CHECK_CANNOT_RUN, "%s: is not executable (no execute permission)",
                     app);
  case CANDIDATE_ERROR:
    break;
  }
  return set_error(res, APP_CHECK_CANNOT_RUN, "%s: %s", app, strerror(errno));
}

static bool join_path(char *out, size_t outlen, const char *dir, size_t dirlen, const char *name)
{
  int n;

  if (dirlen == 0) /* an empty PATH entry means the current directory */
    n = snprintf(out, outlen, "./%s", name);
  else
    n = snprintf(out, outlen, "%.*s/%s", (int)dirlen, dir, name);
  return n >= 0 && (size_t)n < outlen;
}

/* A name without '/': the first executable regular file in PATH wins. Like execvp, a
 * match that cannot be executed does not stop the search, but is reported if nothing
 * better turns up. */
static int search_path(const char *app, const char *path, struct app_check_result *res)
{
  const char *entry = path ? path : "/bin:/usr/bin";
  char candidate[PATH_MAX], unusable[PATH_MAX] = "";
  enum candidate unusable_kind = CANDIDATE_MISSING;
  int unusable_errno = 0;

  for (;;) {
    size_t len = strcspn(entry, ":");

    if (join_path(candidate, sizeof(candidate), entry, len, app)) {
      enum candidate c = probe(candidate);

      if (c == CANDIDATE_OK) {
        snprintf(res->resolved, sizeof(res->resolved), "%s", candidate);
        return 0;
      }
      if (c != CANDIDATE_MISSING && unusable[0] == '\0') {
        snprintf(unusable, sizeof(unusable), "%s", candidate);
        unusable_kind = c;
        unusable_errno = errno;
      }
    }
    if (entry[len] == '\0')
      break;
    entry += len + 1;
  }
  if (unusable[0] != '\0') {
    errno = unusable_errno;
    report_candidate(unusable_kind, unusable, res);
    return APP_CHECK_CANNOT_RUN;
  }
  return set_error(res, APP_CHECK_NOT_FOUND, "%s: not found in PATH", app);
}

static int resolve_program(const char *app, const char *wdir, const char *path,
                           struct app_check_result *res)
{
  if (app[0] == '\0')
    return set_error(res, APP_CHECK_NOT_FOUND, "the program name is empty");
  if (!strchr(app, '/'))
    return search_path(app, path, res);

  /* The launcher starts the ranks in wdir, so that is where a relative path points. */
  if (app[0] != '/' && wdir && wdir[0] != '\0') {
    if (!join_path(res->resolved, sizeof(res->resolved), wdir, strlen(wdir), app))
      return set_error(res, APP_CHECK_NOT_FOUND, "%s: path too long", app);
  } else {
    snprintf(res->resolved, sizeof(res->resolved), "%s", app);
  }
  return report_candidate(probe(res->resolved), app, res);
}

/* ------------------------------------------------------------------------------------- */
/* Is it linked against MPICH?                                                           */
/* ------------------------------------------------------------------------------------- */

static bool is_mpich_soname(const char *name)
{
  for (size_t i = 0; i < COUNT(mpich_sonames); i++)
    if (strcmp(name, mpich_sonames[i]) == 0)
      return true;
  return false;
}

static bool needs_mpich(const struct elf_summary *sum)
{
  for (size_t i = 0; i < sum->needed_count; i++)
    if (is_mpich_soname(sum->needed[i]))
      return true;
  return false;
}

/* A DT_NEEDED entry that is some MPI library, but not an MPICH-ABI one (Open MPI's
 * libmpi.so.40, for example), so the error can name it. */
static const char *other_mpi(const struct elf_summary *sum)
{
  for (size_t i = 0; i < sum->needed_count; i++)
    if (strncmp(sum->needed[i], "libmpi", 6) == 0 && !is_mpich_soname(sum->needed[i]))
      return sum->needed[i];
  return NULL;
}

/* One search-list entry with $ORIGIN / ${ORIGIN} expanded. */
static bool expand_dir(char *out, size_t outlen, const char *dir, size_t len, const char *origin)
{
  static const char *const forms[] = {"${ORIGIN}", "$ORIGIN"};
  int n;

  for (size_t i = 0; i < COUNT(forms); i++) {
    size_t flen = strlen(forms[i]);

    if (len >= flen && memcmp(dir, forms[i], flen) == 0) {
      n = snprintf(out, outlen, "%s%.*s", origin, (int)(len - flen), dir + flen);
      return n >= 0 && (size_t)n < outlen;
    }
  }
  n = snprintf(out, outlen, "%.*s", (int)len, dir);
  return n >= 0 && (size_t)n < outlen;
}

enum lib_verdict { LIB_NOT_HERE, LIB_NO_MPI, LIB_MPI };

/* Is the file at path a usable x86-64 library, and does it need MPICH? */
static enum lib_verdict lib_at_path(const char *path)
{
  struct elf_summary sum = {0};
  enum lib_verdict verdict = LIB_NOT_HERE;

  if (access(path, F_OK) != 0)
    return LIB_NOT_HERE;
  /* The loader skips libraries of the wrong class or machine, and so do we. */
  if (elf_scan_path(path, &sum) == SCAN_OK && sum.elf_class == ELFCLASS64 &&
      sum.machine == EM_X86_64)
    verdict = needs_mpich(&sum) ? LIB_MPI : LIB_NO_MPI;
  summary_free(&sum);
  return verdict;
}

static enum lib_verdict lib_in_dir(const char *dir, const char *name)
{
  char path[PATH_MAX];
  int n = snprintf(path, sizeof(path), "%s/%s", dir[0] ? dir : ".", name);

  if (n < 0 || (size_t)n >= sizeof(path))
    return LIB_NOT_HERE;
  return lib_at_path(path);
}

static enum lib_verdict lib_in_list(const char *list, const char *seps, const char *name,
                                    const char *origin)
{
  char dir[PATH_MAX];

  if (!list)
    return LIB_NOT_HERE;
  for (;;) {
    size_t len = strcspn(list, seps);

    if (expand_dir(dir, sizeof(dir), list, len, origin)) {
      enum lib_verdict v = lib_in_dir(dir, name);

      if (v != LIB_NOT_HERE)
        return v;
    }
    if (list[len] == '\0')
      return LIB_NOT_HERE;
    list += len + 1;
  }
}

/* Finds a DT_NEEDED library in the loader's order (DT_RPATH when there is no DT_RUNPATH,
 * LD_LIBRARY_PATH, DT_RUNPATH, the standard directories) and says whether it needs
 * MPICH. */
static enum lib_verdict lib_needs_mpich(const char *name, const struct elf_summary *app,
                                        const char *ld_library_path, const char *origin)
{
  enum lib_verdict v = LIB_NOT_HERE;

  if (strchr(name, '/')) /* the loader uses such a name as it is */
    return lib_at_path(name);
  if (!app->runpath)
    v = lib_in_list(app->rpath, ":", name, origin);
  if (v == LIB_NOT_HERE)
    v = lib_in_list(ld_library_path, ":;", name, origin);
  if (v == LIB_NOT_HERE)
    v = lib_in_list(app->runpath, ":", name, origin);
  for (size_t i = 0; v == LIB_NOT_HERE && i < COUNT(standard_lib_dirs); i++)
    v = lib_in_dir(standard_lib_dirs[i], name);
  return v;
}

/* The directory $ORIGIN stands for: where the program really is. */
static void origin_of(const char *resolved, char *origin, size_t len)
{
  char real[PATH_MAX];
  char *slash;

  if (!realpath(resolved, real))
    snprintf(real, sizeof(real), "%s", resolved);
  slash = strrchr(real, '/');
  if (slash)
    *slash = '\0';
  snprintf(origin, len, "%s", slash ? real : ".");
}

/* The program itself, or one of the libraries it loads directly, needs MPICH. One level is
 * enough for applications that reach MPI through a library of their own. */
static bool reaches_mpich(const struct elf_summary *app, const char *resolved,
                          const char *ld_library_path)
{
  char origin[PATH_MAX];

  if (needs_mpich(app))
    return true;
  origin_of(resolved, origin, sizeof(origin));
  for (size_t i = 0; i < app->needed_count; i++)
    if (lib_needs_mpich(app->needed[i], app, ld_library_path, origin) == LIB_MPI)
      return true;
  return false;
}

/* ------------------------------------------------------------------------------------- */
/* The verdict                                                                           */
/* ------------------------------------------------------------------------------------- */

static const char *machine_name(unsigned machine)
{
  switch (machine) {
  case EM_386:
    return "i386";
  case EM_ARM:
    return "32-bit ARM";
  case EM_AARCH64:
    return "AArch64";
  case EM_PPC64:
    return "POWER (ppc64)";
  case EM_S390:
    return "s390x";
  case EM_RISCV:
    return "RISC-V";
  default:
    return NULL;
  }
}

static int check_machine(const char *app, const struct elf_summary *sum,
                         struct app_check_result *res)
{
  const char *name;

  if (sum->elf_class == ELFCLASS64 && sum->machine == EM_X86_64)
    return 0;
  name = machine_name(sum->machine);
  if (name)
    return set_error(res, APP_CHECK_CANNOT_RUN, "%s: is built for %s, not x86-64", app, name);
  return set_error(res, APP_CHECK_CANNOT_RUN, "%s: is built for ELF machine %u%s, not x86-64", app,
                   sum->machine, sum->elf_class == ELFCLASS32 ? " (32-bit)" : "");
}

static int check_linking(const char *app, const struct elf_summary *sum,
                         struct app_check_result *res)
{
  if (sum->type != ET_EXEC && sum->type != ET_DYN)
    return set_error(res, APP_CHECK_CANNOT_RUN, "%s: is not a linked program (ELF type %u)", app,
                     sum->type);
  if (sum->has_interp)
    return 0;
  /* No interpreter: static, static-pie (dynamic section, DF_1_PIE), or a library. */
  if (!sum->has_dynamic || sum->type == ET_EXEC || sum->pie_flag)
    return set_error(res, APP_CHECK_CANNOT_RUN,
                     "%s: is statically linked; mana needs a dynamically linked MPI "
                     "program",
                     app);
  return set_error(res, APP_CHECK_CANNOT_RUN, "%s: is a shared library, not a program", app);
}

static int check_mpi(const char *app, const struct elf_summary *sum,
                     const struct app_check_env *env, struct app_check_result *res)
{
  const char *other;

  if (reaches_mpich(sum, res->resolved, env->ld_library_path))
    return 0;
  other = other_mpi(sum);
  if (other)
    return set_error(res, APP_CHECK_CANNOT_RUN,
                     "%s: is linked against %s, which is not MPICH; mana needs a "
                     "program built with MPICH (libmpich.so.12)",
                     app, other);
  return set_error(res, APP_CHECK_CANNOT_RUN,
                   "%s: is not linked against MPICH (libmpich.so.12); mana runs MPI "
                   "programs built with MPICH's mpicc, mpicxx or mpifort",
                   app);
}

static bool starts_with_shebang(const char *path)
{
  char magic[2];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  bool script;

  if (fd < 0)
    return false;
  script = read(fd, magic, 2) == 2 && magic[0] == '#' && magic[1] == '!';
  close(fd);
  return script;
}

static int check_elf(const char *app, const struct app_check_env *env, struct app_check_result *res)
{
  struct elf_summary sum = {0};
  enum scan_status status;
  int fd, rc;

  fd = open(res->resolved, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return set_error(res, APP_CHECK_CANNOT_RUN, "%s: cannot read: %s", app, strerror(errno));
  status = elf_scan(fd, &sum);
  close(fd);

  switch (status) {
  case SCAN_OK:
    break;
  case SCAN_NOT_ELF:
    summary_free(&sum);
    if (starts_with_shebang(res->resolved))
      return set_error(res, APP_CHECK_CANNOT_RUN,
                       "%s: is a script, not an ELF program; run mana_launch "
                       "on the MPI program the script starts",
                       app);
    return set_error(res, APP_CHECK_CANNOT_RUN, "%s: is not an ELF program", app);
  case SCAN_DAMAGED:
    summary_free(&sum);
    return set_error(res, APP_CHECK_CANNOT_RUN,
                     "%s: has damaged ELF program headers or dynamic section", app);
  case SCAN_LIBELF:
    summary_free(&sum);
    return set_error(res, APP_CHECK_CANNOT_RUN, "%s: cannot read ELF: %s", app, elf_errmsg(-1));
  }

  rc = check_machine(app, &sum, res);
  if (!rc)
    rc = check_linking(app, &sum, res);
  if (!rc)
    rc = check_mpi(app, &sum, env, res);
  summary_free(&sum);
  return rc;
}

int app_check(const char *app, const char *wdir, const struct app_check_env *env,
              struct app_check_result *result)
{
  int rc;

  memset(result, 0, sizeof(*result));
  rc = resolve_program(app, wdir, env->path, result);
  if (rc)
    return rc;
  return check_elf(app, env, result);
}

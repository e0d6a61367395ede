/* Initial stack construction for the upper half (see stack.h). */
#define _GNU_SOURCE
#include "stack.h"

#include <string.h>
#include <sys/random.h>

struct cursor {
  uint64_t low, top; /* strings grow down from top */
};

static uint64_t push_bytes(struct cursor *c, const void *data, size_t n)
{
  if (c->top - c->low < n)
    return 0;
  c->top -= n;
  memcpy((void *)c->top, data, n);
  return c->top;
}

static uint64_t push_string(struct cursor *c, const char *s)
{
  return push_bytes(c, s, strlen(s) + 1);
}

static size_t count(char *const v[])
{
  size_t n = 0;
  while (v && v[n])
    n++;
  return n;
}

uint64_t mana_build_stack(uint64_t low, uint64_t high, char *const argv[], char *const envp[],
                          const Elf64_auxv_t *kernel_auxv, const struct mana_auxv_overrides *ov,
                          uint64_t *execfn_at)
{
  struct cursor c = {low, high};
  size_t argc = count(argv), envc = count(envp), auxc = 0;
  while (kernel_auxv[auxc].a_type != AT_NULL)
    auxc++;

  uint64_t execfn = push_string(&c, ov->execfn);
  *execfn_at = execfn;
  uint64_t platform = push_string(&c, "x86_64");
  unsigned char random[16];
  if (getrandom(random, sizeof(random), 0) != (ssize_t)sizeof(random))
    memcpy(random, (void *)(uintptr_t)kernel_auxv, sizeof(random)); /* never expected */
  uint64_t random_at = push_bytes(&c, random, sizeof(random));
  uint64_t arg_ptrs[argc + 1], env_ptrs[envc + 1];
  for (size_t i = 0; i < argc; i++)
    arg_ptrs[i] = push_string(&c, argv[i]);
  for (size_t i = 0; i < envc; i++)
    env_ptrs[i] = push_string(&c, envp[i]);
  if (!execfn || !platform || !random_at)
    return 0;
  for (size_t i = 0; i < argc; i++)
    if (!arg_ptrs[i])
      return 0;
  for (size_t i = 0; i < envc; i++)
    if (!env_ptrs[i])
      return 0;
  arg_ptrs[argc] = 0;
  env_ptrs[envc] = 0;

  /* The vector part: argc, argv, NULL, envp, NULL, auxv (plus up to 4 entries we may add). */
  size_t words = 1 + (argc + 1) + (envc + 1) + 2 * (auxc + 5);
  uint64_t sp = (c.top - words * 8) & ~15UL;
  if (sp < c.low)
    return 0;
  uint64_t *w = (uint64_t *)sp;
  *w++ = argc;
  memcpy(w, arg_ptrs, (argc + 1) * 8);
  w += argc + 1;
  memcpy(w, env_ptrs, (envc + 1) * 8);
  w += envc + 1;
  int seen_base = 0, seen_execfn = 0, seen_platform = 0, seen_random = 0;
  for (size_t i = 0; i < auxc; i++) {
    uint64_t type = kernel_auxv[i].a_type, val = kernel_auxv[i].a_un.a_val;
    switch (type) {
    case AT_PHDR:
      val = ov->phdr;
      break;
    case AT_PHNUM:
      val = ov->phnum;
      break;
    case AT_PHENT:
      val = sizeof(Elf64_Phdr);
      break;
    case AT_ENTRY:
      val = ov->entry;
      break;
    case AT_BASE:
      val = ov->base;
      seen_base = 1;
      break;
    case AT_RANDOM:
      val = random_at;
      seen_random = 1;
      break;
    case AT_EXECFN:
      val = execfn;
      seen_execfn = 1;
      break;
    case AT_PLATFORM:
      val = platform;
      seen_platform = 1;
      break;
    case AT_SECURE:
      val = 0;
      break;
    case AT_SYSINFO_EHDR:
      if (ov->sysinfo_ehdr)
        val = ov->sysinfo_ehdr;
      break;
    default:
      break;
    }
    *w++ = type;
    *w++ = val;
  }
  if (!seen_base) {
    *w++ = AT_BASE;
    *w++ = ov->base;
  }
  if (!seen_random) {
    *w++ = AT_RANDOM;
    *w++ = random_at;
  }
  if (!seen_execfn) {
    *w++ = AT_EXECFN;
    *w++ = execfn;
  }
  if (!seen_platform) {
    *w++ = AT_PLATFORM;
    *w++ = platform;
  }
  *w++ = AT_NULL;
  *w++ = 0;
  return sp;
}

void mana_jump_to_upper(uint64_t sp, uint64_t entry)
{
  /* FS = 0 through arch_prctl inside the same asm block: from here on no code may use the lower
   * half's TLS.  %rdx = 0 tells the entry code there is no rtld_fini from a previous loader. */
  __asm__ volatile("mov %0, %%rsp\n\t"
                   "mov %1, %%r12\n\t"
                   "mov $158, %%eax\n\t"    /* SYS_arch_prctl */
                   "mov $0x1002, %%edi\n\t" /* ARCH_SET_FS */
                   "xor %%esi, %%esi\n\t"
                   "syscall\n\t"
                   "xor %%eax, %%eax\n\t"
                   "xor %%ebx, %%ebx\n\t"
                   "xor %%ecx, %%ecx\n\t"
                   "xor %%edx, %%edx\n\t"
                   "xor %%esi, %%esi\n\t"
                   "xor %%edi, %%edi\n\t"
                   "xor %%ebp, %%ebp\n\t"
                   "xor %%r8d, %%r8d\n\t"
                   "xor %%r9d, %%r9d\n\t"
                   "xor %%r10d, %%r10d\n\t"
                   "xor %%r11d, %%r11d\n\t"
                   "jmp *%%r12\n\t"
                   :
                   : "r"(sp), "r"(entry)
                   : "memory");
  __builtin_unreachable();
}

/* ELF loading for the upper half: libelf reads the headers, mmap places the segments. */
#define _GNU_SOURCE
#include "elf_load.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "mana/fail.h"

#define PAGE 4096UL
#define PAGE_DOWN(v) ((v) & ~(PAGE - 1))
#define PAGE_UP(v) (((v) + PAGE - 1) & ~(PAGE - 1))

static int prot_of(uint32_t flags)
{
  return ((flags & PF_R) ? PROT_READ : 0) | ((flags & PF_W) ? PROT_WRITE : 0) |
         ((flags & PF_X) ? PROT_EXEC : 0);
}

struct elf_file {
  const char *path; /* for messages */
  int fd;
  Elf *elf;
  GElf_Ehdr ehdr;
  size_t phnum;
};

static int open_elf(const char *path, struct elf_file *f, char *err, size_t errlen)
{
  f->path = path;
  f->fd = -1;
  f->elf = NULL;
  if (elf_version(EV_CURRENT) == EV_NONE) {
    return mana_fail(err, errlen, 0, "libelf is out of date");
  }
  f->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (f->fd < 0) {
    return mana_fail(err, errlen, errno, "cannot open %s", path);
  }
  f->elf = elf_begin(f->fd, ELF_C_READ, NULL);
  if (!f->elf || elf_kind(f->elf) != ELF_K_ELF || !gelf_getehdr(f->elf, &f->ehdr)) {
    return mana_fail(err, errlen, 0, "%s is not an ELF file", path);
  }
  if (f->ehdr.e_ident[EI_CLASS] != ELFCLASS64 || f->ehdr.e_machine != EM_X86_64) {
    return mana_fail(err, errlen, 0, "%s is not an x86-64 ELF file", path);
  }
  if (f->ehdr.e_type != ET_EXEC && f->ehdr.e_type != ET_DYN) {
    return mana_fail(err, errlen, 0, "%s is not an executable", path);
  }
  if (elf_getphdrnum(f->elf, &f->phnum) != 0 || f->phnum == 0) {
    return mana_fail(err, errlen, 0, "%s has no program headers", path);
  }
  return 0;
}

static void close_elf(struct elf_file *f)
{
  if (f->elf)
    elf_end(f->elf);
  if (f->fd >= 0)
    close(f->fd);
}

static int read_headers(struct elf_file *f, struct mana_elf_image *img, char *err, size_t errlen)
{
  memset(img, 0, sizeof(*img));
  img->is_pie = f->ehdr.e_type == ET_DYN;
  img->lo = UINT64_MAX;
  img->phnum = (uint16_t)f->phnum;
  uint64_t phdr_vaddr = 0;
  int have_phdr = 0;
  for (size_t i = 0; i < f->phnum; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(f->elf, (int)i, &ph)) {
      return mana_fail(err, errlen, 0, "%s: bad program header %zu: %s", f->path, i,
                       elf_errmsg(-1));
    }
    switch (ph.p_type) {
    case PT_LOAD:
      if (PAGE_DOWN(ph.p_vaddr) < img->lo)
        img->lo = PAGE_DOWN(ph.p_vaddr);
      if (PAGE_UP(ph.p_vaddr + ph.p_memsz) > img->hi)
        img->hi = PAGE_UP(ph.p_vaddr + ph.p_memsz);
      /* ld.so has no PT_PHDR: its headers are found inside the segment that maps e_phoff. */
      if (!have_phdr && f->ehdr.e_phoff >= ph.p_offset &&
          f->ehdr.e_phoff < ph.p_offset + ph.p_filesz)
        phdr_vaddr = ph.p_vaddr + (f->ehdr.e_phoff - ph.p_offset);
      break;
    case PT_PHDR:
      phdr_vaddr = ph.p_vaddr;
      have_phdr = 1;
      break;
    case PT_INTERP: {
      size_t n = ph.p_filesz < sizeof(img->interp) ? ph.p_filesz : sizeof(img->interp) - 1;
      errno = 0;
      if (pread(f->fd, img->interp, n, (off_t)ph.p_offset) != (ssize_t)n) {
        return mana_fail(err, errlen, 0, "%s: cannot read its interpreter name (PT_INTERP): %s",
                         f->path, errno ? strerror(errno) : "short read");
      }
      img->interp[n] = '\0';
      break;
    }
    case PT_DYNAMIC:
      img->has_dynamic = 1;
      break;
    }
  }
  if (img->lo == UINT64_MAX) {
    return mana_fail(err, errlen, 0, "%s has no loadable segments", f->path);
  }
  img->entry = f->ehdr.e_entry;
  img->phdr = phdr_vaddr;
  return 0;
}

int mana_elf_inspect(const char *path, struct mana_elf_image *img, char *err, size_t errlen)
{
  struct elf_file f;
  int rc = open_elf(path, &f, err, errlen);
  if (rc == 0)
    rc = read_headers(&f, img, err, errlen);
  close_elf(&f);
  return rc;
}

static int map_segment(const struct elf_file *f, const GElf_Phdr *ph, uint64_t bias, char *err,
                       size_t errlen)
{
  uint64_t start = PAGE_DOWN(bias + ph->p_vaddr);
  uint64_t file_end = bias + ph->p_vaddr + ph->p_filesz;
  uint64_t mem_end = PAGE_UP(bias + ph->p_vaddr + ph->p_memsz);
  int prot = prot_of(ph->p_flags);
  if (ph->p_filesz > 0) {
    uint64_t len = PAGE_UP(file_end) - start;
    void *p = mmap((void *)start, len, prot | (ph->p_memsz > ph->p_filesz ? PROT_WRITE : 0),
                   MAP_PRIVATE | MAP_FIXED, f->fd, (off_t)PAGE_DOWN(ph->p_offset));
    if (p == MAP_FAILED) {
      return mana_fail(err, errlen, errno, "%s: mmap of the segment at %#lx failed", f->path,
                       (unsigned long)start);
    }
  }
  if (ph->p_memsz > ph->p_filesz) {
    /* bss: zero the tail of the last file page, then anonymous pages for the rest. */
    uint64_t zero_from = ph->p_filesz ? file_end : start;
    uint64_t zero_page_end = ph->p_filesz ? PAGE_UP(file_end) : start;
    if (zero_page_end > zero_from)
      memset((void *)zero_from, 0, zero_page_end - zero_from);
    if (mem_end > zero_page_end) {
      void *p = mmap((void *)zero_page_end, mem_end - zero_page_end, prot,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (p == MAP_FAILED) {
        return mana_fail(err, errlen, errno, "%s: mmap of the bss at %#lx failed", f->path,
                         (unsigned long)zero_page_end);
      }
    }
    if (ph->p_filesz && !(prot & PROT_WRITE))
      mprotect((void *)start, PAGE_UP(file_end) - start, prot);
  }
  return 0;
}

int mana_elf_map(const char *path, uint64_t bias, struct mana_elf_image *img, char *err,
                 size_t errlen)
{
  struct elf_file f;
  int rc = open_elf(path, &f, err, errlen);
  if (rc == 0)
    rc = read_headers(&f, img, err, errlen);
  for (size_t i = 0; rc == 0 && i < f.phnum; i++) {
    GElf_Phdr ph;
    gelf_getphdr(f.elf, (int)i, &ph);
    if (ph.p_type == PT_LOAD)
      rc = map_segment(&f, &ph, bias, err, errlen);
  }
  if (rc == 0) {
    img->bias = bias;
    img->lo += bias;
    img->hi += bias;
    img->entry += bias;
    img->phdr += bias;
  }
  close_elf(&f);
  return rc;
}

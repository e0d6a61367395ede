/* Helpers shared by the image writer and reader (see image_util.h). */
#include "image_util.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Drops `done` bytes from the front of an iovec array; returns the new start. */
static struct iovec *iov_advance(struct iovec *iov, int *cnt, size_t done)
{
  while (*cnt > 0 && done >= iov->iov_len) {
    done -= iov->iov_len;
    iov++;
    (*cnt)--;
  }
  if (*cnt > 0) {
    iov->iov_base = (char *)iov->iov_base + done;
    iov->iov_len -= done;
  }
  return iov;
}

static int transfer_all(int fd, struct iovec *iov, int cnt, uint64_t off, bool writing)
{
  iov = iov_advance(iov, &cnt, 0); /* a read of nothing would look like the end of file */
  while (cnt > 0) {
    ssize_t n = writing ? pwritev(fd, iov, cnt, (off_t)off) : preadv(fd, iov, cnt, (off_t)off);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (n == 0) {
      errno = writing ? EIO : ENODATA;
      return -1;
    }
    off += (uint64_t)n;
    iov = iov_advance(iov, &cnt, (size_t)n);
  }
  return 0;
}

int img_pwritev_all(int fd, struct iovec *iov, int cnt, uint64_t off)
{
  return transfer_all(fd, iov, cnt, off, true);
}

int img_preadv_all(int fd, struct iovec *iov, int cnt, uint64_t off)
{
  return transfer_all(fd, iov, cnt, off, false);
}

int img_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
  struct iovec iov = {(void *)buf, len};
  return transfer_all(fd, &iov, 1, off, true);
}

int img_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
  struct iovec iov = {buf, len};
  return transfer_all(fd, &iov, 1, off, false);
}

bool img_page_is_zero(const void *page)
{
  const uint64_t *w = page;
  /* Data pages almost always differ from zero in their first or last word: decide those
   * without reading the rest. */
  if (w[0] | w[IMG_PAGE / 8 - 1])
    return false;
  for (size_t i = 0; i < IMG_PAGE / 8; i += 8) {
    uint64_t acc =
        w[i] | w[i + 1] | w[i + 2] | w[i + 3] | w[i + 4] | w[i + 5] | w[i + 6] | w[i + 7];
    if (acc)
      return false;
  }
  return true;
}

void img_content_add_pages(XXH3_state_t *st, uint64_t first_page, const void *base, uint64_t npages)
{
  const char *p = base;
  for (uint64_t i = 0; i < npages; i++, p += IMG_PAGE)
    if (!img_page_is_zero(p))
      img_content_add_page(st, first_page + i, p);
}

uint64_t img_zero_page_hash(void)
{
  static _Atomic uint64_t cached; /* 0 until computed; XXH3 of a zero page is not 0 */
  uint64_t h = atomic_load_explicit(&cached, memory_order_relaxed);
  if (!h) {
    static const unsigned char zero[IMG_PAGE];
    h = XXH3_64bits(zero, IMG_PAGE);
    atomic_store_explicit(&cached, h, memory_order_relaxed);
  }
  return h;
}

void img_set_string(char *field, size_t fieldlen, const char *s)
{
  size_t n = s ? strnlen(s, fieldlen - 1) : 0;
  memset(field, 0, fieldlen);
  memcpy(field, s ? s : "", n);
}

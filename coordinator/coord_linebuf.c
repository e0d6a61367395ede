/* coord_linebuf: buffered line splitting with a limit (see coord_linebuf.h). */
#include "coord_linebuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* First allocation: enough for every message but the large tables. */
#define LINEBUF_INITIAL 4096

void coord_linebuf_init(struct coord_linebuf *buf, size_t max)
{
  memset(buf, 0, sizeof(*buf));
  buf->max = max;
}

void coord_linebuf_free(struct coord_linebuf *buf)
{
  free(buf->data);
  memset(buf, 0, sizeof(*buf));
}

size_t coord_linebuf_pending(const struct coord_linebuf *buf)
{
  return buf->len - buf->start;
}

/* Moves the unreturned bytes to the front, which invalidates returned lines. */
static void compact(struct coord_linebuf *buf)
{
  size_t pending = coord_linebuf_pending(buf);

  if (buf->start == 0)
    return;
  memmove(buf->data, buf->data + buf->start, pending);
  buf->start = 0;
  buf->len = pending;
}

/* Makes room for more bytes; the buffer never holds more than max bytes. */
static int grow(struct coord_linebuf *buf)
{
  size_t cap = buf->cap ? buf->cap * 2 : LINEBUF_INITIAL;
  char *data;

  if (cap > buf->max)
    cap = buf->max;
  if (cap <= buf->cap) {
    errno = ENOBUFS;
    return -1;
  }
  data = realloc(buf->data, cap);
  if (!data)
    return -1;
  buf->data = data;
  buf->cap = cap;
  return 0;
}

ssize_t coord_linebuf_fill(struct coord_linebuf *buf, int fd)
{
  ssize_t n;

  compact(buf);
  if (buf->len == buf->cap && grow(buf))
    return -1;
  do
    n = read(fd, buf->data + buf->len, buf->cap - buf->len);
  while (n < 0 && errno == EINTR);
  if (n > 0)
    buf->len += (size_t)n;
  return n;
}

int coord_linebuf_next(struct coord_linebuf *buf, char **line, size_t *len)
{
  char *begin = buf->data + buf->start;
  size_t pending = coord_linebuf_pending(buf);
  char *nl = pending ? memchr(begin, '\n', pending) : NULL;

  if (!nl)
    return pending >= buf->max ? -1 : 0;
  *len = (size_t)(nl - begin);
  if (*len + 1 > buf->max)
    return -1;
  *nl = '\0';
  *line = begin;
  buf->start += *len + 1;
  return 1;
}

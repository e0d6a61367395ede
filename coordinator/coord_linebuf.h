/* coord_linebuf: split a byte stream from a socket into protocol lines, with a hard limit.
 *
 * Used by both ends: the coordinator keeps one per connection, the client library one per
 * connection. The buffer grows on demand up to the line limit, so thousands of idle rank
 * connections cost little, and a peer that sends a line longer than the limit is detected
 * without ever buffering more than the limit.
 */
#ifndef MANA_COORD_LINEBUF_H
#define MANA_COORD_LINEBUF_H

#include <stddef.h>
#include <sys/types.h>

struct coord_linebuf {
  char *data;
  size_t start; /* first byte not yet returned as a line */
  size_t len;   /* bytes held, from data[0] */
  size_t cap;
  size_t max; /* longest line accepted, '\n' included */
};

/* max is the longest line, newline included. No allocation happens until data arrives. */
void coord_linebuf_init(struct coord_linebuf *buf, size_t max);
void coord_linebuf_free(struct coord_linebuf *buf);

/* One read(2) into the buffer. Returns the byte count, 0 at end of file, or -1 with errno
 * set (EAGAIN on a non-blocking socket with nothing to read; ENOBUFS when the buffered
 * partial line already fills the limit, i.e. the peer sent an overlong line). */
ssize_t coord_linebuf_fill(struct coord_linebuf *buf, int fd);

/* Takes the next complete line: returns 1 with *line NUL-terminated in place (the '\n'
 * replaced) and *len its length, valid until the next fill; 0 when no complete line is
 * buffered; -1 when the pending line is longer than the limit. */
int coord_linebuf_next(struct coord_linebuf *buf, char **line, size_t *len);

/* Bytes buffered that are not yet part of a returned line. */
size_t coord_linebuf_pending(const struct coord_linebuf *buf);

#endif

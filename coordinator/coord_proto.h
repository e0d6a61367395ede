/* coord_proto: the coordinator's wire format, shared by the coordinator, the client library
 * (linked into every rank's lower half and into mana_status) and the tests.
 *
 * One message is one line of printable ASCII ended by '\n':
 *
 *     VERB key=value key=value ...
 *
 * VERB is [A-Z][A-Z0-9_]*, a key is [a-z][a-z0-9_]*, fields are separated by exactly one
 * space, and a value is any byte string in which every byte outside '!'..'~' and every '%'
 * is written as %XX (two hex digits). Nothing here does I/O or allocates: parsing decodes in
 * place and formatting writes into a buffer the caller owns, so the same code runs in the
 * coordinator's event loop and in a lower-half thread. docs/coordinator-protocol.md is the
 * full specification.
 */
#ifndef MANA_COORD_PROTO_H
#define MANA_COORD_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COORD_PROTO_VERSION 1

/* Longest line, '\n' included. A sender that needs more splits the message (tables). */
#define COORD_LINE_MAX 65536
#define COORD_VERB_MAX 16   /* characters of a verb */
#define COORD_KEY_MAX 24    /* characters of a key */
#define COORD_MAX_FIELDS 32 /* fields in one line */

/* Entries of a table value ("t=") per line; 1024 entries of at most 38 bytes stay well
 * under COORD_LINE_MAX. Longer tables are sent as several lines with more=1. */
#define COORD_TABLE_CHUNK 1024

/* Size of the error buffers every function here and in the client library fills. */
#define COORD_ERR_LEN 256

struct coord_field {
  const char *key;
  const char *value; /* decoded, NUL-terminated */
};

/* A parsed line. The strings point into the buffer that was parsed. */
struct coord_msg {
  const char *verb;
  size_t nfields;
  struct coord_field fields[COORD_MAX_FIELDS];
};

/* One entry of a table: a collective group id and a sequence number or target. */
struct coord_entry {
  uint64_t ggid;
  uint64_t value;
};

/* Parses line[0..len) (without its '\n') in place: separators become NULs and escapes are
 * decoded, so line[len] must be writable. Returns 0, or -1 with a one-line reason in err. */
int coord_msg_parse(char *line, size_t len, struct coord_msg *msg, char *err, size_t errlen);

/* The value of key, or NULL when the line has no such field. */
const char *coord_msg_get(const struct coord_msg *msg, const char *key);

/* Required fields, checked: return 0, or -1 with "missing key=" / "invalid key=..." in err. */
int coord_msg_str(const struct coord_msg *msg, const char *key, const char **out, char *err,
                  size_t errlen);
int coord_msg_u64(const struct coord_msg *msg, const char *key, uint64_t *out, char *err,
                  size_t errlen);
int coord_msg_x64(const struct coord_msg *msg, const char *key, uint64_t *out, char *err,
                  size_t errlen);
/* A flag: absent is false, "1" is true, "0" is false, anything else is an error. */
int coord_msg_flag(const struct coord_msg *msg, const char *key, bool *out, char *err,
                   size_t errlen);

/* Strict number syntax: decimal digits only (at most 20, no sign, no overflow) / 1 to 16
 * hex digits without "0x". */
bool coord_parse_u64(const char *s, uint64_t *out);
bool coord_parse_x64(const char *s, uint64_t *out);

/* A table value "ggid:value,ggid:value,..." (ggid in hex, value decimal; empty string is
 * the empty table). Counts its entries without checking them. */
size_t coord_table_count(const char *s);
/* Parses into out[0..cap); duplicates of a ggid are an error. Returns 0 with *count set,
 * or -1 with err. */
int coord_table_parse(const char *s, struct coord_entry *out, size_t cap, size_t *count, char *err,
                      size_t errlen);

/* Builds one line into a caller-owned buffer. Every call after a failure is a no-op, and
 * coord_line_end() reports it, so a sequence of adds needs one check at the end. */
struct coord_line {
  char *buf;
  size_t cap;
  size_t len;
  bool failed; /* overflow, or an invalid verb/key (a programming error) */
};

void coord_line_start(struct coord_line *line, char *buf, size_t cap, const char *verb);
void coord_line_str(struct coord_line *line, const char *key, const char *value);
void coord_line_u64(struct coord_line *line, const char *key, uint64_t value);
void coord_line_x64(struct coord_line *line, const char *key, uint64_t value);
void coord_line_table(struct coord_line *line, const char *key, const struct coord_entry *entries,
                      size_t count);
/* Appends the '\n'. Returns 0, or -1 when the line is invalid or did not fit in cap or in
 * COORD_LINE_MAX. On success line->buf[0..line->len) is the line to send. */
int coord_line_end(struct coord_line *line);

/* Checks a verb or key against the grammar. */
bool coord_valid_verb(const char *verb);
bool coord_valid_key(const char *key);

#endif

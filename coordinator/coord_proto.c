/* coord_proto: parse and format protocol lines (see coord_proto.h and
 * docs/coordinator-protocol.md). Every input comes from the network, so every byte is
 * checked and every error says what was wrong without echoing the bad bytes back. */
#include "coord_proto.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "mana/fail.h"

static bool is_upper_or_digit(char c)
{
  return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool is_lower_or_digit(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* Bytes that travel unescaped: printable ASCII without space and without '%'. */
static bool is_plain(unsigned char c)
{
  return c > ' ' && c <= '~' && c != '%';
}

static int hex_digit(char c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

static bool valid_name(const char *s, size_t len, size_t max, bool upper)
{
  if (len == 0 || len > max)
    return false;
  if (upper ? !(s[0] >= 'A' && s[0] <= 'Z') : !(s[0] >= 'a' && s[0] <= 'z'))
    return false;
  for (size_t i = 1; i < len; i++)
    if (upper ? !is_upper_or_digit(s[i]) : !is_lower_or_digit(s[i]))
      return false;
  return true;
}

bool coord_valid_verb(const char *verb)
{
  return valid_name(verb, strlen(verb), COORD_VERB_MAX, true);
}

bool coord_valid_key(const char *key)
{
  return valid_name(key, strlen(key), COORD_KEY_MAX, false);
}

/* ------------------------------------------------------------------------------------- */
/* Parsing                                                                               */
/* ------------------------------------------------------------------------------------- */

/* Decodes value[0..len) in place and NUL-terminates it. */
static int decode_value(char *value, size_t len, const char *key, char *err, size_t errlen)
{
  size_t out = 0;

  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)value[i];
    int hi, lo;

    if (c != '%') {
      if (!is_plain(c))
        return mana_fail(err, errlen, 0,
                         "byte 0x%02x in the value of %s= must "
                         "be %%-escaped",
                         c, key);
      value[out++] = (char)c;
      continue;
    }
    if (i + 2 >= len)
      return mana_fail(err, errlen, 0, "truncated %%-escape in the value of %s=", key);
    hi = hex_digit(value[i + 1]);
    lo = hex_digit(value[i + 2]);
    if (hi < 0 || lo < 0)
      return mana_fail(err, errlen, 0, "bad %%-escape in the value of %s=", key);
    if (hi == 0 && lo == 0)
      return mana_fail(err, errlen, 0, "%%00 (NUL) in the value of %s=", key);
    value[out++] = (char)(hi * 16 + lo);
    i += 2;
  }
  value[out] = '\0';
  return 0;
}

static bool seen_key(const struct coord_msg *msg, const char *key)
{
  for (size_t i = 0; i < msg->nfields; i++)
    if (strcmp(msg->fields[i].key, key) == 0)
      return true;
  return false;
}

/* One "key=value" at field[0..len); the byte after it is writable. */
static int parse_field(char *field, size_t len, struct coord_msg *msg, char *err, size_t errlen)
{
  char *eq = memchr(field, '=', len);
  size_t keylen;

  if (!eq)
    return mana_fail(err, errlen, 0, "field %zu is not key=value", msg->nfields + 1);
  keylen = (size_t)(eq - field);
  if (!valid_name(field, keylen, COORD_KEY_MAX, false))
    return mana_fail(err, errlen, 0, "field %zu has an invalid key", msg->nfields + 1);
  if (msg->nfields == COORD_MAX_FIELDS)
    return mana_fail(err, errlen, 0, "more than %d fields", COORD_MAX_FIELDS);
  *eq = '\0';
  if (seen_key(msg, field))
    return mana_fail(err, errlen, 0, "duplicate key %s=", field);
  if (decode_value(eq + 1, len - keylen - 1, field, err, errlen))
    return -1;
  msg->fields[msg->nfields].key = field;
  msg->fields[msg->nfields].value = eq + 1;
  msg->nfields++;
  return 0;
}

int coord_msg_parse(char *line, size_t len, struct coord_msg *msg, char *err, size_t errlen)
{
  size_t pos;

  memset(msg, 0, sizeof(*msg));
  if (len == 0)
    return mana_fail(err, errlen, 0, "empty line");
  if (len >= COORD_LINE_MAX)
    return mana_fail(err, errlen, 0, "line longer than %d bytes", COORD_LINE_MAX - 1);
  if (memchr(line, '\0', len))
    return mana_fail(err, errlen, 0, "NUL byte in the line");
  line[len] = '\0';

  pos = strcspn(line, " ");
  if (!valid_name(line, pos, COORD_VERB_MAX, true))
    return mana_fail(err, errlen, 0, "invalid verb");
  msg->verb = line;
  while (pos < len) {
    char *field;
    size_t flen;

    /* line[pos] is a separating space: exactly one, never trailing. Decoding a
     * field may overwrite the space after it, so it is found before decoding. */
    line[pos++] = '\0';
    if (pos == len || line[pos] == ' ')
      return mana_fail(err, errlen, 0, "stray space");
    field = line + pos;
    flen = strcspn(field, " ");
    pos += flen;
    if (parse_field(field, flen, msg, err, errlen))
      return -1;
  }
  return 0;
}

const char *coord_msg_get(const struct coord_msg *msg, const char *key)
{
  for (size_t i = 0; i < msg->nfields; i++)
    if (strcmp(msg->fields[i].key, key) == 0)
      return msg->fields[i].value;
  return NULL;
}

int coord_msg_str(const struct coord_msg *msg, const char *key, const char **out, char *err,
                  size_t errlen)
{
  *out = coord_msg_get(msg, key);
  if (!*out)
    return mana_fail(err, errlen, 0, "%s: missing %s=", msg->verb, key);
  return 0;
}

bool coord_parse_u64(const char *s, uint64_t *out)
{
  uint64_t v = 0;

  if (!*s || strlen(s) > 20)
    return false;
  for (; *s; s++) {
    uint64_t digit;

    if (*s < '0' || *s > '9')
      return false;
    digit = (uint64_t)(*s - '0');
    if (v > (UINT64_MAX - digit) / 10)
      return false;
    v = v * 10 + digit;
  }
  *out = v;
  return true;
}

bool coord_parse_x64(const char *s, uint64_t *out)
{
  uint64_t v = 0;
  size_t n = strlen(s);

  if (n == 0 || n > 16)
    return false;
  for (; *s; s++) {
    int d = hex_digit(*s);

    if (d < 0)
      return false;
    v = v << 4 | (uint64_t)d;
  }
  *out = v;
  return true;
}

int coord_msg_u64(const struct coord_msg *msg, const char *key, uint64_t *out, char *err,
                  size_t errlen)
{
  const char *value;

  if (coord_msg_str(msg, key, &value, err, errlen))
    return -1;
  if (!coord_parse_u64(value, out))
    return mana_fail(err, errlen, 0, "%s: %s= must be a decimal number", msg->verb, key);
  return 0;
}

int coord_msg_x64(const struct coord_msg *msg, const char *key, uint64_t *out, char *err,
                  size_t errlen)
{
  const char *value;

  if (coord_msg_str(msg, key, &value, err, errlen))
    return -1;
  if (!coord_parse_x64(value, out))
    return mana_fail(err, errlen, 0, "%s: %s= must be 1 to 16 hex digits", msg->verb, key);
  return 0;
}

int coord_msg_flag(const struct coord_msg *msg, const char *key, bool *out, char *err,
                   size_t errlen)
{
  const char *value = coord_msg_get(msg, key);

  *out = false;
  if (!value || strcmp(value, "0") == 0)
    return 0;
  if (strcmp(value, "1") == 0) {
    *out = true;
    return 0;
  }
  return mana_fail(err, errlen, 0, "%s: %s= must be 0 or 1", msg->verb, key);
}

/* ------------------------------------------------------------------------------------- */
/* Tables                                                                                */
/* ------------------------------------------------------------------------------------- */

size_t coord_table_count(const char *s)
{
  size_t n = 1;

  if (!*s)
    return 0;
  for (; *s; s++)
    n += *s == ',';
  return n;
}

/* One "ggid:value" of length len. */
static int parse_entry(const char *s, size_t len, struct coord_entry *entry, size_t index,
                       char *err, size_t errlen)
{
  char ggid[17], value[21];
  const char *colon = memchr(s, ':', len);
  size_t glen, vlen;

  if (!colon)
    return mana_fail(err, errlen, 0, "table entry %zu is not ggid:value", index + 1);
  glen = (size_t)(colon - s);
  vlen = len - glen - 1;
  if (glen == 0 || glen >= sizeof(ggid) || vlen == 0 || vlen >= sizeof(value))
    return mana_fail(err, errlen, 0, "table entry %zu has a bad length", index + 1);
  memcpy(ggid, s, glen);
  ggid[glen] = '\0';
  memcpy(value, colon + 1, vlen);
  value[vlen] = '\0';
  if (!coord_parse_x64(ggid, &entry->ggid) || !coord_parse_u64(value, &entry->value))
    return mana_fail(err, errlen, 0, "table entry %zu: expected hex ggid:decimal value", index + 1);
  return 0;
}

int coord_table_parse(const char *s, struct coord_entry *out, size_t cap, size_t *count, char *err,
                      size_t errlen)
{
  size_t n = 0;

  *count = 0;
  if (!*s)
    return 0;
  for (;;) {
    size_t len = strcspn(s, ",");

    if (n == cap)
      return mana_fail(err, errlen, 0, "table has more than %zu entries", cap);
    if (parse_entry(s, len, &out[n], n, err, errlen))
      return -1;
    for (size_t k = 0; k < n; k++)
      if (out[k].ggid == out[n].ggid)
        return mana_fail(err, errlen, 0, "ggid %" PRIx64 " appears twice", out[n].ggid);
    n++;
    s += len;
    if (!*s)
      break;
    s++; /* past ',' */
    if (!*s)
      return mana_fail(err, errlen, 0, "table ends with ','");
  }
  *count = n;
  return 0;
}

/* ------------------------------------------------------------------------------------- */
/* Formatting                                                                            */
/* ------------------------------------------------------------------------------------- */

/* Room for content: one byte stays for '\n' and the line never exceeds COORD_LINE_MAX. */
static size_t content_limit(const struct coord_line *line)
{
  size_t cap = line->cap < COORD_LINE_MAX ? line->cap : COORD_LINE_MAX;

  return cap > 0 ? cap - 1 : 0;
}

static void put(struct coord_line *line, const char *s, size_t n)
{
  if (line->failed)
    return;
  if (n > content_limit(line) - line->len) {
    line->failed = true;
    return;
  }
  memcpy(line->buf + line->len, s, n);
  line->len += n;
}

void coord_line_start(struct coord_line *line, char *buf, size_t cap, const char *verb)
{
  line->buf = buf;
  line->cap = cap;
  line->len = 0;
  line->failed = cap == 0 || !coord_valid_verb(verb);
  put(line, verb, strlen(verb));
}

static void put_key(struct coord_line *line, const char *key)
{
  if (!coord_valid_key(key))
    line->failed = true;
  put(line, " ", 1);
  put(line, key, strlen(key));
  put(line, "=", 1);
}

void coord_line_str(struct coord_line *line, const char *key, const char *value)
{
  static const char hex[] = "0123456789ABCDEF";

  put_key(line, key);
  for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
    if (is_plain(*p)) {
      put(line, (const char *)p, 1);
    } else {
      char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};

      put(line, esc, 3);
    }
  }
}

void coord_line_u64(struct coord_line *line, const char *key, uint64_t value)
{
  char digits[24];
  int n = snprintf(digits, sizeof(digits), "%" PRIu64, value);

  put_key(line, key);
  put(line, digits, (size_t)n);
}

void coord_line_x64(struct coord_line *line, const char *key, uint64_t value)
{
  char digits[24];
  int n = snprintf(digits, sizeof(digits), "%016" PRIx64, value);

  put_key(line, key);
  put(line, digits, (size_t)n);
}

void coord_line_table(struct coord_line *line, const char *key, const struct coord_entry *entries,
                      size_t count)
{
  put_key(line, key);
  for (size_t i = 0; i < count; i++) {
    char entry[48];
    int n = snprintf(entry, sizeof(entry), "%s%016" PRIx64 ":%" PRIu64, i ? "," : "",
                     entries[i].ggid, entries[i].value);

    put(line, entry, (size_t)n);
  }
}

int coord_line_end(struct coord_line *line)
{
  if (line->failed)
    return -1;
  /* content_limit() kept one byte free for the newline */
  line->buf[line->len++] = '\n';
  return 0;
}

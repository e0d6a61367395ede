/* Unit tests for coordinator/coord_proto.c: the wire format's parser and formatter. Every
 * malformed form the specification names is rejected; every value survives a round trip. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_proto.h"

static char buf[COORD_LINE_MAX + 16];
static char err[COORD_ERR_LEN];
static struct coord_msg msg;

/* Parses a C string (copied, since parsing works in place). */
static int parse(const char *line)
{
  size_t len = strlen(line);

  cr_assert_lt(len, sizeof(buf));
  memcpy(buf, line, len + 1);
  err[0] = '\0';
  return coord_msg_parse(buf, len, &msg, err, sizeof(err));
}

static void expect_bad(const char *line, const char *part)
{
  cr_assert_eq(parse(line), -1, "accepted: '%s'", line);
  cr_assert(strstr(err, part), "error for '%s' is '%s', expected '%s'", line, err, part);
}

/* --- valid lines ------------------------------------------------------------------------ */

Test(coord_proto, verb_only)
{
  cr_assert_eq(parse("STATUS"), 0, "%s", err);
  cr_assert_str_eq(msg.verb, "STATUS");
  cr_assert_eq(msg.nfields, 0);
}

Test(coord_proto, fields)
{
  cr_assert_eq(parse("CKPT gen=12 dir=/scratch/ck/gen-000012"), 0, "%s", err);
  cr_assert_str_eq(msg.verb, "CKPT");
  cr_assert_eq(msg.nfields, 2);
  cr_assert_str_eq(coord_msg_get(&msg, "gen"), "12");
  cr_assert_str_eq(coord_msg_get(&msg, "dir"), "/scratch/ck/gen-000012");
  cr_assert_null(coord_msg_get(&msg, "missing"));
}

Test(coord_proto, empty_value_and_equals_in_value)
{
  cr_assert_eq(parse("ABORT gen=1 reason= x=a=b"), 0, "%s", err);
  cr_assert_str_eq(coord_msg_get(&msg, "reason"), "");
  cr_assert_str_eq(coord_msg_get(&msg, "x"), "a=b");
}

Test(coord_proto, escapes_decoded)
{
  cr_assert_eq(parse("ERROR reason=no%20space%25left%0a%c3%A9"), 0, "%s", err);
  cr_assert_str_eq(coord_msg_get(&msg, "reason"), "no space%left\n\xc3\xa9");
}

Test(coord_proto, names_with_digits_and_underscores)
{
  cr_assert_eq(parse("MANA_MANIFEST v=1 committed_at=x k9=y"), 0, "%s", err);
  cr_assert_str_eq(coord_msg_get(&msg, "committed_at"), "x");
}

Test(coord_proto, longest_line)
{
  char *line = malloc(COORD_LINE_MAX + 1);
  size_t len = COORD_LINE_MAX - 1; /* the newline makes it COORD_LINE_MAX */

  memcpy(line, "A v=", 4);
  memset(line + 4, 'x', len - 4);
  cr_assert_eq(coord_msg_parse(line, len, &msg, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(strlen(coord_msg_get(&msg, "v")), len - 4);
  free(line);
}

Test(coord_proto, most_fields)
{
  char line[1024] = "A";

  for (int i = 0; i < COORD_MAX_FIELDS; i++)
    sprintf(line + strlen(line), " k%d=%d", i, i);
  cr_assert_eq(parse(line), 0, "%s", err);
  cr_assert_eq(msg.nfields, COORD_MAX_FIELDS);
}

/* --- malformed lines -------------------------------------------------------------------- */

Test(coord_proto, rejects_bad_structure)
{
  expect_bad("", "empty");
  expect_bad(" STATUS", "verb");
  expect_bad("STATUS ", "stray space");
  expect_bad("CKPT  gen=1", "stray space");
  expect_bad("CKPT gen=1 ", "stray space");
  expect_bad("status", "verb");
  expect_bad("1CKPT", "verb");
  expect_bad("CKPT-X gen=1", "verb");
  expect_bad("ABCDEFGHIJKLMNOPQ", "verb"); /* 17 characters */
  expect_bad("CKPT gen", "key=value");
  expect_bad("CKPT =1", "invalid key");
  expect_bad("CKPT Gen=1", "invalid key");
  expect_bad("CKPT 1gen=1", "invalid key");
  expect_bad("CKPT abcdefghijklmnopqrstuvwxy=1", "invalid key"); /* 25 characters */
  expect_bad("CKPT gen=1 gen=2", "duplicate key gen=");
}

Test(coord_proto, rejects_too_many_fields)
{
  char line[1024] = "A";

  for (int i = 0; i <= COORD_MAX_FIELDS; i++)
    sprintf(line + strlen(line), " k%d=%d", i, i);
  expect_bad(line, "more than");
}

Test(coord_proto, rejects_bad_bytes_and_escapes)
{
  expect_bad("A v=a%zz", "bad %-escape");
  expect_bad("A v=a%2", "truncated");
  expect_bad("A v=%", "truncated");
  expect_bad("A v=%2g", "bad %-escape");
  expect_bad("A v=%00", "NUL");
  expect_bad("A v=a\x01", "must be %-escaped");
  expect_bad("A v=a\tb", "must be %-escaped");
  expect_bad("A v=a\r", "must be %-escaped");
  expect_bad("A v=\x80", "must be %-escaped");
  expect_bad("A v=\x7f", "must be %-escaped");
}

Test(coord_proto, rejects_embedded_nul)
{
  char line[] = "A v=ab\0cd";

  cr_assert_eq(coord_msg_parse(line, sizeof(line) - 1, &msg, err, sizeof(err)), -1);
  cr_assert(strstr(err, "NUL"), "%s", err);
}

Test(coord_proto, rejects_overlong_line)
{
  char *line = malloc(COORD_LINE_MAX + 1);

  memcpy(line, "A v=", 4);
  memset(line + 4, 'x', COORD_LINE_MAX - 4);
  cr_assert_eq(coord_msg_parse(line, COORD_LINE_MAX, &msg, err, sizeof(err)), -1);
  cr_assert(strstr(err, "longer"), "%s", err);
  free(line);
}

/* --- typed fields ------------------------------------------------------------------------ */

Test(coord_proto, numbers)
{
  uint64_t v;

  cr_assert(coord_parse_u64("0", &v) && v == 0);
  cr_assert(coord_parse_u64("18446744073709551615", &v) && v == UINT64_MAX);
  cr_assert(!coord_parse_u64("18446744073709551616", &v));
  cr_assert(!coord_parse_u64("", &v));
  cr_assert(!coord_parse_u64("-1", &v));
  cr_assert(!coord_parse_u64("+1", &v));
  cr_assert(!coord_parse_u64("1x", &v));
  cr_assert(!coord_parse_u64(" 1", &v));
  cr_assert(!coord_parse_u64("000000000000000000001", &v)); /* 21 digits */

  cr_assert(coord_parse_x64("0", &v) && v == 0);
  cr_assert(coord_parse_x64("ffffFFFFffffFFFF", &v) && v == UINT64_MAX);
  cr_assert(coord_parse_x64("00000000deadbeef", &v) && v == 0xdeadbeef);
  cr_assert(!coord_parse_x64("10000000000000000", &v)); /* 17 digits */
  cr_assert(!coord_parse_x64("0x1", &v));
  cr_assert(!coord_parse_x64("", &v));
  cr_assert(!coord_parse_x64("g", &v));
}

Test(coord_proto, required_fields)
{
  const char *s;
  uint64_t v;
  bool flag;

  cr_assert_eq(parse("RAISE gen=3 ggid=ab target=x wait=1 kill=2"), 0, "%s", err);
  cr_assert_eq(coord_msg_u64(&msg, "gen", &v, err, sizeof(err)), 0);
  cr_assert_eq(v, 3);
  cr_assert_eq(coord_msg_x64(&msg, "ggid", &v, err, sizeof(err)), 0);
  cr_assert_eq(v, 0xab);
  cr_assert_eq(coord_msg_u64(&msg, "target", &v, err, sizeof(err)), -1);
  cr_assert(strstr(err, "target= must be a decimal number"), "%s", err);
  cr_assert_eq(coord_msg_u64(&msg, "epoch", &v, err, sizeof(err)), -1);
  cr_assert(strstr(err, "missing epoch="), "%s", err);
  cr_assert_eq(coord_msg_str(&msg, "nothing", &s, err, sizeof(err)), -1);
  cr_assert_eq(coord_msg_flag(&msg, "wait", &flag, err, sizeof(err)), 0);
  cr_assert(flag);
  cr_assert_eq(coord_msg_flag(&msg, "absent", &flag, err, sizeof(err)), 0);
  cr_assert(!flag);
  cr_assert_eq(coord_msg_flag(&msg, "kill", &flag, err, sizeof(err)), -1);
}

/* --- tables ------------------------------------------------------------------------------ */

Test(coord_proto, tables)
{
  struct coord_entry e[4];
  size_t n;

  cr_assert_eq(coord_table_count(""), 0);
  cr_assert_eq(coord_table_count("a:1,b:2,c:3"), 3);
  cr_assert_eq(coord_table_parse("", e, 4, &n, err, sizeof(err)), 0);
  cr_assert_eq(n, 0);
  cr_assert_eq(
      coord_table_parse("00000000000000ab:7,ff:18446744073709551615", e, 4, &n, err, sizeof(err)),
      0, "%s", err);
  cr_assert_eq(n, 2);
  cr_assert_eq(e[0].ggid, 0xab);
  cr_assert_eq(e[0].value, 7);
  cr_assert_eq(e[1].value, UINT64_MAX);
}

Test(coord_proto, bad_tables)
{
  static const char *const bad[] = {
      "a:1,",    ",a:1", "a1",       "a:",      ":1",
      "g:1",     "a:-1", "a:1,,b:2", "a:1;b:2", "11111111111111111:1",
      "a:1,a:2", "a:1 ",
  };
  struct coord_entry e[8];
  size_t n;

  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    cr_assert_eq(coord_table_parse(bad[i], e, 8, &n, err, sizeof(err)), -1, "accepted table '%s'",
                 bad[i]);
  cr_assert_eq(coord_table_parse("a:1,b:2,c:3", e, 2, &n, err, sizeof(err)), -1);
  cr_assert(strstr(err, "more than 2"), "%s", err);
  cr_assert_eq(coord_table_parse("a:1,a:2", e, 8, &n, err, sizeof(err)), -1);
  cr_assert(strstr(err, "twice"), "%s", err);
}

/* --- formatting -------------------------------------------------------------------------- */

static const char *format_done(struct coord_line *line)
{
  cr_assert_eq(coord_line_end(line), 0);
  cr_assert_eq(line->buf[line->len - 1], '\n');
  line->buf[line->len] = '\0';
  return line->buf;
}

Test(coord_proto, format_fields)
{
  struct coord_line line;
  struct coord_entry t[2] = {{0xabc, 5}, {UINT64_MAX, 0}};

  coord_line_start(&line, buf, sizeof(buf), "TARGETS");
  coord_line_u64(&line, "gen", 7);
  coord_line_x64(&line, "ggid", 0x1f);
  coord_line_str(&line, "why", "a b%c\n");
  coord_line_table(&line, "t", t, 2);
  cr_assert_str_eq(format_done(&line), "TARGETS gen=7 ggid=000000000000001f why=a%20b%25c%0A "
                                       "t=0000000000000abc:5,ffffffffffffffff:0\n");
}

Test(coord_proto, format_rejects_bad_names_and_overflow)
{
  struct coord_line line;
  char small[16];

  coord_line_start(&line, buf, sizeof(buf), "lower");
  cr_assert_eq(coord_line_end(&line), -1);
  coord_line_start(&line, buf, sizeof(buf), "OK");
  coord_line_str(&line, "Bad", "x");
  cr_assert_eq(coord_line_end(&line), -1);
  coord_line_start(&line, small, sizeof(small), "OK");
  coord_line_str(&line, "reason", "longer than sixteen bytes");
  cr_assert_eq(coord_line_end(&line), -1);
  /* exactly full: 15 bytes of content and the newline */
  coord_line_start(&line, small, sizeof(small), "OK");
  coord_line_str(&line, "k", "123456789a");
  cr_assert_eq(coord_line_end(&line), 0);
  cr_assert_eq(line.len, sizeof(small));
}

Test(coord_proto, format_never_exceeds_line_max)
{
  char *big = malloc(2 * COORD_LINE_MAX), *value = malloc(COORD_LINE_MAX);
  struct coord_line line;

  memset(value, 'v', COORD_LINE_MAX - 1);
  value[COORD_LINE_MAX - 1] = '\0';
  coord_line_start(&line, big, 2 * COORD_LINE_MAX, "A");
  coord_line_str(&line, "v", value);
  cr_assert_eq(coord_line_end(&line), -1);
  free(big);
  free(value);
}

/* Every byte value but NUL survives format -> parse. */
Test(coord_proto, round_trip_all_bytes)
{
  char value[256], line_buf[1024];
  struct coord_line line;

  for (int i = 1; i < 256; i++)
    value[i - 1] = (char)i;
  value[255] = '\0';
  coord_line_start(&line, line_buf, sizeof(line_buf), "ERROR");
  coord_line_str(&line, "reason", value);
  coord_line_str(&line, "empty", "");
  cr_assert_eq(coord_line_end(&line), 0);
  cr_assert_eq(coord_msg_parse(line_buf, line.len - 1, &msg, err, sizeof(err)), 0, "%s", err);
  cr_assert_str_eq(coord_msg_get(&msg, "reason"), value);
  cr_assert_str_eq(coord_msg_get(&msg, "empty"), "");
}

Test(coord_proto, round_trip_random)
{
  char value[300], line_buf[2048];
  struct coord_line line;

  srand(42);
  for (int round = 0; round < 2000; round++) {
    size_t len = (size_t)(rand() % 299);

    for (size_t i = 0; i < len; i++)
      value[i] = (char)(1 + rand() % 255);
    value[len] = '\0';
    coord_line_start(&line, line_buf, sizeof(line_buf), "X");
    coord_line_str(&line, "v", value);
    cr_assert_eq(coord_line_end(&line), 0);
    cr_assert_null(memchr(line_buf, '\n', line.len - 1));
    cr_assert_eq(coord_msg_parse(line_buf, line.len - 1, &msg, err, sizeof(err)), 0);
    cr_assert_str_eq(coord_msg_get(&msg, "v"), value);
  }
}

/* Random garbage never crashes the parser, and whatever it accepts is well-formed. */
Test(coord_proto, garbage_is_rejected_or_sane)
{
  char line[512];

  srand(7);
  for (int round = 0; round < 20000; round++) {
    size_t len = (size_t)(rand() % 500);

    for (size_t i = 0; i < len; i++)
      line[i] = (char)(rand() % 4 ? 'A' + rand() % 60 : rand() % 256);
    if (coord_msg_parse(line, len, &msg, err, sizeof(err)) == 0) {
      cr_assert(coord_valid_verb(msg.verb));
      for (size_t i = 0; i < msg.nfields; i++)
        cr_assert(coord_valid_key(msg.fields[i].key));
    }
  }
}

/* status_render: what mana_status prints for a STATUS reply, as a table for people or as
 * JSON for programs. The reply's lines are copied here because a received line lives only
 * until the next one arrives. */
#ifndef MANA_STATUS_RENDER_H
#define MANA_STATUS_RENDER_H

#include <stdio.h>

#include "coord_proto.h"

/* One received line, owned. */
struct status_line {
  char *verb;
  size_t nfields;
  char *keys[COORD_MAX_FIELDS];
  char *values[COORD_MAX_FIELDS];
};

struct status_reply {
  struct status_line job;    /* the JOB line */
  struct status_line *ranks; /* the RANK lines, in order */
  size_t nranks, cap;
};

/* Adds a JOB or RANK line. Returns 0, or -1 when out of memory or the verb is neither. */
int status_reply_add(struct status_reply *reply, const struct coord_msg *msg);
void status_reply_free(struct status_reply *reply);

/* The value of key in a line, or NULL. */
const char *status_get(const struct status_line *line, const char *key);

void status_print_human(FILE *out, const struct status_reply *reply);
void status_print_json(FILE *out, const struct status_reply *reply);

/* Helpers shared with mana_status's other outputs. */
void status_bytes(unsigned long long bytes, char *out, size_t len); /* "1.5 MiB" */
void status_json_string(FILE *out, const char *s);                  /* quoted, escaped */

#endif

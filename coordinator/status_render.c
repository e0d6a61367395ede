/* status_render: STATUS as a table or as JSON (see status_render.h). */
#include "status_render.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------- */
/* Holding the reply                                                                     */
/* ------------------------------------------------------------------------------------- */

static void line_free(struct status_line *line)
{
  free(line->verb);
  for (size_t i = 0; i < line->nfields; i++) {
    free(line->keys[i]);
    free(line->values[i]);
  }
  memset(line, 0, sizeof(*line));
}

static int line_copy(struct status_line *line, const struct coord_msg *msg)
{
  memset(line, 0, sizeof(*line));
  line->verb = strdup(msg->verb);
  if (!line->verb)
    return -1;
  for (size_t i = 0; i < msg->nfields; i++) {
    line->keys[i] = strdup(msg->fields[i].key);
    line->values[i] = strdup(msg->fields[i].value);
    line->nfields = i + 1;
    if (!line->keys[i] || !line->values[i])
      return -1;
  }
  return 0;
}

int status_reply_add(struct status_reply *reply, const struct coord_msg *msg)
{
  if (strcmp(msg->verb, "JOB") == 0) {
    line_free(&reply->job);
    return line_copy(&reply->job, msg);
  }
  if (strcmp(msg->verb, "RANK") != 0)
    return -1;
  if (reply->nranks == reply->cap) {
    size_t cap = reply->cap ? reply->cap * 2 : 16;
    struct status_line *grown = realloc(reply->ranks, cap * sizeof(*grown));

    if (!grown)
      return -1;
    reply->ranks = grown;
    reply->cap = cap;
  }
  return line_copy(&reply->ranks[reply->nranks++], msg);
}

void status_reply_free(struct status_reply *reply)
{
  line_free(&reply->job);
  for (size_t i = 0; i < reply->nranks; i++)
    line_free(&reply->ranks[i]);
  free(reply->ranks);
  memset(reply, 0, sizeof(*reply));
}

const char *status_get(const struct status_line *line, const char *key)
{
  for (size_t i = 0; i < line->nfields; i++)
    if (strcmp(line->keys[i], key) == 0)
      return line->values[i];
  return NULL;
}

/* ------------------------------------------------------------------------------------- */
/* For people                                                                            */
/* ------------------------------------------------------------------------------------- */

void status_bytes(unsigned long long bytes, char *out, size_t len)
{
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = (double)bytes;
  size_t u = 0;

  if (bytes < 1024) {
    snprintf(out, len, "%llu B", bytes);
    return;
  }
  v /= 1024;
  while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
    v /= 1024;
    u++;
  }
  snprintf(out, len, "%.1f %s", v, units[u]);
}

/* Host names and reasons come from the network: no control characters on a terminal. */
static void print_clean(FILE *out, const char *s, int width)
{
  int n = 0;

  for (; *s; s++, n++)
    fputc((unsigned char)*s < ' ' || *s == 0x7f ? '?' : *s, out);
  for (; n < width; n++)
    fputc(' ', out);
}

static const char *get_or(const struct status_line *line, const char *key, const char *dflt)
{
  const char *v = status_get(line, key);

  return v ? v : dflt;
}

static unsigned long long get_num(const struct status_line *line, const char *key)
{
  const char *v = status_get(line, key);

  return v ? strtoull(v, NULL, 10) : 0;
}

static void print_job(FILE *out, const struct status_line *job)
{
  fprintf(out, "Job:          %llu ranks, %llu connected (%s)\n", get_num(job, "size"),
          get_num(job, "connected"), get_or(job, "state", "?"));
  fprintf(out, "Coordinator:  %s (pid %s)\n", get_or(job, "address", "?"), get_or(job, "pid", "?"));
  fputs("Directory:    ", out);
  print_clean(out, get_or(job, "ckptdir", "?"), 0);
  fputc('\n', out);
  if (get_num(job, "interval") == 0)
    fprintf(out, "Interval:     off\n");
  else if (status_get(job, "next_in"))
    fprintf(out, "Interval:     every %llu s, next in %s s\n", get_num(job, "interval"),
            status_get(job, "next_in"));
  else
    fprintf(out, "Interval:     every %llu s\n", get_num(job, "interval"));
}

/* ", incremental (depth D, needs generation N)", or "" for a full generation or a
 * coordinator that does not say. */
static const char *chain_text(const struct status_line *job, char *buf, size_t len)
{
  if (get_num(job, "committed_depth") == 0)
    return "";
  snprintf(buf, len, ", incremental (depth %llu, needs generation %llu)",
           get_num(job, "committed_depth"), get_num(job, "committed_needs"));
  return buf;
}

static void print_checkpoints(FILE *out, const struct status_line *job)
{
  char bytes[32], chain[96];

  if (status_get(job, "gen")) {
    status_bytes(get_num(job, "bytes"), bytes, sizeof(bytes));
    fprintf(out,
            "Checkpoint:   generation %s %s, epoch %s, %s written, %s s "
            "elapsed%s\n",
            status_get(job, "gen"), get_or(job, "phase", "?"), get_or(job, "epoch", "0"), bytes,
            get_or(job, "elapsed", "?"), get_num(job, "kill") ? ", then the job ends" : "");
  } else {
    fprintf(out, "Checkpoint:   none in progress\n");
  }
  if (get_num(job, "committed") && !status_get(job, "committed_at")) {
    /* committed by an earlier run of the job: this coordinator only read LATEST */
    fprintf(out,
            "Last commit:  generation %llu (before this run; the job restarted "
            "from it or from an earlier one)%s\n",
            get_num(job, "committed"), chain_text(job, chain, sizeof(chain)));
  } else if (get_num(job, "committed")) {
    status_bytes(get_num(job, "committed_bytes"), bytes, sizeof(bytes));
    fprintf(out, "Last commit:  generation %llu at %s, %s in %s s%s\n", get_num(job, "committed"),
            get_or(job, "committed_at", "?"), bytes, get_or(job, "committed_seconds", "?"),
            chain_text(job, chain, sizeof(chain)));
  } else {
    fprintf(out, "Last commit:  none\n");
  }
  if (status_get(job, "error")) {
    fprintf(out, "Last failure: generation %s: ", get_or(job, "error_gen", "?"));
    print_clean(out, status_get(job, "error"), 0);
    fputc('\n', out);
  }
}

static int column_width(const struct status_reply *reply, const char *key, int min)
{
  int w = min;

  for (size_t i = 0; i < reply->nranks; i++) {
    int n = (int)strlen(get_or(&reply->ranks[i], key, "-"));

    if (n > w)
      w = n;
  }
  return w;
}

static void print_ranks(FILE *out, const struct status_reply *reply)
{
  int wrank = column_width(reply, "rank", 4), wstate = column_width(reply, "state", 5);
  int whost = column_width(reply, "host", 4), wpid = column_width(reply, "pid", 3);

  fprintf(out, "\n%*s  %-*s  %-*s  %*s  %s\n", wrank, "RANK", wstate, "STATE", whost, "HOST", wpid,
          "PID", "WRITTEN");
  for (size_t i = 0; i < reply->nranks; i++) {
    const struct status_line *r = &reply->ranks[i];
    char bytes[32] = "-";

    if (status_get(r, "bytes"))
      status_bytes(get_num(r, "bytes"), bytes, sizeof(bytes));
    fprintf(out, "%*s  %-*s  ", wrank, get_or(r, "rank", "?"), wstate, get_or(r, "state", "?"));
    print_clean(out, get_or(r, "host", "-"), whost);
    fprintf(out, "  %*s  %s\n", wpid, get_or(r, "pid", "-"), bytes);
  }
}

void status_print_human(FILE *out, const struct status_reply *reply)
{
  print_job(out, &reply->job);
  print_checkpoints(out, &reply->job);
  if (reply->nranks)
    print_ranks(out, reply);
}

/* ------------------------------------------------------------------------------------- */
/* For programs                                                                          */
/* ------------------------------------------------------------------------------------- */

void status_json_string(FILE *out, const char *s)
{
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(out, "\\%c", *p);
    else if (*p < ' ' || *p == 0x7f)
      fprintf(out, "\\u%04x", *p);
    else
      fputc(*p, out);
  }
  fputc('"', out);
}

/* Fields that are numbers in JSON; everything else is a string, so a host called "42" or
 * a reason made of digits stays a string. */
static bool numeric_key(const char *key)
{
  static const char *const numeric[] = {
      "v",
      "pid",
      "size",
      "connected",
      "joined",
      "watch",
      "interval",
      "next_in",
      "gen",
      "epoch",
      "elapsed",
      "bytes",
      "kill",
      "committed",
      "committed_seconds",
      "committed_sync_seconds",
      "committed_write_seconds",
      "committed_drain_seconds",
      "committed_bytes",
      "committed_depth",
      "committed_needs",
      "error_gen",
      "rank",
      "raises",
      "releases",
  };

  for (size_t i = 0; i < sizeof(numeric) / sizeof(numeric[0]); i++)
    if (strcmp(key, numeric[i]) == 0)
      return true;
  return false;
}

static bool looks_numeric(const char *v)
{
  size_t digits = strspn(v, "0123456789");

  if (digits == 0)
    return false;
  if (v[digits] == '\0')
    return true;
  return v[digits] == '.' && v[digits + 1] &&
         strspn(v + digits + 1, "0123456789") == strlen(v + digits + 1);
}

static void print_fields(FILE *out, const struct status_line *line, const char *indent)
{
  for (size_t i = 0; i < line->nfields; i++) {
    fprintf(out, "%s%s", i ? ",\n" : "", indent);
    status_json_string(out, line->keys[i]);
    fputs(": ", out);
    if (numeric_key(line->keys[i]) && looks_numeric(line->values[i]))
      fputs(line->values[i], out);
    else
      status_json_string(out, line->values[i]);
  }
}

void status_print_json(FILE *out, const struct status_reply *reply)
{
  fputs("{\n", out);
  print_fields(out, &reply->job, "  ");
  fprintf(out, "%s  \"ranks\": [", reply->job.nfields ? ",\n" : "");
  for (size_t i = 0; i < reply->nranks; i++) {
    fprintf(out, "%s\n    {\n", i ? "," : "");
    print_fields(out, &reply->ranks[i], "      ");
    fputs("\n    }", out);
  }
  fputs(reply->nranks ? "\n  ]\n}\n" : "]\n}\n", out);
}

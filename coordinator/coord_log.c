/* coord_log: timestamped log lines (see coord_log.h). */
#include "coord_log.h"
#include "coord_net.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static void log_line(const char *fmt, va_list ap)
{
  struct timespec ts;
  struct tm tm;
  char stamp[32];

  clock_gettime(CLOCK_REALTIME, &ts);
  localtime_r(&ts.tv_sec, &tm);
  strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
  fprintf(stderr, "%s.%03ld mana_coordinator: ", stamp, ts.tv_nsec / 1000000);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  fflush(stderr);
}

void coord_log(const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  log_line(fmt, ap);
  va_end(ap);
}

void coord_log_limit_tick(struct coord_log_limit *l)
{
  long long now = coord_now_ms();

  if (now - l->window_start < COORD_LOG_WINDOW_MS)
    return;
  if (l->dropped)
    coord_log("%u more %s in %d s were not logged", l->dropped, l->what ? l->what : "events",
              COORD_LOG_WINDOW_MS / 1000);
  l->window_start = now;
  l->logged = l->dropped = 0;
}

void coord_log_limited(struct coord_log_limit *l, const char *fmt, ...)
{
  va_list ap;

  coord_log_limit_tick(l);
  if (l->logged >= COORD_LOG_BURST) {
    l->dropped++;
    return;
  }
  l->logged++;
  va_start(ap, fmt);
  log_line(fmt, ap);
  va_end(ap);
}

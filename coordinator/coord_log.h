/* coord_log: the coordinator's log, one timestamped line per event on stderr (which the
 * daemon points at DIR/.mana/coordinator.log). The coordinator is single-threaded, so a
 * plain stdio stream is all it needs. */
#ifndef MANA_COORD_LOG_H
#define MANA_COORD_LOG_H

void coord_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A budget of log lines for events others can cause at will (connections that are
 * refused): at most COORD_LOG_BURST lines per COORD_LOG_WINDOW_MS, then one line saying how
 * many were left out, so that a flood cannot fill the disk. */
#define COORD_LOG_BURST 10
#define COORD_LOG_WINDOW_MS 10000

struct coord_log_limit {
  long long window_start; /* monotonic ms */
  unsigned logged, dropped;
  const char *what; /* "rejected connections", for the summary line */
};

void coord_log_limited(struct coord_log_limit *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Reports what the current window left out once it is over (call from a timer). */
void coord_log_limit_tick(struct coord_log_limit *l);

#endif

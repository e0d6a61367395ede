/* coord_log: the coordinator's log, one timestamped line per event on stderr (which the
 * daemon points at DIR/.mana/coordinator.log). The coordinator is single-threaded, so a
 * plain stdio stream is all it needs. */
#ifndef MANA_COORD_LOG_H
#define MANA_COORD_LOG_H

void coord_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif

/* Naming what occupies an address range, for "range taken" messages. */
#ifndef MANA_IMAGE_MAPS_H
#define MANA_IMAGE_MAPS_H

#include <stddef.h>
#include <stdint.h>

/* Copies into `line` (without its newline) the first line of /proc/self/maps whose range
 * overlaps [start, end). Returns 1 if one was found, 0 if none, -1 if maps cannot be read. */
int img_maps_find_overlap(uint64_t start, uint64_t end, char *line, size_t len);

#endif

#ifndef MANA_STATE_MEMORY_H
#define MANA_STATE_MEMORY_H
#include <stddef.h>
#include <stdint.h>
struct mana_image_writer;
struct mana_image_reader;
/* Adds every readable upper-half mapping as a region; *upper_bytes gets their total size. */
int mana_memory_dump(struct mana_image_writer *w, uint64_t *upper_bytes, char *err, size_t errlen);
/* Maps every region of the image back at its address (the window must be reserved). */
int mana_memory_restore(struct mana_image_reader *r, char *err, size_t errlen);
#endif

/* Names of the files in a generation directory, shared by the ranks that write them and the
 * tools that read them. */
#ifndef MANA_IMAGE_NAMES_H
#define MANA_IMAGE_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

static inline void mana_image_name(uint32_t rank, char *out, size_t outlen)
{
  snprintf(out, outlen, "rank-%06u.img", rank);
}

#endif

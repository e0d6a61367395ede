#ifndef MANA_SERVICES_H
#define MANA_SERVICES_H
#include "mana/lh_services.h"
void mana_lh_services_fill(struct mana_lh_services *s);
#endif

/* The stub's bookkeeping lock and the flag that turns it on (stub_lock.h). */
#include "stub_lock.h"

int mana_threads_concurrent;
struct mana_stub_lock mana_stub_lock;

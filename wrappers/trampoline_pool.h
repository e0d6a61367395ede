/* A fixed pool of distinct trampoline functions.  MPI calls user reduction ops and error
 * handlers with no user-data argument, so each registered function needs a code address of its
 * own to know which application function to call.  MANA_POOL_64(X) expands X(0) .. X(63). */
#ifndef MANA_TRAMPOLINE_POOL_H
#define MANA_TRAMPOLINE_POOL_H

#define MANA_POOL_SIZE 64
#define MANA_POOL_8(X, b) X(b##0) X(b##1) X(b##2) X(b##3) X(b##4) X(b##5) X(b##6) X(b##7)
/* clang-format cannot settle on one layout of this macro */
/* clang-format off */
#define MANA_POOL_64(X) \
  MANA_POOL_8(X, 0) MANA_POOL_8(X, 1) MANA_POOL_8(X, 2) MANA_POOL_8(X, 3) \
  MANA_POOL_8(X, 4) MANA_POOL_8(X, 5) MANA_POOL_8(X, 6) MANA_POOL_8(X, 7)
/* clang-format on */
#define MANA_POOL_ENTRY(i) tramp_##i,

#endif

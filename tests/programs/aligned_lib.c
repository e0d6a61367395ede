/* aligned_lib.c - one small shared library, built three times (ALIGNED_LIB_ID 1 to 3) with
 * its segments aligned to 2 MiB (-z max-page-size=0x200000), as some Debian libraries are
 * (libXdmcp, which yorick's mpy.mpich2 loads).  ld.so maps such a library into a reservation
 * larger than it and unmaps the misaligned head and tail: munmap calls that mana traps while the
 * upper half's ld.so is still loading libraries, before the upper half has a thread pointer. */
#define VALUE_FN_(id) aligned_lib_value##id
#define VALUE_FN(id) VALUE_FN_(id)

int VALUE_FN(ALIGNED_LIB_ID)(void);

int VALUE_FN(ALIGNED_LIB_ID)(void)
{
  return ALIGNED_LIB_ID * 10;
}

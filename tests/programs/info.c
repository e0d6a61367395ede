/*
 * info.c - MPI_Info objects: create, set, get, get_valuelen, get_string (MPI-4), get_nkeys,
 * get_nthkey (keys keep insertion order in MPICH), overwrite, delete, dup (independent copy),
 * free; MPI_INFO_ENV exists; an info object passed to Comm_dup_with_info and read back
 * with Comm_get_info (only keys this program set are examined).
 * Ranks: 2.
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  mt_begin("info");
  mt_require_size(2);
  const int me = mt_.rank;
  MPI_Info info, dup;
  int n, flag, len;
  char key[MPI_MAX_INFO_KEY + 1], val[256];

  MPI_Info_create(&info);
  MPI_Info_get_nkeys(info, &n);
  mt_check_int("nkeys of a new info", n, 0);

  MPI_Info_set(info, "alpha", "1");
  MPI_Info_set(info, "beta", me == 0 ? "rank-zero" : "rank-one");
  MPI_Info_set(info, "gamma", "a value with spaces");
  MPI_Info_set(info, "alpha", "overwritten");
  MPI_Info_get_nkeys(info, &n);
  mt_check_int("nkeys after 4 sets (one overwrite)", n, 3);

  for (int i = 0; i < n; i++) {
    MPI_Info_get_nthkey(info, i, key);
    MPI_Info_get(info, key, sizeof val - 1, val, &flag);
    mt_log("key %d: %s = \"%s\"", i, key, val);
  }

  MPI_Info_get(info, "alpha", sizeof val - 1, val, &flag);
  mt_check(flag && strcmp(val, "overwritten") == 0, "get alpha = \"%s\"", val);
  MPI_Info_get_valuelen(info, "gamma", &len, &flag);
  mt_check(flag && len == 19, "valuelen of gamma = %d", len);
  MPI_Info_get(info, "missing", sizeof val - 1, val, &flag);
  mt_check_int("get of a missing key: flag", flag, 0);
  MPI_Info_get_valuelen(info, "missing", &len, &flag);
  mt_check_int("valuelen of a missing key: flag", flag, 0);

  /* Info_get_string: buflen in/out, truncation */
  {
    int buflen = sizeof val;
    MPI_Info_get_string(info, "beta", &buflen, val, &flag);
    mt_check(flag && strcmp(val, me == 0 ? "rank-zero" : "rank-one") == 0 &&
                 buflen == (int)strlen(val) + 1,
             "get_string beta = \"%s\" (buflen %d)", val, buflen);
    char small[6];
    buflen = sizeof small;
    MPI_Info_get_string(info, "gamma", &buflen, small, &flag);
    mt_check(flag && buflen == 20 && strcmp(small, "a val") == 0,
             "get_string truncates to \"%s\" and reports full length %d", small, buflen);
    buflen = 0; /* MPICH 4.0.2 rejects a NULL value pointer even with buflen 0 */
    MPI_Info_get_string(info, "gamma", &buflen, small, &flag);
    mt_check(flag && buflen == 20, "get_string with buflen 0 returns the needed length %d", buflen);
  }

  /* dup is independent */
  MPI_Info_dup(info, &dup);
  MPI_Info_delete(info, "beta");
  MPI_Info_set(dup, "delta", "only-in-dup");
  MPI_Info_get_nkeys(info, &n);
  int ndup;
  MPI_Info_get_nkeys(dup, &ndup);
  mt_check(n == 2 && ndup == 4, "after delete/set: original has %d keys, dup has %d", n, ndup);
  MPI_Info_get(dup, "beta", sizeof val - 1, val, &flag);
  mt_check(flag == 1, "deleted key still present in the dup");
  MPI_Info_get(info, "delta", sizeof val - 1, val, &flag);
  mt_check(flag == 0, "key added to the dup is absent from the original");
  MPI_Info_get_nthkey(dup, 3, key);
  mt_check(strcmp(key, "delta") == 0, "4th key of the dup is %s", key);

  /* long keys and values */
  {
    char lk[MPI_MAX_INFO_KEY], lv[200];
    memset(lk, 'k', sizeof lk - 1);
    lk[sizeof lk - 1] = '\0';
    for (int i = 0; i < 199; i++)
      lv[i] = (char)('a' + i % 26);
    lv[199] = '\0';
    MPI_Info_set(info, lk, lv);
    MPI_Info_get(info, lk, sizeof val - 1, val, &flag);
    mt_check(flag && strcmp(val, lv) == 0, "key of %d chars with a 199-char value",
             (int)strlen(lk));
  }

  MPI_Info_free(&info);
  MPI_Info_free(&dup);
  mt_check(info == MPI_INFO_NULL && dup == MPI_INFO_NULL, "info_free sets MPI_INFO_NULL");

  /* MPI_INFO_ENV: exists; contents depend on the launcher, so only the key count type is used */
  MPI_Info_get_nkeys(MPI_INFO_ENV, &n);
  mt_check(n >= 0, "MPI_INFO_ENV is a valid info object");

  /* info on a communicator */
  {
    MPI_Info hints, got;
    MPI_Comm c;
    MPI_Info_create(&hints);
    MPI_Info_set(hints, "mpi_assert_no_any_source", "false");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, hints, &c);
    MPI_Info_free(&hints);
    MPI_Comm_get_info(c, &got);
    MPI_Info_get(got, "mpi_assert_no_any_source", sizeof val - 1, val, &flag);
    mt_log("comm_get_info mpi_assert_no_any_source: %s", flag ? val : "(not reported)");
    MPI_Info_free(&got);
    MPI_Info_create(&hints);
    MPI_Info_set(hints, "mpi_assert_allow_overtaking", "false");
    MPI_Comm_set_info(c, hints);
    MPI_Info_free(&hints);
    MPI_Comm_get_info(c, &got);
    MPI_Info_get(got, "mpi_assert_allow_overtaking", sizeof val - 1, val, &flag);
    mt_log("comm_set_info then get mpi_assert_allow_overtaking: %s", flag ? val : "(not reported)");
    MPI_Info_free(&got);
    int sum = 0;
    MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, c);
    mt_check_int("allreduce on the communicator with info", sum, 1);
    MPI_Comm_free(&c);
  }

  return mt_end();
}

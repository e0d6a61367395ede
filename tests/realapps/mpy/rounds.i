/* rounds.i - run by tests/realapps/mpy.sh on rank 0 of mpy (mpy -j testmp.i -i rounds.i):
 * MPY_ROUNDS rounds (default 1) of yorick's own parallel test suite, testmp.i's testmp
 * (point-to-point exchanges of every data type, handouts, and the mpool master/worker
 * pool), then quit. */
nrounds = 1;
if (get_env("MPY_ROUNDS")) nrounds = long(tonum(get_env("MPY_ROUNDS")));
for (r = 1; r <= nrounds; r++) {
  write, format="round %ld of %ld\n", r, nrounds;
  testmp;
}
quit;

/* Programs for the mana_launch ELF checks (test_launch_appcheck.c). One source, built by
 * CMakeLists.launch.cmake once per role with one of these defined:
 *   FIXTURE_MPI_APP     an MPI program (links libmpich.so.12 directly)
 *   FIXTURE_PLAIN       a program without MPI (also built -static and -static-pie)
 *   FIXTURE_MPI_LIB     a shared library of the application's own that uses MPI
 *   FIXTURE_VIA_LIB     a program that reaches MPI only through FIXTURE_MPI_LIB
 *   FIXTURE_OTHER_MPI   a stand-in for another MPI's library (built as libmpi.so.40)
 *   FIXTURE_VIA_OTHER   a program linked against that stand-in
 * None of them is run by the tests; they only have to have the right shape.
 */
#if defined(FIXTURE_MPI_APP) || defined(FIXTURE_MPI_LIB)
#include <mpi.h>
#endif

#if defined(FIXTURE_MPI_APP)
int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Finalize();
  return 0;
}
#elif defined(FIXTURE_MPI_LIB)
int fixture_solver(void)
{
  int initialized = 0;

  MPI_Initialized(&initialized);
  return initialized;
}
#elif defined(FIXTURE_VIA_LIB)
int fixture_solver(void);

int main(void)
{
  return fixture_solver();
}
#elif defined(FIXTURE_OTHER_MPI)
int fixture_other_mpi(void)
{
  return 40;
}
#elif defined(FIXTURE_VIA_OTHER)
int fixture_other_mpi(void);

int main(void)
{
  return fixture_other_mpi() == 40 ? 0 : 1;
}
#else /* FIXTURE_PLAIN */
int main(void)
{
  return 0;
}
#endif

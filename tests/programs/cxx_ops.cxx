// cxx_ops.cxx - reductions with operations written against the C++ binding (libmpichcxx,
// MPI::Op::Init): MPICH calls them through the binding's dispatcher, which takes the count and
// the datatype by value, not as C user functions do.  A commutative sum and a non-commutative
// composition of affine maps (x -> a*x + b), through Allreduce, Reduce, Scan, Exscan and
// Reduce_local; rank 0 prints the results (MPICH's cxx/coll/uallreduce and friends).  Then an
// error handler written in C++: MPICH calls it once for a failed call, which then returns
// success (MPICH's errors/cxx/errhan/errsetx counted two calls under mana).
// Ranks: 3 (works with any count >= 2).
#include <mpi.h>

#include <cstdio>

static int sum_calls, handler_calls;

static void count_errors(MPI::Comm &, int *, ...)
{
  handler_calls++;
}

static void sum_ints(const void *in, void *inout, int n, const MPI::Datatype &type)
{
  sum_calls++;
  if (type != MPI::INT)
    return;
  const int *a = static_cast<const int *>(in);
  int *b = static_cast<int *>(inout);
  for (int i = 0; i < n; i++)
    b[i] += a[i];
}

// inout := inout o in, pairs (a, b) of ints: not commutative.
static void compose(const void *in, void *inout, int n, const MPI::Datatype &)
{
  const int *f = static_cast<const int *>(in);
  int *g = static_cast<int *>(inout);
  for (int i = 0; i < n; i++) {
    int a = g[2 * i] * f[2 * i];
    int b = g[2 * i] * f[2 * i + 1] + g[2 * i + 1];
    g[2 * i] = a;
    g[2 * i + 1] = b;
  }
}

int main(int argc, char **argv)
{
  MPI::Init(argc, argv);
  int rank = MPI::COMM_WORLD.Get_rank();
  int size = MPI::COMM_WORLD.Get_size();

  MPI::Op sum, comp;
  sum.Init(sum_ints, true);
  comp.Init(compose, false);
  MPI::Datatype pair = MPI::INT.Create_contiguous(2);
  pair.Commit();

  int v[3] = {rank + 1, 10 * (rank + 1), 100}, all[3] = {0, 0, 0};
  MPI::COMM_WORLD.Allreduce(v, all, 3, MPI::INT, sum);
  int root[3] = {0, 0, 0};
  MPI::COMM_WORLD.Reduce(v, root, 3, MPI::INT, sum, size - 1);
  int scan[3] = {0, 0, 0};
  MPI::COMM_WORLD.Scan(v, scan, 3, MPI::INT, sum);
  int ex[3] = {-1, -1, -1};
  MPI::COMM_WORLD.Exscan(v, ex, 3, MPI::INT, sum);
  int local[3] = {1, 2, 3};
  sum.Reduce_local(v, local, 3, MPI::INT);

  int map[2] = {rank + 2, rank}, composed[2] = {0, 0}, cscan[2] = {0, 0};
  MPI::COMM_WORLD.Allreduce(map, composed, 1, pair, comp);
  MPI::COMM_WORLD.Scan(map, cscan, 1, pair, comp);

  int mine[12] = {all[0],  all[1],  all[2],     root[0],    scan[0], scan[1],
                  scan[2], ex[1],   local[0],   local[2],   composed[0], composed[1]};
  int extra[3] = {cscan[0], cscan[1], sum_calls > 0};
  int gathered[12 * 64], gathered_extra[3 * 64];
  MPI::COMM_WORLD.Gather(mine, 12, MPI::INT, gathered, 12, MPI::INT, 0);
  MPI::COMM_WORLD.Gather(extra, 3, MPI::INT, gathered_extra, 3, MPI::INT, 0);
  MPI::Intracomm dup = MPI::COMM_WORLD.Dup();
  MPI::Errhandler eh = MPI::Comm::Create_errhandler(count_errors);
  dup.Set_errhandler(eh);
  (void)dup.Iprobe(size, 0); // no such rank: the handler, once, and no exception (the flag is
                             // undefined then)
  int after_iprobe = handler_calls;
  dup.Call_errhandler(MPI::ERR_OTHER);
  int after_call = handler_calls;
  eh.Free();
  dup.Free();
  if (rank == 0)
    std::printf("C++ error handler: %d call(s) for a failed iprobe, %d after Call_errhandler\n",
                after_iprobe, after_call);

  if (rank == 0)
    for (int r = 0; r < size; r++) {
      std::printf("rank %d: allreduce %d %d %d, reduce@root %d, scan %d %d %d, exscan %d, "
                  "local %d %d, composed %d %d, composed scan %d %d, sum called %d\n",
                  r, gathered[12 * r], gathered[12 * r + 1], gathered[12 * r + 2],
                  gathered[12 * r + 3], gathered[12 * r + 4], gathered[12 * r + 5],
                  gathered[12 * r + 6], r == 0 ? 0 : gathered[12 * r + 7], gathered[12 * r + 8],
                  gathered[12 * r + 9], gathered[12 * r + 10], gathered[12 * r + 11],
                  gathered_extra[3 * r], gathered_extra[3 * r + 1], gathered_extra[3 * r + 2]);
    }
  pair.Free();
  comp.Free();
  sum.Free();
  MPI::Finalize();
  return 0;
}

! fortran_f08.f90 - the mpi_f08 binding where it differs from C: generalized requests whose
! query, free and cancel functions are Fortran procedures (arguments by reference, the error
! code last, the status a Fortran one), MPI_Dist_graph_create_adjacent with the binding's own
! MPI_UNWEIGHTED, and an error handler MPI_Comm_get_errhandler gives back (the same handle, as
! MPICH's f08/comm/commerrf08 expects), and attributes set from Fortran (through MPICH's
! MPII_Comm_set_attr), overwritten in a loop with a collective after each get. Rank 0 prints
! what every rank saw.
! Ranks: 2 (works with any count >= 2).
module greq_callbacks
  use mpi_f08
  implicit none
  integer :: nquery = 0, nfree = 0, ncancel = 0, nerrors = 0
contains
  subroutine query_fn(extra_state, status, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    type(MPI_Status) :: status
    integer :: ierror
    nquery = nquery + 1
    call MPI_Status_set_elements(status, MPI_INTEGER, int(extra_state), ierror)
    call MPI_Status_set_cancelled(status, ncancel > 0, ierror)
    status%MPI_SOURCE = MPI_UNDEFINED
    status%MPI_TAG = MPI_UNDEFINED
    ierror = MPI_SUCCESS
  end subroutine query_fn

  subroutine free_fn(extra_state, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    integer :: ierror
    nfree = nfree + 1
    ierror = MPI_SUCCESS
  end subroutine free_fn

  subroutine cancel_fn(extra_state, complete, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    logical :: complete
    integer :: ierror
    if (.not. complete) ncancel = ncancel + 1
    ierror = MPI_SUCCESS
  end subroutine cancel_fn

  subroutine errors_fn(comm, error_code)
    type(MPI_Comm) :: comm
    integer :: error_code
    nerrors = nerrors + 1
  end subroutine errors_fn
end module greq_callbacks

program f08test
  use mpi_f08
  use greq_callbacks
  implicit none
  integer, parameter :: nres = 10
  integer :: rank, nprocs, count1, count2, indeg, outdeg, sbuf, rbuf(1), i
  integer :: src(1), dst(1), res(nres), allres(nres * 64), key, nok, total
  integer(kind=MPI_ADDRESS_KIND) :: extra, aval, got_val
  logical :: found
  type(MPI_Request) :: req
  type(MPI_Status) :: st
  type(MPI_Comm) :: graph, dup
  type(MPI_Errhandler) :: eh, got
  logical :: flag, weighted, cancelled
  character(len=40) :: names(nres)

  names = [character(len=40) :: 'greq: test before complete', 'greq: count from query', &
           'greq: cancelled flag', 'greq: query/free/cancel calls', 'graph: in/out degree', &
           'graph: weighted', 'graph: neighbor value', 'errhandler got back', &
           'errhandler calls', 'attributes read back']
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)

  extra = 7 + rank
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, extra, req)
  call MPI_Test(req, flag, MPI_STATUS_IGNORE)
  res(1) = merge(1, 0, flag)
  call MPI_Grequest_complete(req)
  call MPI_Wait(req, st)
  call MPI_Get_count(st, MPI_INTEGER, count1)
  extra = 3
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, extra, req)
  call MPI_Cancel(req)
  call MPI_Grequest_complete(req)
  call MPI_Wait(req, st)
  call MPI_Get_count(st, MPI_INTEGER, count2)
  call MPI_Test_cancelled(st, cancelled)
  res(2) = count1 * 100 + count2
  res(3) = merge(1, 0, cancelled)
  res(4) = nquery * 100 + nfree * 10 + ncancel

  src(1) = mod(rank - 1 + nprocs, nprocs)
  dst(1) = mod(rank + 1, nprocs)
  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, src, MPI_UNWEIGHTED, 1, dst, &
                                      MPI_UNWEIGHTED, MPI_INFO_NULL, .false., graph)
  call MPI_Dist_graph_neighbors_count(graph, indeg, outdeg, weighted)
  sbuf = 10 * rank
  call MPI_Neighbor_allgather(sbuf, 1, MPI_INTEGER, rbuf, 1, MPI_INTEGER, graph)
  res(5) = indeg * 10 + outdeg
  res(6) = merge(1, 0, weighted)
  res(7) = rbuf(1)
  call MPI_Comm_free(graph)

  call MPI_Comm_dup(MPI_COMM_WORLD, dup)
  call MPI_Comm_create_errhandler(errors_fn, eh)
  call MPI_Comm_set_errhandler(dup, eh)
  call MPI_Comm_get_errhandler(dup, got)
  res(8) = merge(1, 0, got == eh)
  call MPI_Errhandler_free(got)
  call MPI_Errhandler_free(eh)
  call MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER)
  res(9) = nerrors
  call MPI_Comm_free(dup)

  call MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, key, 0_MPI_ADDRESS_KIND)
  nok = 0
  do i = 1, 20
    aval = -1000 * i - rank
    call MPI_Comm_set_attr(MPI_COMM_WORLD, key, aval)
    call MPI_Comm_get_attr(MPI_COMM_WORLD, key, got_val, found)
    if (found .and. got_val == aval) nok = nok + 1
    call MPI_Allreduce(nok, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  end do
  res(10) = nok
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, key)
  call MPI_Comm_free_keyval(key)

  call MPI_Gather(res, nres, MPI_INTEGER, allres, nres, MPI_INTEGER, 0, MPI_COMM_WORLD)
  if (rank == 0) then
    do i = 1, nres
      print '(a, 2i8)', names(i), allres(i), allres(nres + i)
    end do
  end if
  call MPI_Finalize()
end program f08test

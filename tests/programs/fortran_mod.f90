! fortran_mod.f90 - free-form Fortran with "use mpi": init, rank/size, send/recv (with
! status and MPI_GET_COUNT), allreduce, bcast, a strided derived type (MPI_TYPE_VECTOR) used
! on both sides of a transfer, comm_split, a non-commutative user op written as a module
! procedure (MPI_OP_CREATE), finalize. Rank 0 gathers every rank's results and prints them.
! Ranks: 2 (works with any count >= 2).
module ops
  implicit none
contains
  ! composition of affine maps x -> a*x + b stored as pairs (a, b):
  ! inout := inout o in  (apply in first), which is not commutative
  subroutine compose(invec, inoutvec, n, dtype)
    integer, intent(in) :: n, dtype  ! dtype is the pair type; not needed here
    integer, intent(in) :: invec(2*n)
    integer, intent(inout) :: inoutvec(2*n)
    integer :: i, a, b
    do i = 0, n - 1
      a = inoutvec(2*i + 1) * invec(2*i + 1)
      b = inoutvec(2*i + 1) * invec(2*i + 2) + inoutvec(2*i + 2)
      inoutvec(2*i + 1) = a
      inoutvec(2*i + 2) = b
    end do
  end subroutine compose
end module ops

program fmodtest
  use mpi
  use ops
  implicit none
  integer, parameter :: nres = 9
  integer :: ierr, rank, nprocs, peer, i, j, cnt, totbad
  integer :: status(MPI_STATUS_SIZE)
  integer :: res(nres), expv(nres)
  integer, allocatable :: allres(:), allexp(:)
  character(len=40) :: names(nres)
  integer :: sbuf(5), rbuf(5), mat(4, 4), col(4), vtype, half, hsize
  integer :: pairtype, affop, mine(2), composed(2), ea, eb
  double precision :: dv(3), dsum(3)
  integer :: bc(2)

  names = [character(len=40) :: 'sendrecv payload sum', 'get_count', 'status source', &
           'allreduce doubles (x8, summed)', 'bcast from rank 1', 'vector: column 3 of 4x4', &
           'comm_split size', 'user op: composed map a', 'user op: composed map b']

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)

  ! 1-3. exchange 5 integers with the partner (0<->1, 2<->3, ...); an odd last rank talks to itself
  peer = ieor(rank, 1)
  if (peer >= nprocs) peer = rank
  sbuf = [(rank*100 + i, i = 1, 5)]
  call MPI_Sendrecv(sbuf, 5, MPI_INTEGER, peer, 3, rbuf, 5, MPI_INTEGER, peer, 3, &
                    MPI_COMM_WORLD, status, ierr)
  call MPI_Get_count(status, MPI_INTEGER, cnt, ierr)
  res(1) = sum(rbuf)
  expv(1) = 500*peer + 15
  res(2) = cnt
  expv(2) = 5
  res(3) = status(MPI_SOURCE)
  expv(3) = peer

  ! 4. allreduce of doubles
  dv = [0.5d0*rank, 1.0d0, -0.125d0*rank]
  call MPI_Allreduce(dv, dsum, 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  res(4) = nint(8.0d0*(dsum(1) + dsum(2) + dsum(3)))
  expv(4) = nint(8.0d0*(0.375d0*nprocs*(nprocs - 1)/2.0d0 + nprocs))

  ! 5. bcast from rank 1
  bc = 0
  if (rank == 1) bc = [17, 42]
  call MPI_Bcast(bc, 2, MPI_INTEGER, 1, MPI_COMM_WORLD, ierr)
  res(5) = bc(1)*100 + bc(2)
  expv(5) = 1742

  ! 6. a row of a column-major 4x4 matrix is strided: vector(4, 1, 4). Rank 0 sends row 3
  !    as a vector; rank 1 receives it into column 3 of its own matrix (contiguous).
  mat = reshape([(i, i = 1, 16)], [4, 4])
  call MPI_Type_vector(4, 1, 4, MPI_INTEGER, vtype, ierr)
  call MPI_Type_commit(vtype, ierr)
  res(6) = 0
  expv(6) = 0
  if (rank == 0) then
    call MPI_Send(mat(3, 1), 1, vtype, 1, 4, MPI_COMM_WORLD, ierr)
  else if (rank == 1) then
    col = -1
    call MPI_Recv(col, 4, MPI_INTEGER, 0, 4, MPI_COMM_WORLD, status, ierr)
    res(6) = col(1)*1000000 + col(2)*10000 + col(3)*100 + col(4)
    expv(6) = 3*1000000 + 7*10000 + 11*100 + 15
  end if
  call MPI_Type_free(vtype, ierr)

  ! 7. split into ranks < 1 and the rest
  call MPI_Comm_split(MPI_COMM_WORLD, min(rank, 1), -rank, half, ierr)
  call MPI_Comm_size(half, hsize, ierr)
  res(7) = hsize
  if (rank == 0) then
    expv(7) = 1
  else
    expv(7) = nprocs - 1
  end if
  call MPI_Comm_free(half, ierr)

  ! 8-9. non-commutative user op on a 2-integer contiguous type: rank r contributes the map
  !      x -> (r+2)*x + 1 (distinct fixed points, so the maps do not commute); the reduction
  !      composes them in rank order
  call MPI_Type_contiguous(2, MPI_INTEGER, pairtype, ierr)
  call MPI_Type_commit(pairtype, ierr)
  call MPI_Op_create(compose, .false., affop, ierr)
  mine = [rank + 2, 1]
  call MPI_Allreduce(mine, composed, 1, pairtype, affop, MPI_COMM_WORLD, ierr)
  ! expected: f_{n-1} o ... o f_1 o f_0 applied to x: fold from rank 0 upwards
  ea = 1
  eb = 0
  do i = 0, nprocs - 1
    ! new map = f_i o (ea*x + eb) = (i+2)*(ea*x + eb) + 1
    eb = (i + 2)*eb + 1
    ea = (i + 2)*ea
  end do
  res(8) = composed(1)
  expv(8) = ea
  res(9) = composed(2)
  expv(9) = eb
  call MPI_Op_free(affop, ierr)
  call MPI_Type_free(pairtype, ierr)

  ! report
  allocate(allres(nres*nprocs), allexp(nres*nprocs))
  call MPI_Gather(res, nres, MPI_INTEGER, allres, nres, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Gather(expv, nres, MPI_INTEGER, allexp, nres, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  totbad = 0
  if (rank == 0) then
    do j = 0, nprocs - 1
      do i = 1, nres
        if (allres(j*nres + i) == allexp(j*nres + i)) then
          write(*, '("[",I0,"] OK   ",A," = ",I0)') j, trim(names(i)), allres(j*nres + i)
        else
          write(*, '("[",I0,"] FAIL ",A," = ",I0," (expected ",I0,")")') j, trim(names(i)), &
            allres(j*nres + i), allexp(j*nres + i)
          totbad = totbad + 1
        end if
      end do
    end do
    write(*, '("fortran_mod: ",I0," checks, ",I0," failures")') nres*nprocs, totbad
    if (totbad == 0) then
      write(*, '(A)') 'RESULT PASS'
    else
      write(*, '(A)') 'RESULT FAIL'
    end if
  end if
  deallocate(allres, allexp)
  call MPI_Finalize(ierr)
  if (totbad /= 0) stop 1
end program fmodtest

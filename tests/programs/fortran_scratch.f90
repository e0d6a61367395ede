! fortran_scratch.f90 - a Fortran scratch unit (OPEN(STATUS='SCRATCH'): gfortran makes a file
! and removes it at once) written a record per step and read back at the end, with an
! Allreduce per step: a checkpoint between must keep the unit's content and position.
! Ranks: 2.  Rank 0 prints the total.
program fortran_scratch
  use mpi
  implicit none
  integer :: ierr, rank, r, v, s, total
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  open (unit=10, status='scratch', form='formatted')
  total = 0
  do r = 1, 16
    write (10, *) r*10 + rank
    call MPI_Allreduce(r, s, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    total = total + s
  end do
  rewind (10)
  do r = 1, 16
    read (10, *) v
    if (v /= r*10 + rank) print *, 'rank', rank, 'record', r, 'reads', v
    call MPI_Allreduce(v, s, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    total = total + s
  end do
  close (10)
  if (rank == 0) print *, 'fortran_scratch: total', total
  call MPI_Finalize(ierr)
end program fortran_scratch

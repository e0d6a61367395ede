C fortran_attr.f - attributes set from Fortran 77 (MPI_ATTR_PUT, MPI_COMM_SET_ATTR) on
C MPI_COMM_WORLD and on a duplicate, overwritten and read back after each set. Its restart
C test checkpoints at every call, so once at each set: a set checkpointed before the stub had
C recorded it came back after the restart with the value before it (MPICH's
C f77/attr/attrmpi1f). Rank 0 prints how many values read back right.
C Ranks: 1 (works with any count).
      program fattr
      implicit none
      include 'mpif.h'
      integer ierr, rank, key, key2, extra, i, val, rval, nok, dup
      integer (kind=MPI_ADDRESS_KIND) aval, rav, extra2
      logical flag
      call mpi_init(ierr)
      call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
      extra = 0
      call mpi_keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN,
     $     key, extra, ierr)
      nok = 0
      do i = 1, 6
         val = -1000 * i - rank
         call mpi_attr_put(MPI_COMM_WORLD, key, val, ierr)
         call mpi_attr_get(MPI_COMM_WORLD, key, rval, flag, ierr)
         if (flag .and. rval .eq. val) nok = nok + 1
      end do
      call mpi_comm_dup(MPI_COMM_WORLD, dup, ierr)
      extra2 = 0
      call mpi_comm_create_keyval(MPI_COMM_NULL_COPY_FN,
     $     MPI_COMM_NULL_DELETE_FN, key2, extra2, ierr)
      do i = 1, 6
         aval = 123456789012_MPI_ADDRESS_KIND * i
         call mpi_comm_set_attr(dup, key2, aval, ierr)
         call mpi_comm_get_attr(dup, key2, rav, flag, ierr)
         if (flag .and. rav .eq. aval) nok = nok + 1
      end do
      call mpi_comm_free(dup, ierr)
      call mpi_comm_free_keyval(key2, ierr)
      call mpi_attr_delete(MPI_COMM_WORLD, key, ierr)
      call mpi_keyval_free(key, ierr)
      if (rank .eq. 0) print *, 'attributes read back', nok, 'of 12'
      call mpi_finalize(ierr)
      end

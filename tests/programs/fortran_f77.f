C     fortran_f77.f - fixed-form Fortran with include 'mpif.h':
C     init, rank/size, send/recv, allreduce, bcast, a strided
C     MPI_Type_vector, comm_split, a user reduction op written in
C     Fortran (MPI_Op_create), finalize.  Every rank records its
C     results in an integer array; rank 0 gathers them and prints
C     everything, so the output is deterministic.
C     Ranks: 2 (works with any count >= 2).
      program f77test
      implicit none
      include 'mpif.h'
      integer nres
      parameter (nres = 8)
      integer ierr, rank, nprocs, i, j, peer, tag, stat(MPI_STATUS_SIZE)
      integer res(nres), exp(nres), nbad, totbad
      integer, allocatable :: allres(:), allexp(:)
      integer buf(12), got(4), vtype, half, hsize, hsum, isum
      integer myop, opres, bcv(3)
      double precision dsum, dval
      external fprod1
      character*40 names(nres)
      data names /'send/recv from neighbour', 'allreduce sum of ranks',
     &            'allreduce sum of doubles x4', 'bcast from last rank',
     &            'type_vector every 3rd element',
     &            'comm_split size of my half', 'allreduce in my half',
     &            'user op prod(1+x)-1'/

      call MPI_INIT(ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)

C     1. ring send/recv: even ranks send first
      peer = mod(rank + 1, nprocs)
      tag = 7
      if (mod(rank, 2) .eq. 0) then
         call MPI_SEND(rank*10 + 1, 1, MPI_INTEGER, peer, tag,
     &                 MPI_COMM_WORLD, ierr)
         call MPI_RECV(res(1), 1, MPI_INTEGER, MPI_ANY_SOURCE, tag,
     &                 MPI_COMM_WORLD, stat, ierr)
      else
         call MPI_RECV(res(1), 1, MPI_INTEGER, MPI_ANY_SOURCE, tag,
     &                 MPI_COMM_WORLD, stat, ierr)
         call MPI_SEND(rank*10 + 1, 1, MPI_INTEGER, peer, tag,
     &                 MPI_COMM_WORLD, ierr)
      end if
      exp(1) = mod(rank + nprocs - 1, nprocs)*10 + 1

C     2. allreduce of integers
      call MPI_ALLREDUCE(rank, isum, 1, MPI_INTEGER, MPI_SUM,
     &                   MPI_COMM_WORLD, ierr)
      res(2) = isum
      exp(2) = nprocs*(nprocs - 1)/2

C     3. allreduce of doubles (exact values)
      dval = 0.25d0 * (rank + 1)
      call MPI_ALLREDUCE(dval, dsum, 1, MPI_DOUBLE_PRECISION, MPI_SUM,
     &                   MPI_COMM_WORLD, ierr)
      res(3) = nint(dsum * 4.0d0)
      exp(3) = nprocs*(nprocs + 1)/2

C     4. bcast from the last rank
      do i = 1, 3
         bcv(i) = 0
         if (rank .eq. nprocs - 1) bcv(i) = 100*i + 5
      end do
      call MPI_BCAST(bcv, 3, MPI_INTEGER, nprocs - 1, MPI_COMM_WORLD,
     &               ierr)
      res(4) = bcv(1) + bcv(2) + bcv(3)
      exp(4) = 615

C     5. strided vector: 4 blocks of 1, stride 3, from rank 0 to 1
      call MPI_TYPE_VECTOR(4, 1, 3, MPI_INTEGER, vtype, ierr)
      call MPI_TYPE_COMMIT(vtype, ierr)
      do i = 1, 12
         buf(i) = i*i
      end do
      res(5) = 0
      exp(5) = 0
      if (rank .eq. 0) then
         call MPI_SEND(buf, 1, vtype, 1, 9, MPI_COMM_WORLD, ierr)
      else if (rank .eq. 1) then
         call MPI_RECV(got, 4, MPI_INTEGER, 0, 9, MPI_COMM_WORLD,
     &                 stat, ierr)
C        elements 1, 4, 7, 10 -> squares 1 16 49 100, encoded
         res(5) = got(1) + 1000*got(2) + 100000*got(3)
     &            + 10000000*got(4)
         exp(5) = 1 + 1000*16 + 100000*49 + 10000000*100
      end if
      call MPI_TYPE_FREE(vtype, ierr)

C     6-7. split by parity, allreduce inside the half
      call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(rank, 2), rank, half,
     &                    ierr)
      call MPI_COMM_SIZE(half, hsize, ierr)
      call MPI_ALLREDUCE(rank, hsum, 1, MPI_INTEGER, MPI_SUM, half,
     &                   ierr)
      res(6) = hsize
      res(7) = hsum
      exp(6) = 0
      exp(7) = 0
      do i = 0, nprocs - 1
         if (mod(i, 2) .eq. mod(rank, 2)) then
            exp(6) = exp(6) + 1
            exp(7) = exp(7) + i
         end if
      end do
      call MPI_COMM_FREE(half, ierr)

C     8. user op: a (+) b = a + b + a*b, i.e. prod(1 + x) - 1
      call MPI_OP_CREATE(fprod1, .true., myop, ierr)
      call MPI_ALLREDUCE(rank + 1, opres, 1, MPI_INTEGER, myop,
     &                   MPI_COMM_WORLD, ierr)
      call MPI_OP_FREE(myop, ierr)
      res(8) = opres
      exp(8) = 1
      do i = 0, nprocs - 1
         exp(8) = exp(8) * (i + 2)
      end do
      exp(8) = exp(8) - 1

C     gather results and expectations on rank 0
      allocate(allres(nres*nprocs), allexp(nres*nprocs))
      call MPI_GATHER(res, nres, MPI_INTEGER, allres, nres,
     &                MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
      call MPI_GATHER(exp, nres, MPI_INTEGER, allexp, nres,
     &                MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
      totbad = 0
      if (rank .eq. 0) then
         do j = 0, nprocs - 1
            do i = 1, nres
               if (allres(j*nres + i) .eq. allexp(j*nres + i)) then
                  write(*, 100) j, 'OK  ', trim(names(i)),
     &                          allres(j*nres + i)
               else
                  write(*, 101) j, 'FAIL', trim(names(i)),
     &                          allres(j*nres + i), allexp(j*nres + i)
                  totbad = totbad + 1
               end if
            end do
         end do
         write(*, '(A,I0,A,I0,A)') 'fortran_f77: ', nres*nprocs,
     &        ' checks, ', totbad, ' failures'
         if (totbad .eq. 0) then
            write(*, '(A)') 'RESULT PASS'
         else
            write(*, '(A)') 'RESULT FAIL'
         end if
      end if
      nbad = totbad
      deallocate(allres, allexp)
      call MPI_FINALIZE(ierr)
      if (nbad .ne. 0) stop 1
 100  format('[', I0, '] ', A, ' ', A, ' = ', I0)
 101  format('[', I0, '] ', A, ' ', A, ' = ', I0, ' (expected ', I0,
     &       ')')
      end

C     user reduction: inout = in + inout + in*inout
      subroutine fprod1(invec, inoutvec, n, dtype)
      implicit none
      integer n, dtype, i
      integer invec(n), inoutvec(n)
      do i = 1, n
         inoutvec(i) = invec(i) + inoutvec(i) + invec(i)*inoutvec(i)
      end do
      end

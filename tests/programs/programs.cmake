# programs.cmake - the list of MPI test programs and how to run them. Included by
# tests/programs/CMakeLists.txt (to build them) and tests/integration/CMakeLists.txt (to
# register the CTest tests), so the two never disagree.
#
# One entry per program:  NAME:RANKS[:EXPECTED_EXIT[:ARG,ARG,...]]
#   NAME           the executable; built from NAME.c, NAME.f, NAME.f90 or NAME.cxx in this
#                  directory
#                  (hello_nopie is hello.c linked as a non-PIE executable)
#   RANKS          the -n the program is run with (most need an exact count)
#   EXPECTED_EXIT  exit status of mpiexec (default 0)
#   ARGS           program arguments, comma separated
#
# Keep 4-rank programs light on collectives: on the 2-core test machines every collective at
# 3-4 ranks costs milliseconds because MPICH busy-polls.
set(MANA_TEST_PROGRAMS
  hello:2
  hello_nopie:2
  hello_aligned_libs:2
  p2p_blocking:2
  p2p_modes:2
  p2p_nonblocking:2
  p2p_wildcard:3
  p2p_probe:2
  p2p_persistent:2
  p2p_persistent_late:2
  p2p_isendrecv:2
  p2p_derived_pending:2
  p2p_persistent_derived:2
  p2p_partitioned:2
  qmpi_registered:2
  grequest_pending:2
  rma_lock_loop:2
  rma_lock_contention:3
  bsend_detach_wait:2
  attr_tag_ub:2
  p2p_bottom_buffered:2
  comm_freed_pending:2
  p2p_freed_recv:2
  ckpt_comm_free_early:2
  ckpt_intercomm_side_freed:2
  ckpt_libc_leaf:2
  ckpt_user_op_drain:2
  ckpt_signal_app:2
  signal_tls:2
  signal_tls_early:2
  timed_waits:2
  local_queries:2
  pmpi_profile:2
  finalize_early:2
  p2p_cancel:2
  p2p_truncate:2
  coll_blocking:3
  coll_nonblocking:3
  coll_persistent:3
  coll_neighbor:3
  coll_refused:2
  comm_basic:4
  comm_intercomm:4
  comm_topo:4
  group_ops:4
  dtype_basic:2
  dtype_subarray:2
  dtype_pack:2
  dtype_freed_attr:1
  user_ops:3
  attributes:2
  keyvals:2
  sessions:2
  errhandler:2
  errhandler_inherited:2
  errhandler_default_fatal:1:15
  comm_errhandler_world:2
  job_env:2
  child_processes:2
  unlinked_files:2
  thread_attrs:2
  posix_timers:2
  file_map_shared:2
  posix_shm:2
  sysv_shm:2
  memfd_ring:2
  fork_advice:2
  rlimits:2
  clock_waits:2
  sleep_woken:2
  callback_thread:2
  compute_after_call:2
  poll_waits:2
  gdb_frames:2
  app_pipes:2
  dev_files:2
  dir_handles:2
  pcoll_start_order:2
  handle_identity:2
  info:2
  error_classes:1
  mpiio:2
  datarep_registered:2
  rma:2
  rma_shared:2
  rma_epochs:2
  rma_fence_ended:2
  thread_funneled:2
  thread_serialized:2
  misc:2
  abort:2:3
  abort_after_loop:2:4
  comm_free_stranded:2
  comm_free_late:2
  iterative:2
  inflight_p2p:2
  inflight_coll:2
  ckpt_intercomm:2
  ckpt_mprobe:2
  ckpt_late_world:2
  ckpt_cgroup:2
  ckpt_pcoll:2
  ckpt_session:2
  ckpt_session_only:2
  ckpt_mpi_t:2:0:200
  multi_comm:2:0:300,20000
  heat_cart:2:0:400
  signal_masks:2:0:40
  signal_pending:2:0:300
  signal_process:2:0:50
  libc_locks:2:0:20,5000
  hybrid_omp:2:0:300,20000
  file_iall:2:0:60
  file_split_coll:2
  file_wait_skew:2
  file_seq_view:2
  file_refused_view:2
  mt_p2p:2:0:200,3
  mt_new_threads:2:0:6
  mt_dup_loop:2:0:500,4
  mt_probe_recv:2:0:40,4
  mt_group_standin:2
  mt_rma_get:2:0:1000,4
  fortran_f77:2
  fortran_mod:2
  fortran_f08:2
  fortran_attr:1
  fortran_scratch:2
  cxx_ops:3
)

# mana_parse_test_program(ENTRY NAME_VAR RANKS_VAR EXIT_VAR ARGS_VAR)
function(mana_parse_test_program entry name_var ranks_var exit_var args_var)
  string(REPLACE ":" ";" fields "${entry}")
  list(LENGTH fields n)
  list(GET fields 0 name)
  list(GET fields 1 ranks)
  set(code 0)
  set(args "")
  if(n GREATER 2)
    list(GET fields 2 code)
  endif()
  if(n GREATER 3)
    list(GET fields 3 args)
    string(REPLACE "," ";" args "${args}")
  endif()
  set(${name_var} "${name}" PARENT_SCOPE)
  set(${ranks_var} "${ranks}" PARENT_SCOPE)
  set(${exit_var} "${code}" PARENT_SCOPE)
  set(${args_var} "${args}" PARENT_SCOPE)
endfunction()

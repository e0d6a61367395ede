# End-to-end tests of mana_coordinator, mana_status and mana_launch's coordinator start-up,
# with fake ranks (fake_rank.c, built on the same client library as mana_lh) instead of MPI.
# Included from tests/unit/CMakeLists.coord.cmake; every scenario of fake_job.sh is one
# CTest test labelled "integration" (ctest -R '^coordinator\.').

set(_coord_test_dir ${CMAKE_BINARY_DIR}/tests/coordinator)

add_executable(coord_fake_rank ${CMAKE_CURRENT_LIST_DIR}/fake_rank.c)
set_target_properties(coord_fake_rank PROPERTIES
  OUTPUT_NAME fake_rank RUNTIME_OUTPUT_DIRECTORY ${_coord_test_dir})
target_link_libraries(coord_fake_rank PRIVATE mana_coord_client PkgConfig::XXHASH)

# An MPICH-linked program for mana_launch's checks (never run).
add_executable(coord_mpi_app ${CMAKE_CURRENT_LIST_DIR}/mpi_app.c)
set_target_properties(coord_mpi_app PROPERTIES
  OUTPUT_NAME mpi_app RUNTIME_OUTPUT_DIRECTORY ${_coord_test_dir})
target_link_libraries(coord_mpi_app PRIVATE PkgConfig::MPICH)
target_link_options(coord_mpi_app PRIVATE LINKER:--as-needed)

set(_coord_scenarios
  commit refuse fail unparked disconnect raise stall timeout auth flood garbage kill interval status-errors
  lock job-over sigterm launch ckpt-signal forked incremental keep)
foreach(_scenario ${_coord_scenarios})
  add_test(NAME coordinator.${_scenario}
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fake_job.sh ${_scenario})
  set_tests_properties(coordinator.${_scenario} PROPERTIES
    LABELS integration
    TIMEOUT 60
    ENVIRONMENT "MANA_BIN=${CMAKE_BINARY_DIR}/bin;FAKE_RANK=$<TARGET_FILE:coord_fake_rank>;MPI_APP=$<TARGET_FILE:coord_mpi_app>")
endforeach()
# A connection flood is one of the fault-injection cases too.
set_tests_properties(coordinator.flood PROPERTIES LABELS "integration;faults")

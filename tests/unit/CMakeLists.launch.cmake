# Unit tests for mana_launch: command-line parsing (test_launch_args.c) and the ELF checks
# (test_launch_appcheck.c). Included from tests/unit/CMakeLists.txt.
#
# The ELF checks need real programs of each shape. They are built here from one source,
# test_launch_fixture.c, into their own directory so they never mix with bin/, and the
# test learns their paths through compile definitions.

set(_launch_fixture_src ${CMAKE_CURRENT_LIST_DIR}/test_launch_fixture.c)
set(_launch_fixture_dir ${CMAKE_CURRENT_BINARY_DIR}/launch_fixtures)

function(_launch_fixture target role)
  set_target_properties(${target} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${_launch_fixture_dir}
    LIBRARY_OUTPUT_DIRECTORY ${_launch_fixture_dir})
  target_compile_definitions(${target} PRIVATE ${role})
endfunction()

add_executable(launch_fixture_mpi ${_launch_fixture_src})
_launch_fixture(launch_fixture_mpi FIXTURE_MPI_APP)
target_link_libraries(launch_fixture_mpi PRIVATE PkgConfig::MPICH)

add_executable(launch_fixture_plain ${_launch_fixture_src})
_launch_fixture(launch_fixture_plain FIXTURE_PLAIN)

# An application that reaches MPI through its own library: once found through the
# program's RUNPATH (CMake's build RPATH), once only through LD_LIBRARY_PATH.
add_library(launch_fixture_mpilib SHARED ${_launch_fixture_src})
_launch_fixture(launch_fixture_mpilib FIXTURE_MPI_LIB)
target_link_libraries(launch_fixture_mpilib PRIVATE PkgConfig::MPICH)

add_executable(launch_fixture_via_lib ${_launch_fixture_src})
_launch_fixture(launch_fixture_via_lib FIXTURE_VIA_LIB)
target_link_libraries(launch_fixture_via_lib PRIVATE launch_fixture_mpilib)

add_executable(launch_fixture_via_lib_norpath ${_launch_fixture_src})
_launch_fixture(launch_fixture_via_lib_norpath FIXTURE_VIA_LIB)
target_link_libraries(launch_fixture_via_lib_norpath PRIVATE launch_fixture_mpilib)
set_target_properties(launch_fixture_via_lib_norpath PROPERTIES SKIP_BUILD_RPATH TRUE)

# A program linked against "libmpi.so.40", the SONAME of another MPI.
add_library(launch_fixture_othermpi SHARED ${_launch_fixture_src})
_launch_fixture(launch_fixture_othermpi FIXTURE_OTHER_MPI)
set_target_properties(launch_fixture_othermpi PROPERTIES
  OUTPUT_NAME mpi VERSION 40.0.0 SOVERSION 40
  LIBRARY_OUTPUT_DIRECTORY ${_launch_fixture_dir}/othermpi)

add_executable(launch_fixture_via_othermpi ${_launch_fixture_src})
_launch_fixture(launch_fixture_via_othermpi FIXTURE_VIA_OTHER)
target_link_libraries(launch_fixture_via_othermpi PRIVATE launch_fixture_othermpi)

add_executable(test_launch
  ${CMAKE_CURRENT_LIST_DIR}/test_launch_args.c
  ${CMAKE_CURRENT_LIST_DIR}/test_launch_appcheck.c)
target_link_libraries(test_launch PRIVATE mana_launch_core criterion)
target_compile_definitions(test_launch PRIVATE
  LAUNCH_FIXTURE_MPI="$<TARGET_FILE:launch_fixture_mpi>"
  LAUNCH_FIXTURE_PLAIN="$<TARGET_FILE:launch_fixture_plain>"
  LAUNCH_FIXTURE_MPILIB="$<TARGET_FILE:launch_fixture_mpilib>"
  LAUNCH_FIXTURE_MPILIB_DIR="$<TARGET_FILE_DIR:launch_fixture_mpilib>"
  LAUNCH_FIXTURE_VIA_LIB="$<TARGET_FILE:launch_fixture_via_lib>"
  LAUNCH_FIXTURE_VIA_LIB_NORPATH="$<TARGET_FILE:launch_fixture_via_lib_norpath>"
  LAUNCH_FIXTURE_VIA_OTHERMPI="$<TARGET_FILE:launch_fixture_via_othermpi>")

# Static fixtures only where the toolchain can make them (Debian's libc6-dev ships libc.a);
# the tests skip otherwise.
include(CheckCSourceCompiles)
foreach(_kind static static-pie)
  string(MAKE_C_IDENTIFIER "${_kind}" _id)
  set(CMAKE_REQUIRED_LINK_OPTIONS -${_kind})
  check_c_source_compiles("int main(void) { return 0; }" MANA_LAUNCH_CAN_LINK_${_id})
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(MANA_LAUNCH_CAN_LINK_${_id})
    add_executable(launch_fixture_${_id} ${_launch_fixture_src})
    _launch_fixture(launch_fixture_${_id} FIXTURE_PLAIN)
    target_link_options(launch_fixture_${_id} PRIVATE -${_kind})
    string(TOUPPER "${_id}" _ID)
    target_compile_definitions(test_launch PRIVATE
      LAUNCH_FIXTURE_${_ID}="$<TARGET_FILE:launch_fixture_${_id}>")
  endif()
endforeach()

add_test(NAME unit.launch COMMAND test_launch)
set_tests_properties(unit.launch PROPERTIES LABELS unit)

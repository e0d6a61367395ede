# Unit tests of the coordinator and its client library (coordinator/coord_*.c) and of what
# mana_launch tells the coordinator (test_coord_launch.c). Included from
# tests/unit/CMakeLists.txt.

foreach(_coord_test proto secret ckpt store client)
  add_executable(test_coord_${_coord_test}
    ${CMAKE_CURRENT_LIST_DIR}/test_coord_${_coord_test}.c)
  target_link_libraries(test_coord_${_coord_test} PRIVATE mana_coord_core ${CRITERION_LIB})
  add_test(NAME unit.coord_${_coord_test} COMMAND test_coord_${_coord_test})
  set_tests_properties(unit.coord_${_coord_test} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()

add_executable(test_coord_launch ${CMAKE_CURRENT_LIST_DIR}/test_coord_launch.c)
target_link_libraries(test_coord_launch PRIVATE mana_launch_core mana_launch_coord ${CRITERION_LIB})
add_test(NAME unit.coord_launch COMMAND test_coord_launch)
set_tests_properties(unit.coord_launch PROPERTIES LABELS unit TIMEOUT 60)

# The end-to-end tests with a real coordinator and fake ranks live in tests/coordinator/;
# tests/CMakeLists.txt does not descend there, so they are registered from here.
include(${CMAKE_SOURCE_DIR}/tests/coordinator/tests.cmake)

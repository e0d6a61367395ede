# Unit tests of the collective-clock safe-point algorithm (wrappers/cc_algorithm.c), which is
# pure C with no MPI: its pieces (test_cc_unit.c) and the whole protocol simulated over random
# MPI programs and schedules (test_cc_sim.c). Included from tests/unit/CMakeLists.txt.

add_library(mana_cc_algorithm_test STATIC ${CMAKE_SOURCE_DIR}/wrappers/cc_algorithm.c)
target_include_directories(mana_cc_algorithm_test PUBLIC ${CMAKE_SOURCE_DIR}/wrappers)

add_executable(test_cc_unit ${CMAKE_CURRENT_LIST_DIR}/test_cc_unit.c)
target_link_libraries(test_cc_unit PRIVATE mana_cc_algorithm_test ${CRITERION_LIB})
add_test(NAME unit.cc COMMAND test_cc_unit)

add_executable(test_cc_sim ${CMAKE_CURRENT_LIST_DIR}/test_cc_sim.c)
# the ranks run the stub's clock, the coordinator mana_coordinator's state machine
target_link_libraries(test_cc_sim PRIVATE mana_cc_algorithm_test mana_coord_core ${CRITERION_LIB})
add_test(NAME unit.cc_sim COMMAND test_cc_sim)

set_tests_properties(unit.cc unit.cc_sim PROPERTIES LABELS unit)

# Unit tests of the stub's restart records (wrappers/): datatype recipes, the rebuild order of
# communicators and the map behind it, info records against a fake lower half.  Included from
# tests/unit/CMakeLists.txt.

set(stub_dir ${CMAKE_SOURCE_DIR}/wrappers)
set(stub_gen ${CMAKE_BINARY_DIR}/wrappers/gen)

add_executable(test_stub_recipe ${CMAKE_CURRENT_LIST_DIR}/test_stub_recipe.c
                                ${stub_dir}/datatype_recipe.c)
target_include_directories(test_stub_recipe PRIVATE ${stub_dir} ${MANA_MPI_INCLUDE_DIR})
target_link_libraries(test_stub_recipe PRIVATE ${CRITERION_LIB})
add_test(NAME unit.stub_recipe COMMAND test_stub_recipe)

add_executable(test_stub_order ${CMAKE_CURRENT_LIST_DIR}/test_stub_order.c
                               ${stub_dir}/comm_order.c ${stub_dir}/u64map.c
                               ${stub_dir}/cc_algorithm.c)
target_include_directories(test_stub_order PRIVATE ${stub_dir})
target_link_libraries(test_stub_order PRIVATE ${CRITERION_LIB})
add_test(NAME unit.stub_order COMMAND test_stub_order)

# info.c as the stub builds it, with the generated table layout and hook prototypes.
add_executable(test_stub_info ${CMAKE_CURRENT_LIST_DIR}/test_stub_info.c ${stub_dir}/info.c
                              ${stub_dir}/handles.c ${stub_dir}/stub_lock.c)
add_dependencies(test_stub_info mana_generated)
target_include_directories(test_stub_info PRIVATE ${stub_dir} ${stub_gen} ${MANA_MPI_INCLUDE_DIR})
target_compile_options(test_stub_info PRIVATE -fno-stack-protector)
target_link_libraries(test_stub_info PRIVATE ${CRITERION_LIB})
add_test(NAME unit.stub_info COMMAND test_stub_info)

set_tests_properties(unit.stub_recipe unit.stub_order unit.stub_info PROPERTIES LABELS unit)

# The drain's buffered messages and counters (wrappers/drained.c, p2p.h), without MPI.
add_executable(test_stub_drained ${CMAKE_CURRENT_LIST_DIR}/test_stub_drained.c
                                 ${stub_dir}/drained.c ${stub_dir}/stub_lock.c)
add_dependencies(test_stub_drained mana_generated)
target_include_directories(test_stub_drained PRIVATE ${stub_dir} ${stub_gen}
                           ${CMAKE_SOURCE_DIR}/include ${MANA_MPI_INCLUDE_DIR})
target_compile_options(test_stub_drained PRIVATE -fno-stack-protector)
target_link_libraries(test_stub_drained PRIVATE ${CRITERION_LIB})
add_test(NAME unit.stub_drained COMMAND test_stub_drained)
set_tests_properties(unit.stub_drained PROPERTIES LABELS unit)

# The collective clock's peer gate (wrappers/collective_clock.c) against a fake lower half.
add_executable(test_stub_peer_gate ${CMAKE_CURRENT_LIST_DIR}/test_stub_peer_gate.c
                                   ${stub_dir}/collective_clock.c ${stub_dir}/cc_algorithm.c
                                   ${stub_dir}/stub_lock.c)
add_dependencies(test_stub_peer_gate mana_generated)
target_include_directories(test_stub_peer_gate PRIVATE ${stub_dir} ${stub_gen}
                           ${CMAKE_SOURCE_DIR}/include ${MANA_MPI_INCLUDE_DIR})
target_compile_options(test_stub_peer_gate PRIVATE -fno-stack-protector)
target_link_libraries(test_stub_peer_gate PRIVATE ${CRITERION_LIB} Threads::Threads)
add_test(NAME unit.stub_peer_gate COMMAND test_stub_peer_gate)
set_tests_properties(unit.stub_peer_gate PROPERTIES LABELS unit)

# The bookkeeping a crossing does before switching back (wrappers/stub.h, MANA_LH_CALL_SETTLE).
add_executable(test_stub_settle ${CMAKE_CURRENT_LIST_DIR}/test_stub_settle.c
                                ${stub_dir}/handles.c ${stub_dir}/stub_lock.c)
add_dependencies(test_stub_settle mana_generated)
target_include_directories(test_stub_settle PRIVATE ${stub_dir} ${stub_gen}
                           ${CMAKE_SOURCE_DIR}/include ${MANA_MPI_INCLUDE_DIR})
target_compile_options(test_stub_settle PRIVATE -fno-stack-protector)
target_link_libraries(test_stub_settle PRIVATE ${CRITERION_LIB})
add_test(NAME unit.stub_settle COMMAND test_stub_settle)
set_tests_properties(unit.stub_settle PROPERTIES LABELS unit)

# A crossing entering the lower half by an LDT selector (lower-half/fs_selector.c, stub.h).
add_executable(test_fs_selector ${CMAKE_CURRENT_LIST_DIR}/test_fs_selector.c
                                ${CMAKE_SOURCE_DIR}/lower-half/fs_selector.c)
add_dependencies(test_fs_selector mana_generated)
target_include_directories(test_fs_selector PRIVATE ${stub_dir} ${stub_gen}
                           ${CMAKE_SOURCE_DIR}/lower-half ${CMAKE_SOURCE_DIR}/include
                           ${MANA_MPI_INCLUDE_DIR})
target_compile_options(test_fs_selector PRIVATE -fno-stack-protector)
target_link_libraries(test_fs_selector PRIVATE ${CRITERION_LIB})
add_test(NAME unit.fs_selector COMMAND test_fs_selector)
set_tests_properties(unit.fs_selector PROPERTIES LABELS unit)

# Unit tests of the checkpoint image library (restart/image*.c). Included from
# tests/unit/CMakeLists.txt. Each test runs in its own process (Criterion's default), which
# matters here: the tests map memory at fixed addresses inside reservations of their own.
add_executable(test_image
  ${CMAKE_CURRENT_LIST_DIR}/test_image_helpers.c
  ${CMAKE_CURRENT_LIST_DIR}/test_image_roundtrip.c
  ${CMAKE_CURRENT_LIST_DIR}/test_image_commit.c
  ${CMAKE_CURRENT_LIST_DIR}/test_image_corrupt.c
  ${CMAKE_CURRENT_LIST_DIR}/test_image_restore.c
  ${CMAKE_CURRENT_LIST_DIR}/test_image_incremental.c
  ${CMAKE_CURRENT_LIST_DIR}/test_image_prefault.c)
target_link_libraries(test_image PRIVATE mana_image criterion)
add_test(NAME unit.image COMMAND test_image)
# The same tests through the page cache: the path taken where O_DIRECT is not available.
add_test(NAME unit.image_buffered COMMAND test_image)
set_tests_properties(unit.image_buffered PROPERTIES ENVIRONMENT MANA_IMAGE_DIRECT=0)
set_tests_properties(unit.image unit.image_buffered PROPERTIES LABELS unit)

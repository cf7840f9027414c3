# The packaging tests (label "install"), sharing one release tree of their own
# (BUILD/packaging-tree, Release without sanitizers, CAIRN_PACKAGING=ON):
#   packaging/tree            configures and builds it (incremental; fixture
#                             packaging_tree, which the two others need)
#   packaging/worker_tarball  the self-contained worker tarball: unpacked into
#                             an empty folder, its libraries resolve inside it,
#                             it does a job with an empty environment, and
#                             cairn launch local and ssh --ship-worker run it
#   packaging/debs            cpack -G DEB, inspected with dpkg-deb, units
#                             checked with systemd-analyze verify when present
add_test(NAME packaging/tree
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/packaging/tree.sh ${CMAKE_COMMAND}
          ${CMAKE_C_COMPILER} ${CMAKE_BINARY_DIR})
set_tests_properties(packaging/tree PROPERTIES LABELS install TIMEOUT 1200
  FIXTURES_SETUP packaging_tree)
add_test(NAME packaging/worker_tarball
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/packaging/worker_tarball.sh ${CMAKE_COMMAND}
          ${CMAKE_BINARY_DIR})
add_test(NAME packaging/debs
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/packaging/debs.sh ${CMAKE_COMMAND} ${CMAKE_BINARY_DIR})
set_tests_properties(packaging/worker_tarball packaging/debs PROPERTIES LABELS install
  TIMEOUT 600 FIXTURES_REQUIRED packaging_tree)

# python.cmake — the Python side (docs/python.md):
#
#   bin/cairn-app-python          the runner an Executor's calls run in,
#                                 offered by a worker as an app (component
#                                 worker; copied into the build's bin/ too,
#                                 where the tests find it)
#   lib/python3/dist-packages/cairn/
#                                 the package (component python: the
#                                 python3-cairn .deb), CAIRN_INSTALL_PYTHONDIR
#   share/cairn/snakemake/cairn/  the Snakemake profile (component python)
#
# and, with the tests, the package's pytest files as ctest python/NAME
# (label python), run by python/tests/run.sh under /usr/bin/python3.
set(CAIRN_INSTALL_PYTHONDIR lib/python3/dist-packages CACHE STRING
    "Where the cairn Python package is installed, under the prefix (Debian's folder by default)")

add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/bin/cairn-app-python
  COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_SOURCE_DIR}/python/runner/cairn-app-python
          ${CMAKE_BINARY_DIR}/bin/cairn-app-python
  DEPENDS ${CMAKE_SOURCE_DIR}/python/runner/cairn-app-python
  COMMENT "Copying the Python runner cairn-app-python"
  VERBATIM)
add_custom_target(cairn-app-python ALL DEPENDS ${CMAKE_BINARY_DIR}/bin/cairn-app-python)

install(PROGRAMS ${CMAKE_SOURCE_DIR}/python/runner/cairn-app-python
  DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT worker)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/cairn DESTINATION ${CAIRN_INSTALL_PYTHONDIR}
  COMPONENT python FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/contrib/snakemake/cairn
  DESTINATION ${CMAKE_INSTALL_DATADIR}/cairn/snakemake COMPONENT python
  USE_SOURCE_PERMISSIONS PATTERN "__pycache__" EXCLUDE)

if(BUILD_TESTING)
  foreach(name package client executor snakemake)
    add_test(NAME python/${name}
             COMMAND bash ${CMAKE_SOURCE_DIR}/python/tests/run.sh ${name})
    set_tests_properties(python/${name} PROPERTIES LABELS python TIMEOUT 600
      SKIP_RETURN_CODE 77
      ENVIRONMENT "CAIRN_BIN_DIR=${CMAKE_BINARY_DIR}/bin;CAIRN_SOURCE_DIR=${CMAKE_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1;ASAN_OPTIONS=detect_leaks=1:abort_on_error=0;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
  endforeach()
endif()

# packaging.cmake — the .deb packages (`make packages`, README "Packages"):
#
#   cairn-server   /usr/bin/cairn-server, /usr/share/cairn/{schema,web},
#                  cairn-server.service, /etc/cairn/server.conf (conffile)
#   cairn-worker   /usr/bin/cairn-worker, cairn-worker.service,
#                  /etc/cairn/worker.conf (conffile)
#   cairn-cli      /usr/bin/cairn
#   python3-cairn  the cairn Python package in /usr/lib/python3/dist-packages,
#                  the Snakemake profile in /usr/share/cairn/snakemake/cairn
#                  (Architecture: all)
#
# made by `cpack -G DEB` from the install components of cmake/install.cmake,
# their dependencies found by dpkg-shlibdeps. Configure with
# -DCAIRN_PACKAGING=ON -DCMAKE_INSTALL_PREFIX=/usr (the units and conf files
# are installed only then, to /usr/lib/systemd/system and /etc/cairn).
option(CAIRN_PACKAGING "Install the systemd units and /etc/cairn conf files (for cpack -G DEB)" OFF)
set(CAIRN_PACKAGE_MAINTAINER "Cairn maintainers" CACHE STRING "Maintainer field of the .deb packages")

if(CAIRN_PACKAGING)
  if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    message(FATAL_ERROR "CAIRN_PACKAGING wants -DCMAKE_INSTALL_PREFIX=/usr (the units name /usr/bin)")
  endif()
  # cpack installs only what the packages hold: build just those targets.
  set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
  foreach(c server worker)
    install(FILES ${CMAKE_SOURCE_DIR}/packaging/systemd/cairn-${c}.service
      DESTINATION lib/systemd/system COMPONENT ${c})
    install(FILES ${CMAKE_SOURCE_DIR}/packaging/conf/${c}.conf DESTINATION /etc/cairn
      PERMISSIONS OWNER_READ OWNER_WRITE COMPONENT ${c})
    install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/cairn-${c}
      COMPONENT ${c})
  endforeach()
  install(FILES ${CMAKE_SOURCE_DIR}/docs/worker.md DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/cairn-worker
    COMPONENT worker)
  install(FILES ${CMAKE_SOURCE_DIR}/docs/server.md DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/cairn-server
    COMPONENT server)
  install(FILES ${CMAKE_SOURCE_DIR}/docs/cli.md ${CMAKE_SOURCE_DIR}/docs/launch.md
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/cairn-cli COMPONENT cli)
  install(FILES ${CMAKE_SOURCE_DIR}/docs/python.md
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/python3-cairn COMPONENT python)
endif()

set(CPACK_PACKAGE_NAME cairn)
set(CPACK_PACKAGE_VENDOR "Cairn")
set(CPACK_PACKAGE_CONTACT "${CAIRN_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENTS_ALL server worker cli python)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CAIRN_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_SERVER_PACKAGE_NAME cairn-server)
set(CPACK_DEBIAN_WORKER_PACKAGE_NAME cairn-worker)
set(CPACK_DEBIAN_CLI_PACKAGE_NAME cairn-cli)
set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-cairn)
set(CPACK_COMPONENT_SERVER_DESCRIPTION "Cairn master: the cairn-server daemon
Hands out the tasks of DAG jobs to cairn-worker processes over HTTP(S) and
keeps jobs, results and volunteers in SQLite. Runs as cairn-server.service,
configured in /etc/cairn/server.conf.")
set(CPACK_COMPONENT_WORKER_DESCRIPTION "Cairn worker: the cairn-worker daemon
Asks a Cairn master for tasks and runs them with the apps it is given. Runs as
cairn-worker.service, configured in /etc/cairn/worker.conf.")
set(CPACK_COMPONENT_CLI_DESCRIPTION "Cairn command line: the cairn command
Submits and watches jobs, reads results, manages invitations and launches
pools of workers (cairn launch local|ssh|condor).")
set(CPACK_COMPONENT_PYTHON_DESCRIPTION "Cairn from Python: the cairn package and a Snakemake profile
Submits and watches jobs of a Cairn master (cairn.Client, cairn.Job), runs
Python calls on Cairn workers (cairn.Executor, a concurrent.futures
Executor), and runs Snakemake workflows on them (/usr/share/cairn/snakemake/cairn).")
set(CPACK_DEBIAN_SERVER_PACKAGE_SUGGESTS "cairn-cli, cairn-worker, python3-cairn")
# python3 runs /usr/bin/cairn-app-python (the runner of cairn.Executor's
# calls); a worker without Python still runs every other app
set(CPACK_DEBIAN_WORKER_PACKAGE_RECOMMENDS "python3")
set(CPACK_DEBIAN_WORKER_PACKAGE_SUGGESTS "cairn-cli, python3-cloudpickle")
# pure Python: no libraries for dpkg-shlibdeps to find
set(CPACK_DEBIAN_PYTHON_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3 (>= 3.9)")
set(CPACK_DEBIAN_PYTHON_PACKAGE_SUGGESTS "python3-cloudpickle, snakemake")
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/packaging/debian/python/postinst
    ${CMAKE_SOURCE_DIR}/packaging/debian/python/prerm)
set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# the sandbox program apps run in (docs/security.md, "The task sandbox"),
# besides the libraries dpkg-shlibdeps finds
set(CPACK_DEBIAN_WORKER_PACKAGE_DEPENDS "bubblewrap")
foreach(c server worker)
  string(TOUPPER ${c} C)
  set(d ${CMAKE_SOURCE_DIR}/packaging/debian/${c})
  set(CPACK_DEBIAN_${C}_PACKAGE_CONTROL_EXTRA ${d}/conffiles ${d}/postinst ${d}/prerm ${d}/postrm)
  set(CPACK_DEBIAN_${C}_PACKAGE_CONTROL_STRICT_PERMISSION ON)
endforeach()
include(CPack)

# install.cmake — what `cmake --install` puts under the prefix (GNUInstallDirs):
#
#   bin/                      cairn-server, cairn-worker, cairn
#   lib/                      libcairn-master.so, libcairn-worker.so (SONAME .so.N)
#   lib/pkgconfig/            cairn-master.pc, cairn-worker.pc
#   lib/cmake/Cairn/          find_package(Cairn): Cairn::master, Cairn::worker
#   include/cairn/            the public headers
#   share/cairn/schema/       the SQL migrations (also built into the master)
#   share/cairn/web/          the dashboard (cairn-server --web)
#
# The shared libraries are made of the same objects as the internal static
# libraries, common/ included (and plan/ in libcairn-master only), and export
# only the functions declared in the public headers: master.h for
# libcairn-master, worker.h for libcairn-worker, and every other header of
# include/cairn/ (shared declarations) for both.
set(CAIRN_INSTALL_DATADIR ${CMAKE_INSTALL_DATADIR}/cairn)
set(CAIRN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Cairn)

file(GLOB CAIRN_PUBLIC_HEADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/include/cairn/*.h)

# cairn_add_shared_library(TARGET OUTPUT_NAME EXPORT_NAME OWN_HEADER OTHER_HEADER
#                          OBJECT_LIBS... DEPENDS deps...)
function(cairn_add_shared_library target output export own other)
  cmake_parse_arguments(arg "" "" "OBJECTS;DEPENDS" ${ARGN})
  set(headers ${CAIRN_PUBLIC_HEADERS})
  list(REMOVE_ITEM headers ${CMAKE_SOURCE_DIR}/include/cairn/${other})
  set(map ${CMAKE_BINARY_DIR}/${output}.map)
  # Rewritten only when the list changes, so that a removed header counts too.
  file(CONFIGURE OUTPUT ${map}.headers CONTENT "${headers}\n")
  add_custom_command(OUTPUT ${map}
    COMMAND ${CMAKE_COMMAND} "-DHEADERS=${headers}" -DOUT=${map}
            -P ${CMAKE_SOURCE_DIR}/cmake/exports.cmake
    DEPENDS ${headers} ${map}.headers ${CMAKE_SOURCE_DIR}/cmake/exports.cmake
    COMMENT "Listing the public functions of lib${output}"
    VERBATIM)
  set(objects "")
  foreach(o IN LISTS arg_OBJECTS)
    list(APPEND objects $<TARGET_OBJECTS:${o}>)
  endforeach()
  add_library(${target} SHARED ${objects} ${map})
  target_link_libraries(${target} PRIVATE ${arg_DEPENDS})
  target_link_options(${target} PRIVATE -Wl,--version-script=${map} -Wl,--no-undefined)
  target_include_directories(${target} INTERFACE
    $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${output} EXPORT_NAME ${export}
    VERSION ${PROJECT_VERSION} SOVERSION ${CAIRN_SOVERSION}
    LINKER_LANGUAGE C LINK_DEPENDS ${map})
endfunction()

cairn_add_shared_library(cairn_master_shared cairn-master master master.h worker.h
  OBJECTS cairn_master_obj cairn_plan_obj cairn_common_obj
  DEPENDS PkgConfig::JANSSON PkgConfig::MHD PkgConfig::SQLITE PkgConfig::SODIUM PkgConfig::ZLIB
          Threads::Threads m)
cairn_add_shared_library(cairn_worker_shared cairn-worker worker worker.h master.h
  OBJECTS cairn_worker_obj cairn_common_obj
  DEPENDS PkgConfig::JANSSON PkgConfig::CURL PkgConfig::MHD PkgConfig::SODIUM Threads::Threads m)

# Every rule names its component, which the .deb packages (cmake/packaging.cmake)
# are made of: server (cairn-server, schema, dashboard), worker (cairn-worker),
# cli (cairn), dev (libraries, headers, pkg-config and CMake files).
# Binaries (they link the internal static libraries: no run-time path needed).
foreach(t_comp cairn-server:server cairn-worker:worker cairn-cli:cli)
  string(REPLACE ":" ";" t_comp ${t_comp})
  list(GET t_comp 0 t)
  list(GET t_comp 1 comp)
  if(TARGET ${t})
    install(TARGETS ${t} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT ${comp})
  endif()
endforeach()

install(TARGETS cairn_master_shared cairn_worker_shared EXPORT CairnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Globbed when installing, so a header added to include/cairn/ goes along.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/cairn/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cairn COMPONENT dev FILES_MATCHING PATTERN "*.h")
install(DIRECTORY ${CMAKE_SOURCE_DIR}/schema/
  DESTINATION ${CAIRN_INSTALL_DATADIR}/schema COMPONENT server FILES_MATCHING PATTERN "*.sql")
install(DIRECTORY ${CMAKE_SOURCE_DIR}/web/ DESTINATION ${CAIRN_INSTALL_DATADIR}/web
  COMPONENT server)

# pkg-config files, written when installing so that they name the prefix
# actually installed to (cmake --install --prefix P).
foreach(d LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${d}}")
    set(cairn_pc_${d} "${CMAKE_INSTALL_${d}}")
  else()
    set(cairn_pc_${d} "\${prefix}/${CMAKE_INSTALL_${d}}")
  endif()
endforeach()
foreach(pc cairn-master cairn-worker)
  install(CODE "
    set(prefix \"\${CMAKE_INSTALL_PREFIX}\")
    set(libdir [[${cairn_pc_LIBDIR}]])
    set(includedir [[${cairn_pc_INCLUDEDIR}]])
    set(PROJECT_VERSION \"${PROJECT_VERSION}\")
    configure_file(\"${CMAKE_SOURCE_DIR}/cmake/${pc}.pc.in\"
                   \"${CMAKE_BINARY_DIR}/pkgconfig/${pc}.pc\" @ONLY)
    file(INSTALL \"${CMAKE_BINARY_DIR}/pkgconfig/${pc}.pc\"
         DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\")"
    COMPONENT dev)
endforeach()

# The CMake package: CairnConfig.cmake, its version file and the targets.
include(CMakePackageConfigHelpers)
install(EXPORT CairnTargets NAMESPACE Cairn:: FILE CairnTargets.cmake
  DESTINATION ${CAIRN_INSTALL_CMAKEDIR} COMPONENT dev)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/CairnConfig.cmake.in
  ${CMAKE_BINARY_DIR}/CairnConfig.cmake
  INSTALL_DESTINATION ${CAIRN_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CAIRN_INSTALL_DATADIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/CairnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/CairnConfig.cmake
  ${CMAKE_BINARY_DIR}/CairnConfigVersion.cmake DESTINATION ${CAIRN_INSTALL_CMAKEDIR}
  COMPONENT dev)

# The libFuzzer targets (CAIRN_FUZZ=ON, clang): each tests/fuzz/fuzz_*.c is
# one program linked with the libFuzzer main; `make fuzz` builds and runs
# them (scripts/fuzz.sh). The custom target `fuzz_all` builds them all.
file(GLOB FUZZ_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
add_custom_target(fuzz_all)
foreach(src ${FUZZ_SRC})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_link_libraries(${name} cairn cairn_worker cairn_plan cairn_common)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  add_dependencies(fuzz_all ${name})
endforeach()

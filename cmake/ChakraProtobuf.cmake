# Chakra protobuf execution traces (src/trace_io/chakra): optional. With protobuf (Debian:
# libprotobuf-dev protobuf-compiler) et_def.proto is compiled by protoc into
# perfsim_chakra_proto and perfsim_model gets the reader and writer; without it perfsim_model
# gets a stub that says perfsim was built without protobuf.
set(chakra_dir "${PROJECT_SOURCE_DIR}/src/trace_io/chakra")
find_package(Protobuf QUIET)
if(Protobuf_FOUND AND Protobuf_PROTOC_EXECUTABLE)
  set(chakra_generated "${CMAKE_CURRENT_BINARY_DIR}/chakra_proto")
  file(MAKE_DIRECTORY "${chakra_generated}")
  add_custom_command(
    OUTPUT "${chakra_generated}/et_def.pb.cc" "${chakra_generated}/et_def.pb.h"
    COMMAND ${Protobuf_PROTOC_EXECUTABLE} --cpp_out "${chakra_generated}" -I "${chakra_dir}"
            "${chakra_dir}/et_def.proto"
    DEPENDS "${chakra_dir}/et_def.proto"
    COMMENT "protoc: Chakra et_def.proto"
    VERBATIM)
  add_library(perfsim_chakra_proto STATIC "${chakra_generated}/et_def.pb.cc")
  # Generated code is not ours to keep warning-free: no -Werror here, and its header is a
  # system header for the code that includes it.
  target_compile_options(perfsim_chakra_proto PRIVATE -w)
  target_include_directories(perfsim_chakra_proto SYSTEM PUBLIC "${chakra_generated}")
  target_link_libraries(perfsim_chakra_proto PUBLIC protobuf::libprotobuf)
  if(PERFSIM_SANITIZE)
    target_compile_options(perfsim_chakra_proto PRIVATE -fsanitize=address,undefined)
  endif()
  # Only the files that use the generated classes see its header, so every other compile
  # line is the same with or without protobuf (ccache shares the objects).
  file(GLOB chakra_sources CONFIGURE_DEPENDS "${chakra_dir}/*.cpp")
  list(FILTER chakra_sources EXCLUDE REGEX "/chakra_et_unavailable\\.cpp$")
  target_sources(perfsim_model PRIVATE ${chakra_sources})
  set_source_files_properties(${chakra_sources} TARGET_DIRECTORY perfsim_model PROPERTIES
                              COMPILE_OPTIONS "-isystem;${chakra_generated}")
  # The archive itself, not the target: linking the target would hand its include directory
  # to every user of perfsim_model (CMake < 3.27 ignores $<LINK_ONLY> there).
  target_link_libraries(perfsim_model PUBLIC "$<TARGET_FILE:perfsim_chakra_proto>"
                                             protobuf::libprotobuf)
  add_dependencies(perfsim_model perfsim_chakra_proto)
  message(STATUS "perfsim: Chakra .et traces with protobuf ${Protobuf_VERSION}")
else()
  target_sources(perfsim_model PRIVATE "${chakra_dir}/chakra_et_unavailable.cpp")
  message(STATUS "perfsim: protobuf not found (libprotobuf-dev, protobuf-compiler): built "
                 "without Chakra .et traces (generate --format chakra and reading .et fail)")
endif()

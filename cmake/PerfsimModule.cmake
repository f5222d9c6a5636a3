# perfsim_module(NAME <target> DIRS <dirs...> [EXCLUDE <regex>] LINKS <targets...>)
# A static library built from every .cpp under the given directories (one job per file, files
# are added without editing CMake; CONFIGURE_DEPENDS re-globs on build).
function(perfsim_module)
  cmake_parse_arguments(ARG "" "NAME;EXCLUDE" "DIRS;LINKS" ${ARGN})
  set(sources "")
  foreach(dir IN LISTS ARG_DIRS)
    file(GLOB_RECURSE found CONFIGURE_DEPENDS "${dir}/*.cpp")
    list(APPEND sources ${found})
  endforeach()
  if(ARG_EXCLUDE)
    list(FILTER sources EXCLUDE REGEX "${ARG_EXCLUDE}")
  endif()
  list(SORT sources)
  # Includes read "topology/...", "collectives/...", "mpi_sim/..." from the root and
  # "trace_io/...", "kernels/..." for src/.
  if(sources)
    add_library(${ARG_NAME} STATIC ${sources})
    target_link_libraries(${ARG_NAME} PUBLIC perfsim_build_flags ${ARG_LINKS})
    target_include_directories(${ARG_NAME} PUBLIC "${PROJECT_SOURCE_DIR}" "${PROJECT_SOURCE_DIR}/src")
    perfsim_unity_build(${ARG_NAME})
  else()  # a module with headers only (so far)
    add_library(${ARG_NAME} INTERFACE)
    target_link_libraries(${ARG_NAME} INTERFACE perfsim_build_flags ${ARG_LINKS})
    target_include_directories(${ARG_NAME} INTERFACE "${PROJECT_SOURCE_DIR}" "${PROJECT_SOURCE_DIR}/src")
  endif()
endfunction()

# A unity build of `target` when PERFSIM_UNITY_BUILD is on. Sources of one library share a
# translation unit, so a helper in an anonymous namespace must have a name no other source of
# the library gives its own helper (the compiler reports a redefinition otherwise).
function(perfsim_unity_build target)
  if(PERFSIM_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()

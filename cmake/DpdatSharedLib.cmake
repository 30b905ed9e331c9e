# dpdat_shared_lib(TARGET MAP <version-script>
#                  [OUTPUT_NAME <name>] [VERSION <v> SOVERSION <s>] [OUTPUT_DIR <dir>]
#                  [HIDDEN] [NODELETE] [INSTALL_DIR <dir> [COMPONENT <c>]])
#
# The link set-up every shared library of dpdat shares: only the symbols (and version
# nodes) of its version script MAP exported, no undefined symbol left (-z defs), a relink
# when MAP changes.  Optional: the file name and SONAME (OUTPUT_NAME, VERSION, SOVERSION),
# the build directory it goes to, hidden visibility by default (HIDDEN), -z nodelete
# (NODELETE: for a library that initialises the EAL, which cannot be initialised twice in a
# process, when its loader may dlclose it), and an install rule for a library that is
# loaded by name only (INSTALL_DIR: no development link).
function(dpdat_shared_lib target)
  cmake_parse_arguments(A "HIDDEN;NODELETE" "MAP;OUTPUT_NAME;VERSION;SOVERSION;OUTPUT_DIR;INSTALL_DIR;COMPONENT" "" ${ARGN})
  if(NOT A_MAP)
    message(FATAL_ERROR "dpdat_shared_lib(${target}): MAP (the version script) is required")
  endif()
  if(A_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "dpdat_shared_lib(${target}): unknown arguments ${A_UNPARSED_ARGUMENTS}")
  endif()
  foreach(p OUTPUT_NAME VERSION SOVERSION)
    if(A_${p})
      set_target_properties(${target} PROPERTIES ${p} ${A_${p}})
    endif()
  endforeach()
  if(A_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${A_OUTPUT_DIR})
  endif()
  if(A_HIDDEN)
    set_target_properties(${target} PROPERTIES CXX_VISIBILITY_PRESET hidden)
  endif()
  set(_opts -Wl,-z,defs)
  if(A_NODELETE)
    list(APPEND _opts -Wl,-z,nodelete)
  endif()
  target_link_options(${target} PRIVATE ${_opts} -Wl,--version-script=${A_MAP})
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${A_MAP})
  if(A_INSTALL_DIR)
    if(A_COMPONENT)
      install(TARGETS ${target} LIBRARY DESTINATION ${A_INSTALL_DIR} COMPONENT ${A_COMPONENT}
              NAMELINK_SKIP)
    else()
      install(TARGETS ${target} LIBRARY DESTINATION ${A_INSTALL_DIR} NAMELINK_SKIP)
    endif()
  endif()
endfunction()

# fhelium_add_backend_plugin(NAME SOURCES ... [LIBRARIES ...] [OUTPUT_DIR dir NO_INSTALL])
# Builds libfhelium-backend-NAME.so with hidden visibility and a version
# script that exports only the entry symbol, into the build tree's plugin
# folder (or OUTPUT_DIR, for test plugins), and installs it into
# lib/fhelium/plugins unless NO_INSTALL.
set(FHELIUM_PLUGIN_OUTPUT_DIR "${CMAKE_BINARY_DIR}/lib/fhelium/plugins")
set(FHELIUM_PLUGIN_MAP "${CMAKE_CURRENT_LIST_DIR}/plugin.map")

function(fhelium_add_backend_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIR" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR "${FHELIUM_PLUGIN_OUTPUT_DIR}")
  endif()
  set(target fhelium-backend-${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "fhelium-backend-${name}"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIR}")
  target_link_libraries(${target} PRIVATE FHElium::sdk ${ARG_LIBRARIES})
  target_link_options(${target} PRIVATE "-Wl,--version-script=${FHELIUM_PLUGIN_MAP}" "-Wl,--no-undefined")
  if(COMMAND fhelium_warnings)
    fhelium_warnings(${target})
  endif()
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}/fhelium/plugins")
  endif()
endfunction()

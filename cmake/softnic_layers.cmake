# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Layers the build enforces. Sources include each other as "LAYER/file.hpp" (rooted at
# src/), but no target sees src/ itself: each layer exports an include root of its own,
# <build>/layers/LAYER, holding one link LAYER -> src/LAYER. A target therefore sees its
# own layer and the layers it links, nothing else: transport including "cxi/..." or
# common including "transport/..." fails to compile (tests/layers checks that it does).
#
#   common  <-  transport  <-  cxi, usnic (the plugins)
#   cxil    <-  cxi, libcxi

# The include root of LAYER (created at configure time).
function(softnic_layer_root layer out_var)
  set(root ${CMAKE_BINARY_DIR}/layers/${layer})
  if(NOT EXISTS ${root}/${layer})
    file(MAKE_DIRECTORY ${root})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/src/${layer} ${root}/${layer} SYMBOLIC)
  endif()
  set(${out_var} ${root} PARENT_SCOPE)
endfunction()

# TARGET is layer LAYER: it sees its own headers, and so does whoever links it (PUBLIC)
# or nobody else (PRIVATE: the plugins, which nothing links).
function(softnic_layer target layer scope)
  softnic_layer_root(${layer} root)
  target_include_directories(${target} ${scope} ${root})
endfunction()

# A libfabric provider plugin, lib<NAME>-fi.so, from LAYER (src/LAYER) and SOURCES,
# linking the layers in LINKS. It lands in <build>/lib (FI_PROVIDER_PATH) and installs
# into libfabric's provider directory.
function(softnic_provider_plugin name)
  cmake_parse_arguments(P "" "" "SOURCES;LINKS" ${ARGN})
  add_library(${name}-fi SHARED ${P_SOURCES})
  softnic_layer(${name}-fi ${name} PRIVATE)
  target_link_libraries(${name}-fi PRIVATE ${P_LINKS})
  target_compile_definitions(${name}-fi PRIVATE SOFTNIC_VERSION="${PROJECT_VERSION}")
  # nodelete: libfabric dlcloses providers from its exit-time destructor, while other
  # threads of the exiting process may still be inside our calls (or our helper thread
  # running); the code must stay mapped until the process is gone.
  target_link_options(${name}-fi PRIVATE ${SOFTNIC_PLUGIN_LINK_CHECKS} -Wl,-z,nodelete)
  set_target_properties(${name}-fi PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "${name}-fi"
    LIBRARY_OUTPUT_DIRECTORY ${SOFTNIC_PLUGIN_DIR})
  install(TARGETS ${name}-fi LIBRARY DESTINATION ${SOFTNIC_INSTALL_PROVIDER_DIR})
endfunction()

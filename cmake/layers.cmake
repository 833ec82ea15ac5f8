# Each layer is a folder and a static library that links only the layers below it. The include
# check (cmake/check_layers.cmake) runs before anything compiles and fails the build when a
# file includes a header of a layer it may not use: the build, not a review, keeps the
# dependency graph of docs/design.md true.
#
# agency_layer(<target> [EXECUTABLE] DIR <folder> MAY_INCLUDE <folders...> LINKS <targets...>)
#   Sources: <folder>/*.cpp (not its subfolders). MAY_INCLUDE names the folders whose headers
#   the layer's files may include ("#include \"<folder>/...\""), its own always among them.
#   A header named *_detail.hpp or *_internal.hpp is private to its own layer.
function(agency_layer target)
  cmake_parse_arguments(L "EXECUTABLE" "DIR" "MAY_INCLUDE;LINKS;EXTRA_SOURCES" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${L_DIR}/*.cpp)
  file(GLOB headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${L_DIR}/*.hpp)
  if(L_EXECUTABLE)
    add_executable(${target} ${sources} ${L_EXTRA_SOURCES})
    target_link_libraries(${target} PRIVATE ${L_LINKS} agency::options)
  else()
    add_library(${target} STATIC ${sources} ${L_EXTRA_SOURCES})
    target_link_libraries(${target} PUBLIC ${L_LINKS} PRIVATE agency::options)
  endif()
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
  add_dependencies(${target} agency_layer_check)
  string(REPLACE ";" "," allowed "${L_DIR};${L_MAY_INCLUDE}")
  set_property(GLOBAL APPEND PROPERTY AGENCY_LAYER_RULES "${L_DIR}=${allowed}")
  set_property(GLOBAL APPEND PROPERTY AGENCY_LAYER_FILES ${sources} ${headers})
endfunction()

# Called once, after every agency_layer(): the check target reads the rules they recorded.
function(agency_layer_check_rules)
  get_property(rules GLOBAL PROPERTY AGENCY_LAYER_RULES)
  string(REPLACE ";" "|" rules "${rules}")
  set(AGENCY_LAYER_RULES "${rules}" PARENT_SCOPE)
  get_property(files GLOBAL PROPERTY AGENCY_LAYER_FILES)
  set(AGENCY_LAYER_FILES "${files}" PARENT_SCOPE)
endfunction()

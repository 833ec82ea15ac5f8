# Each layer is a folder and a static library that links only the layers below it. The include
# check (cmake/check_layers.cmake) runs before anything compiles and fails the build when a
# file includes a header of a layer it may not use: the build, not a review, keeps the
# dependency graph of docs/design.md true.
#
# agency_layer(<target> [EXECUTABLE] DIR <folder> [WINGS <subfolders...>] MAY_INCLUDE <folders...>
#              LINKS <targets...>)
#   Sources: <folder>/*.cpp and each wing's <folder>/<wing>/*.cpp (not other subfolders: a
#   subfolder that is a layer of its own, as gateway/sample, has its own call). A wing is a room
#   of its layer: its files keep the layer's rules, and "#include \"<folder>/<wing>/...\"" is
#   an include of the layer. MAY_INCLUDE names the folders whose headers the layer's files may
#   include ("#include \"<folder>/...\""), its own always among them. A header named
#   *_detail.hpp or *_internal.hpp is private to its own layer.
function(agency_layer target)
  cmake_parse_arguments(L "EXECUTABLE" "DIR" "MAY_INCLUDE;LINKS;EXTRA_SOURCES;WINGS" ${ARGN})
  set(globs_cpp ${PROJECT_SOURCE_DIR}/${L_DIR}/*.cpp)
  set(globs_hpp ${PROJECT_SOURCE_DIR}/${L_DIR}/*.hpp)
  set(rule_dir ${L_DIR})
  foreach(wing ${L_WINGS})
    list(APPEND globs_cpp ${PROJECT_SOURCE_DIR}/${L_DIR}/${wing}/*.cpp)
    list(APPEND globs_hpp ${PROJECT_SOURCE_DIR}/${L_DIR}/${wing}/*.hpp)
    string(APPEND rule_dir ":${wing}")
  endforeach()
  file(GLOB sources CONFIGURE_DEPENDS ${globs_cpp})
  file(GLOB headers CONFIGURE_DEPENDS ${globs_hpp})
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
  set_property(GLOBAL APPEND PROPERTY AGENCY_LAYER_RULES "${rule_dir}=${allowed}")
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

# agency_check_link_closure(<target> FORBIDDEN <regex>)
#   Fails the configure when anything <target> links, directly or through what it links,
#   matches <regex>: a layer's link line is checked as its includes are. Called once every
#   target exists.
function(agency_check_link_closure target)
  cmake_parse_arguments(C "" "FORBIDDEN" "" ${ARGN})
  set(seen "")
  set(todo ${target})
  while(todo)
    list(POP_FRONT todo item)
    if(item IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${item})
    if(NOT TARGET ${item})
      continue()
    endif()
    get_target_property(aliased ${item} ALIASED_TARGET)
    if(aliased)
      list(APPEND todo ${aliased})
    endif()
    foreach(property LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
      get_target_property(links ${item} ${property})
      foreach(link IN LISTS links)
        string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" link "${link}")
        if(link AND NOT link MATCHES "^\\$<")
          list(APPEND todo ${link})
        endif()
      endforeach()
    endforeach()
  endwhile()
  list(REMOVE_ITEM seen ${target})
  set(bad "")
  foreach(item IN LISTS seen)
    if(item MATCHES "${C_FORBIDDEN}")
      list(APPEND bad ${item})
    endif()
  endforeach()
  if(bad)
    message(FATAL_ERROR "${target} links ${bad} (through: ${seen}); docs/design.md, \"Layers\"")
  endif()
endfunction()

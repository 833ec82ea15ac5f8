# Project-wide compile options, linked PRIVATE into every target of ours.
add_library(agency_options INTERFACE)
add_library(agency::options ALIAS agency_options)
target_compile_options(agency_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused -Woverloaded-virtual
  -Wimplicit-fallthrough
  # Declarative entries use designated initializers that leave defaulted members out.
  -Wno-missing-field-initializers)
# GCC 12 at -O3 (the release preset) reports a false -Wrestrict inside std::string::replace as
# inlined from valijson's json_pointer (GCC bug 105329).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(agency_options INTERFACE -Wno-restrict)
endif()
if(AGENCY_WERROR)
  target_compile_options(agency_options INTERFACE -Werror)
endif()
if(AGENCY_SANITIZE)
  target_compile_options(agency_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(agency_options INTERFACE -fsanitize=address,undefined)
endif()

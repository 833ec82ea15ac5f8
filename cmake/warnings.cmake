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
  # In a unity build (the presets but debug and release: several files compiled as one) GCC
  # takes a type in one file's anonymous namespace, used by another's class, for a leak.
  if(CMAKE_UNITY_BUILD)
    target_compile_options(agency_options INTERFACE -Wno-subobject-linkage)
  endif()
endif()
if(AGENCY_WERROR)
  target_compile_options(agency_options INTERFACE -Werror)
endif()
if(AGENCY_SANITIZE AND AGENCY_TSAN)
  message(FATAL_ERROR "AGENCY_SANITIZE (address) and AGENCY_TSAN (thread) cannot be combined")
endif()
if(AGENCY_SANITIZE)
  target_compile_options(agency_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(agency_options INTERFACE -fsanitize=address,undefined)
endif()
if(AGENCY_TSAN)
  target_compile_options(agency_options INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(agency_options INTERFACE -fsanitize=thread)
endif()
# The fuzz targets (fuzz/): every library of ours carries libFuzzer's coverage instrumentation
# (the fuzzers link libFuzzer's main; the tests in the same tree link without it).
if(AGENCY_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "AGENCY_FUZZ needs clang (cmake --preset fuzz)")
  endif()
  target_compile_options(agency_options INTERFACE -fsanitize=fuzzer-no-link)
endif()

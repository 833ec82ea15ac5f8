// Where the build put the binary under test and where the sources are. Defined in one file
// (tests/support/paths.cpp, compiled with the paths), so that no other test file's compile
// command names a folder: a clone in another folder reuses the compiler cache.
#pragma once

namespace agency::test_paths {
const char* binary();      // build/agency-mcp of this tree
const char* source_dir();  // the repository's root
}  // namespace agency::test_paths

#define AGENCY_BINARY (::agency::test_paths::binary())
#define AGENCY_SOURCE_DIR (::agency::test_paths::source_dir())

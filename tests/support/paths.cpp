#include "tests/support/paths.hpp"

namespace agency::test_paths {
const char* binary() { return AGENCY_BINARY_PATH; }
const char* source_dir() { return AGENCY_SOURCE_DIR_PATH; }
}  // namespace agency::test_paths

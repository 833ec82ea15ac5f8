# Debian 12 packages only (scripts/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(simdjson REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(OpenSSL REQUIRED)
# Debian's cpp-httplib is a compiled library built with OpenSSL, zlib and brotli; its .pc
# file carries the matching CPPHTTPLIB_*_SUPPORT defines, which must agree with the library.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
find_path(VALIJSON_INCLUDE_DIR valijson/validator.hpp REQUIRED)

add_library(agency_deps INTERFACE)
add_library(agency::deps ALIAS agency_deps)
target_link_libraries(agency_deps INTERFACE
  PkgConfig::HTTPLIB nlohmann_json::nlohmann_json spdlog::spdlog CLI11::CLI11
  simdjson::simdjson SQLite::SQLite3 OpenSSL::SSL OpenSSL::Crypto Threads::Threads)
target_include_directories(agency_deps SYSTEM INTERFACE ${VALIJSON_INCLUDE_DIR})

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

# SQLite from the static archive that libsqlite3-dev ships: the shared library is linked -z now,
# and binding its ~1,600 symbols at every start was 5% of a cold start's instructions.
find_library(AGENCY_SQLITE3_STATIC NAMES libsqlite3.a)
if(AGENCY_SQLITE3_STATIC)
  add_library(agency_sqlite3 INTERFACE)
  target_include_directories(agency_sqlite3 SYSTEM INTERFACE ${SQLite3_INCLUDE_DIRS})
  target_link_libraries(agency_sqlite3 INTERFACE ${AGENCY_SQLITE3_STATIC} m ${CMAKE_DL_LIBS}
    Threads::Threads)
else()
  add_library(agency_sqlite3 ALIAS SQLite::SQLite3)
endif()

add_library(agency_deps INTERFACE)
add_library(agency::deps ALIAS agency_deps)
target_link_libraries(agency_deps INTERFACE
  PkgConfig::HTTPLIB nlohmann_json::nlohmann_json spdlog::spdlog CLI11::CLI11
  simdjson::simdjson agency_sqlite3 OpenSSL::SSL OpenSSL::Crypto Threads::Threads)
target_include_directories(agency_deps SYSTEM INTERFACE ${VALIJSON_INCLUDE_DIR})

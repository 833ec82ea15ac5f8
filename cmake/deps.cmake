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
# libcjose: JWS/JWK for OAuth access tokens (auth/).
pkg_check_modules(CJOSE REQUIRED IMPORTED_TARGET cjose)
# RE2 runs schema patterns in linear time (std::regex recursed once per character). From its
# static archive, as SQLite: binding a shared library's symbols costs every cold start.
pkg_check_modules(RE2 REQUIRED re2)
# libpq (libpq-dev) for the PostgreSQL state store (state/pg_store.hpp): its header at build
# time, libpq.so.5 loaded at run time (state/pg_libpq.cpp); the tests' cluster helper links it.
pkg_check_modules(LIBPQ REQUIRED IMPORTED_TARGET libpq)
find_library(AGENCY_RE2_STATIC NAMES libre2.a REQUIRED)
add_library(agency_re2 INTERFACE)
target_include_directories(agency_re2 SYSTEM INTERFACE ${RE2_INCLUDE_DIRS})
target_link_libraries(agency_re2 INTERFACE ${AGENCY_RE2_STATIC} Threads::Threads)
find_path(VALIJSON_INCLUDE_DIR valijson/validator.hpp REQUIRED)

# SQLite from the static archive that libsqlite3-dev ships: the shared library is linked -z now,
# so every start would bind its ~1,600 symbols.
find_library(AGENCY_SQLITE3_STATIC NAMES libsqlite3.a)
if(AGENCY_SQLITE3_STATIC)
  add_library(agency_sqlite3 INTERFACE)
  target_include_directories(agency_sqlite3 SYSTEM INTERFACE ${SQLite3_INCLUDE_DIRS})
  target_link_libraries(agency_sqlite3 INTERFACE ${AGENCY_SQLITE3_STATIC} m ${CMAKE_DL_LIBS}
    Threads::Threads)
else()
  add_library(agency_sqlite3 ALIAS SQLite::SQLite3)
endif()

# spdlog and fmt header-only (Debian ships both headers): their shared libraries would cost
# ~1,600 symbol bindings at every start (bench/findings.md).
find_package(fmt REQUIRED)
# prometheus-cpp's core (prometheus-cpp-dev): the metrics registry and its text serializer
# behind base/metrics.hpp. Its pull library (civetweb) is not used: /metrics is served by
# our own HTTP server. Found by hand: the package's CMake config also looks for the pull and
# push libraries' dependencies (civetweb, curl, zlib development files), which nothing here uses.
find_library(AGENCY_PROMETHEUS_CORE NAMES prometheus-cpp-core REQUIRED)
find_path(AGENCY_PROMETHEUS_INCLUDE prometheus/registry.h REQUIRED)
add_library(agency_prometheus INTERFACE)
target_include_directories(agency_prometheus SYSTEM INTERFACE ${AGENCY_PROMETHEUS_INCLUDE})
target_link_libraries(agency_prometheus INTERFACE ${AGENCY_PROMETHEUS_CORE})
# Logging: every layer writes through base/log.hpp, which needs only fmt's core header. spdlog
# and fmt are compiled header-only (no shared library to bind at start), and only in the files
# that say so: agency_spdlog_sources() below (base/log.cpp, the app's sinks and formats, the
# tests that capture lines). Header-only spdlog in every file that logged cost ~8 s of compile
# per file.
# Both in /usr/include (libfmt-dev, libspdlog-dev): found to fail early, nothing to add.
find_path(AGENCY_FMT_INCLUDE fmt/core.h REQUIRED)
find_path(AGENCY_SPDLOG_INCLUDE spdlog/spdlog.h REQUIRED)
add_library(agency_logging INTERFACE)
target_link_libraries(agency_logging INTERFACE Threads::Threads)
function(agency_spdlog_sources)
  set_source_files_properties(${ARGN} PROPERTIES
    COMPILE_DEFINITIONS "SPDLOG_FMT_EXTERNAL;FMT_HEADER_ONLY=1")
endfunction()

add_library(agency_deps INTERFACE)
add_library(agency::deps ALIAS agency_deps)
target_link_libraries(agency_deps INTERFACE
  PkgConfig::HTTPLIB nlohmann_json::nlohmann_json agency_logging CLI11::CLI11
  simdjson::simdjson agency_sqlite3 OpenSSL::SSL OpenSSL::Crypto Threads::Threads)
target_include_directories(agency_deps SYSTEM INTERFACE ${VALIJSON_INCLUDE_DIR})

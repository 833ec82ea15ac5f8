# `make package`: agency-mcp as a Debian package (docs/operations.md, "The Debian package").
# The binary in /usr/bin, the systemd unit, the settings file as a conffile, a manual page made
# from --help, and the shared libraries it needs as dependencies (dpkg-shlibdeps), so that
# `apt-get install ./agency-mcp_*.deb` pulls them in.

# Packaging takes what the build made (`make package` builds first) and never starts a build
# itself: the package test runs under ctest beside other tests that run the binary.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)

set(AGENCY_MAN_PAGE ${CMAKE_BINARY_DIR}/agency-mcp.1.gz)
find_program(HELP2MAN help2man)
if(HELP2MAN)
  add_custom_command(OUTPUT ${AGENCY_MAN_PAGE}
    COMMAND sh ${PROJECT_SOURCE_DIR}/scripts/man-page.sh $<TARGET_FILE:agency-mcp> ${AGENCY_MAN_PAGE}
    DEPENDS agency-mcp ${PROJECT_SOURCE_DIR}/scripts/man-page.sh
    COMMENT "Writing the manual page agency-mcp(1) from --help" VERBATIM)
  add_custom_target(agency_man_page ALL DEPENDS ${AGENCY_MAN_PAGE})
  install(FILES ${AGENCY_MAN_PAGE} DESTINATION share/man/man1)
else()
  install(CODE "message(FATAL_ERROR \"the package needs help2man for its manual page: \
apt-get install help2man (scripts/install-test-deps.sh; make package installs it)\")")
endif()

install(TARGETS agency-mcp RUNTIME DESTINATION bin)
# Debian 12 keeps packaged units in /lib/systemd/system.
install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/agency-mcp.service
        DESTINATION /lib/systemd/system)
# Settings may hold the gateway key: root only (systemd reads it as root for the service).
install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/agency-mcp.env DESTINATION /etc/agency-mcp
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)
# The copyright file Debian policy asks for: the package's own terms and those of what the
# binary carries inside it (SQLite and RE2 from their static archives; spdlog, fmt, nlohmann
# json and CLI11 compiled in from their headers). The shared libraries' own packages have theirs.
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/operations.md
              ${PROJECT_SOURCE_DIR}/docs/deploy.md ${PROJECT_SOURCE_DIR}/docs/tools.md
              ${PROJECT_SOURCE_DIR}/docs/clients.md ${PROJECT_SOURCE_DIR}/docs/security.md
              ${PROJECT_SOURCE_DIR}/docs/auth.md ${PROJECT_SOURCE_DIR}/deploy/debian/copyright
        DESTINATION share/doc/agency-mcp)
# The per-instance unit as an example for this package: its binary is /usr/bin/agency-mcp and
# its documents are in /usr/share/doc (deploy/agency-mcp@.service names /usr/local, where
# docs/deploy.md installs a binary built from source).
set(AGENCY_INSTANCE_UNIT ${PROJECT_SOURCE_DIR}/deploy/agency-mcp@.service)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${AGENCY_INSTANCE_UNIT})
file(READ ${AGENCY_INSTANCE_UNIT} agency_instance_unit)
string(REPLACE "/usr/local/" "/usr/" agency_instance_unit "${agency_instance_unit}")
set(agency_instance_example ${CMAKE_BINARY_DIR}/package-examples/agency-mcp@.service)
set(agency_written "")
if(EXISTS ${agency_instance_example})
  file(READ ${agency_instance_example} agency_written)
endif()
if(NOT agency_written STREQUAL agency_instance_unit)  # unchanged: no new timestamp
  file(WRITE ${agency_instance_example} "${agency_instance_unit}")
endif()
install(FILES ${PROJECT_SOURCE_DIR}/deploy/haproxy.cfg ${agency_instance_example}
        DESTINATION share/doc/agency-mcp/examples)
# Monitoring to load as shipped (docs/operations.md, "Dashboard and alerts"), checked by ctest
# deploy.monitoring.
install(FILES ${PROJECT_SOURCE_DIR}/deploy/grafana-dashboard.json
              ${PROJECT_SOURCE_DIR}/deploy/prometheus-alerts.yml
        DESTINATION share/agency-mcp)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME agency-mcp)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "agency-mcp maintainers <agency-mcp@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "MCP tool server over an SEO agency's HTTP gateway")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "MCP tool server over an SEO agency's HTTP gateway\n\
 agency-mcp offers an agency's clients, rankings, audits, backlinks, content and\n\
 outreach to AI assistants over the Model Context Protocol (stdio or Streamable\n\
 HTTP). This package runs it as a systemd service; see agency-mcp(1) and\n\
 /usr/share/doc/agency-mcp/operations.md.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # agency-mcp_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# postinst creates the system user with adduser.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
# libpq is loaded (dlopen) only for a PostgreSQL store (--state-url), which dpkg-shlibdeps cannot
# see; the packaged service uses SQLite, so it is a suggestion, not a Recommends.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libpq5")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/deploy/debian/postinst ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
  ${PROJECT_SOURCE_DIR}/deploy/debian/postrm ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_STRIP_FILES TRUE)
set(CPACK_OUTPUT_FILE_PREFIX ${CMAKE_BINARY_DIR}/package)
include(CPack)

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
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/operations.md
              ${PROJECT_SOURCE_DIR}/docs/deploy.md ${PROJECT_SOURCE_DIR}/docs/tools.md
              ${PROJECT_SOURCE_DIR}/docs/clients.md ${PROJECT_SOURCE_DIR}/docs/security.md
        DESTINATION share/doc/agency-mcp)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/haproxy.cfg
              ${PROJECT_SOURCE_DIR}/deploy/agency-mcp@.service
        DESTINATION share/doc/agency-mcp/examples)

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

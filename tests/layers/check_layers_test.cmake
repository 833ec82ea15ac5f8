# The include check must fail the build on an upward include, a private header of another
# layer and a "../" path, and pass the real tree. Run by ctest (layers.*) with
#   -DROOT=<source dir> -DRULES=<the build's rules> -DWORK=<scratch dir>
cmake_minimum_required(VERSION 3.25)
set(check ${ROOT}/cmake/check_layers.cmake)

function(expect_check root rules want_failure what)
  execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${root} -DRULES=${rules} -P ${check}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(want_failure AND rc EQUAL 0)
    message(FATAL_ERROR "the check passed ${what}")
  elseif(NOT want_failure AND NOT rc EQUAL 0)
    message(FATAL_ERROR "the check failed ${what}:\n${err}")
  endif()
endfunction()

expect_check(${ROOT} "${RULES}" FALSE "on the real tree")

set(rules "server=server,base|tools=tools,base,server|base=base")
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/server ${WORK}/tools ${WORK}/base)
file(WRITE ${WORK}/tools/t.hpp "#pragma once\n")
file(WRITE ${WORK}/server/s_detail.hpp "#pragma once\n")
file(WRITE ${WORK}/server/ok.cpp "#include \"server/s_detail.hpp\"\n#include <vector>\n")
expect_check(${WORK} "${rules}" FALSE "on a tree that keeps its layers")

file(WRITE ${WORK}/server/up.cpp "#include \"tools/t.hpp\"\n")
expect_check(${WORK} "${rules}" TRUE "on server/ including tools/")
file(REMOVE ${WORK}/server/up.cpp)

file(WRITE ${WORK}/tools/private.cpp "#include \"server/s_detail.hpp\"\n")
expect_check(${WORK} "${rules}" TRUE "on tools/ including server/'s private header")
file(REMOVE ${WORK}/tools/private.cpp)

file(WRITE ${WORK}/base/sneak.cpp "  #  include \"../tools/t.hpp\"\n")
expect_check(${WORK} "${rules}" TRUE "on a ../ include")
file(REMOVE ${WORK}/base/sneak.cpp)

# A wing (tools/wing) is a room of its layer: its files keep the layer's rules, and an include
# of its headers is an include of the layer. Wings stand in their listed order (ground first):
# a wing includes its own and earlier wings, never a later one nor the layer's own folder.
set(rules "server=server,base|tools:ground:wing=tools,base,server|base=base")
file(MAKE_DIRECTORY ${WORK}/tools/wing ${WORK}/tools/ground)
file(WRITE ${WORK}/tools/ground/g.hpp "#pragma once\n")
file(WRITE ${WORK}/tools/wing/w_internal.hpp "#pragma once\n")
file(WRITE ${WORK}/server/s.hpp "#pragma once\n")
file(WRITE ${WORK}/tools/wing/w.cpp "#include \"tools/ground/g.hpp\"\n#include \"server/s.hpp\"\n")
file(WRITE ${WORK}/tools/uses_wing.cpp "#include \"tools/wing/w_internal.hpp\"\n")
expect_check(${WORK} "${rules}" FALSE "on a wing that keeps its layer's rules")
file(WRITE ${WORK}/server/up.cpp "#include \"tools/wing/w_internal.hpp\"\n")
expect_check(${WORK} "${rules}" TRUE "on server/ including a wing of tools/")
file(REMOVE ${WORK}/server/up.cpp)
file(WRITE ${WORK}/tools/wing/up.cpp "#include \"app/main.hpp\"\n")
expect_check(${WORK} "${rules}" TRUE "on a wing including what its layer may not")
file(REMOVE ${WORK}/tools/wing/up.cpp)
file(WRITE ${WORK}/tools/ground/up.cpp "#include \"tools/wing/w_internal.hpp\"\n")
expect_check(${WORK} "${rules}" TRUE "on a wing including a later wing")
file(REMOVE ${WORK}/tools/ground/up.cpp)
file(WRITE ${WORK}/tools/wing/up.cpp "#include \"tools/t.hpp\"\n")
expect_check(${WORK} "${rules}" TRUE "on a wing including its layer folder's own header")
file(REMOVE_RECURSE ${WORK})

# The build's own rules: the MCP core (server/) may not include the transport layer, nor the
# layers under the transports (net/, auth/) or state/; the transport layer may use the core.
file(MAKE_DIRECTORY ${WORK}/server ${WORK}/transport ${WORK}/net ${WORK}/auth ${WORK}/state)
foreach(h transport/http_transport.hpp net/server_thread.hpp auth/token_validator.hpp state/store.hpp
          server/mcp_server.hpp)
  file(WRITE ${WORK}/${h} "#pragma once\n")
endforeach()
file(WRITE ${WORK}/transport/uses_core.cpp "#include \"server/mcp_server.hpp\"\n")
expect_check(${WORK} "${RULES}" FALSE "on the transport layer including the core")
foreach(h transport/http_transport.hpp net/server_thread.hpp auth/token_validator.hpp state/store.hpp)
  file(WRITE ${WORK}/server/reach.cpp "#include \"${h}\"\n")
  expect_check(${WORK} "${RULES}" TRUE "on the core (server/) including ${h}")
endforeach()
file(REMOVE_RECURSE ${WORK})

# Generates a C++ source holding each built view (VIEW_DIR/<name>.html) as a string, so the
# binary carries its MCP Apps views. Run with -DOUT=... -DVIEW_DIR=... -DNAMES=a,b,... (NAMES
# empty: a build without views, -DAGENCY_VIEWS=OFF).
string(REPLACE "," ";" NAMES "${NAMES}")
set(body "// Generated from views/ by cmake/embed_views.cmake. Do not edit.\n")
string(APPEND body "#include \"tools/kit/views.hpp\"\n\nnamespace agency::tools {\n\n")
string(APPEND body "const std::vector<EmbeddedView>& embedded_views() {\n")
string(APPEND body "    static const std::vector<EmbeddedView> all{\n")
foreach(name ${NAMES})
  file(READ ${VIEW_DIR}/${name}.html content)
  string(FIND "${content}" ")__view__\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${VIEW_DIR}/${name}.html holds the raw string's closing delimiter")
  endif()
  string(APPEND body "        {\"${name}\", R\"__view__(${content})__view__\"},\n")
endforeach()
string(APPEND body "    };\n    return all;\n}\n\n}  // namespace agency::tools\n")
file(WRITE ${OUT}.tmp "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.tmp ${OUT})

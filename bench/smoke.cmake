# bench.smoke: the load driver against agency-mcp over stdio and HTTP (no peer, no npm).
# Run by ctest: cmake -DDRIVER=... -DSERVER=... -P smoke.cmake
set(args "{\"client_id\":\"demo-plumbing\",\"limit\":20}")
execute_process(
  COMMAND ${DRIVER} --transport stdio -n 100 -c 8 --warmup 5 --tools-list --max-seconds 30
          --tool list_keywords --args ${args} -- ${SERVER} serve --rate-limit off --state-db :memory:
  RESULT_VARIABLE stdio_status OUTPUT_VARIABLE stdio_out)
message("stdio: ${stdio_out}")
if(NOT stdio_status EQUAL 0)
  message(FATAL_ERROR "the stdio run failed (${stdio_status})")
endif()

execute_process(
  COMMAND ${DRIVER} --transport http --url http://127.0.0.1:{port}/mcp -n 100 -c 4
          --warmup 5 --tools-list --max-seconds 30 --tool list_keywords --args ${args}
          -- ${SERVER} serve --http --rate-limit off --listen 127.0.0.1:{port} --state-db :memory:
  RESULT_VARIABLE http_status OUTPUT_VARIABLE http_out)
message("http: ${http_out}")
if(NOT http_status EQUAL 0)
  message(FATAL_ERROR "the HTTP run failed (${http_status})")
endif()

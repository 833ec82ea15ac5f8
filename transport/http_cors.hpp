// What the Streamable HTTP transport tells browsers (CORS): the answer to a preflight, and the
// headers that let an allowed origin read an answer and its session id. The Origin itself is
// checked before any route (http_transport.cpp).
#pragma once

#include <httplib.h>

namespace agency::mcp {

// OPTIONS on the endpoint: 204, and for a browser the methods and headers it may send.
void answer_preflight(const httplib::Request& req, httplib::Response& res);
// After any route: an origin that passed the Origin check may read the answer.
void allow_origin_to_read(const httplib::Request& req, httplib::Response& res);

}  // namespace agency::mcp

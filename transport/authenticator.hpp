// Who is calling over HTTP: the seam between the transport and the ways a caller proves who it
// is (the server's API keys, OAuth access tokens). The transport asks for a Principal or a
// refusal it writes as it is; it never sees a key or a token's form.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/mcp_server.hpp"
#include "transport/http_routes.hpp"
#include "transport/keys.hpp"

namespace agency::mcp {

struct AuthDecision {
    std::optional<Principal> principal;  // set: admitted
    int status = 401;                    // otherwise the refusal: its status,
    std::string www_authenticate;        // its WWW-Authenticate ("" for none)
    std::string message;                 // and what the JSON-RPC error says
};

class Authenticator {
public:
    virtual ~Authenticator() = default;
    // Whether callers must prove who they are; false: every caller is the anonymous principal.
    virtual bool required() const = 0;
    virtual AuthDecision authenticate(const HttpRequestView& request) const = 0;
    // The refusal of a call that needs `scope` (the core's name, "read" or "write"), which
    // `caller` lacks and may obtain (Principal::may_step_up): 403 insufficient_scope.
    virtual AuthDecision refuse_scope(const Principal& caller, std::string_view scope) const;
    // What it serves beside the MCP endpoint (OAuth: the protected resource metadata).
    virtual std::vector<HttpRoute> routes() const { return {}; }
};

// The server's API keys alone: X-API-Key, or Authorization: Bearer with a key. An empty store
// asks for nothing (KeyStore::empty()). `read_only` (serve --read-only): no key's caller gets
// the write scope, whatever the key holds. A refused key is logged (its peer, never the key)
// once, then summarised per interval (base/log_summary.hpp) on `clock` (null: the system's).
std::shared_ptr<const Authenticator> key_authenticator(std::shared_ptr<const KeyStore> keys,
                                                       bool read_only = false,
                                                       const base::Clock* clock = nullptr);

// The presented bearer value of a request: X-API-Key, else Authorization: Bearer (any case of
// the scheme); "" when neither.
std::string presented_credential(const HttpRequestView& request);

// A header value that cannot break out of its quoted string (CR, LF, quotes and backslashes
// become '?'), cut at 200 characters.
std::string quoted_header_text(std::string_view text);

}  // namespace agency::mcp

// agency-mcp as an OAuth 2.1 resource server (MCP authorization, 2025-11-25 and 2026-07-28):
// the Protected Resource Metadata (RFC 9728), the Bearer challenges (RFC 6750) that send a
// client to sign in or step up, and the caller an access token names. Keys keep working beside
// it: a presented value that is a known key is that key; anything else must be an access token.
#pragma once

#include <memory>
#include <string>

#include "auth/token_validator.hpp"
#include "transport/authenticator.hpp"

namespace agency::mcp {

struct OAuthSettings {
    std::string issuer;    // the authorization server (its `iss`)
    std::string resource;  // this server's canonical MCP URL, e.g. https://mcp.example.com/mcp
    std::string read_scope = "agency:read";
    std::string write_scope = "agency:write";
    bool read_only = false;  // serve --read-only: the write scope is never granted nor asked for
    // Times the summaries of refused tokens and keys (base/log_summary.hpp); null: the system's.
    const base::Clock* clock = nullptr;
};

// `keys` may be null or empty (OAuth alone).
std::shared_ptr<const Authenticator> oauth_authenticator(
    OAuthSettings settings, std::shared_ptr<const auth::TokenValidator> validator,
    std::shared_ptr<const KeyStore> keys);

// https://host/mcp → https://host/.well-known/oauth-protected-resource/mcp (RFC 9728 3.1).
std::string resource_metadata_url(const std::string& resource);
// The caller an access token names: issuer and subject ('#' and '%' escaped, since a task's
// owner record keeps "<caller>#<session>").
std::string oauth_principal_name(const std::string& issuer, const std::string& subject);

}  // namespace agency::mcp

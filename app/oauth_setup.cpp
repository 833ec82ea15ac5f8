// OAuth for `serve --http` (see oauth_setup.hpp).
#include "app/oauth_setup.hpp"

#include <stdexcept>

#include "base/log.hpp"

#include "app/process.hpp"
#include "auth/token_validator.hpp"
#include "transport/oauth_resource.hpp"

namespace agency::app {

namespace {

void check_scope(const std::string& option, const std::string& scope) {
    if (scope.empty() || scope.find_first_of(" \"\\,") != std::string::npos)
        throw std::invalid_argument(option + ": a scope is one non-empty word without spaces, "
                                             "quotes or commas, got \"" + scope + "\"");
}

}  // namespace

void check_oauth(const OAuthArgs& args) {
    if (args.issuer.empty() || args.resource.empty())
        throw std::invalid_argument(
            "OAuth needs both --oauth-issuer (AGENCY_OAUTH_ISSUER) and --oauth-resource "
            "(AGENCY_OAUTH_RESOURCE, this server's MCP URL, e.g. https://mcp.example.com/mcp)");
    if (!auth::is_secure_url(args.resource) || args.resource.find_first_of("#?") != std::string::npos)
        throw std::invalid_argument("--oauth-resource must be this server's https URL (http only on "
                                    "a loopback address), without query or fragment: " +
                                    args.resource);
    check_scope("--oauth-scopes-read", args.read_scope);
    check_scope("--oauth-scopes-write", args.write_scope);
    if (args.read_scope == args.write_scope)
        throw std::invalid_argument("--oauth-scopes-read and --oauth-scopes-write must differ");
    if (!auth::is_secure_url(args.issuer))
        throw std::invalid_argument("--oauth-issuer must be an https URL (http only on a loopback "
                                    "address): " + args.issuer);
}

std::shared_ptr<const mcp::Authenticator> oauth_for_serving(const OAuthArgs& args,
                                                            std::shared_ptr<const mcp::KeyStore> keys,
                                                            bool read_only) {
    check_oauth(args);
    auth::ValidatorOptions options;
    options.issuer = args.issuer;
    options.resource = args.resource;
    options.introspection_client_id = args.introspection_client_id;
    options.introspection_client_secret = env_or("AGENCY_OAUTH_INTROSPECTION_SECRET");
    if (!options.introspection_client_id.empty() && options.introspection_client_secret.empty())
        throw std::invalid_argument("--oauth-introspection-client-id needs its secret in "
                                    "AGENCY_OAUTH_INTROSPECTION_SECRET");
    try {
        auto validator = std::make_shared<const auth::TokenValidator>(std::move(options));
        mcp::OAuthSettings settings{.issuer = args.issuer,
                                    .resource = args.resource,
                                    .read_scope = args.read_scope,
                                    .write_scope = args.write_scope,
                                    .read_only = read_only};
        log::info("OAuth: access tokens from {} for {} (scopes {}, {})", args.issuer, args.resource,
                  args.read_scope, args.write_scope);
        return mcp::oauth_authenticator(std::move(settings), std::move(validator), std::move(keys));
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("--oauth-issuer: ") + e.what());
    }
}

}  // namespace agency::app

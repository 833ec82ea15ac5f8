// OAuth for `serve --http` (see oauth_setup.hpp).
#include "app/oauth_setup.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
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

void check_claim_name(const std::string& option, const std::string& name) {
    const bool control = std::any_of(name.begin(), name.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    if (name.empty() || name.size() > 200 || control)
        throw std::invalid_argument(option + ": a claim's name is 1 to 200 characters without "
                                             "control characters");
}

// The claims that limit a caller's clients and give its budget, the group mapping read.
auth::ClientClaimRules client_claim_rules(const OAuthArgs& args) {
    auth::ClientClaimRules rules;
    rules.clients_claim = args.clients_claim;
    rules.groups_claim = args.groups_claim;
    rules.unclaimed_reaches_all = args.unclaimed_clients == "all";
    rules.budget_claim = args.budget_claim;
    if (!args.client_groups_file.empty()) {
        std::ifstream in(args.client_groups_file, std::ios::binary);
        std::string text;
        if (in) {
            std::ostringstream all;
            all << in.rdbuf();
            text = all.str();
        }
        if (!in || text.size() > 1024 * 1024)
            throw std::invalid_argument("--oauth-client-groups: cannot read " +
                                        args.client_groups_file +
                                        (in ? " (larger than 1 MiB)" : ""));
        try {
            rules.group_clients = auth::parse_client_groups(text);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("--oauth-client-groups " + args.client_groups_file +
                                        ": " + e.what());
        }
        if (rules.group_clients.empty())
            throw std::invalid_argument("--oauth-client-groups " + args.client_groups_file +
                                        ": the file maps no group");
    }
    return rules;
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
    if (!args.clients_claim.empty()) check_claim_name("--oauth-clients-claim", args.clients_claim);
    if (!args.budget_claim.empty()) check_claim_name("--oauth-budget-claim", args.budget_claim);
    check_claim_name("--oauth-groups-claim", args.groups_claim);
    if (args.unclaimed_clients != "none" && args.unclaimed_clients != "all")
        throw std::invalid_argument("--oauth-unclaimed-clients is none or all");
    if (args.unclaimed_clients == "all" && args.clients_claim.empty() &&
        args.client_groups_file.empty())
        throw std::invalid_argument("--oauth-unclaimed-clients all needs --oauth-clients-claim "
                                    "or --oauth-client-groups (without them every caller "
                                    "reaches every client)");
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
    options.client_claims = client_claim_rules(args);
    try {
        auto validator = std::make_shared<const auth::TokenValidator>(std::move(options));
        mcp::OAuthSettings settings{.issuer = args.issuer,
                                    .resource = args.resource,
                                    .read_scope = args.read_scope,
                                    .write_scope = args.write_scope,
                                    .read_only = read_only};
        log::info("OAuth: access tokens from {} for {} (scopes {}, {})", args.issuer, args.resource,
                  args.read_scope, args.write_scope);
        if (!args.clients_claim.empty() || !args.client_groups_file.empty())
            log::info("OAuth: a caller reaches the clients its token names (claim {}{}); a "
                      "token naming none reaches {}",
                      args.clients_claim.empty() ? "-" : args.clients_claim,
                      args.client_groups_file.empty()
                          ? std::string()
                          : ", groups of claim " + args.groups_claim + " mapped in " +
                                args.client_groups_file,
                      args.unclaimed_clients == "all" ? "every client" : "none (refused)");
        return mcp::oauth_authenticator(std::move(settings), std::move(validator), std::move(keys));
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("--oauth-issuer: ") + e.what());
    }
}

}  // namespace agency::app

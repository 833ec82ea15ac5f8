// The command line's OAuth options of `serve` (docs/auth.md): the issuer, this server's
// resource URL, the scopes, introspection, and the claims that limit a caller to some of the
// agency's clients and give it an action budget.
#include <CLI/CLI.hpp>

#include "app/cli.hpp"

namespace agency::app {

void CommandLine::add_oauth() {
    OAuthArgs& oauth = serve.oauth;
    serve_cmd_
        ->add_option("--oauth-issuer", oauth.issuer,
                     "OAuth authorization server (issuer URL, https) whose access tokens HTTP "
                     "callers may present (docs/auth.md)")
        ->envname("AGENCY_OAUTH_ISSUER")
        ->group(kOAuth);
    serve_cmd_
        ->add_option("--oauth-resource", oauth.resource,
                     "This server's canonical MCP URL, e.g. https://mcp.example.com/mcp: tokens "
                     "must name it as their audience")
        ->envname("AGENCY_OAUTH_RESOURCE")
        ->group(kOAuth);
    serve_cmd_->add_option("--oauth-scopes-read", oauth.read_scope,
                           "The OAuth scope that grants reads (default agency:read)")
        ->envname("AGENCY_OAUTH_SCOPES_READ")
        ->group(kOAuth);
    serve_cmd_->add_option("--oauth-scopes-write", oauth.write_scope,
                           "The OAuth scope that grants actions (default agency:write)")
        ->envname("AGENCY_OAUTH_SCOPES_WRITE")
        ->group(kOAuth);
    serve_cmd_
        ->add_option("--oauth-introspection-client-id", oauth.introspection_client_id,
                     "Introspect opaque tokens (RFC 7662) as this client; its secret in "
                     "$AGENCY_OAUTH_INTROSPECTION_SECRET")
        ->envname("AGENCY_OAUTH_INTROSPECTION_CLIENT_ID")
        ->group(kOAuth);
    serve_cmd_
        ->add_option("--oauth-clients-claim", oauth.clients_claim,
                     "The access token claim naming the clients a caller may reach (a JSON "
                     "array or a space-separated string, e.g. clients); default: every client")
        ->envname("AGENCY_OAUTH_CLIENTS_CLAIM")
        ->group(kOAuth);
    serve_cmd_
        ->add_option("--oauth-client-groups", oauth.client_groups_file,
                     "A JSON file mapping the groups of --oauth-groups-claim to the clients "
                     "their members reach: {\"group\": [\"client_id\", ...] or \"*\"}")
        ->envname("AGENCY_OAUTH_CLIENT_GROUPS")
        ->group(kOAuth);
    serve_cmd_
        ->add_option("--oauth-groups-claim", oauth.groups_claim,
                     "The claim listing a caller's groups, for --oauth-client-groups (default "
                     "groups)")
        ->envname("AGENCY_OAUTH_GROUPS_CLAIM")
        ->group(kOAuth);
    serve_cmd_
        ->add_option("--oauth-unclaimed-clients", oauth.unclaimed_clients,
                     "What a token naming no client reaches when client claims are on: none "
                     "(default: it is refused) or all")
        ->check(CLI::IsMember({"none", "all"}))
        ->envname("AGENCY_OAUTH_UNCLAIMED_CLIENTS")
        ->group(kOAuth);
    serve_cmd_
        ->add_option("--oauth-budget-claim", oauth.budget_claim,
                     "The claim holding a caller's action budget (a whole number); default: "
                     "the server's")
        ->envname("AGENCY_OAUTH_BUDGET_CLAIM")
        ->group(kOAuth);
}

}  // namespace agency::app

// The OAuth resource server's answers (see oauth_resource.hpp).
#include "transport/oauth_resource.hpp"

#include "base/log.hpp"
#include "base/log_summary.hpp"

#include "server/json_rpc.hpp"

namespace agency::mcp {

namespace {

// The path of a URL ("" for none or "/").
std::string path_of(const std::string& url) {
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string::npos) return "";
    const auto at = url.find('/', scheme_end + 3);
    if (at == std::string::npos) return "";
    std::string path = url.substr(at, url.find_first_of("?#", at) - at);
    return path == "/" ? "" : path;
}

bool query_has_token(const std::string& query) {
    std::size_t at = 0;
    while (at <= query.size()) {
        const auto end = std::min(query.find('&', at), query.size());
        const std::string_view part(query.data() + at, end - at);
        if (part.substr(0, part.find('=')) == "access_token") return true;
        at = end + 1;
    }
    return false;
}

class OAuthAuthenticator final : public Authenticator {
public:
    OAuthAuthenticator(OAuthSettings settings, std::shared_ptr<const auth::TokenValidator> validator,
                       std::shared_ptr<const KeyStore> keys)
        : settings_(std::move(settings)),
          validator_(std::move(validator)),
          keys_(std::move(keys)),
          metadata_url_(resource_metadata_url(settings_.resource)),
          refused_(base::Clock::or_system(settings_.clock)) {}

    bool required() const override { return true; }

    AuthDecision authenticate(const HttpRequestView& request) const override {
        // RFC 6750 2.3 and the MCP spec: never in the URL, where logs and proxies keep it.
        if (query_has_token(request.query))
            return refusal(400, "invalid_request",
                           "access tokens are not accepted in the URL: send Authorization: "
                           "Bearer <token>");
        const std::string presented = presented_credential(request);
        if (presented.empty())
            return refusal(401, "",
                           "authentication required: sign in through OAuth (the "
                           "WWW-Authenticate header names the metadata) or send an agency-mcp key");
        const bool keys_on = keys_ && !keys_->empty();
        if (keys_on) {
            if (auto principal = keys_->authenticate(presented)) {
                if (settings_.read_only) std::erase(principal->scopes, std::string("write"));
                return admit(std::move(*principal));
            }
        }
        if (!request.header("X-API-Key").empty()) {
            refused_.write(log::Level::info, "API key refused", request.remote_addr,
                           "unknown API key from {}", request.remote_addr);
            return refusal(401, "invalid_token", "unknown API key");
        }
        const auth::Checked checked = validator_->validate(presented);
        if (checked.failure == auth::Failure::unavailable) {
            AuthDecision out;
            out.status = 503;
            out.message = checked.reason;
            return out;
        }
        if (!checked.ok()) {
            // Once, then a summary per interval: one client can send thousands a second.
            refused_.write(log::Level::info, "OAuth: token refused", request.remote_addr,
                           "OAuth: token refused from {}: {}", request.remote_addr,
                           checked.reason);
            // A mistyped key is not a malformed JWT to the person who sent it.
            if (keys_on && checked.failure == auth::Failure::malformed)
                return refusal(401, "invalid_token",
                               "unknown API key, and not an access token this server accepts");
            return refusal(401, "invalid_token", checked.reason);
        }
        Principal principal;
        principal.name = oauth_principal_name(checked.claims.issuer, checked.claims.subject);
        principal.scopes.clear();
        for (const auto& s : checked.claims.scopes) {
            if (s == settings_.read_scope) principal.scopes.push_back("read");
            if (s == settings_.write_scope) principal.scopes.push_back("write");
        }
        principal.may_step_up = !settings_.read_only;
        principal.authenticated = true;
        if (settings_.read_only) std::erase(principal.scopes, std::string("write"));
        if (principal.scopes.empty()) return refuse_scope(principal, "read");
        const auth::ClientReach& reach = checked.claims.reach;
        if (reach.scoped && reach.clients.empty()) {
            // Signing in again would not help: the authorization server decides the claim.
            refused_.write(log::Level::info, "OAuth: token reaches no client", principal.name,
                           "OAuth: {} reaches no client (its token names none)", principal.name);
            AuthDecision out;
            out.status = 403;
            out.message = "this account may reach none of the agency's clients: its access "
                          "token names no client this server lets it reach (ask the "
                          "administrator of your sign-in to grant you clients)";
            return out;
        }
        principal.clients = reach.clients;
        principal.action_budget = reach.action_budget;
        return admit(std::move(principal));
    }

    AuthDecision refuse_scope(const Principal& caller, std::string_view scope) const override {
        // The whole set the call needs in one challenge (the spec asks for no piecemeal
        // challenges): reading comes with every call, so a client that replaces its scopes
        // rather than adding them keeps its reads.
        std::string scopes = settings_.read_scope;
        if (scope == "write" || caller.has_scope("write")) scopes += " " + settings_.write_scope;
        AuthDecision out = refusal(403, "insufficient_scope",
                                   "this call needs the '" + external(scope) +
                                       "' scope: authorize again with it (scope \"" + scopes + "\")");
        out.www_authenticate += ", scope=\"" + quoted_header_text(scopes) + "\"";
        return out;
    }

    std::vector<HttpRoute> routes() const override {
        json doc = {{"resource", settings_.resource},
                    {"authorization_servers", json::array({settings_.issuer})},
                    {"scopes_supported", json::array({settings_.read_scope, settings_.write_scope})},
                    {"bearer_methods_supported", json::array({"header"})},
                    {"resource_name", "agency-mcp"}};
        const std::string body = doc.dump();
        auto handler = [body](const HttpRequestView&) {
            HttpReply reply;
            reply.body = body;
            reply.headers.emplace_back("Cache-Control", "max-age=300");
            reply.headers.emplace_back("Access-Control-Allow-Origin", "*");
            return reply;
        };
        std::vector<HttpRoute> out{
            {.method = "GET", .path = "/.well-known/oauth-protected-resource", .handler = handler}};
        const std::string path = path_of(settings_.resource);
        if (!path.empty())
            out.push_back({.method = "GET",
                           .path = "/.well-known/oauth-protected-resource" + path,
                           .handler = handler});
        return out;
    }

private:
    std::string external(std::string_view scope) const {
        return scope == "write" ? settings_.write_scope : settings_.read_scope;
    }

    static AuthDecision admit(Principal principal) {
        AuthDecision out;
        out.principal = std::move(principal);
        return out;
    }

    // A Bearer challenge naming the metadata (and, for a caller not yet signed in, the scope).
    AuthDecision refusal(int status, const std::string& error, const std::string& message) const {
        AuthDecision out;
        out.status = status;
        out.message = message;
        out.www_authenticate = "Bearer resource_metadata=\"" + quoted_header_text(metadata_url_) + "\"";
        if (error.empty()) {
            out.www_authenticate += ", scope=\"" + quoted_header_text(settings_.read_scope) + "\"";
        } else {
            out.www_authenticate += ", error=\"" + error + "\"";
            if (error != "insufficient_scope")
                out.www_authenticate += ", error_description=\"" + quoted_header_text(message) + "\"";
        }
        return out;
    }

    OAuthSettings settings_;
    std::shared_ptr<const auth::TokenValidator> validator_;
    std::shared_ptr<const KeyStore> keys_;
    std::string metadata_url_;
    mutable log::RepeatedLines refused_;  // refused tokens and keys, summarised
};

}  // namespace

std::string resource_metadata_url(const std::string& resource) {
    const auto scheme_end = resource.find("://");
    const auto at = scheme_end == std::string::npos ? std::string::npos
                                                     : resource.find('/', scheme_end + 3);
    const std::string origin = resource.substr(0, at);
    return origin + "/.well-known/oauth-protected-resource" + path_of(resource);
}

std::string oauth_principal_name(const std::string& issuer, const std::string& subject) {
    std::string out = "oauth:";
    const std::string both = issuer + " " + subject;
    for (char c : both) {
        if (c == '#') out += "%23";
        else if (c == '%') out += "%25";
        else out += c;
    }
    return out;
}

std::shared_ptr<const Authenticator> oauth_authenticator(
    OAuthSettings settings, std::shared_ptr<const auth::TokenValidator> validator,
    std::shared_ptr<const KeyStore> keys) {
    return std::make_shared<OAuthAuthenticator>(std::move(settings), std::move(validator),
                                                std::move(keys));
}

}  // namespace agency::mcp

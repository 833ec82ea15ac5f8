// Issue 35: the clients an OAuth caller may reach, from its token (auth/client_claims.hpp): a
// `clients` claim (a JSON array or a space-separated string) or groups mapped to clients, read
// alike from a JWT and from an RFC 7662 introspection answer; a token naming no client reaches
// none (refused, 403) unless the operator says every client; a malformed claim is refused
// (401). Through the HTTP transport, the caller's Principal::clients is what the token names.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/mcp_server.hpp"
#include "auth/client_claims.hpp"
#include "auth/token_validator.hpp"
#include "base/clock.hpp"
#include "base/crypto.hpp"
#include "tests/support/oauth_issuer.hpp"
#include "transport/http_transport.hpp"
#include "transport/oauth_resource.hpp"

namespace oauth_client_claims_test {

using nlohmann::json;
using agency::auth::ClientClaimRules;
using agency::auth::ClientReach;
using agency::auth::Failure;
using agency::testing::Issuer;
using agency::testing::RsaKey;
using Ids = std::vector<std::string>;

ClientClaimRules clients_rules(bool unclaimed_all = false) {
    ClientClaimRules rules;
    rules.clients_claim = "clients";
    rules.unclaimed_reaches_all = unclaimed_all;
    return rules;
}

// The reach, or "refused: <why>".
ClientReach reach_of(const json& claims, const ClientClaimRules& rules, std::string* why = nullptr) {
    ClientReach out;
    std::string reason;
    const bool ok = agency::auth::read_client_reach(claims, rules, out, reason);
    if (why) *why = ok ? "" : reason;
    return out;
}

bool refused(const json& claims, const ClientClaimRules& rules) {
    std::string why;
    reach_of(claims, rules, &why);
    return !why.empty();
}

TEST(ClientClaims, OffByDefaultEveryCallerReachesEveryClient) {
    const ClientReach r = reach_of({{"sub", "a"}, {"clients", {"demo-law"}}}, ClientClaimRules{});
    EXPECT_FALSE(r.scoped);
    EXPECT_TRUE(r.clients.empty());
    EXPECT_FALSE(r.action_budget);
}

TEST(ClientClaims, AnArrayOrASpaceSeparatedStringNamesTheClients) {
    const auto rules = clients_rules();
    ClientReach r = reach_of({{"clients", {"demo-law", "demo-bakery", "demo-law"}}}, rules);
    EXPECT_TRUE(r.scoped);
    EXPECT_EQ(r.clients, (Ids{"demo-bakery", "demo-law"})) << "sorted, each once";
    r = reach_of({{"clients", " demo-law  demo-bakery "}}, rules);
    EXPECT_EQ(r.clients, (Ids{"demo-bakery", "demo-law"}));
    // "*": every client (an administrator's token).
    r = reach_of({{"clients", {"demo-law", "*"}}}, rules);
    EXPECT_FALSE(r.scoped);
    // Named but empty: no client at all.
    r = reach_of({{"clients", json::array()}}, rules);
    EXPECT_TRUE(r.scoped);
    EXPECT_TRUE(r.clients.empty());
}

TEST(ClientClaims, ATokenWithoutTheClaimReachesNoneUnlessTheOperatorSaysAll) {
    ClientReach r = reach_of({{"sub", "a"}}, clients_rules());
    EXPECT_TRUE(r.scoped);
    EXPECT_TRUE(r.clients.empty());
    r = reach_of({{"sub", "a"}}, clients_rules(true));
    EXPECT_FALSE(r.scoped);
    // A claim that is there is held to, whatever the default.
    r = reach_of({{"clients", {"demo-law"}}}, clients_rules(true));
    EXPECT_EQ(r.clients, (Ids{"demo-law"}));
}

TEST(ClientClaims, MalformedClaimsAreRefusedNamingTheClaim) {
    const auto rules = clients_rules();
    for (const json& bad : {json(42), json(true), json::object({{"a", 1}}),
                            json::array({"demo-law", 7}), json::array({json::array({"x"})}),
                            json::array({""}), json::array({"demo\nlaw"}), json("demo\x1b[2Jlaw"),
                            json::array({std::string(201, 'x')})}) {
        std::string why;
        reach_of({{"clients", bad}}, rules, &why);
        EXPECT_NE(why.find("'clients' claim"), std::string::npos) << bad.dump() << ": " << why;
    }
    json many = json::array();
    for (int i = 0; i < 1001; ++i) many.push_back("c" + std::to_string(i));
    EXPECT_TRUE(refused({{"clients", many}}, rules));
    many.erase(many.begin());
    EXPECT_FALSE(refused({{"clients", many}}, rules));
}

TEST(ClientClaims, GroupsMapToClientsAndAddToTheClaim) {
    ClientClaimRules rules;
    rules.group_clients = {{"writers-law", {"demo-law"}},
                           {"writers-food", {"demo-bakery", "demo-cafe"}},
                           {"admins", {"*"}},
                           {"interns", {}}};
    ClientReach r = reach_of({{"groups", {"writers-law", "writers-food", "offline-access"}}}, rules);
    EXPECT_TRUE(r.scoped);
    EXPECT_EQ(r.clients, (Ids{"demo-bakery", "demo-cafe", "demo-law"}));
    r = reach_of({{"groups", "writers-law admins"}}, rules);
    EXPECT_FALSE(r.scoped) << "admins reach every client";
    // Only groups this server does not map, or none: no client.
    r = reach_of({{"groups", {"offline-access"}}}, rules);
    EXPECT_TRUE(r.scoped);
    EXPECT_TRUE(r.clients.empty());
    EXPECT_TRUE(reach_of({{"sub", "a"}}, rules).scoped);
    // A mapped group with no client: named, reaches nothing, even when unclaimed means all.
    rules.unclaimed_reaches_all = true;
    r = reach_of({{"groups", {"interns"}}}, rules);
    EXPECT_TRUE(r.scoped);
    EXPECT_TRUE(r.clients.empty());
    EXPECT_FALSE(reach_of({{"groups", {"offline-access"}}}, rules).scoped);
    // With a clients claim too: the union.
    rules.clients_claim = "clients";
    rules.groups_claim = "roles";
    r = reach_of({{"clients", {"demo-gym"}}, {"roles", {"writers-law"}}, {"groups", {"admins"}}},
                 rules);
    EXPECT_EQ(r.clients, (Ids{"demo-gym", "demo-law"})) << "groups come from the claim named";
    std::string why;
    reach_of({{"roles", 3}}, rules, &why);
    EXPECT_NE(why.find("'roles' claim"), std::string::npos) << why;
}

TEST(ClientClaims, BudgetClaim) {
    ClientClaimRules rules;
    rules.budget_claim = "agency_actions";
    EXPECT_FALSE(reach_of({{"sub", "a"}}, rules).action_budget) << "absent: the server's default";
    EXPECT_EQ(reach_of({{"agency_actions", 3}}, rules).action_budget, 3);
    EXPECT_EQ(reach_of({{"agency_actions", 0}}, rules).action_budget, 0);
    EXPECT_EQ(reach_of({{"agency_actions", "25"}}, rules).action_budget, 25);
    for (const json& bad : {json(-1), json(2.5), json("ten"), json("-3"), json::array({3}),
                            json(1e30), json(true)}) {
        std::string why;
        reach_of({{"agency_actions", bad}}, rules, &why);
        EXPECT_NE(why.find("'agency_actions' claim"), std::string::npos) << bad.dump();
    }
}

TEST(ClientClaims, GroupMappingFile) {
    const auto groups = agency::auth::parse_client_groups(
        R"({"writers-law": ["demo-law"], "admins": "*", "interns": []})");
    EXPECT_EQ(groups.at("writers-law"), (Ids{"demo-law"}));
    EXPECT_EQ(groups.at("admins"), (Ids{"*"}));
    EXPECT_TRUE(groups.at("interns").empty());
    for (const char* bad : {"[]", "not json", R"({"g": "demo-law"})", R"({"g": [1]})",
                            R"({"g": ["two words"]})", R"({"": ["x"]})", R"({"g": {"a": 1}})"}) {
        EXPECT_THROW(agency::auth::parse_client_groups(bad), std::invalid_argument) << bad;
    }
}

constexpr const char* kResource = "https://mcp.example.com/mcp";

// The same claims through a JWT and through an introspection answer.
TEST(ClientClaimsValidator, JwtsAndIntrospectedTokensAlike) {
    Issuer issuer;
    RsaKey key("k1");
    issuer.publish(key.jwk());
    const std::int64_t now = agency::base::Clock::system().unix_s();
    auto claims = [&](json clients) {
        json c = {{"iss", issuer.url()}, {"sub", "writer-1"}, {"aud", kResource},
                  {"exp", now + 300}, {"scope", "agency:read"}, {"active", true}};
        if (!clients.is_null()) c["clients"] = std::move(clients);
        return c;
    };
    {
        std::lock_guard lock(issuer.mu);
        issuer.opaque_tokens["opaque-law"] = claims({"demo-law"});
        issuer.opaque_tokens["opaque-none"] = claims(nullptr);
        issuer.opaque_tokens["opaque-bad"] = claims(12);
    }
    agency::auth::ValidatorOptions options;
    options.issuer = issuer.url();
    options.resource = kResource;
    options.introspection_client_id = "rs";
    options.introspection_client_secret = "s3cret";
    options.client_claims = clients_rules();
    agency::auth::TokenValidator validator(options);
    const json header = {{"alg", "RS256"}, {"kid", "k1"}, {"typ", "at+jwt"}};

    for (const std::string& token : {key.sign(header, claims({"demo-law"})),
                                     std::string("opaque-law")}) {
        const auto got = validator.validate(token);
        ASSERT_TRUE(got.ok()) << got.reason;
        EXPECT_TRUE(got.claims.reach.scoped);
        EXPECT_EQ(got.claims.reach.clients, (Ids{"demo-law"}));
    }
    for (const std::string& token : {key.sign(header, claims(nullptr)), std::string("opaque-none")}) {
        const auto got = validator.validate(token);
        ASSERT_TRUE(got.ok()) << got.reason;
        EXPECT_TRUE(got.claims.reach.scoped);
        EXPECT_TRUE(got.claims.reach.clients.empty());
    }
    for (const std::string& token : {key.sign(header, claims(12)), std::string("opaque-bad")}) {
        const auto got = validator.validate(token);
        EXPECT_EQ(got.failure, Failure::bad_claims);
        EXPECT_NE(got.reason.find("'clients' claim"), std::string::npos) << got.reason;
    }
}

// Through the HTTP transport: the caller's principal carries the clients its token names.
class OAuthClientsHttp : public ::testing::Test {
protected:
    void start(ClientClaimRules rules) {
        issuer.publish(key.jwk());
        agency::mcp::ToolDef whoami;
        whoami.name = "whoami";
        whoami.description = "The caller's clients.";
        whoami.input_schema = {{"type", "object"}};
        whoami.handler = [](const json&, agency::mcp::RequestContext& ctx) {
            json out = {{"clients", ctx.principal.clients},
                        {"law", ctx.principal.reaches_client("demo-law")},
                        {"bakery", ctx.principal.reaches_client("demo-bakery")}};
            if (ctx.principal.action_budget) out["budget"] = *ctx.principal.action_budget;
            return agency::mcp::ToolResult::text(out.dump());
        };
        server.add_tool(std::move(whoami));
        keys_path = (std::filesystem::temp_directory_path() /
                     ("agency-oauth-clients-" + agency::crypto::random_hex(6) + ".json"))
                        .string();
        api_key = agency::mcp::KeyStore::add(keys_path, "ci", {"read"});
        auto keys = std::make_shared<agency::mcp::KeyStore>(agency::mcp::KeyStore::load(keys_path));
        agency::auth::ValidatorOptions v;
        v.issuer = issuer.url();
        v.resource = kResource;
        v.client_claims = std::move(rules);
        agency::mcp::HttpOptions options;
        options.port = 0;
        options.authenticator = agency::mcp::oauth_authenticator(
            {.issuer = issuer.url(), .resource = kResource},
            std::make_shared<agency::auth::TokenValidator>(v), keys);
        transport = std::make_unique<agency::mcp::HttpTransport>(server, options);
        port = transport->start();
    }
    ~OAuthClientsHttp() override {
        if (transport) transport->stop();
        std::error_code ec;
        std::filesystem::remove(keys_path, ec);
    }
    std::string token(const json& extra) const {
        const std::int64_t now = agency::base::Clock::system().unix_s();
        json c = {{"iss", issuer.url()}, {"sub", "writer-1"}, {"aud", kResource},
                  {"exp", now + 300}, {"scope", "agency:read"}};
        c.update(extra);
        return key.sign({{"alg", "RS256"}, {"kid", "k1"}, {"typ", "at+jwt"}}, c);
    }
    // tools/call whoami with this bearer value: the HTTP status and the tool's JSON answer.
    std::pair<int, json> whoami(const std::string& bearer) {
        httplib::Client cli("127.0.0.1", port);
        const json params = {{"name", "whoami"},
                             {"arguments", json::object()},
                             {"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                                        {"io.modelcontextprotocol/clientCapabilities",
                                         json::object()}}}};
        const json body = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/call"}, {"params", params}};
        auto res = cli.Post("/mcp",
                            {{"Authorization", "Bearer " + bearer},
                             {"MCP-Protocol-Version", "2026-07-28"},
                             {"Mcp-Method", "tools/call"},
                             {"Mcp-Name", "whoami"}},
                            body.dump(), "application/json");
        if (!res) return {0, json()};
        last_www_authenticate = res->get_header_value("WWW-Authenticate");
        last_body = res->body;
        if (res->status != 200) return {res->status, json()};
        const json doc = json::parse(res->body, nullptr, false);
        const json text = doc.is_object() ? doc["result"]["content"][0]["text"] : json();
        return {200, text.is_string() ? json::parse(text.get<std::string>()) : json()};
    }

    Issuer issuer;
    RsaKey key{"k1"};
    agency::mcp::Server server;
    std::string keys_path;
    std::string api_key;
    std::unique_ptr<agency::mcp::HttpTransport> transport;
    int port = 0;
    std::string last_www_authenticate;
    std::string last_body;
};

TEST_F(OAuthClientsHttp, TheTokensClaimLimitsThePrincipal) {
    ClientClaimRules rules = clients_rules();
    rules.budget_claim = "agency_actions";
    start(rules);
    auto [status, got] = whoami(token({{"clients", {"demo-law"}}, {"agency_actions", 3}}));
    ASSERT_EQ(status, 200) << last_body;
    EXPECT_EQ(got["clients"], json::array({"demo-law"}));
    EXPECT_EQ(got["law"], true);
    EXPECT_EQ(got["bakery"], false);
    EXPECT_EQ(got["budget"], 3);
    std::tie(status, got) = whoami(token({{"clients", "demo-law demo-bakery"}}));
    ASSERT_EQ(status, 200) << last_body;
    EXPECT_EQ(got["clients"], json::array({"demo-bakery", "demo-law"}));
    EXPECT_FALSE(got.contains("budget"));
    // No claim: no client, refused at the door (signing in again would not help: no challenge).
    std::tie(status, got) = whoami(token(json::object()));
    EXPECT_EQ(status, 403);
    EXPECT_NE(last_body.find("none of the agency's clients"), std::string::npos) << last_body;
    EXPECT_EQ(last_www_authenticate.find("insufficient_scope"), std::string::npos);
    // A malformed claim: the token is refused, saying which claim.
    std::tie(status, got) = whoami(token({{"clients", {{"id", "demo-law"}}}}));
    EXPECT_EQ(status, 401);
    EXPECT_NE(last_www_authenticate.find("invalid_token"), std::string::npos);
    EXPECT_NE(last_body.find("'clients' claim"), std::string::npos) << last_body;
    std::tie(status, got) = whoami(token({{"clients", {"demo-law"}}, {"agency_actions", -2}}));
    EXPECT_EQ(status, 401);
    // Keys beside OAuth are not touched by the claim.
    std::tie(status, got) = whoami(api_key);
    ASSERT_EQ(status, 200) << last_body;
    EXPECT_EQ(got["clients"], json::array());
    EXPECT_EQ(got["bakery"], true);
}

TEST_F(OAuthClientsHttp, WithoutTheOptionsATokenReachesEveryClient) {
    start(ClientClaimRules{});
    auto [status, got] = whoami(token({{"clients", {"demo-law"}}}));
    ASSERT_EQ(status, 200) << last_body;
    EXPECT_EQ(got["clients"], json::array());
    EXPECT_EQ(got["bakery"], true);
}

TEST_F(OAuthClientsHttp, UnclaimedAllLetsATokenWithoutTheClaimReachEveryClient) {
    start(clients_rules(true));
    auto [status, got] = whoami(token(json::object()));
    ASSERT_EQ(status, 200) << last_body;
    EXPECT_EQ(got["clients"], json::array());
    std::tie(status, got) = whoami(token({{"clients", {"demo-law"}}}));
    ASSERT_EQ(status, 200) << last_body;
    EXPECT_EQ(got["clients"], json::array({"demo-law"}));
}

}  // namespace oauth_client_claims_test

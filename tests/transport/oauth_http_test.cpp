// The HTTP transport with OAuth (transport/oauth_resource.cpp) and keys beside it: the challenges,
// the RFC 9728 metadata, step-up before a write runs, keys and tokens together, and callers
// bound by issuer + sub. A real issuer on loopback (tests/support/oauth_issuer.hpp).
#include <filesystem>

#include <gtest/gtest.h>
#include <httplib.h>

#include "server/mcp_server.hpp"
#include "auth/token_validator.hpp"
#include "tests/support/oauth_issuer.hpp"
#include "transport/http_transport.hpp"
#include "transport/oauth_resource.hpp"

namespace {

using agency::mcp::json;
using agency::testing::Issuer;
using agency::testing::RsaKey;

class OAuthHttp : public ::testing::Test {
protected:
    OAuthHttp() : key("k1") {
        issuer.publish(key.jwk());
        agency::mcp::ToolDef reader;
        reader.name = "read_thing";
        reader.description = "Reads.";
        reader.input_schema = {{"type", "object"}};
        reader.handler = [](const json&, agency::mcp::RequestContext& ctx) {
            return agency::mcp::ToolResult::text("read by " + ctx.principal.name);
        };
        server.add_tool(std::move(reader));
        agency::mcp::ToolDef writer;
        writer.name = "write_thing";
        writer.description = "Needs the write scope.";
        writer.input_schema = {{"type", "object"}};
        writer.required_scopes = {"write"};
        writer.handler = [this](const json&, agency::mcp::RequestContext&) {
            ++writes;
            return agency::mcp::ToolResult::text("written");
        };
        server.add_tool(std::move(writer));

        keys_path = (std::filesystem::temp_directory_path() /
                     ("agency-oauth-keys-" + agency::crypto::random_hex(6) + ".json"))
                        .string();
        api_key = agency::mcp::KeyStore::add(keys_path, "ci", {"read"});
        auto keys = std::make_shared<agency::mcp::KeyStore>(agency::mcp::KeyStore::load(keys_path));

        agency::auth::ValidatorOptions v;
        v.issuer = issuer.url();
        v.resource = resource;
        auto validator = std::make_shared<agency::auth::TokenValidator>(v);
        agency::mcp::HttpOptions options;
        options.port = 0;
        options.authenticator = agency::mcp::oauth_authenticator(
            {.issuer = issuer.url(), .resource = resource}, validator, keys);
        transport = std::make_unique<agency::mcp::HttpTransport>(server, options);
        port = transport->start();
    }
    ~OAuthHttp() override {
        transport->stop();
        std::error_code ec;
        std::filesystem::remove(keys_path, ec);
    }

    std::string token(const std::string& sub, const std::string& scope) const {
        const std::int64_t now = agency::base::Clock::system().unix_s();
        return key.sign({{"alg", "RS256"}, {"kid", "k1"}, {"typ", "at+jwt"}},
                        {{"iss", issuer.url()}, {"sub", sub}, {"aud", resource},
                         {"exp", now + 300}, {"scope", scope}});
    }
    // A modern tools/call (or any method) with these headers.
    httplib::Result post(const std::string& method, json params, httplib::Headers headers,
                         const std::string& target = "/mcp") {
        httplib::Client cli("127.0.0.1", port);
        params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                           {"io.modelcontextprotocol/clientCapabilities", json::object()}};
        headers.emplace("MCP-Protocol-Version", "2026-07-28");
        headers.emplace("Mcp-Method", method);
        if (method == "tools/call") headers.emplace("Mcp-Name", params.value("name", ""));
        const json body = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", params}};
        return cli.Post(target, headers, body.dump(), "application/json");
    }
    static httplib::Headers bearer(const std::string& value) {
        return {{"Authorization", "Bearer " + value}};
    }

    const std::string resource = "https://mcp.example.com/mcp";
    Issuer issuer;
    RsaKey key;
    agency::mcp::Server server;
    std::string keys_path;
    std::string api_key;
    std::unique_ptr<agency::mcp::HttpTransport> transport;
    int port = 0;
    std::atomic<int> writes{0};
};

TEST_F(OAuthHttp, ChallengeAndMetadataSendAClientToTheIssuer) {
    auto res = post("tools/list", json::object(), {});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 401);
    EXPECT_EQ(res->get_header_value("WWW-Authenticate"),
              "Bearer resource_metadata=\"https://mcp.example.com/.well-known/"
              "oauth-protected-resource/mcp\", scope=\"agency:read\"");
    httplib::Client cli("127.0.0.1", port);
    for (const char* path : {"/.well-known/oauth-protected-resource/mcp",
                             "/.well-known/oauth-protected-resource"}) {
        auto meta = cli.Get(path);
        ASSERT_TRUE(meta);
        ASSERT_EQ(meta->status, 200) << path;
        const json doc = json::parse(meta->body);
        EXPECT_EQ(doc["resource"], resource);
        EXPECT_EQ(doc["authorization_servers"], json::array({issuer.url()}));
        EXPECT_EQ(doc["scopes_supported"], json::array({"agency:read", "agency:write"}));
    }
}

TEST_F(OAuthHttp, ReadTokenStepsUpBeforeAWriteRuns) {
    const std::string read_token = token("alice", "agency:read");
    auto list = post("tools/list", json::object(), bearer(read_token));
    ASSERT_TRUE(list);
    ASSERT_EQ(list->status, 200) << list->body;
    EXPECT_NE(list->body.find("write_thing"), std::string::npos) << "listed so it can step up";
    auto write = post("tools/call", {{"name", "write_thing"}, {"arguments", json::object()}},
                      bearer(read_token));
    ASSERT_TRUE(write);
    EXPECT_EQ(write->status, 403);
    EXPECT_EQ(write->get_header_value("WWW-Authenticate"),
              "Bearer resource_metadata=\"https://mcp.example.com/.well-known/"
              "oauth-protected-resource/mcp\", error=\"insufficient_scope\", "
              "scope=\"agency:read agency:write\"");
    EXPECT_EQ(writes.load(), 0);
    // X-MCP-Readonly: no step-up; the tool is hidden and refused as before.
    auto headers = bearer(read_token);
    headers.emplace("X-MCP-Readonly", "true");
    auto readonly = post("tools/call", {{"name", "write_thing"}, {"arguments", json::object()}},
                         headers);
    ASSERT_TRUE(readonly);
    EXPECT_NE(readonly->status, 403);
    EXPECT_EQ(writes.load(), 0);
    // With the write scope the call runs.
    auto ok = post("tools/call", {{"name", "write_thing"}, {"arguments", json::object()}},
                   bearer(token("alice", "agency:read agency:write")));
    ASSERT_TRUE(ok);
    EXPECT_EQ(ok->status, 200) << ok->body;
    EXPECT_EQ(writes.load(), 1);
    // A token with none of our scopes: 403 asking for the read scope.
    auto none = post("tools/list", json::object(), bearer(token("alice", "profile")));
    ASSERT_TRUE(none);
    EXPECT_EQ(none->status, 403);
    EXPECT_NE(none->get_header_value("WWW-Authenticate").find("scope=\"agency:read\""),
              std::string::npos);
}

TEST_F(OAuthHttp, KeysAndTokensTogether) {
    auto by_key = post("tools/call", {{"name", "read_thing"}, {"arguments", json::object()}},
                       bearer(api_key));
    ASSERT_TRUE(by_key);
    EXPECT_EQ(by_key->status, 200);
    EXPECT_NE(by_key->body.find("read by key:ci"), std::string::npos) << by_key->body;
    auto by_token = post("tools/call", {{"name", "read_thing"}, {"arguments", json::object()}},
                         bearer(token("alice#1", "agency:read")));
    ASSERT_TRUE(by_token);
    EXPECT_NE(by_token->body.find("read by oauth:" + issuer.url() + " alice%231"),
              std::string::npos)
        << by_token->body;
    // A key's caller never steps up: a write is the tool's own refusal, not a 403.
    auto key_write = post("tools/call", {{"name", "write_thing"}, {"arguments", json::object()}},
                          {{"X-API-Key", api_key}});
    ASSERT_TRUE(key_write);
    EXPECT_EQ(key_write->status, 200);
    EXPECT_NE(key_write->body.find("\"isError\":true"), std::string::npos);
    // X-API-Key is only ever a key; a token there is an unknown key.
    auto token_as_key = post("tools/list", json::object(), {{"X-API-Key", token("alice", "agency:read")}});
    ASSERT_TRUE(token_as_key);
    EXPECT_EQ(token_as_key->status, 401);
    EXPECT_NE(token_as_key->body.find("unknown API key"), std::string::npos);
    auto mistyped = post("tools/list", json::object(), bearer(api_key + "x"));
    ASSERT_TRUE(mistyped);
    EXPECT_EQ(mistyped->status, 401);
    EXPECT_NE(mistyped->body.find("unknown API key"), std::string::npos) << mistyped->body;
    // Never in the URL, whatever the header says.
    auto in_url = post("tools/list", json::object(), bearer(api_key),
                       "/mcp?access_token=" + token("alice", "agency:read"));
    ASSERT_TRUE(in_url);
    EXPECT_EQ(in_url->status, 400);
    EXPECT_EQ(writes.load(), 0);
}

TEST_F(OAuthHttp, ALegacySessionBelongsToItsSubject) {
    httplib::Client cli("127.0.0.1", port);
    const json init = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"},
                       {"params", {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object()},
                                   {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}};
    auto opened = cli.Post("/mcp", bearer(token("alice", "agency:read")), init.dump(),
                           "application/json");
    ASSERT_TRUE(opened);
    ASSERT_EQ(opened->status, 200) << opened->body;
    const std::string session = opened->get_header_value("Mcp-Session-Id");
    const json list = {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}};
    auto mine = cli.Post("/mcp", {{"Authorization", "Bearer " + token("alice", "agency:read")},
                                  {"Mcp-Session-Id", session}},
                         list.dump(), "application/json");
    ASSERT_TRUE(mine);
    EXPECT_EQ(mine->status, 200);
    auto theirs = cli.Post("/mcp", {{"Authorization", "Bearer " + token("mallory", "agency:read")},
                                    {"Mcp-Session-Id", session}},
                           list.dump(), "application/json");
    ASSERT_TRUE(theirs);
    EXPECT_EQ(theirs->status, 404);
}

// serve --read-only holds for keys too: a key holding the write scope neither sees nor runs an
// action tool.
TEST(ReadOnlyKeys, AWriteKeyGetsNoWriteScope) {
    agency::mcp::Server server;
    std::atomic<int> writes{0};
    agency::mcp::ToolDef writer;
    writer.name = "write_thing";
    writer.description = "Needs the write scope.";
    writer.input_schema = {{"type", "object"}};
    writer.required_scopes = {"write"};
    writer.handler = [&](const json&, agency::mcp::RequestContext&) {
        ++writes;
        return agency::mcp::ToolResult::text("written");
    };
    server.add_tool(std::move(writer));
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("agency-ro-keys-" + agency::crypto::random_hex(6) + ".json"))
                                 .string();
    const std::string key = agency::mcp::KeyStore::add(path, "w", {"read", "write"});
    auto keys = std::make_shared<agency::mcp::KeyStore>(agency::mcp::KeyStore::load(path));
    agency::mcp::HttpOptions options;
    options.port = 0;
    options.authenticator = agency::mcp::key_authenticator(keys, true);
    agency::mcp::HttpTransport transport(server, options);
    const int port = transport.start();
    httplib::Client cli("127.0.0.1", port);
    const json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                       {"io.modelcontextprotocol/clientCapabilities", json::object()}};
    httplib::Headers headers{{"Authorization", "Bearer " + key},
                             {"MCP-Protocol-Version", "2026-07-28"},
                             {"Mcp-Method", "tools/list"}};
    auto list = cli.Post("/mcp", headers,
                         json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"},
                              {"params", {{"_meta", meta}}}}.dump(),
                         "application/json");
    ASSERT_TRUE(list);
    EXPECT_EQ(list->status, 200);
    EXPECT_EQ(list->body.find("write_thing"), std::string::npos) << list->body;
    headers = {{"Authorization", "Bearer " + key}, {"MCP-Protocol-Version", "2026-07-28"},
               {"Mcp-Method", "tools/call"}, {"Mcp-Name", "write_thing"}};
    auto call = cli.Post("/mcp", headers,
                         json{{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/call"},
                              {"params", {{"name", "write_thing"}, {"arguments", json::object()},
                                          {"_meta", meta}}}}.dump(),
                         "application/json");
    ASSERT_TRUE(call);
    EXPECT_EQ(writes.load(), 0) << call->body;
    transport.stop();
    std::error_code ec;
    std::filesystem::remove(path, ec);
}

}  // namespace

// What a tools/call answer carries besides the tool's own result: the text beside
// structuredContent per era and option (ServerOptions::structured_text), the operator's
// result _meta (ServerOptions::result_meta, e.g. the sample-data flag), and progress notes
// from below the tool (base::ProgressNotes) as notifications/progress.
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/progress_notes.hpp"
#include "server/mcp_server.hpp"
#include "server/server_impl.hpp"

namespace {

using agency::mcp::Channel;
using agency::mcp::Inbound;
using agency::mcp::json;
using agency::mcp::RequestContext;
using agency::mcp::ResourceDef;
using agency::mcp::Server;
using agency::mcp::ServerOptions;
using agency::mcp::StructuredText;
using agency::mcp::ToolDef;
using agency::mcp::ToolResult;

constexpr const char* kSampleKey = "agency-mcp/sample-data";

const json kPage = {{"client_id", "demo-plumbing"},
                    {"resource", "keywords"},
                    {"rows", json::array({{{"id", 1}}, {{"id", 2}}, {{"id", 3}}})},
                    {"returned", 3},
                    {"total", 300},
                    {"next_cursor", "abc"}};

class NotifyingChannel : public Channel {
public:
    void send(const std::string& message) override {
        std::lock_guard lock(mutex_);
        messages_.push_back(json::parse(message));
    }
    bool can_send_requests() const override { return false; }
    std::vector<json> messages() {
        std::lock_guard lock(mutex_);
        return messages_;
    }

private:
    std::mutex mutex_;
    std::vector<json> messages_;
};

class AnswerShape : public ::testing::Test {
protected:
    std::unique_ptr<Server> server;
    std::shared_ptr<agency::mcp::Session> session;

    void make(ServerOptions options = {}) {
        options.state_secret = "answer-shape";
        server = std::make_unique<Server>(std::move(options));
        ToolDef page;
        page.name = "page";
        page.input_schema = {{"type", "object"}};
        page.handler = [](const json&, RequestContext&) {
            return ToolResult::structured(kPage.dump());
        };
        server->add_tool(std::move(page));
        ToolDef deploy;
        deploy.name = "deploy";
        deploy.input_schema = {{"type", "object"}};
        deploy.handler = [](const json&, RequestContext&) {
            ToolResult r = ToolResult::structured(
                json{{"ok", true}, {"article_id", "a-1"}, {"links", {1, 2}}}.dump());
            r.meta = {{"mine", 1}};
            return r;
        };
        server->add_tool(std::move(deploy));
        ToolDef broken;
        broken.name = "broken";
        broken.input_schema = {{"type", "object"}};
        broken.handler = [](const json&, RequestContext&) {
            return ToolResult::text(R"({"error":{"reason":"upstream"}})", true);
        };
        server->add_tool(std::move(broken));
        ToolDef retrying;
        retrying.name = "retrying";
        retrying.input_schema = {{"type", "object"}};
        retrying.handler = [](const json&, RequestContext&) {
            // What the gateway client does on each retry, from below the tool.
            agency::base::ProgressNotes::report("gateway answered 503; attempt 2 of 6 in 250 ms");
            agency::base::ProgressNotes::report("gateway answered 503; attempt 3 of 6 in 500 ms");
            return ToolResult::text("done");
        };
        server->add_tool(std::move(retrying));
        ResourceDef resource;
        resource.uri = "agency://x";
        resource.name = "x";
        resource.read = [](RequestContext&) {
            return json::array({{{"uri", "agency://x"}, {"text", "x"}}});
        };
        server->add_resource(std::move(resource));
        session = server->create_session("");
    }

    json modern(const std::string& method, json params, Channel* channel = nullptr) {
        params["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2026-07-28";
        params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json::object();
        Inbound in;
        in.channel = channel;
        return send(method, std::move(params), in);
    }
    json legacy(const std::string& method, json params) {
        Inbound in;
        in.session = session;
        if (session->protocol_version.empty()) {
            send("initialize",
                 {{"protocolVersion", "2025-06-18"},
                  {"capabilities", json::object()},
                  {"clientInfo", {{"name", "t"}, {"version", "1"}}}},
                 in);
            server->handle(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", in);
        }
        return send(method, std::move(params), in);
    }
    json send(const std::string& method, json params, const Inbound& in) {
        const json message = {
            {"jsonrpc", "2.0"}, {"id", next_id++}, {"method", method}, {"params", params}};
        auto text = server->handle(message.dump(), in);
        return text ? json::parse(text->text)["result"] : json(nullptr);
    }
    static std::string text_of(const json& result) { return result["content"][0]["text"]; }

    int next_id = 1;
};

// 2026-07-28 frameworks (@openai/agents, the AI SDK, Mastra) hand their model the text
// blocks only: the text is every member in compact lines and tables, not a summary.
TEST_F(AnswerShape, ModernListAnswerCarriesEveryRowAsCompactText) {
    make();
    const json r = modern("tools/call", {{"name", "page"}});
    EXPECT_EQ(r["structuredContent"], kPage);
    EXPECT_EQ(text_of(r),
              "client_id: demo-plumbing\nnext_cursor: abc\nresource: keywords\nreturned: 3\n"
              "rows (3):\nid\n1\n2\n3\ntotal: 300");
}

TEST_F(AnswerShape, ModernOtherAnswerCarriesEveryMember) {
    make();
    const json r = modern("tools/call", {{"name", "deploy"}});
    EXPECT_EQ(text_of(r), "article_id: a-1\nlinks: [1,2]\nok: true");
    EXPECT_EQ(r["_meta"]["mine"], 1);
}

// The legacy eras' spec asks for the serialized JSON in a text block as well.
TEST_F(AnswerShape, LegacyAnswerEchoesTheWholeJson) {
    make();
    const json r = legacy("tools/call", {{"name", "page"}});
    EXPECT_EQ(json::parse(text_of(r)), kPage);
    EXPECT_EQ(r["structuredContent"], kPage);
}

TEST_F(AnswerShape, TheOperatorChoosesFullCompactOrSummaryInEveryEra) {
    ServerOptions compact;
    compact.structured_text = StructuredText::compact;
    make(compact);
    EXPECT_EQ(text_of(legacy("tools/call", {{"name", "page"}})).rfind("client_id: demo-plumbing", 0),
              0u);
    ServerOptions summary;
    summary.structured_text = StructuredText::summary;
    make(summary);
    EXPECT_EQ(text_of(legacy("tools/call", {{"name", "page"}})).rfind("3 rows of keywords", 0), 0u);
    ServerOptions full;
    full.structured_text = StructuredText::full;
    make(full);
    EXPECT_EQ(json::parse(text_of(modern("tools/call", {{"name", "page"}}))), kPage);
}

TEST_F(AnswerShape, ToolErrorsKeepTheirText) {
    make();
    const json r = modern("tools/call", {{"name", "broken"}});
    EXPECT_TRUE(r["isError"].get<bool>());
    EXPECT_EQ(text_of(r), R"({"error":{"reason":"upstream"}})");
}

// result_meta (sample data) reaches every tools/call answer, both eras, errors included, and
// resources/read; it merges with the tool's own _meta and the modern serverInfo.
TEST_F(AnswerShape, ResultMetaIsOnEveryAnswer) {
    ServerOptions options;
    options.result_meta = {{kSampleKey, true}};
    make(options);
    const json ok = modern("tools/call", {{"name", "deploy"}});
    EXPECT_EQ(ok["_meta"][kSampleKey], true);
    EXPECT_EQ(ok["_meta"]["mine"], 1);
    EXPECT_TRUE(ok["_meta"].contains("io.modelcontextprotocol/serverInfo"));
    EXPECT_EQ(modern("tools/call", {{"name", "broken"}})["_meta"][kSampleKey], true);
    EXPECT_EQ(legacy("tools/call", {{"name", "page"}})["_meta"][kSampleKey], true);
    EXPECT_EQ(legacy("tools/call", {{"name", "broken"}})["_meta"][kSampleKey], true);
    EXPECT_EQ(modern("resources/read", {{"uri", "agency://x"}})["_meta"][kSampleKey], true);
    EXPECT_EQ(legacy("resources/read", {{"uri", "agency://x"}})["_meta"][kSampleKey], true);
}

TEST_F(AnswerShape, NoResultMetaByDefault) {
    make();
    EXPECT_FALSE(legacy("tools/call", {{"name", "page"}}).contains("_meta"));
    EXPECT_FALSE(legacy("resources/read", {{"uri", "agency://x"}}).contains("_meta"));
}

// Notes from below the tool become notifications/progress, strictly increasing, only for a
// caller that sent a progressToken.
TEST_F(AnswerShape, ProgressNotesReachACallerThatAskedForProgress) {
    make();
    NotifyingChannel asked;
    modern("tools/call", {{"name", "retrying"}, {"_meta", {{"progressToken", "p1"}}}}, &asked);
    const auto messages = asked.messages();
    ASSERT_EQ(messages.size(), 2u);
    EXPECT_EQ(messages[0]["method"], "notifications/progress");
    EXPECT_EQ(messages[0]["params"]["progressToken"], "p1");
    EXPECT_EQ(messages[0]["params"]["progress"], 1);
    EXPECT_EQ(messages[0]["params"]["message"], "gateway answered 503; attempt 2 of 6 in 250 ms");
    EXPECT_EQ(messages[1]["params"]["progress"], 2);

    NotifyingChannel silent;
    modern("tools/call", {{"name", "retrying"}}, &silent);
    EXPECT_TRUE(silent.messages().empty());
}

// The summary reads only the top level: brackets, commas and quotes inside strings or nested
// values do not confuse the count, and whatever is not an object says less, never throws.
TEST(StructuredSummary, CountsRowsPastTrickyStringsAndNesting) {
    const json page = {{"rows", json::array({{{"t", "a,b]}\"{["}, {"n", {1, 2, {{"x", "]"}}}}},
                                             {{"t", "\\"}},
                                             json::array({1, 2})})},
                       {"truncated", true},
                       {"note", "rows past 256 KB were left out"},
                       {"next_cursor", nullptr}};
    EXPECT_EQ(agency::mcp::structured_summary(page.dump()),
              "3 rows; truncated to fit the answer. Note: rows past 256 KB were left out. Full "
              "rows in structuredContent.");
    EXPECT_EQ(agency::mcp::structured_summary(page.dump(2)),
              agency::mcp::structured_summary(page.dump()))
        << "whitespace changes nothing";
    EXPECT_EQ(agency::mcp::structured_summary(R"({"rows":[],"total":0})"),
              "0 rows (total 0). Full rows in structuredContent.");
    EXPECT_EQ(agency::mcp::structured_summary(R"({"rows":[{}]})"),
              "1 row. Full rows in structuredContent.");
    EXPECT_EQ(agency::mcp::structured_summary(R"({"title":"say \"hi\"","meta":{"a":[1,2]}})"),
              "Result in structuredContent: title=\"say \"hi\"\", meta {...}.");
    for (const char* odd : {"[1,2]", "\"text\"", "{\"a\":", "", "{\"a\" 1}", "{}"})
        EXPECT_EQ(agency::mcp::structured_summary(odd).rfind("Result in structuredContent", 0), 0u)
            << odd;
}

}  // namespace

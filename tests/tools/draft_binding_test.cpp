// Outreach drafts bound to the caller that made them (issue 30): another key's email_id reads
// exactly as an unknown one in send_prospect_email (preview and confirmed call), so no POST
// reaches the gateway; the maker reads it from any instance sharing the store. On a SQLite file
// and a real PostgreSQL database (tests/pg_cluster.hpp), two instances on each; and drafts
// written before the binding (schema version 4) go to `local`.
#include <sqlite3.h>

#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "server/mcp_server.hpp"
#include "base/crypto.hpp"
#include "tests/pg_cluster.hpp"
#include "state/pg_store.hpp"
#include "state/sqlite_store.hpp"
#include "tests/support/action_tool_harness.hpp"
#include "tests/support/principals.hpp"
#include "tests/support/shared_store.hpp"
#include "tests/tool_harness.hpp"
#include "tests/support/sample_clients.hpp"
#include "tools/actions/action_tools.hpp"
#include "tools/registry.hpp"

// Named: the tests are built as unity batches, where another file's anonymous names meet these.
namespace draft_binding_test {

using namespace agency::testing::tool_names;
using json = nlohmann::json;
namespace fs = std::filesystem;

using namespace agency::testing::sample_clients;
constexpr const char* kProspect = "https://legal-resources.example/guides";

Principal key(const std::string& name) { return agency::testing::key_principal(name); }

using Backend = agency::testing::StoreBackend;

struct SharedState : agency::testing::SharedStore {
    explicit SharedState(Backend b) : SharedStore(b, "agency-drafts-") {}
};

// One server instance: every tool, the action tools over its own connection to the store.
struct Instance : agency::testing::ActionToolHarness {
    Instance(const SharedState& state, const std::string& id)
        : ActionToolHarness({}, settings_for(state, id)) {}
    static agency::tools::ActionSettings settings_for(const SharedState& state,
                                                      const std::string& id) {
        agency::tools::ActionSettings settings;
        settings.store = state.open();
        settings.sharing.instance_id = id;
        return settings;
    }
    std::size_t sends() const { return h->gw->count_requests("POST", "send_prospect_email"); }
    std::string draft(const Principal& who) {
        ToolReply r = h->call_as(who, "generate_outreach_email",
                                 {{"client_id", kLaw}, {"prospect", kProspect}});
        EXPECT_FALSE(r.is_error()) << r.response.dump();
        return r.structured().value("email_id", "");
    }
};

std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
    return info.param == Backend::sqlite ? "sqlite" : "postgres";
}

// What an unknown id answers (the result, not the request's id), with the id in it replaced:
// the two answers must be identical.
std::string answer_of(const ToolReply& r, const std::string& id) {
    std::string text = r.result.dump();
    for (auto at = text.find(id); at != std::string::npos; at = text.find(id, at))
        text.replace(at, id.size(), "ID");
    return text;
}

class DraftBinding : public ::testing::TestWithParam<Backend> {
protected:
    SharedState state_{GetParam()};
};

// Bob holds Alice's email_id: the preview, a confirmation of his own and a chosen recipient
// all answer as for an unknown id, on her instance and on another; nothing is sent.
TEST_P(DraftBinding, AnotherKeysDraftAnswersAsAnUnknownId) {
    Instance a(state_, "i_a"), b(state_, "i_b");
    const std::string email_id = a.draft(key("alice"));
    ASSERT_FALSE(email_id.empty());
    const json theirs = {
        {"client_id", kLaw}, {"email_id", email_id}, {"recipient", "bob@evil.example"}};
    const json unknown = {{"client_id", kLaw},
                          {"email_id", "em_0123456789abcdef"},
                          {"recipient", "bob@evil.example"}};
    for (Instance* at : {&a, &b}) {
        ToolReply stolen = at->h->call_as(key("bob"), "send_prospect_email", theirs);
        ToolReply none = at->h->call_as(key("bob"), "send_prospect_email", unknown);
        EXPECT_EQ(stolen.reason(), "not_found") << stolen.response.dump();
        EXPECT_EQ(answer_of(stolen, email_id), answer_of(none, "em_0123456789abcdef"));
        json confirmed = theirs;
        confirmed["confirmation_id"] = "cf_00000000000000000000000000000000";
        EXPECT_EQ(at->h->call_as(key("bob"), "send_prospect_email", confirmed).reason(),
                  "not_found");
        EXPECT_EQ(at->sends(), 0u);
    }
    // Not even `local` (stdio, or HTTP without auth) reaches a key's draft.
    EXPECT_EQ(b.h->call("send_prospect_email", theirs).reason(), "not_found");

    // Alice reads her draft on the other instance, and sends it confirmed with the
    // confirmation that instance gave (each harness has its own sample gateway: the send goes
    // to the one that drafted it).
    ToolReply preview = b.h->call_as(key("alice"), "send_prospect_email",
                                     {{"client_id", kLaw}, {"email_id", email_id}});
    ASSERT_FALSE(preview.is_error()) << preview.response.dump();
    EXPECT_EQ(preview.structured()["preview"]["to"], "editor@legal-resources.example");
    ToolReply sent = a.h->call_as(key("alice"), "send_prospect_email",
                                  {{"client_id", kLaw},
                                   {"email_id", email_id},
                                   {"confirmation_id", preview.structured()["confirmation_id"]}});
    ASSERT_FALSE(sent.is_error()) << sent.response.dump();
    EXPECT_EQ(a.sends(), 1u);
    EXPECT_EQ(b.sends(), 0u);
    // Once sent, Bob still hears "unknown", not "already sent".
    EXPECT_EQ(a.h->call_as(key("bob"), "send_prospect_email", theirs).reason(), "not_found");
}

TEST_P(DraftBinding, TheStoreReadsADraftOnlyForItsMaker) {
    auto store = state_.open();
    const auto d = store->create_draft({.client_id = kLaw,
                                        .recipient = "r@example.com",
                                        .subject = "s",
                                        .html = "h",
                                        .principal = "key:alice"});
    ASSERT_TRUE(store->draft(d.id, "key:alice"));
    EXPECT_EQ(store->draft(d.id, "key:alice")->principal, "key:alice");
    EXPECT_FALSE(store->draft(d.id, "key:bob"));
    EXPECT_FALSE(store->draft(d.id, "local"));
    EXPECT_FALSE(store->draft(d.id, "")) << "an unbound row is nobody's";
    const auto unbound = store->create_draft({.client_id = kLaw, .subject = "s", .html = "h"});
    EXPECT_FALSE(store->draft(unbound.id, ""));
}

INSTANTIATE_TEST_SUITE_P(Stores, DraftBinding,
                         ::testing::Values(Backend::sqlite, Backend::postgres), backend_name);

// --- drafts written before the binding (schema version 4) -----------------------------------

class DraftBindingMigration : public ::testing::TestWithParam<Backend> {
protected:
    SharedState state_{GetParam()};
};

// A version 4 database: its drafts table has no principal column. The migration adds it and
// gives the old drafts to `local`; keys never reach them.
TEST_P(DraftBindingMigration, Version5GivesOldDraftsToLocal) {
    const char* kOld =
        "INSERT INTO drafts (id, client_id, recipient, subject, html, status, gateway_id, "
        "prospect_url, created_at) VALUES ('em_old', 'demo-law', 'r@example.com', 's', 'h', "
        "'draft', '', 'u', 1)";
    {
        auto store = state_.open();
        store->draft("em_none", "local");  // creates it, at the current version
    }
    if (state_.backend == Backend::postgres) {
        agency::testing::pg_exec(state_.where, "ALTER TABLE drafts DROP COLUMN principal");
        agency::testing::pg_exec(state_.where, kOld);
        agency::testing::pg_exec(state_.where, "UPDATE agency_schema SET version = 4");
        agency::state::PgStore::migrate(state_.where);
    } else {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(state_.where.c_str(), &db), SQLITE_OK);
        // The version 4 table, without the column.
        const std::string v4 =
            "DROP TABLE drafts; CREATE TABLE drafts (id TEXT PRIMARY KEY, client_id TEXT NOT "
            "NULL, recipient TEXT NOT NULL, subject TEXT NOT NULL, html TEXT NOT NULL, status "
            "TEXT NOT NULL CHECK (status IN ('draft','sent')), gateway_id TEXT, prospect_url "
            "TEXT, created_at INTEGER NOT NULL)";
        for (const std::string& sql :
             {v4, std::string(kOld), std::string("PRAGMA user_version = 4")})
            ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sql;
        sqlite3_close(db);
    }
    auto store = state_.open();
    EXPECT_EQ(store->schema_version(), agency::state::kSchemaVersion);
    ASSERT_TRUE(store->draft("em_old", "local"));
    EXPECT_EQ(store->draft("em_old", "local")->recipient, "r@example.com");
    EXPECT_FALSE(store->draft("em_old", "key:alice"));
}

INSTANTIATE_TEST_SUITE_P(Stores, DraftBindingMigration,
                         ::testing::Values(Backend::sqlite, Backend::postgres), backend_name);

}  // namespace draft_binding_test

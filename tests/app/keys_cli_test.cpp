// keys list / remove / rotate through the real binary, a running `serve --http` following the
// keys file (a removed or rotated key gets 401 without a restart), a keys file that does not
// exist, and an https gateway behind a private CA (SSL_CERT_FILE / SSL_CERT_DIR).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "base/clock.hpp"
#include "base/crypto.hpp"
#include "state/sqlite_store.hpp"
#include "tools/pipeline/budgets.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "net/server_thread.hpp"
#include "tests/run_binary.hpp"
#include "tests/support/initialize_status.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/tool_call.hpp"
#include "tests/support/wait.hpp"
#include "tests/support/text.hpp"
#include "transport/keys.hpp"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

using agency::testing::Outcome;

using agency::testing::slurp;

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

const std::string kClean =
    "env -u AGENCY_GATEWAY_URL -u AGENCY_KEYS_FILE -u AGENCY_LOG_LEVEL -u AGENCY_LOG_FILE "
    "-u SSL_CERT_FILE -u SSL_CERT_DIR ";

class KeysCli : public ::testing::Test {
protected:
    fs::path dir = fs::temp_directory_path() / ("agency-keys-cli-" + agency::crypto::random_hex(6));
    fs::path keys = dir / "keys.json";
    std::shared_ptr<agency::sample::Gateway> gw = std::make_shared<agency::sample::Gateway>();
    agency::sample::Server gateway_server{gw};
    pid_t server_pid = -1;

    void SetUp() override {
        fs::create_directories(dir);
        gateway_server.start("127.0.0.1", 0);
    }
    void TearDown() override {
        stop_server();
        std::error_code ec;
        fs::remove_all(dir, ec);
    }

    Outcome run(const std::string& args, const std::string& env = "", const std::string& input = "") {
        return agency::testing::run_command(
            dir, kClean + env + " '" + AGENCY_BINARY + "' " + args, input);
    }

    std::string add(const std::string& name, const std::string& scopes) {
        const Outcome r = run("keys add --name " + name + " --scopes " + scopes, "AGENCY_KEYS_FILE=" + keys.string());
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return trimmed(r.out);
    }

    // `serve --http` in the background; returns its port (0 when it did not start).
    int start_server(const std::string& args) {
        const fs::path err = dir / "server.err";
        const std::string command = "exec " + kClean + " '" + std::string(AGENCY_BINARY) +
                                    "' serve --http --listen 127.0.0.1:0 --state-db :memory: " +
                                    args + " < /dev/null > /dev/null 2> '" + err.string() + "'";
        server_pid = fork();
        if (server_pid == 0) {
            execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        const std::regex url(R"(MCP over Streamable HTTP at http://127\.0\.0\.1:(\d+)/mcp)");
        int port = 0;
        const bool started = agency::testing::eventually(
            [&] {
                std::smatch m;
                const std::string text = slurp(err);
                if (std::regex_search(text, m, url)) port = std::stoi(m[1]);
                return port != 0;
            },
            15000ms, 50ms);
        if (started) return port;
        ADD_FAILURE() << "the server did not start: " << slurp(err);
        return 0;
    }
    void stop_server() {
        if (server_pid <= 0) return;
        kill(server_pid, SIGTERM);
        int status = 0;
        waitpid(server_pid, &status, 0);
        server_pid = -1;
    }
};

using agency::testing::initialize_status;

TEST_F(KeysCli, ListShowsNamesScopesAndTimesButNeverAKeyOrHash) {
    const std::string alice = add("alice", "read,write");
    add("bob", "read");
    const Outcome list = run("keys list --keys-file " + keys.string());
    EXPECT_EQ(list.exit_code, 0) << list.err;
    EXPECT_NE(list.out.find("NAME"), std::string::npos);
    EXPECT_TRUE(std::regex_search(list.out, std::regex(R"(alice\s+read,write\s+\d{4}-\d\d-\d\dT)")))
        << list.out;
    EXPECT_TRUE(std::regex_search(list.out, std::regex(R"(bob\s+read\s)"))) << list.out;
    EXPECT_EQ(list.out.find(alice), std::string::npos);
    EXPECT_EQ(list.out.find(agency::crypto::sha256_hex(alice)), std::string::npos);
    EXPECT_EQ(list.out.find("amcp_"), std::string::npos);
}

TEST_F(KeysCli, RemoveAndRotateRewriteTheFileAtomicallyAndKeepItPrivate) {
    const std::string alice = add("alice", "read,write");
    add("bob", "read");

    const std::string before = slurp(keys);
    const Outcome unknown = run("keys remove --name carol --keys-file " + keys.string());
    EXPECT_NE(unknown.exit_code, 0);
    EXPECT_NE(unknown.err.find("no key named \"carol\""), std::string::npos) << unknown.err;
    EXPECT_NE(unknown.err.find("alice, bob"), std::string::npos) << unknown.err;
    EXPECT_EQ(slurp(keys), before);  // bad input changes nothing
    EXPECT_NE(run("keys rotate --name carol --keys-file " + keys.string()).exit_code, 0);
    EXPECT_EQ(slurp(keys), before);

    const Outcome rotated = run("keys rotate --name alice --keys-file " + keys.string());
    ASSERT_EQ(rotated.exit_code, 0) << rotated.err;
    const std::string fresh = trimmed(rotated.out);
    EXPECT_EQ(fresh.rfind("amcp_", 0), 0u);
    EXPECT_NE(fresh, alice);
    json doc = json::parse(slurp(keys));
    ASSERT_EQ(doc["keys"].size(), 2u);
    EXPECT_EQ(doc["keys"][0]["name"], "alice");
    EXPECT_EQ(doc["keys"][0]["scopes"], json::array({"read", "write"}));
    EXPECT_EQ(doc["keys"][0]["hash"], agency::crypto::sha256_hex(fresh));
    EXPECT_TRUE(doc["keys"][0].contains("rotated_at"));

    ASSERT_EQ(run("keys remove --name bob --keys-file " + keys.string()).exit_code, 0);
    doc = json::parse(slurp(keys));
    ASSERT_EQ(doc["keys"].size(), 1u);
    EXPECT_EQ(doc["keys"][0]["name"], "alice");

    struct stat st {};
    ASSERT_EQ(::stat(keys.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    for (const auto& entry : fs::directory_iterator(dir))  // no temporary file left behind
        EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos);
}

// The running server re-reads the keys file when it changes: no restart needed.
TEST_F(KeysCli, RunningServerRefusesARemovedOrRotatedKeyAtOnce) {
    const std::string alice = add("alice", "read,write");
    const std::string bob = add("bob", "read");
    const int port = start_server("--gateway-url " + gateway_server.base_url() + " --keys-file " +
                                  keys.string());
    ASSERT_GT(port, 0);
    EXPECT_EQ(initialize_status(port, alice), 200);
    EXPECT_EQ(initialize_status(port, bob), 200);
    EXPECT_EQ(initialize_status(port, ""), 401);

    ASSERT_EQ(run("keys remove --name bob --keys-file " + keys.string()).exit_code, 0);
    EXPECT_EQ(initialize_status(port, bob), 401);
    EXPECT_EQ(initialize_status(port, alice), 200);

    const Outcome rotated = run("keys rotate --name alice --keys-file " + keys.string());
    const std::string fresh = trimmed(rotated.out);
    EXPECT_EQ(initialize_status(port, alice), 401);
    EXPECT_EQ(initialize_status(port, fresh), 200);

    // Every key removed: authentication stays on, and everyone is refused.
    ASSERT_EQ(run("keys remove --name alice --keys-file " + keys.string()).exit_code, 0);
    EXPECT_EQ(initialize_status(port, fresh), 401);
    EXPECT_EQ(initialize_status(port, ""), 401);
    const std::string carol = add("carol", "read");
    EXPECT_EQ(initialize_status(port, carol), 200);
}

// One modern (stateless) tools/call over HTTP with this key: the JSON-RPC response (an SSE
// answer's data line, or the JSON body).
json call_tool(int port, const std::string& key, const std::string& tool, const json& args) {
    httplib::Client client("127.0.0.1", port);
    httplib::Headers headers{{"Accept", "application/json, text/event-stream"},
                             {"MCP-Protocol-Version", "2026-07-28"},
                             {"Mcp-Method", "tools/call"},
                             {"Mcp-Name", tool},
                             {"X-API-Key", key}};
    const json body = agency::testing::modern_tool_call(1, tool, args);
    auto res = client.Post("/mcp", headers, body.dump(), "application/json");
    if (!res) return nullptr;
    std::string text = res->body;
    if (const auto data = text.find("data: "); data != std::string::npos) {
        text = text.substr(data + 6);
        text = text.substr(0, text.find('\n'));
    }
    return json::parse(text, nullptr, false);
}

std::set<std::string> listed_clients(const json& reply) {
    std::set<std::string> ids;
    for (const json& row : reply["result"]["structuredContent"]["rows"]) ids.insert(row["id"]);
    return ids;
}

// Issue 35: keys add --clients limits a key, a running server refuses another client as an
// unknown one (no gateway request), narrows list_clients, and keys update widens the key
// without a restart; keys list shows the clients and budget.
TEST_F(KeysCli, ClientsOfAKeyLimitWhatItReachesAndKeysUpdateWidensThemLive) {
    const Outcome made = run("keys add --name law --scopes read --clients demo-law "
                             "--monthly-actions 3 --keys-file " + keys.string());
    ASSERT_EQ(made.exit_code, 0) << made.err;
    const std::string law = trimmed(made.out);
    json doc = json::parse(slurp(keys));
    EXPECT_EQ(doc["keys"][0]["clients"], json::array({"demo-law"}));
    EXPECT_EQ(doc["keys"][0]["monthly_actions"], 3);
    const Outcome listed = run("keys list --keys-file " + keys.string());
    EXPECT_TRUE(
        std::regex_search(listed.out, std::regex(R"(law\s+read\s.*\s(\d+/)?3\s+demo-law)")))
        << listed.out;
    const Outcome bad = run("keys add --name x --clients 'a b' --keys-file " + keys.string());
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("space"), std::string::npos) << bad.err;

    const int port = start_server("--gateway-url " + gateway_server.base_url() + " --keys-file " +
                                  keys.string());
    ASSERT_GT(port, 0);
    EXPECT_EQ(listed_clients(call_tool(port, law, "list_clients", json::object())),
              std::set<std::string>{"demo-law"});
    const std::size_t before = gw->request_log().size();
    const json other = call_tool(port, law, "get_client", {{"client_id", "demo-plumbing"}});
    const json nowhere = call_tool(port, law, "get_client", {{"client_id", "demo-nowhere"}});
    EXPECT_EQ(gw->request_log().size(), before);
    ASSERT_TRUE(other["result"].value("isError", false)) << other.dump();
    const std::string text = other["result"]["content"][0]["text"];
    EXPECT_NE(text.find("not_found"), std::string::npos) << text;
    std::string nowhere_text = nowhere["result"]["content"][0]["text"];
    nowhere_text = std::regex_replace(nowhere_text, std::regex("demo-nowhere"), "demo-plumbing");
    EXPECT_EQ(text, nowhere_text);

    const Outcome widened = run("keys update --name law --clients demo-law,demo-plumbing "
                                "--keys-file " + keys.string());
    ASSERT_EQ(widened.exit_code, 0) << widened.err;
    EXPECT_EQ(json::parse(slurp(keys))["keys"][0]["hash"], agency::crypto::sha256_hex(law));
    EXPECT_EQ(listed_clients(call_tool(port, law, "list_clients", json::object())),
              (std::set<std::string>{"demo-law", "demo-plumbing"}));
    const json now = call_tool(port, law, "get_client", {{"client_id", "demo-plumbing"}});
    EXPECT_FALSE(now["result"].value("isError", true)) << now.dump();

    ASSERT_EQ(run("keys update --name law --all-clients --no-monthly-actions --keys-file " +
                  keys.string()).exit_code, 0);
    doc = json::parse(slurp(keys));
    EXPECT_FALSE(doc["keys"][0].contains("clients"));
    EXPECT_FALSE(doc["keys"][0].contains("monthly_actions"));
    EXPECT_GE(listed_clients(call_tool(port, law, "list_clients", json::object())).size(), 3u);
    EXPECT_NE(run("keys update --name law --keys-file " + keys.string()).exit_code, 0);
}

// A keys file written before issue 35 (no clients, no monthly_actions) keeps working; a
// malformed one is refused at start naming the key.
TEST_F(KeysCli, OldKeysFilesWorkAndBadClientsAreRefusedNamingTheKey) {
    const std::string alice = add("alice", "read");
    EXPECT_FALSE(json::parse(slurp(keys))["keys"][0].contains("clients"));
    json doc = json::parse(slurp(keys));
    doc["keys"][0]["monthly_actions"] = -1;
    std::ofstream(keys) << doc.dump();
    const Outcome listed = run("keys list --keys-file " + keys.string());
    EXPECT_NE(listed.exit_code, 0);
    EXPECT_NE(listed.err.find("key \"alice\": \"monthly_actions\""), std::string::npos)
        << listed.err;
    doc["keys"][0].erase("monthly_actions");
    doc["keys"][0]["clients"] = "demo-law";
    std::ofstream(keys) << doc.dump();
    EXPECT_NE(run("keys list --keys-file " + keys.string()).err.find("list of client ids"),
              std::string::npos);
}

TEST_F(KeysCli, ServeRefusesAKeysFileThatDoesNotExist) {
    const fs::path missing = dir / "typo-keys.json";
    const Outcome r = run("serve --http --listen 127.0.0.1:0 --state-db :memory: --gateway-url " +
                      gateway_server.base_url() + " --keys-file " + missing.string());
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("does not exist, so HTTP requests would NOT be authenticated"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("agency-mcp keys add --name NAME --keys-file " + missing.string()),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(missing));
    // The same through the environment.
    const Outcome env = run("serve --http --listen 127.0.0.1:0 --state-db :memory: --gateway-url " +
                            gateway_server.base_url(),
                        "AGENCY_KEYS_FILE=" + missing.string());
    EXPECT_NE(env.exit_code, 0);
    EXPECT_NE(env.err.find("does not exist"), std::string::npos) << env.err;
}

// One default keys file for `keys` and `serve --http` (issue 49): beyond loopback without one,
// the refusal names --keys-file; after `keys add` with no --keys-file, serve reads the file it
// wrote; and the start line says whether HTTP callers are authenticated.
TEST_F(KeysCli, ServeReadsTheDefaultKeysFileAndSaysWhetherCallersAreAuthenticated) {
    const std::string home = "HOME=" + dir.string() + " XDG_CONFIG_HOME= ";
    const std::string serve = "timeout -s TERM 2 '" + std::string(AGENCY_BINARY) +
                              "' serve --http --state-db :memory: --gateway-url " +
                              gateway_server.base_url();
    const auto serve_for_a_while = [&](const std::string& listen) {
        return agency::testing::run_command(dir, kClean + home + serve + " --listen " + listen);
    };
    const Outcome open = serve_for_a_while("127.0.0.1:0");
    EXPECT_NE(open.err.find("HTTP callers are NOT authenticated"), std::string::npos) << open.err;
    const Outcome refused = serve_for_a_while("0.0.0.0:0");
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_NE(refused.err.find("--keys-file FILE or AGENCY_KEYS_FILE"), std::string::npos)
        << refused.err;

    const Outcome added = run("keys add --name alice", home);
    ASSERT_EQ(added.exit_code, 0) << added.err;
    const fs::path fallback = dir / ".config" / "agency-mcp" / "keys.json";
    ASSERT_TRUE(fs::exists(fallback));
    const Outcome keyed = serve_for_a_while("0.0.0.0:0");
    EXPECT_EQ(keyed.err.find("refusing"), std::string::npos) << keyed.err;
    EXPECT_NE(keyed.err.find("HTTP callers need a key: 1 key(s) in " + fallback.string() +
                             " (the default keys file"),
              std::string::npos)
        << keyed.err;
    EXPECT_EQ(keyed.err.find("NOT authenticated"), std::string::npos) << keyed.err;
}

// --- An https gateway signed by a private CA --------------------------------------------------

bool make_ca_and_cert(const fs::path& d) {
    const std::string script =
        "cd '" + d.string() + "' && "
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj '/CN=agency test CA' "
        "-keyout ca.key -out ca.pem >/dev/null 2>&1 && "
        "openssl req -newkey rsa:2048 -nodes -subj '/CN=127.0.0.1' -keyout server.key "
        "-out server.csr >/dev/null 2>&1 && "
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > ext.cnf && "
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-extfile ext.cnf -out server.pem >/dev/null 2>&1 && "
        "mkdir certs && cp ca.pem certs/ && openssl rehash certs >/dev/null 2>&1";
    return std::system(script.c_str()) == 0;
}

// An https front for the sample gateway: every request passed on as it came.
struct TlsGateway {
    httplib::SSLServer http;
    agency::net::ServerThread serving;  // after http: stopped before http is destroyed
    int port = 0;
    TlsGateway(const fs::path& d, const std::string& backend_host, int backend_port)
        : http((d / "server.pem").c_str(), (d / "server.key").c_str()) {
        auto forward = [backend_host, backend_port](const httplib::Request& req,
                                                    httplib::Response& res) {
            httplib::Client backend(backend_host, backend_port);
            httplib::Headers headers;
            for (const auto& [k, v] : req.headers)
                if (k == "X-API-Key" || k == "Authorization" || k == "Idempotency-Key")
                    headers.emplace(k, v);
            const std::string target = req.target.empty() ? req.path : req.target;
            auto answer = req.method == "POST"
                              ? backend.Post(target.c_str(), headers, req.body, "application/json")
                              : backend.Get(target.c_str(), headers);
            if (!answer) {
                res.status = 502;
                return;
            }
            res.status = answer->status;
            res.set_content(answer->body, answer->get_header_value("Content-Type"));
        };
        http.Get(".*", forward);
        http.Post(".*", forward);
        port = serving.start(http, {});
    }
};

TEST_F(KeysCli, HttpsGatewayOfAPrivateCaNeedsSslCertFileOrDir) {
    ASSERT_TRUE(make_ca_and_cert(dir)) << "openssl could not make the test CA";
    const std::string base = gateway_server.base_url();
    const std::smatch m = [&] {
        std::smatch out;
        std::regex_search(base, out, std::regex(R"(http://127\.0\.0\.1:(\d+)(/.*)?)"));
        return out;
    }();
    ASSERT_FALSE(m.empty()) << base;
    TlsGateway tls(dir, "127.0.0.1", std::stoi(m[1]));
    ASSERT_TRUE(tls.http.is_valid());
    const std::string url = "https://127.0.0.1:" + std::to_string(tls.port) + m[2].str();
    const std::string args = "serve --state-db :memory: --gateway-url " + url;
    const std::string list = json{{"jsonrpc", "2.0"}, {"id", 7}, {"method", "tools/list"},
                                  {"params", {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}, {"io.modelcontextprotocol/clientCapabilities", json::object()}}}}}}
                                 .dump() + "\n";

    const Outcome refused = run(args, "", list);
    EXPECT_NE(refused.exit_code, 0);
    // Refused, not waited for: waiting does not mend a certificate.
    EXPECT_NE(refused.err.find("not signed by a CA this machine trusts"), std::string::npos)
        << refused.err;
    EXPECT_NE(refused.err.find("SSL_CERT_FILE"), std::string::npos) << refused.err;

    for (const std::string& env : {"SSL_CERT_FILE=" + (dir / "ca.pem").string(),
                                   "SSL_CERT_DIR=" + (dir / "certs").string()}) {
        const Outcome served = run(args, env, list);
        EXPECT_EQ(served.exit_code, 0) << env << "\n" << served.err;
        EXPECT_NE(served.err.find("gateway " + url + " answered"), std::string::npos) << served.err;
        EXPECT_NE(served.out.find("\"list_clients\""), std::string::npos) << env << served.out;
    }
}

}  // namespace

// keys list reads the budget use of this window from the server's store (issue 35, item 3),
// and without a store shows the limit alone and creates nothing.
TEST_F(KeysCli, KeysListShowsTheBudgetUsedThisWindow) {
    const Outcome made = run("keys add --name writer --scopes read,write --monthly-actions 5 "
                             "--keys-file " + keys.string());
    ASSERT_EQ(made.exit_code, 0) << made.err;
    const fs::path db = dir / "state.db";
    {
        agency::state::SqliteStore store(db.string());
        const std::int64_t start =
            agency::tools::budget_window_at(agency::tools::BudgetWindow::month,
                                            agency::base::Clock::system().unix_s())
                .start;
        for (int i = 0; i < 2; ++i) ASSERT_TRUE(store.take_budget("key:writer", start, 5).granted);
    }
    const Outcome listed =
        run("keys list --keys-file " + keys.string() + " --state-db " + db.string());
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    EXPECT_TRUE(std::regex_search(listed.out, std::regex(R"(writer\s+read,write\s.*\s2/5\s)")))
        << listed.out;
    const fs::path none = dir / "none.db";
    const Outcome bare =
        run("keys list --keys-file " + keys.string() + " --state-db " + none.string());
    EXPECT_TRUE(std::regex_search(bare.out, std::regex(R"(writer\s+read,write\s.*\s5\s)")))
        << bare.out;
    EXPECT_FALSE(fs::exists(none)) << "keys list created a state database";
}


namespace {

// The name,key lines keys import prints: {name: key}.
std::map<std::string, std::string> listed_keys(const std::string& text) {
    std::map<std::string, std::string> out;
    std::istringstream lines(text);
    std::string line;
    std::getline(lines, line);
    EXPECT_EQ(line, "name,key");
    while (std::getline(lines, line)) {
        // "name" (quoted, quotes doubled),key
        const auto comma = line.rfind(',');
        if (comma == std::string::npos || comma < 2 || line.front() != '"') continue;
        std::string name = line.substr(1, comma - 2);
        for (std::size_t at = name.find("\"\""); at != std::string::npos; at = name.find("\"\"", at + 1))
            name.erase(at, 1);
        out[name] = line.substr(comma + 1);
    }
    return out;
}

}  // namespace

// A team's keys from one CSV (issue 49): each printed once and each working as its own caller
// with its own scopes, clients and budget; a file that would add a name twice, a bad scope or
// an existing name imports nothing.
TEST_F(KeysCli, ImportCreatesEveryKeyOfACsvOrNone) {
    add("ops", "read");
    const fs::path csv = dir / "team.csv";
    std::ofstream(csv) << "\xEF\xBB\xBF" "name,scopes,clients,monthly_actions\r\n"
                          "alice,read;write,,\r\n"
                          "\"bob, contractor\",read,demo-law,3\r\n"
                          "# a comment line\r\n"
                          "carol,\"read,write\",demo-law;demo-dental,0\r\n";
    const Outcome imported = run("keys import '" + csv.string() + "' --keys-file " + keys.string());
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
    EXPECT_NE(imported.err.find("created 3 key(s)"), std::string::npos) << imported.err;
    const auto made = listed_keys(imported.out);
    ASSERT_EQ(made.size(), 3u) << imported.out;
    EXPECT_NE(imported.out.find("\n\"bob, contractor\",amcp_"), std::string::npos)
        << "a name with a comma is one quoted cell: " << imported.out;
    const json doc = json::parse(slurp(keys));
    ASSERT_EQ(doc["keys"].size(), 4u);
    EXPECT_EQ(doc["keys"][1]["scopes"], json::array({"read", "write"}));
    EXPECT_EQ(doc["keys"][2]["name"], "bob, contractor");
    EXPECT_EQ(doc["keys"][2]["clients"], json::array({"demo-law"}));
    EXPECT_EQ(doc["keys"][2]["monthly_actions"], 3);
    EXPECT_EQ(doc["keys"][3]["clients"], json::array({"demo-law", "demo-dental"}));
    EXPECT_EQ(doc["keys"][3]["monthly_actions"], 0);
    EXPECT_EQ(slurp(keys).find(made.at("alice")), std::string::npos) << "only hashes are kept";
    const auto store = agency::mcp::KeyStore::load(keys.string());
    for (const auto& [name, key] : made) {
        const auto who = store.authenticate(key);
        ASSERT_TRUE(who.has_value()) << name;
        EXPECT_EQ(who->name, "key:" + name);
    }

    const std::string before = slurp(keys);
    for (const std::string bad : {"name,scopes\ndan,read\ndan,write\n", "name,scopes\ndan,admin\n",
                                  "name\nalice\n", "name,colour\ndan,blue\n", "[{\"name\":1}]"}) {
        std::ofstream(dir / "bad.csv") << bad;
        const Outcome refused =
            run("keys import '" + (dir / "bad.csv").string() + "' --keys-file " + keys.string());
        EXPECT_NE(refused.exit_code, 0) << bad;
        EXPECT_NE(refused.err.find("nothing was imported"), std::string::npos) << refused.err;
        EXPECT_EQ(refused.out, "") << "no key is printed when none is made";
        EXPECT_EQ(slurp(keys), before) << bad;
    }

    // JSON, its keys into a new 0600 file rather than the terminal.
    const fs::path out = dir / "new-keys.csv";
    const Outcome from_json =
        run("keys import - --out '" + out.string() + "' --keys-file " + keys.string(), "",
            R"({"keys": [{"name": "erin", "scopes": ["read"], "clients": ["demo-law"]}]})");
    ASSERT_EQ(from_json.exit_code, 0) << from_json.err;
    EXPECT_EQ(from_json.out, "");
    struct stat st {};
    ASSERT_EQ(::stat(out.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    const auto erin = listed_keys(slurp(out));
    ASSERT_EQ(erin.count("erin"), 1u);
    EXPECT_TRUE(agency::mcp::KeyStore::load(keys.string()).authenticate(erin.at("erin")));
}

// The keys file under the Debian package's layout (issue 31 item 5): the file is 0640
// root:agency-mcp, the service runs as agency-mcp and reads it through its group, and root runs
// `keys add / rotate / remove`. A rewrite keeps the file's owner, group and mode, so the running
// service serves the new key; the start-up check accepts that layout and warns for a file every
// user or another group can read; a file the server cannot read is an error, never "no key".
// The real binary throughout; the service's user is a numeric uid/gid switched to with setpriv,
// so the tests that need two identities need root (CI runs as root) and are skipped otherwise.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "base/crypto.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "tests/run_binary.hpp"
#include "tests/support/initialize_status.hpp"
#include "tests/support/paths.hpp"
#include "tests/support/wait.hpp"

namespace keys_layout {  // named: a unity batch holds other tests' helpers of the same names

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using agency::testing::Outcome;

// The service's identity (no passwd entry needed) and a group it is not in.
constexpr uid_t kServiceUid = 47321;
constexpr gid_t kServiceGid = 47321;
constexpr gid_t kOtherGid = 47322;

const std::string kAsService = "setpriv --reuid " + std::to_string(kServiceUid) + " --regid " +
                               std::to_string(kServiceGid) + " --clear-groups ";
const std::string kCleanEnv =
    "env -u AGENCY_GATEWAY_URL -u AGENCY_KEYS_FILE -u AGENCY_LOG_LEVEL -u AGENCY_LOG_FILE ";

std::string file_text(const fs::path& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), {}};
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

struct Owner {
    uid_t uid;
    gid_t gid;
    unsigned mode;
    bool operator==(const Owner&) const = default;
};

Owner owner_of(const fs::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return {0, 0, 0};
    return {st.st_uid, st.st_gid, st.st_mode & 07777u};
}

::testing::AssertionResult set_owner(const fs::path& path, Owner o) {
    if (::chown(path.c_str(), o.uid, o.gid) != 0 || ::chmod(path.c_str(), o.mode) != 0)
        return ::testing::AssertionFailure() << "cannot chown/chmod " << path;
    return ::testing::AssertionSuccess();
}

std::ostream& operator<<(std::ostream& os, const Owner& o) {
    return os << o.uid << ":" << o.gid << " " << std::oct << o.mode << std::dec;
}

using agency::testing::initialize_status;

class KeysFileLayout : public ::testing::Test {
protected:
    fs::path dir = fs::temp_directory_path() / ("agency-keys-layout-" + agency::crypto::random_hex(6));
    fs::path keys = dir / "keys";
    fs::path server_log = dir / "server.err";
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
    static bool root() { return ::geteuid() == 0; }

    // /etc/agency-mcp as postinst makes it: 0750 root:<the service's group>.
    void packaged_directory() { ASSERT_TRUE(set_owner(dir, {0, kServiceGid, 0750})); }

    // The binary as root (or whoever runs the test), or prefixed (kAsService).
    Outcome run(const std::string& args, const std::string& prefix = "") {
        return agency::testing::run_command(dir, kCleanEnv + prefix + "'" + AGENCY_BINARY + "' " +
                                                     args + " --keys-file '" + keys.string() + "'");
    }
    std::string keys_command(const std::string& verb, const std::string& name,
                             const std::string& extra = "") {
        const Outcome r = run("keys " + verb + " --name " + name + extra);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return first_line(r.out);
    }

    // `serve --http` in the background (as the service when `prefix` says so); its port, or 0
    // when it did not start (its log then says why).
    int start_server(const std::string& prefix) {
        const std::string command = "exec " + kCleanEnv + prefix + "'" + AGENCY_BINARY +
                                    "' serve --http --listen 127.0.0.1:0 --state-db :memory: "
                                    "--gateway-url " + gateway_server.base_url() +
                                    " --keys-file '" + keys.string() + "' < /dev/null > /dev/null 2> '" +
                                    server_log.string() + "'";
        fs::remove(server_log);  // the last server's log would name its port
        server_pid = fork();
        if (server_pid == 0) {
            execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        const std::regex url(R"(MCP over Streamable HTTP at http://127\.0\.0\.1:(\d+)/mcp)");
        int port = 0;
        (void)agency::testing::eventually(
            [&] {
                std::smatch m;
                const std::string text = file_text(server_log);
                if (std::regex_search(text, m, url)) {
                    port = std::stoi(m[1]);
                    return true;
                }
                if (waitpid(server_pid, nullptr, WNOHANG) == server_pid) {
                    server_pid = -1;  // it exited: no port
                    return true;
                }
                return false;
            },
            6000ms, 20ms);
        return port;
    }
    void stop_server() {
        if (server_pid <= 0) return;
        kill(server_pid, SIGTERM);
        waitpid(server_pid, nullptr, 0);
        server_pid = -1;
    }
    // The start-up lines about the keys file: what a server at `owner` says of it.
    std::string start_up_says(Owner owner) {
        EXPECT_TRUE(set_owner(keys, owner));
        const int port = start_server(kAsService);
        EXPECT_GT(port, 0) << file_text(server_log);
        stop_server();
        return file_text(server_log);
    }
};

// The issue's report: root rotates a key under the packaged layout, and the running service,
// which reads the file through its group, goes on serving (the new key), not "0 key(s) now".
TEST_F(KeysFileLayout, RotationAsRootUnderThePackagedLayoutKeepsTheServiceServing) {
    if (!root()) GTEST_SKIP() << "needs root: the service runs as another user (CI runs as root)";
    packaged_directory();
    const std::string alice = keys_command("add", "alice", " --scopes read,write");
    const Owner packaged{0, kServiceGid, 0640};
    ASSERT_TRUE(set_owner(keys, packaged));
    const int port = start_server(kAsService);
    ASSERT_GT(port, 0) << file_text(server_log);
    EXPECT_EQ(file_text(server_log).find("the keys file " + keys.string() + ":"), std::string::npos)
        << "the packaged layout is not a warning:\n" << file_text(server_log);
    EXPECT_EQ(initialize_status(port, alice), 200);

    const std::string fresh = keys_command("rotate", "alice");
    EXPECT_EQ(owner_of(keys), packaged);
    EXPECT_EQ(initialize_status(port, fresh), 200) << file_text(server_log);
    EXPECT_EQ(initialize_status(port, alice), 401);

    const std::string bob = keys_command("add", "bob", " --scopes read");
    EXPECT_EQ(owner_of(keys), packaged);
    EXPECT_EQ(initialize_status(port, bob), 200);
    keys_command("remove", "bob");
    EXPECT_EQ(owner_of(keys), packaged);
    EXPECT_EQ(initialize_status(port, bob), 401);
    EXPECT_EQ(initialize_status(port, fresh), 200);
    EXPECT_EQ(file_text(server_log).find("0 key(s) now"), std::string::npos) << file_text(server_log);
    for (const auto& entry : fs::directory_iterator(dir))  // no temporary file left behind
        EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos);
}

// A file replaced by something that does not keep the layout (an older binary, an editor) and
// that the service can no longer read leaves the keys it held in force, and says why; `keys
// list` and `serve` say "cannot read" rather than "no keys".
TEST_F(KeysFileLayout, AKeysFileTheServerCannotReadIsAnErrorNotAnEmptyFile) {
    if (!root()) GTEST_SKIP() << "needs root: the service runs as another user (CI runs as root)";
    packaged_directory();
    const std::string alice = keys_command("add", "alice", " --scopes read");
    ASSERT_TRUE(set_owner(keys, {0, kServiceGid, 0640}));
    const int port = start_server(kAsService);
    ASSERT_GT(port, 0) << file_text(server_log);
    ASSERT_EQ(initialize_status(port, alice), 200);

    const fs::path other = dir / "replacement";
    std::ofstream(other) << R"({"keys": []})" << "\n";
    ASSERT_TRUE(set_owner(other, {0, 0, 0600}));
    fs::rename(other, keys);
    EXPECT_EQ(initialize_status(port, alice), 200) << file_text(server_log);
    const std::string log = file_text(server_log);
    EXPECT_NE(log.find("cannot read the keys file " + keys.string() + ": Permission denied"),
              std::string::npos) << log;
    EXPECT_NE(log.find("the keys read before stay in force"), std::string::npos) << log;
    EXPECT_EQ(log.find("0 key(s) now"), std::string::npos) << log;
    stop_server();

    const Outcome list = run("keys list", kAsService);
    EXPECT_NE(list.exit_code, 0);
    EXPECT_NE(list.err.find("cannot read the keys file " + keys.string() + ": Permission denied"),
              std::string::npos) << list.err;
    EXPECT_NE(list.err.find("chmod 0640"), std::string::npos) << list.err;
    EXPECT_EQ(start_server(kAsService), 0);
    EXPECT_NE(file_text(server_log).find("cannot read the keys file"), std::string::npos)
        << file_text(server_log);
    EXPECT_EQ(file_text(server_log).find("holds no key"), std::string::npos);
}

// The start-up check: the server's own group may read the file; every user, or a group the
// server does not run as, may not; nor may the server's group change it.
TEST_F(KeysFileLayout, StartUpWarnsForAFileOthersCanReadButNotForThePackagedLayout) {
    if (!root()) GTEST_SKIP() << "needs root: the service runs as another user (CI runs as root)";
    packaged_directory();
    keys_command("add", "alice", " --scopes read");
    const std::string warning = "the keys file " + keys.string() + ": ";
    for (const Owner quiet : {Owner{0, kServiceGid, 0640}, Owner{kServiceUid, 0, 0600}}) {
        const std::string said = start_up_says(quiet);
        EXPECT_EQ(said.find(warning), std::string::npos) << quiet << "\n" << said;
        EXPECT_EQ(said.find("chmod 600"), std::string::npos) << said;
    }
    std::string said = start_up_says({0, kServiceGid, 0644});
    EXPECT_NE(said.find(warning + "every user on this machine can read it (mode 0644); chmod "
                                  "o-rwx it"), std::string::npos) << said;
    said = start_up_says({kServiceUid, kOtherGid, 0640});  // its owner reads it, so may another group
    EXPECT_NE(said.find(warning + "its group " + std::to_string(kOtherGid) +
                        " can read it (mode 0640) and this server does not run as that group"),
              std::string::npos) << said;
    said = start_up_says({0, kServiceGid, 0660});
    EXPECT_NE(said.find(warning + "its group " + std::to_string(kServiceGid) +
                        " may change it (mode 0660)"), std::string::npos) << said;
}

// Someone who may write the directory but cannot give the new file the old one's owner is
// refused, and the file is left exactly as it was.
TEST_F(KeysFileLayout, AWriterThatCannotKeepTheOwnerChangesNothing) {
    if (!root()) GTEST_SKIP() << "needs root: the writer runs as another user (CI runs as root)";
    ASSERT_TRUE(set_owner(dir, {0, 0, 0777}));
    keys_command("add", "alice", " --scopes read");
    ASSERT_TRUE(set_owner(keys, {0, 0, 0644}));
    const std::string before = file_text(keys);
    const Outcome r = run("keys add --name bob --scopes read", kAsService);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(r.out.empty()) << "no key may be shown that was not stored";
    EXPECT_NE(r.err.find("cannot give the new file the old one's owner uid 0 gid 0 and mode 0644"),
              std::string::npos) << r.err;
    EXPECT_NE(r.err.find("nothing was changed"), std::string::npos) << r.err;
    EXPECT_EQ(file_text(keys), before);
    EXPECT_EQ(owner_of(keys), (Owner{0, 0, 0644}));
    for (const auto& entry : fs::directory_iterator(dir))
        EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos);
}

// Without root too: a rewrite keeps a mode the operator chose, and through a symbolic link
// rewrites the file it names (the link stays a link).
TEST_F(KeysFileLayout, RewritesKeepTheModeAndFollowASymbolicLink) {
    keys_command("add", "alice", " --scopes read");
    ASSERT_EQ(::chmod(keys.c_str(), 0640), 0);
    const Owner chosen = owner_of(keys);
    keys_command("rotate", "alice");
    EXPECT_EQ(owner_of(keys), chosen);

    const fs::path real = dir / "real-keys";
    fs::rename(keys, real);
    fs::create_symlink(real, keys);
    const std::string fresh = keys_command("rotate", "alice");
    EXPECT_TRUE(fs::is_symlink(keys));
    EXPECT_NE(file_text(real).find(agency::crypto::sha256_hex(fresh)), std::string::npos);
    EXPECT_EQ(owner_of(real), chosen);
}

}  // namespace keys_layout

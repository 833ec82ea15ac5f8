// One writer of the keys file at a time, and one caller per key name (issue 45, finding 6).
// `keys remove` racing `keys update` brought the removed key back, and `keys rotate` racing
// `keys update` left the old key working, in about one round of five: each read the file, changed
// its copy and renamed it over the other's. Now every change holds a lock beside the file from
// its read to its rename. A key without a name, or two keys of one name, would be one caller
// ("key:<name>") sharing jobs, tasks and budget: such a file is refused where the server loads
// it, and a running server that meets one keeps the keys it had.
#include <sys/file.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/crypto.hpp"
#include "gateway/sample/sample_gateway.hpp"
#include "tests/run_binary.hpp"
#include "tests/support/paths.hpp"
#include "transport/keys.hpp"

namespace keys_writers {  // named: a unity batch holds other tests' helpers of the same names

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using agency::mcp::KeyStore;
using agency::testing::Outcome;

const std::string kCleanEnv =
    "env -u AGENCY_GATEWAY_URL -u AGENCY_KEYS_FILE -u AGENCY_LOG_LEVEL -u AGENCY_LOG_FILE ";

json file_json(const fs::path& path) {
    std::ifstream in(path);
    return json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// The lock a change takes, held by the test as another `keys` command would hold it.
class HeldLock {
public:
    explicit HeldLock(const fs::path& keys)
        : fd_(::open((keys.string() + ".lock").c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0600)) {
        EXPECT_GE(fd_, 0);
        EXPECT_EQ(::flock(fd_, LOCK_EX), 0);
    }
    ~HeldLock() { release(); }
    void release() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_;
};

class KeysWriters : public ::testing::Test {
protected:
    fs::path dir =
        fs::temp_directory_path() / ("agency-keys-writers-" + agency::crypto::random_hex(6));
    fs::path keys = dir / "keys.json";

    void SetUp() override {
        fs::create_directories(dir / "a");
        fs::create_directories(dir / "b");
    }
    void TearDown() override {
        KeyStore::set_lock_wait(10s);
        std::error_code ec;
        fs::remove_all(dir, ec);
    }

    // `agency-mcp keys ...` on the test's file; `lane` keeps two at once apart (their stdin and
    // stderr files).
    Outcome keys_command(const std::string& args, const std::string& lane = "a") {
        return agency::testing::run_command(dir / lane, kCleanEnv + "'" + AGENCY_BINARY +
                                                            "' keys " + args + " --keys-file '" +
                                                            keys.string() + "'");
    }
    // Two commands started together; both outcomes.
    std::pair<Outcome, Outcome> race(const std::string& first, const std::string& second) {
        auto a = std::async(std::launch::async, [&] { return keys_command(first, "a"); });
        auto b = std::async(std::launch::async, [&] { return keys_command(second, "b"); });
        return {a.get(), b.get()};
    }
    void write_raw(const json& doc) {
        const fs::path tmp = keys.string() + ".hand";
        std::ofstream(tmp) << doc.dump(2);
        fs::rename(tmp, keys);  // as an editor that saves by rename: a new inode
    }
};

TEST_F(KeysWriters, RemoveRacingUpdateNeverBringsTheRemovedKeyBack) {
    for (int round = 0; round < 30; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        fs::remove(keys);
        const std::string a = KeyStore::add(keys.string(), "a", {"read"});
        KeyStore::add(keys.string(), "b", {"read"});
        const auto [removed, updated] =
            race("remove --name a", "update --name b --clients cl_quokka");
        ASSERT_EQ(removed.exit_code, 0) << removed.err;
        ASSERT_EQ(updated.exit_code, 0) << updated.err;
        const json doc = file_json(keys);
        ASSERT_EQ(doc["keys"].size(), 1u) << "the removed key is back: " << doc.dump();
        EXPECT_EQ(doc["keys"][0]["name"], "b");
        EXPECT_EQ(doc["keys"][0]["clients"], json::array({"cl_quokka"}));
        EXPECT_FALSE(KeyStore::load(keys.string()).authenticate(a)) << "a still authenticates";
    }
}

TEST_F(KeysWriters, RotateRacingUpdateNeverLeavesTheOldKeyWorking) {
    for (int round = 0; round < 30; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        fs::remove(keys);
        const std::string old = KeyStore::add(keys.string(), "a", {"read"});
        KeyStore::add(keys.string(), "b", {"read"});
        const auto [rotated, updated] =
            race("rotate --name a", "update --name b --clients cl_quokka");
        ASSERT_EQ(rotated.exit_code, 0) << rotated.err;
        ASSERT_EQ(updated.exit_code, 0) << updated.err;
        const KeyStore store = KeyStore::load(keys.string());
        EXPECT_FALSE(store.authenticate(old)) << "the rotated-out key still authenticates";
        EXPECT_TRUE(store.authenticate(first_line(rotated.out))) << "the new key does not";
        const json doc = file_json(keys);
        ASSERT_EQ(doc["keys"].size(), 2u) << doc.dump();
        EXPECT_EQ(doc["keys"][1]["clients"], json::array({"cl_quokka"})) << doc.dump();
    }
}

// A change waits for the one holding the lock, then goes on; one that waits too long fails
// saying so, and changes nothing.
TEST_F(KeysWriters, AChangeWaitsForTheLockAndFailsLoudlyWhenItCannotGetIt) {
    KeyStore::add(keys.string(), "a", {"read"});
    KeyStore::add(keys.string(), "b", {"read"});
    HeldLock held(keys);
    auto waiting = std::async(std::launch::async, [&] { return keys_command("remove --name a"); });
    EXPECT_EQ(waiting.wait_for(400ms), std::future_status::timeout) << "it waits for the lock";
    EXPECT_EQ(file_json(keys)["keys"].size(), 2u);
    held.release();
    const Outcome removed = waiting.get();
    EXPECT_EQ(removed.exit_code, 0) << removed.err;
    EXPECT_EQ(file_json(keys)["keys"].size(), 1u);

    KeyStore::set_lock_wait(150ms);
    HeldLock again(keys);
    const json before = file_json(keys);
    try {
        KeyStore::rotate(keys.string(), "b");
        ADD_FAILURE() << "rotate went on without the lock";
    } catch (const std::runtime_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("another change has held its lock (" + keys.string() + ".lock)"),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("nothing was changed"), std::string::npos) << what;
    }
    EXPECT_EQ(file_json(keys), before);
}

// Where the server loads the file: a key without a name, with an empty one, or two keys of one
// name are refused, naming the file and the entries.
TEST_F(KeysWriters, AFileWithAKeyWithoutANameOrTwoOfOneNameIsRefusedAtLoad) {
    const auto entry = [](const json& name) {
        json e = {{"hash", agency::crypto::sha256_hex(agency::crypto::random_hex(8))},
                  {"scopes", {"read"}}};
        if (!name.is_null()) e["name"] = name;
        return e;
    };
    const auto refusal = [&](const json& doc) {
        write_raw(doc);
        try {
            KeyStore::load(keys.string());
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
        return std::string("loaded");
    };
    std::string why = refusal({{"keys", {entry("a"), entry(nullptr)}}});
    EXPECT_NE(why.find("the keys file " + keys.string() + ": entry 2 of 2 has no name"),
              std::string::npos)
        << why;
    why = refusal({{"keys", {entry("")}}});
    EXPECT_NE(why.find("entry 1 of 1 has no name"), std::string::npos) << why;
    why = refusal({{"keys", {entry("a"), entry("b"), entry("a")}}});
    EXPECT_NE(why.find("the keys file " + keys.string() +
                       ": entries 1 and 3 are both named \"a\""),
              std::string::npos)
        << why;

    // A write other than remove refuses the file too; remove repairs it.
    EXPECT_THROW(KeyStore::add(keys.string(), "c", {"read"}), std::runtime_error);
    EXPECT_THROW(KeyStore::rotate(keys.string(), "b"), std::runtime_error);
    KeyStore::remove(keys.string(), "a");
    EXPECT_NO_THROW(KeyStore::load(keys.string()));

    // keys add refuses a name already there.
    const Outcome again = keys_command("add --name b --scopes read");
    EXPECT_NE(again.exit_code, 0);
    EXPECT_TRUE(again.out.empty()) << "no key may be shown that was not stored";
    EXPECT_NE(again.err.find("a key named \"b\" already exists"), std::string::npos) << again.err;
}

// `serve --http` refuses such a file at start; a running server that meets one keeps the keys
// it had (and says why in its log).
TEST_F(KeysWriters, ServeRefusesItAndARunningServerKeepsItsKeys) {
    auto gw = std::make_shared<agency::sample::Gateway>();
    agency::sample::Server gateway_server{gw};
    gateway_server.start("127.0.0.1", 0);
    const std::string alice = KeyStore::add(keys.string(), "alice", {"read"});
    const KeyStore store = KeyStore::load(keys.string());
    json doc = file_json(keys);
    doc["keys"].push_back(doc["keys"][0]);
    const std::string bob = "amcp_" + agency::crypto::random_hex(24);
    doc["keys"][1]["hash"] = agency::crypto::sha256_hex(bob);
    write_raw(doc);  // two keys named alice
    EXPECT_TRUE(store.authenticate(alice)) << "the keys read before stay in force";
    EXPECT_FALSE(store.authenticate(bob));

    const Outcome serve = agency::testing::run_command(
        dir / "a", kCleanEnv + "'" + AGENCY_BINARY +
                       "' serve --http --listen 127.0.0.1:0 --state-db :memory: --gateway-url " +
                       gateway_server.base_url() + " --keys-file '" + keys.string() + "'");
    EXPECT_NE(serve.exit_code, 0);
    EXPECT_NE(serve.err.find("entries 1 and 2 are both named \"alice\""), std::string::npos)
        << serve.err;
}

}  // namespace keys_writers

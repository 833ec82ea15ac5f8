// net::ServerThread, the one way an HTTP server of this program starts: a port already served
// is refused, not shared. With httplib's default SO_REUSEPORT a second agency-mcp on the same
// --listen port started silently and took half of the connections, and a test binding port 0
// could be given a port another test process served (each met the other's server).
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <httplib.h>

#include "tests/loopback_server.hpp"

TEST(ServerThread, APortAlreadyServedIsRefusedNotShared) {
    agency::testing::LoopbackServer<> first;
    first.http.Get("/", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("first", "text/plain");
    });
    first.start();
    httplib::Server second_http;
    agency::net::ServerThread second;
    try {
        second.start(second_http, {.port = first.port, .who = "second"});
        ADD_FAILURE() << "a second server listens on port " << first.port;
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("second: cannot listen on 127.0.0.1:" +
                                             std::to_string(first.port)),
                  std::string::npos)
            << e.what();
    }
    httplib::Client client("127.0.0.1", first.port);
    const auto res = client.Get("/");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->body, "first");
}

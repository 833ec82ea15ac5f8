// What the gateway client's tests share: the client's names they write unqualified (`using
// namespace agency::testing::gateway_names;`: none means anything else in a test, so the
// directive is safe in a unity batch too), expect_error, the error a call must throw, and
// LoopbackSampleGateway, the sample gateway a client of the test's own talks to.
#pragma once

#include <chrono>
#include <memory>
#include <utility>

#include <gtest/gtest.h>

#include "gateway/actions.hpp"
#include "gateway/client.hpp"
#include "gateway/sample/sample_gateway.hpp"

namespace agency::testing::gateway_names {

using agency::gateway::ActionResult, agency::gateway::ActionSpec, agency::gateway::Client,
    agency::gateway::Config, agency::gateway::Error, agency::gateway::ErrorReason,
    agency::gateway::ReadQuery, agency::gateway::ResendRule;

// The gateway::Error that `f` throws; a test failure when it throws none.
template <class F>
Error expect_error(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e;
    }
    ADD_FAILURE() << "expected an agency::gateway::Error, none was thrown";
    return Error(ErrorReason::config, "no error was thrown");
}

}  // namespace agency::testing::gateway_names

namespace agency::testing {

// The sample gateway on a loopback port, and a client configuration for it: a short backoff,
// four attempts, 5 s for a read or an action.
struct LoopbackSampleGateway {
    std::shared_ptr<agency::sample::Gateway> gw;
    agency::sample::Server srv;

    explicit LoopbackSampleGateway(agency::sample::Options options = {})
        : gw(std::make_shared<agency::sample::Gateway>(std::move(options))), srv(gw) {
        srv.start();
    }
    agency::gateway::Config config() const {
        agency::gateway::Config c;
        c.base_url = srv.base_url();
        c.backoff_base = std::chrono::milliseconds(5);
        c.max_attempts = 4;
        c.read_timeout = std::chrono::seconds(5);
        c.action_timeout = std::chrono::seconds(5);
        return c;
    }
};

}  // namespace agency::testing

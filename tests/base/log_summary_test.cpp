// base/log_summary.hpp on a ManualClock: N occurrences of a kind write one line and one summary
// per interval (count, first and last time, a few peers with counts), a quiet interval makes the
// next occurrence a first line again, memory stays bounded whatever the number of peers, and a
// peer cannot forge lines. Issue 30, item 8; over HTTP with the real binary in
// tests/app/flood_cli_test.cpp.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "base/log_summary.hpp"
#include "tests/support/manual_clock.hpp"

namespace log_summary_test {

using agency::log::Level;
using agency::log::RepeatedLines;
using agency::testing::ManualClock;
using namespace std::chrono_literals;

// The default logger's lines while it lives.
class CapturedLog {
public:
    CapturedLog() : previous_(spdlog::default_logger()) {
        auto logger = std::make_shared<spdlog::logger>(
            "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_));
        logger->set_pattern("%l %v");
        logger->set_level(spdlog::level::trace);
        spdlog::set_default_logger(logger);
    }
    ~CapturedLog() { spdlog::set_default_logger(previous_); }
    std::vector<std::string> lines() const {
        std::vector<std::string> out;
        std::istringstream in(out_.str());
        for (std::string line; std::getline(in, line);) out.push_back(line);
        return out;
    }

private:
    std::ostringstream out_;
    std::shared_ptr<spdlog::logger> previous_;
};

RepeatedLines::Options quiet(std::size_t peers = 4) {
    return {.interval = 60s, .peers = peers, .kinds = 32, .background = false};
}

void refuse(RepeatedLines& lines, const std::string& peer) {
    lines.write(Level::info, "OAuth: token refused", peer, "OAuth: token refused from {}: {}",
                peer, "the token has expired");
}


TEST(LogSummary, ThousandsOfRefusalsWriteOneLineThenOneSummaryPerInterval) {
    CapturedLog log;
    ManualClock clock;
    RepeatedLines lines(clock, quiet());
    for (int i = 0; i < 5000; ++i) refuse(lines, i % 2 ? "10.0.0.1" : "10.0.0.2");
    lines.flush_due();
    ASSERT_EQ(log.lines().size(), 1u) << "the interval has not ended";
    EXPECT_EQ(log.lines()[0],
              "info OAuth: token refused from 10.0.0.2: the token has expired (repeats are "
              "counted and summarised every 60 s)");
    EXPECT_EQ(lines.pending(), 4999u);

    clock.advance(30s);
    refuse(lines, "10.0.0.3");
    clock.advance(30s);
    lines.flush_due();
    auto got = log.lines();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[1].rfind("info OAuth: token refused: 5000 more in the last 60 s (first ", 0), 0u)
        << got[1];
    EXPECT_NE(got[1].find("from 10.0.0.1 (2500), 10.0.0.2 (2499), 10.0.0.3 (1)"),
              std::string::npos)
        << got[1];
    EXPECT_EQ(lines.pending(), 0u);

    // Ten more intervals of flood: one summary each, never more.
    for (int interval = 0; interval < 10; ++interval) {
        for (int i = 0; i < 1000; ++i) refuse(lines, "10.0.0.1");
        clock.advance(60s);
        lines.flush_due();
        lines.flush_due();
    }
    EXPECT_EQ(log.lines().size(), 12u);
}

TEST(LogSummary, AQuietIntervalMakesTheNextOccurrenceAFirstLineAgain) {
    CapturedLog log;
    ManualClock clock;
    RepeatedLines lines(clock, quiet());
    refuse(lines, "10.0.0.1");
    clock.advance(61s);
    lines.flush_due();  // nothing counted: the kind goes quiet, no summary
    EXPECT_EQ(log.lines().size(), 1u);
    refuse(lines, "10.0.0.9");
    ASSERT_EQ(log.lines().size(), 2u);
    EXPECT_NE(log.lines()[1].find("token refused from 10.0.0.9"), std::string::npos);
}

// The summary is written by the next occurrence once the interval ended, even without
// flush_due; kinds are summarised apart at their own level; the destructor writes what is left.
TEST(LogSummary, SummariesComeWithTheNextOccurrenceAndAtTheEnd) {
    CapturedLog log;
    ManualClock clock;
    {
        RepeatedLines lines(clock, quiet());
        refuse(lines, "a");
        refuse(lines, "a");
        lines.write(Level::warn, "over the rate limit", "key:bob", "tools/call of {} refused",
                    "key:bob");
        lines.write(Level::warn, "over the rate limit", "key:bob", "tools/call of {} refused",
                    "key:bob");
        clock.advance(60s);
        refuse(lines, "b");
        EXPECT_EQ(log.lines().size(), 4u) << "both kinds' summaries were due";
    }
    const auto got = log.lines();
    ASSERT_EQ(got.size(), 5u);
    EXPECT_EQ(got[2].rfind("info OAuth: token refused: 1 more", 0), 0u) << got[2];
    EXPECT_EQ(got[3].rfind("warning over the rate limit: 1 more", 0), 0u) << got[3];
    EXPECT_EQ(got[4].rfind("info OAuth: token refused: 1 more in the last 1 s", 0), 0u) << got[4];
    EXPECT_NE(got[4].find("from b (1)"), std::string::npos) << got[4];
}

// 200,000 distinct peers: a few named, the rest counted together; the peer is cleaned.
TEST(LogSummary, MemoryStaysBoundedWhateverTheNumberOfPeers) {
    CapturedLog log;
    ManualClock clock;
    RepeatedLines lines(clock, quiet(3));
    for (int i = 0; i < 200'000; ++i) refuse(lines, "198.51." + std::to_string(i));
    EXPECT_EQ(lines.peers_held(), 3u);
    clock.advance(60s);
    lines.flush_due();
    const auto got = log.lines();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_NE(got[1].find("199999 more"), std::string::npos) << got[1];
    EXPECT_NE(got[1].find("198.51.1 (1), 198.51.2 (1), 198.51.3 (1), other peers (199996)"),
              std::string::npos)
        << got[1];
    EXPECT_LT(got[1].size(), 600u);
    EXPECT_EQ(lines.peers_held(), 0u);
}

TEST(LogSummary, TheNewPeerSampleIsCleanedAndCut) {
    CapturedLog log;
    ManualClock clock;
    RepeatedLines lines(clock, quiet());
    refuse(lines, "first");
    refuse(lines, "evil\nINFO forged " + std::string(500, 'x'));
    lines.flush_all();
    const auto got = log.lines();
    ASSERT_EQ(got.size(), 2u) << "no line break got through";
    EXPECT_NE(got[1].find("from evil?INFO?forged?xxx"), std::string::npos) << got[1];
    EXPECT_LT(got[1].size(), 300u);
}

}  // namespace log_summary_test

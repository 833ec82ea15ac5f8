// Captures the default logger's output for the lifetime of the object (the suite's source must
// be compiled with spdlog's headers: agency_spdlog_sources in tests/CMakeLists.txt).
#pragma once

#include <memory>
#include <sstream>
#include <string>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

namespace agency::testing {

class LogCapture {
public:
    LogCapture() : previous_(spdlog::default_logger()) {
        auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out_);
        spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
    }
    ~LogCapture() { spdlog::set_default_logger(previous_); }
    LogCapture(const LogCapture&) = delete;
    LogCapture& operator=(const LogCapture&) = delete;
    std::string text() const { return out_.str(); }

private:
    std::ostringstream out_;
    std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace agency::testing

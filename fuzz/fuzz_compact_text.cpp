// The compact text beside structuredContent (server/compact_text.cpp): any bytes (a tool's
// answer carries gateway text). Never crashes or reads past its input (ASan), and every
// non-empty JSON object (what every tool answers) gets its rendering.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "server/server_impl.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    const auto rendered = agency::mcp::compact_text(text);
    const auto parsed = nlohmann::json::parse(text, nullptr, false);
    // nlohmann stops at a NUL byte; simdjson reads the rest as trailing content. A tool's
    // answer (JSON it wrote itself) never holds one.
    const bool nul = text.find('\0') != std::string::npos;
    if (!nul && !parsed.is_discarded() && parsed.is_object() && !parsed.empty() && !rendered) {
        std::fprintf(stderr, "compact text: an object was not rendered: %.*s\n",
                     static_cast<int>(std::min<std::size_t>(size, 2000)), text.c_str());
        std::abort();
    }
    return 0;
}

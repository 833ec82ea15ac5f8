// Small text helpers the suites share: a file's whole text, and whether a text holds a part.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace agency::testing {

// The file's whole text; "" when it cannot be read.
inline std::string slurp(const std::filesystem::path& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), {}};
}

inline bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace agency::testing

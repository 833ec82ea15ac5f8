#include "net/request_head.hpp"

#include <cctype>
#include <cstring>

namespace agency::net {

namespace {

bool same_name(std::string_view name, std::string_view lower) {
    if (name.size() != lower.size()) return false;
    for (std::size_t i = 0; i < name.size(); ++i)
        if (static_cast<char>(std::tolower(static_cast<unsigned char>(name[i]))) != lower[i])
            return false;
    return true;
}

}  // namespace

std::size_t head_size(const std::string& bytes, std::size_t from) {
    from = from > 3 ? from - 3 : 0;
    const auto end = bytes.find("\r\n\r\n", from);
    return end == std::string::npos ? 0 : end + 4;
}

bool has_nul(const char* head, std::size_t size) { return std::memchr(head, 0, size) != nullptr; }

std::optional<std::size_t> announced_length(std::string_view head) {
    std::optional<std::size_t> length;
    std::size_t at = head.find("\r\n");
    while (at != std::string_view::npos) {
        const std::size_t start = at + 2;
        const std::size_t end = head.find("\r\n", start);
        if (end == std::string_view::npos || end == start) break;
        const std::string_view line = head.substr(start, end - start);
        at = end;
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string_view name = line.substr(0, colon);
        if (same_name(name, "transfer-encoding")) return std::nullopt;
        if (!same_name(name, "content-length")) continue;
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
        if (length || value.empty() || value.size() > 12) return std::nullopt;
        std::size_t n = 0;
        for (char ch : value) {
            if (ch < '0' || ch > '9') return std::nullopt;
            n = n * 10 + static_cast<std::size_t>(ch - '0');
        }
        length = n;
    }
    return length;
}

}  // namespace agency::net

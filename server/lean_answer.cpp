#include "server/lean_answer.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

#include <nlohmann/json.hpp>

namespace agency::mcp {

namespace {

using ordered = nlohmann::ordered_json;

bool all_objects(const ordered& rows) {
    return rows.is_array() && !rows.empty() &&
           std::all_of(rows.begin(), rows.end(), [](const ordered& r) { return r.is_object(); });
}

// The columns of `rows`: every key in the order first seen, but those null or absent in all.
std::vector<std::string> columns_of(const ordered& rows) {
    std::vector<std::string> columns;
    std::vector<bool> valued;
    for (const ordered& row : rows)
        for (const auto& [key, value] : row.items()) {
            auto at = std::find(columns.begin(), columns.end(), key);
            if (at == columns.end()) {
                columns.push_back(key);
                valued.push_back(false);
                at = columns.end() - 1;
            }
            if (!value.is_null()) valued[static_cast<std::size_t>(at - columns.begin())] = true;
        }
    std::vector<std::string> kept;
    for (std::size_t i = 0; i < columns.size(); ++i)
        if (valued[i]) kept.push_back(columns[i]);
    return kept;
}

}  // namespace

std::string lean_structured(std::string_view structured) {
    ordered answer = ordered::parse(structured, nullptr, false);
    if (!answer.is_object()) return std::string(structured);
    ordered out = ordered::object();
    for (auto& [key, value] : answer.items()) {
        if (value.is_null()) continue;
        if (key != "rows" || !all_objects(value)) {
            out[key] = std::move(value);
            continue;
        }
        const std::vector<std::string> columns = columns_of(value);
        ordered table = ordered::array();
        for (ordered& row : value) {
            ordered cells = ordered::array();
            for (const std::string& column : columns) {
                auto it = row.find(column);
                cells.push_back(it == row.end() ? ordered() : std::move(*it));
            }
            table.push_back(std::move(cells));
        }
        out["columns"] = columns;
        out["rows"] = std::move(table);
    }
    return out.dump();
}

std::string client_name(const RequestContext& ctx) {
    const json* info = nullptr;
    if (auto it = ctx.meta.find("io.modelcontextprotocol/clientInfo");
        it != ctx.meta.end() && it->is_object())
        info = &*it;
    else if (ctx.session && ctx.session->client_info.is_object())
        info = &ctx.session->client_info;
    if (!info) return "";
    auto name = info->find("name");
    return name != info->end() && name->is_string() ? name->get<std::string>() : "";
}

bool shows_model_structured_content(std::string_view name) {
    std::string lower(name.substr(0, 128));
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    static constexpr std::array<std::string_view, 5> kHosts{"claude-code", "claude code",
                                                            "copilot", "opencode", "codex"};
    return std::any_of(kHosts.begin(), kHosts.end(), [&](std::string_view host) {
        return lower.find(host) != std::string::npos;
    });
}

bool lean_answer_for(const ServerOptions& options, const RequestContext& ctx) {
    switch (options.structured_content) {
        case StructuredContent::lean: return true;
        case StructuredContent::full: return false;
        case StructuredContent::automatic: break;
    }
    return shows_model_structured_content(client_name(ctx));
}

}  // namespace agency::mcp

#include "server/lean_answer.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace agency::mcp {

namespace {

using ordered = nlohmann::ordered_json;

bool all_objects(const ordered& rows) {
    return rows.is_array() && !rows.empty() &&
           std::all_of(rows.begin(), rows.end(), [](const ordered& r) { return r.is_object(); });
}

// The columns of `rows`: every key in the order first seen, but those null or absent in all;
// `index` maps each kept one to its place. One pass over the members: the rows come from the
// gateway, which decides how many members they have.
std::vector<std::string> columns_of(const ordered& rows,
                                    std::unordered_map<std::string, std::size_t>& index) {
    std::vector<std::string> columns;
    std::vector<bool> valued;
    for (const ordered& row : rows)
        for (const auto& [key, value] : row.items()) {
            const auto [at, added] = index.try_emplace(key, columns.size());
            if (added) {
                columns.push_back(key);
                valued.push_back(false);
            }
            if (!value.is_null()) valued[at->second] = true;
        }
    std::vector<std::string> kept;
    index.clear();
    for (std::size_t i = 0; i < columns.size(); ++i)
        if (valued[i]) {
            index.emplace(columns[i], kept.size());
            kept.push_back(std::move(columns[i]));
        }
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
        std::unordered_map<std::string, std::size_t> index;
        const std::vector<std::string> columns = columns_of(value, index);
        ordered table = ordered::array();
        for (ordered& row : value) {
            ordered cells(ordered::value_t::array);
            cells.get_ref<ordered::array_t&>().resize(columns.size());
            for (auto& [member, cell] : row.items())
                if (auto at = index.find(member); at != index.end())
                    cells[at->second] = std::move(cell);
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

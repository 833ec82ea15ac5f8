#include "tools/kit/untrusted_results.hpp"

namespace agency::tools {

const json& untrusted_meta() {
    static const json meta = {{"ifc", {{"integrity", "untrusted"}, {"confidentiality", "private"}}},
                              {"agency-mcp/untrusted", true}};
    return meta;
}

void mark_untrusted(mcp::ToolResult& result) {
    if (!result.meta.is_object()) result.meta = json::object();
    for (const auto& [key, value] : untrusted_meta().items()) result.meta[key] = value;
}

Handler marking_untrusted(Handler handler) {
    return [handler = std::move(handler)](const json& args, mcp::RequestContext& ctx) {
        mcp::ToolResult result = handler(args, ctx);
        if (!result.is_error) mark_untrusted(result);
        return result;
    };
}

}  // namespace agency::tools

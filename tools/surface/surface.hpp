// What the server offers besides tools: resources, prompts and completion (resources.cpp,
// prompts.cpp, completion.cpp), over the same gateway reads the tools use.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "server/tool_def.hpp"
#include "tools/kit/tool_kit.hpp"

namespace agency::tools {

class ActionRuntime;

// Registers the resources, resource templates, prompts and completion on `server`, and sends
// notifications/resources/updated to subscribed sessions when an audit job of `actions`
// changes. Called once from register_all.
void register_surface(mcp::Server& server, const std::shared_ptr<Toolbox>& box,
                      const std::shared_ptr<ActionRuntime>& actions);

// docs/tools.md's sections on resources, templates and prompts, from their definitions.
std::string surface_markdown();

// One client's overview (the resource agency://clients/{id}/overview, and the tool
// get_client_overview): the profile, keyword coverage and dates, the latest audit with its
// counts, articles by status; its parts read at once. Null when no client has this id; throws
// gateway::Error when the profile cannot be read (a part that fails becomes a note).
json client_overview(Toolbox& box, const std::string& client_id, mcp::RequestContext& ctx);

// --- shared by the three files --------------------------------------------------------------

// Every piece of free text a gateway wrote (titles, article bodies, audit issue text) passes
// through here before a resource or completion carries it: the one place where gateway text
// is made safe to show an assistant.
std::string gateway_text(std::string text);
// gateway_text over every string inside `value` (keys stay as they are).
void gateway_strings(json& value);

// Small lists read from the gateway and kept for a short while: clients (for resources/list
// and completion), a client's keywords, audit report ids and article ids (completion).
class SurfaceLists {
public:
    explicit SurfaceLists(std::shared_ptr<Toolbox> box,
                          std::chrono::seconds ttl = std::chrono::seconds(60));

    struct Client {
        std::string id;
        std::string name;
    };
    // The gateway's clients (every page, at most 5000: kClientPages reads). Throws
    // gateway::Error.
    std::vector<Client> clients(std::stop_token stop = {});
    static constexpr int kClientPages = 5;
    // Whether clients() answers from its cache now (no gateway read).
    bool clients_cached() const;
    // Distinct keywords of the client's newest rows (one page of 1000).
    std::vector<std::string> keywords(const std::string& client_id, std::stop_token stop = {});
    // Ids of the client's newest audit reports (up to 100).
    std::vector<std::string> report_ids(const std::string& client_id, std::stop_token stop = {});
    // Ids of the client's newest blog and geo articles (up to 100 of each).
    std::vector<std::string> article_ids(const std::string& client_id, std::stop_token stop = {});
    // Whether keywords/report_ids/article_ids of the client answer from the cache now:
    // `list` is "keywords", "reports" or "articles".
    bool cached_now(const std::string& list, const std::string& client_id) const;

    Toolbox& box() { return *box_; }

private:
    struct Entry {
        std::chrono::steady_clock::time_point at;
        std::vector<std::string> values;
    };
    std::vector<std::string> cached(const std::string& key,
                                    const std::function<std::vector<std::string>()>& read);

    std::shared_ptr<Toolbox> box_;
    std::chrono::seconds ttl_;
    mutable std::mutex mutex_;
    std::map<std::string, Entry> entries_;
    std::chrono::steady_clock::time_point clients_at_;
    std::vector<Client> clients_;
};

// A read of a client's `limit` rows of `resource` ordered by `order` (newest or largest first,
// or oldest first with `ascending`).
gateway::ReadQuery ordered(const std::string& resource, const std::string& client_id, int limit,
                           const std::string& order, bool ascending = false);

// The rows of one gateway read, parsed (`data`); `total` gets pagination.total when asked.
json read_rows(Toolbox& box, const gateway::ReadQuery& query, std::stop_token stop,
               std::int64_t* total = nullptr);

// Builds the mcp::RpcError for "no such resource" in the request's era (legacy -32002, modern
// -32602), with the reason.
mcp::RpcError resource_not_found(const mcp::RequestContext& ctx, const std::string& uri,
                                 const std::string& why);

// --- definitions (one declarative entry each), for registration and docs ----------------------

struct PromptArgumentSpec {
    std::string name;
    std::string description;  // says the type: the protocol's prompt arguments carry none
    bool required = false;
    enum class Type { text, client_id, month, integer, report_id, keyword } type = Type::text;
    int min = 0, max = 0;  // integer bounds
    int fallback = 5;      // an integer's value when the argument is absent
};

struct PromptSpec {
    std::string name;
    std::string title;
    std::string description;
    std::vector<PromptArgumentSpec> arguments;
    // The user message's text from the validated arguments (defaults filled in).
    std::function<std::string(const json& args)> text;
};

std::vector<PromptSpec> prompt_specs();
// Checks prompts/get arguments against the spec (unknown names, types, bounds) and fills in
// defaults; throws mcp::RpcError(-32602) naming the argument and what is allowed.
json checked_prompt_arguments(const PromptSpec& spec, const json& args);
// Throws mcp::RpcError(-32602) when a client_id argument of `checked` names a client the
// caller may not reach: the same words for one that exists and one that does not.
void refuse_unreachable_client(const PromptSpec& spec, const json& checked,
                               const mcp::RequestContext& ctx);

struct TemplateSpec {
    std::string uri_template;
    std::string name;
    std::string title;
    std::string description;
    std::string mime_type;
    // What one read is charged against the caller's rate limit: the gateway reads it makes
    // (at least 1; server/rate_limit.hpp).
    int cost = 1;
};
// The resource templates, in the order resources/templates/list gives them.
std::vector<TemplateSpec> template_specs();

// completion/complete over the prompts and templates above. A caller limited to some clients
// (mcp::Principal::clients) is offered those only, and nothing for another client's context.
json complete_argument(SurfaceLists& lists, const json& ref, const json& argument,
                       const json& context, const mcp::Principal& caller);
// What that completion is charged, known before it runs: 1, or the gateway reads it would make
// now (the lists it needs that are not cached).
int completion_cost(const SurfaceLists& lists, const json& ref, const json& argument,
                    const json& context);

}  // namespace agency::tools

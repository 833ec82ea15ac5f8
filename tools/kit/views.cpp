// The ui:// resources of the embedded views (tools/kit/views.hpp).
#include "tools/kit/views.hpp"
#include "server/mcp_server.hpp"
#include "server/protocol.hpp"

#include <array>

namespace agency::tools {

using mcp::json;

namespace {

constexpr std::string_view kPrefix = "ui://agency-mcp/";

struct ViewText {
    std::string_view name, title, description;
};

constexpr std::array<ViewText, 4> kViewTexts{{
    {"rankings", "Rankings",
     "A client's keyword positions over time as a chart, with a keyword picker and the movers "
     "since a date (list_rankings, latest_rankings, ranking_changes)."},
    {"audit", "SEO audit",
     "One audit report: score, issue counts by severity, the issues grouped and sortable, each "
     "with its page and recommendation (get_audit_issues)."},
    {"approve", "Approve before it goes out",
     "What deploy_article, send_prospect_email or an auto-deploying generate_article would "
     "publish or send, with Approve and Decline for the person."},
    {"client-overview", "Client overview",
     "A client's dashboard: tracked keywords, latest audit score, articles, the data's dates "
     "(get_client and the client's overview resource)."},
}};

const ViewText* text_of(std::string_view name) {
    for (const ViewText& t : kViewTexts)
        if (t.name == name) return &t;
    return nullptr;
}

}  // namespace

bool view_embedded(std::string_view uri) {
    if (!uri.starts_with(kPrefix) || !uri.ends_with(".html")) return false;
    const std::string_view name = uri.substr(kPrefix.size(), uri.size() - kPrefix.size() - 5);
    for (const EmbeddedView& view : embedded_views())
        if (view.name == name) return true;
    return false;
}

void register_views(mcp::Server& server) {
    for (const EmbeddedView& view : embedded_views()) {
        const ViewText* text = text_of(view.name);
        const std::string uri = std::string(kPrefix) + std::string(view.name) + ".html";
        const std::string_view html = view.html;
        server.add_resource(
            {.uri = uri,
             .name = std::string(view.name) + "-view",
             .title = text ? std::string(text->title) : std::string(view.name),
             .description = text ? std::string(text->description) : std::string(),
             .mime_type = std::string(mcp::kViewMimeType),
             // No external origin of any kind: the views are self-contained (an empty csp is
             // the spec's restrictive default), and drawn inside a border.
             .read =
                 [uri, html](mcp::RequestContext&) {
                     return json::array(
                         {{{"uri", uri},
                           {"mimeType", mcp::kViewMimeType},
                           {"text", html},
                           {"_meta",
                            {{"ui", {{"csp", json::object()}, {"prefersBorder", true}}}}}}});
                 },
             .view = true});
    }
}

}  // namespace agency::tools

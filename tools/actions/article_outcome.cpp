// What became of an article when an action's answer does not say: its record, read back once
// (issue 31: an outcome is checked at the gateway, not left to the model).
#include "tools/actions/action_internal.hpp"

namespace agency::tools {

bool says_live(const json& record) {
    if (!record.is_object()) return false;
    const json said = record.value("status", json());
    return said == "published" || said == "deployed" || said == "live" ||
           record.value("published", json()) == true ||
           first_text(record, {"deployed_at", "published_at"}).is_string();
}

void article_status_from_record(Toolbox& box, const std::string& client_id,
                                const std::string& article_id, std::string_view unsure,
                                json& result, std::stop_token stop) {
    auto unconfirmed = [&](const std::string& why) {
        result["status"] = "unconfirmed";
        result["next_step"] =
            std::string(unsure) + " " + why + ": list_articles shows whether it is live.";
    };
    if (article_id.empty()) return unconfirmed("its answer carries no article id to check");
    json record;
    try {
        record = first_row(box,
                           {.resource = "blogs",
                            .client_id = client_id,
                            .filter_field = "id",
                            .filter_value = article_id},
                           "no blog post " + article_id, stop);
    } catch (const gateway::Error& e) {
        return unconfirmed(std::string("its answer does not say, and reading the article back "
                                       "failed (") +
                           e.what() + ")");
    }
    result["status_from"] = "the article's record, read back after the action (resource=blogs)";
    if (result.value("url", json()).is_null()) {
        const json url = first_text(record, {"url", "permalink", "link"});
        if (!url.is_null()) result["url"] = url;
    }
    if (says_live(record)) {
        result["status"] = "published";
        return;
    }
    const json said = first_text(record, {"status"});
    if (said.is_null()) return unconfirmed("neither its answer nor the article's record says");
    result["status"] = normalize_status(record, "drafted");
    if (said == "draft") {
        result["next_step"] =
            "The gateway's record says it is a draft: it is not live. "
            "deploy_article publishes it.";
    } else {
        result["next_step"] = "The gateway's record says \"" + said.get<std::string>() +
                              "\": it has not gone live yet. list_articles shows when it does.";
    }
}

}  // namespace agency::tools

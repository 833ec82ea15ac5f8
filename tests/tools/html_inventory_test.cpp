// Issue 45, finding 4: what is published or sent is named before a person approves it. Forms,
// fields, buttons, SVG text, frames and embeds, links whose text is not where they go and
// remote images reach the preview's members, the two-step preview's message and the form's
// message (tools/actions/html_inventory.hpp); hidden parts stay counted as hidden text only.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/action_tool_harness.hpp"
#include "tests/support/sample_clients.hpp"
#include "tests/support/text.hpp"
#include "tools/actions/html_inventory.hpp"

namespace html_inventory {  // named: a unity batch holds other tests' helpers of the same names

using agency::testing::ActionToolHarness;
using agency::tools::html_inventory;
using agency::tools::HtmlInventory;
using agency::tools::inventory_note;
using json = nlohmann::json;

using namespace agency::testing::sample_clients;
constexpr const char* kProspect = "https://legal-resources.example/guides";
// The e-mail of the finding: a form with a password field and a button, a link whose text is
// another address than its target, a 1x1 remote image.
constexpr const char* kPhishingEmail =
    "<p>Verify your account.</p>"
    "<form action=\"http://evil.example/collect\"><input type=\"password\" name=\"pw\">"
    "<button>Claim your refund</button></form>"
    "<p><a href=\"http://evil.example/login\">https://paypal.com</a></p>"
    "<img src=\"http://track.example/p.gif\" width=\"1\" height=\"1\">";

using agency::testing::has;

// What the finding asks a preview to name, in `text`.
void expect_named(const std::string& text) {
    for (const char* part :
         {"password field", "Claim your refund", "http://evil.example/collect",
          "\"https://paypal.com\" goes to http://evil.example/login", "http://track.example/p.gif"})
        EXPECT_TRUE(has(text, part)) << part << " in: " << text;
}

void expect_members(const json& preview) {
    ASSERT_TRUE(preview["links"].is_array()) << preview.dump();
    ASSERT_FALSE(preview["links"].empty()) << preview.dump();
    EXPECT_EQ(preview["links"][0].value("text", ""), "https://paypal.com");
    EXPECT_EQ(preview["links"][0].value("href", ""), "http://evil.example/login");
    EXPECT_EQ(preview["links"][0].value("misleading", false), true);
    EXPECT_EQ(preview["remote_images"], json::array({"http://track.example/p.gif"}));
    EXPECT_TRUE(has(preview["interactive"].dump(), "a password field")) << preview.dump();
    EXPECT_TRUE(has(preview["interactive"].dump(), "a button \\\"Claim your refund\\\""))
        << preview.dump();
    EXPECT_EQ(preview["content_counts"].value("password_field", 0), 1) << preview.dump();
    EXPECT_EQ(preview["content_counts"].value("form", 0), 1) << preview.dump();
}

TEST(HtmlInventory, NamesFormsFieldsButtonsSvgFramesLinksAndRemoteImages) {
    const HtmlInventory inv = html_inventory(
        std::string(kPhishingEmail) +
        "<svg><text>Refund approved</text></svg><iframe src=\"https://evil.example/f\">x</iframe>"
        "<embed src=\"https://evil.example/e.swf\"><select "
        "name=\"bank\"><option>A</option></select>"
        "<textarea placeholder=\"Your card\"></textarea>");
    expect_members({{"links", inv.links},
                    {"remote_images", inv.remote_images},
                    {"interactive", inv.interactive},
                    {"content_counts", inv.counts}});
    const std::string listed = inv.interactive.dump();
    for (const char* part :
         {"SVG text \\\"Refund approved\\\"", "an embedded frame showing https://evil.example/f",
          "embedded content from https://evil.example/e.swf", "a drop-down list \\\"bank\\\"",
          "a text box \\\"Your card\\\""})
        EXPECT_TRUE(has(listed, part)) << part << " in " << listed;
    expect_named(inventory_note(inv, "e-mail"));
}

TEST(HtmlInventory, LinksThatSayWhereTheyGoAndHiddenPartsAreNotListed) {
    const HtmlInventory inv = html_inventory(
        "<p><a href=\"https://example.com/\">https://example.com</a> "
        "<a href=\"https://www.example.com/guide\">example.com</a> <a href=\"#top\">Top</a></p>"
        "<div hidden><form><input type=\"password\"></form><iframe src=\"http://x.example\">"
        "</iframe><img src=\"http://track.example/h.gif\"></div><!-- <button>b</button> -->"
        "<img src=\"data:image/gif;base64,R0lGOD\"><img src=\"/local.png\">");
    EXPECT_TRUE(inv.empty()) << inv.links.dump() << inv.interactive.dump()
                             << inv.remote_images.dump();
    EXPECT_EQ(inventory_note(inv, "article"), "");
    // Text that names another host, or a host hiding behind a user name, is misleading.
    const HtmlInventory tricked = html_inventory(
        "<a href=\"http://paypal.com@evil.example/\">paypal.com</a>"
        "<a href=\"https://paypal.com.evil.example/\">https://paypal.com</a>"
        "<a href=\"https://client.example/pricing\">our prices</a>");
    ASSERT_EQ(tricked.links.size(), 3u) << tricked.links.dump();
    EXPECT_TRUE(tricked.links[0].value("misleading", false));
    EXPECT_TRUE(tricked.links[1].value("misleading", false));
    EXPECT_FALSE(tricked.links[2].value("misleading", true));
}

TEST(HtmlInventory, ListsAreBoundedAndSayHowManyMore) {
    std::string html;
    for (int i = 0; i < 300; ++i) {
        html += "<a href=\"https://t.example/" + std::to_string(i) +
                "\">read</a><img src=\"https://i.example/" + std::to_string(i) +
                ".png\"><input type=\"password\">";
        // After the plain links fill their list, within the elements whose text is read.
        if (i == 20)
            html += "<a href=\"https://evil.example/" + std::string(2000, 'x') +
                    "\">bank.example</a>";
    }
    const HtmlInventory inv = html_inventory(html);
    EXPECT_EQ(inv.links.size(), HtmlInventory::kMaxListed);
    EXPECT_EQ(inv.remote_images.size(), HtmlInventory::kMaxListed);
    EXPECT_EQ(inv.interactive.size(), HtmlInventory::kMaxListed);
    EXPECT_GT(inv.unlisted, 500u);
    EXPECT_EQ(inv.counts.value("password_field", 0), 300);
    // The misleading link comes first, its URL cut.
    EXPECT_EQ(inv.links[0].value("text", ""), "bank.example");
    EXPECT_LE(inv.links[0].value("href", "").size(), HtmlInventory::kMaxUrlChars + 3);
    const std::string note = inventory_note(inv, "e-mail");
    EXPECT_TRUE(has(note, "and 290 more")) << note.substr(0, 400);
    EXPECT_LT(note.size(), 12000u);
}

// The e-mail of the finding, given as the send's body: the two-step preview (members and
// message) and the modern form's message name what it holds; nothing is sent.
TEST(HtmlInventory, TheSendPreviewAndTheFormNameWhatTheEmailHolds) {
    ActionToolHarness o;
    const json d = o.ok("generate_outreach_email", {{"client_id", kLaw}, {"prospect", kProspect}});
    const json args = {{"client_id", kLaw}, {"email_id", d["email_id"]}, {"body", kPhishingEmail}};
    const json preview = o.ok("send_prospect_email", args);
    ASSERT_EQ(preview.value("status", ""), "confirmation_required") << preview.dump();
    expect_members(preview["preview"]);
    expect_named(preview.value("message", ""));
    const json asked = o.eliciting_call("send_prospect_email", args);
    ASSERT_EQ(asked["result"].value("resultType", ""), "input_required") << asked.dump();
    expect_named(asked["result"]["inputRequests"]["confirm"]["params"].value("message", ""));
    EXPECT_EQ(o.posts("send_prospect_email"), 0u);
}

// The sample's phishing article (Options::phishing_article): the deploy preview names it too.
TEST(HtmlInventory, TheDeployPreviewNamesWhatTheArticleHolds) {
    ActionToolHarness o({.phishing_article = true});
    std::vector<std::string> ids;
    for (const auto& row : o.h->gw->rows("blogs", kLaw)) ids.push_back(row.value("id", ""));
    std::sort(ids.begin(), ids.end());
    ASSERT_GE(ids.size(), 2u);
    const json args = {{"client_id", kLaw}, {"article_id", ids[1]}};
    const json preview = o.ok("deploy_article", args);
    ASSERT_EQ(preview.value("status", ""), "confirmation_required") << preview.dump();
    expect_members(preview["preview"]);
    const std::string message = preview.value("message", "");
    expect_named(message);
    EXPECT_TRUE(has(message, "SVG text \"Refund approved\"")) << message;
    EXPECT_TRUE(has(message, "an embedded frame showing http://evil.example/frame")) << message;
    const json asked = o.eliciting_call("deploy_article", args);
    ASSERT_EQ(asked["result"].value("resultType", ""), "input_required") << asked.dump();
    expect_named(asked["result"]["inputRequests"]["confirm"]["params"].value("message", ""));
    // Without the option the same article names nothing: the default sample is unchanged.
    ActionToolHarness plain;
    const json before = plain.ok("deploy_article", args);
    EXPECT_TRUE(before["preview"]["interactive"].empty()) << before.dump();
    EXPECT_EQ(o.posts("deploy_blog") + plain.posts("deploy_blog"), 0u);
}

}  // namespace html_inventory

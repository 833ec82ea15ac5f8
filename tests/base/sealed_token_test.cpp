// The one sealed-token module: every binding, expiry and single use refuses what it must.
#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "base/crypto.hpp"
#include "base/sealed_token.hpp"
#include "tests/support/manual_clock.hpp"

namespace {

using namespace std::chrono_literals;
using agency::base::OpenedToken;
using agency::base::SpentTokens;
using agency::base::TokenBinding;
using agency::base::TokenRefusal;
using agency::base::TokenSealer;

TokenRefusal refusal_of(const std::variant<OpenedToken, TokenRefusal>& opened) {
    EXPECT_TRUE(std::holds_alternative<TokenRefusal>(opened)) << "the token was accepted";
    return std::holds_alternative<TokenRefusal>(opened) ? std::get<TokenRefusal>(opened)
                                                        : TokenRefusal::altered;
}

const TokenBinding kBinding{.subject = "list_keywords", .scope = "cl_1", .principal = "alice",
                            .arguments = R"({"sort":"volume"})"};

TEST(SealedToken, OpensWithItsBindingAndCarriesItsBody) {
    agency::testing::ManualClock clock;
    TokenSealer sealer("secret", "cursor", clock);
    const std::string token = sealer.seal(kBinding, 1h, {{"o", 100}});
    const auto opened = sealer.open(token, kBinding);
    ASSERT_TRUE(std::holds_alternative<OpenedToken>(opened));
    EXPECT_EQ(std::get<OpenedToken>(opened).body, (nlohmann::json{{"o", 100}}));
    EXPECT_EQ(std::get<OpenedToken>(opened).nonce.size(), 24u);
    // The principal's name is not readable in the token.
    const auto dot = token.find('.');
    EXPECT_EQ(agency::crypto::base64url_decode(token.substr(0, dot))->find("alice"),
              std::string::npos);
}

TEST(SealedToken, EachBindingIsChecked) {
    agency::testing::ManualClock clock;
    TokenSealer sealer("secret", "cursor", clock);
    const std::string token = sealer.seal(kBinding, 1h);
    auto with = [&](auto change) {
        TokenBinding b = kBinding;
        change(b);
        return refusal_of(sealer.open(token, b));
    };
    EXPECT_EQ(with([](auto& b) { b.subject = "list_backlinks"; }), TokenRefusal::other_subject);
    EXPECT_EQ(with([](auto& b) { b.scope = "cl_2"; }), TokenRefusal::other_scope);
    EXPECT_EQ(with([](auto& b) { b.principal = "mallory"; }), TokenRefusal::other_principal);
    EXPECT_EQ(with([](auto& b) { b.arguments = "{}"; }), TokenRefusal::other_arguments);
}

TEST(SealedToken, RefusesAlteredForeignAndOtherPurposeTokens) {
    agency::testing::ManualClock clock;
    TokenSealer sealer("secret", "cursor", clock);
    std::string token = sealer.seal(kBinding, 1h);
    EXPECT_EQ(refusal_of(TokenSealer("other secret", "cursor", clock).open(token, kBinding)),
              TokenRefusal::altered);
    EXPECT_EQ(refusal_of(TokenSealer("secret", "confirmation", clock).open(token, kBinding)),
              TokenRefusal::altered);
    token[3] = token[3] == 'A' ? 'B' : 'A';
    EXPECT_EQ(refusal_of(sealer.open(token, kBinding)), TokenRefusal::altered);
    EXPECT_EQ(refusal_of(sealer.open("", kBinding)), TokenRefusal::altered);
    EXPECT_EQ(refusal_of(sealer.open("not.a-token", kBinding)), TokenRefusal::altered);
}

TEST(SealedToken, ExpiresByItsClock) {
    agency::testing::ManualClock clock;
    TokenSealer sealer("secret", "request-state", clock);
    const std::string token = sealer.seal(kBinding, 10min);
    clock.advance(9min);
    EXPECT_TRUE(std::holds_alternative<OpenedToken>(sealer.open(token, kBinding)));
    clock.advance(2min);
    EXPECT_EQ(refusal_of(sealer.open(token, kBinding)), TokenRefusal::expired);
}

TEST(SealedToken, SpentOnceThenForgottenAfterExpiry) {
    agency::testing::ManualClock clock;
    TokenSealer sealer("secret", "request-state", clock);
    SpentTokens spent(clock);
    const auto first = std::get<OpenedToken>(sealer.open(sealer.seal(kBinding, 1min), kBinding));
    const auto second = std::get<OpenedToken>(sealer.open(sealer.seal(kBinding, 1min), kBinding));
    EXPECT_TRUE(spent.spend(first));
    EXPECT_FALSE(spent.spend(first));
    EXPECT_TRUE(spent.spend(second));  // each token its own nonce
    clock.advance(2min);
    // Past its expiry the nonce is dropped: the token itself is refused as expired by then.
    EXPECT_TRUE(spent.spend(first));
}

}  // namespace

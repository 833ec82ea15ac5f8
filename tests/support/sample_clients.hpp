// The sample gateway's three demo clients, by the traits the tests lean on
// (gateway/sample/sample_data.cpp). One definition, so that test files compiled in one unity
// batch do not each declare their own.
#pragma once

#include "gateway/sample/sample_gateway.hpp"

namespace agency::testing::sample_clients {

// Auto-deploy on (generate_article asks a person first, sample::kAutoDeployClient); keywords
// tracked daily, 2026-09-16 to 2026-11-14.
inline constexpr const char* kPlumbing = agency::sample::kAutoDeployClient;
// No auto-deploy: its articles stay drafts.
inline constexpr const char* kDental = "demo-dental";
// Tracked weekly, 2026-05-23 to 2026-11-14.
inline constexpr const char* kLaw = "demo-law";

}  // namespace agency::testing::sample_clients

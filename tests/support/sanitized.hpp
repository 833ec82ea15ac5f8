// AGENCY_SANITIZED_BUILD: 1 in a sanitizer's build (ASan, TSan), whose binaries keep freed
// memory in quarantine or shadow, so memory bounds hold only for the product as shipped.
// GCC names such a build by __SANITIZE_*__, clang by __has_feature.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define AGENCY_SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define AGENCY_SANITIZED_BUILD 1
#endif
#endif
#ifndef AGENCY_SANITIZED_BUILD
#define AGENCY_SANITIZED_BUILD 0
#endif

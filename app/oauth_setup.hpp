// OAuth for `serve --http` (docs/auth.md): the token validator and the authenticator the
// transport asks, from the command line's --oauth-* options.
#pragma once

#include <memory>

#include "app/cli.hpp"
#include "transport/authenticator.hpp"

namespace agency::app {

// Throws std::invalid_argument naming the option to fix when the --oauth-* options do not hold
// together (before anything starts).
void check_oauth(const OAuthArgs& args);

// Throws std::invalid_argument with the option to fix when the settings do not hold together.
// `keys` (may be null) keep working beside OAuth.
std::shared_ptr<const mcp::Authenticator> oauth_for_serving(const OAuthArgs& args,
                                                            std::shared_ptr<const mcp::KeyStore> keys,
                                                            bool read_only);

}  // namespace agency::app

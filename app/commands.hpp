// What each subcommand does: the wiring of the layers (gateway client or the built-in sample
// gateway, state, tools, MCP core, transport) for `serve` and `tools-doc`, and the small
// commands. Each returns the process's exit code; errors are thrown for main to report.
#pragma once

#include <memory>
#include <string>

#include "app/cli.hpp"
#include "server/keys.hpp"

namespace agency::app {

int run_serve(const ServeArgs& args);
int run_sample_gateway(const SampleArgs& args);
int run_keys_add(const KeysArgs& args);
// app/key_commands.cpp
int run_keys_list(const KeysArgs& args);
int run_keys_remove(const KeysArgs& args);
int run_keys_rotate(const KeysArgs& args);
// The keys file `serve --http` will use (throws when it cannot be used; see there).
std::shared_ptr<const mcp::KeyStore> open_keys_for_serving(const std::string& path);
// `readme`: only the README's generated section.
int run_tools_doc(bool readme);

}  // namespace agency::app

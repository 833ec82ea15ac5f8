// What each subcommand does: the wiring of the layers (gateway client or the built-in sample
// gateway, state, tools, MCP core, transport) for `serve` and `tools-doc`, and the small
// commands. Each returns the process's exit code; errors are thrown for main to report.
#pragma once

#include "app/cli.hpp"

namespace agency::app {

int run_serve(const ServeArgs& args);
int run_sample_gateway(const SampleArgs& args);
int run_keys_add(const KeysArgs& args);
// `readme`: only the README's generated section.
int run_tools_doc(bool readme);

}  // namespace agency::app

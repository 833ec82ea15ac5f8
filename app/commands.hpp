// What each subcommand does: the wiring of the layers (gateway client or the built-in sample
// gateway, state, tools, MCP core, transport) for `serve` and `tools-doc`, and the small
// commands. Each returns the process's exit code; errors are thrown for main to report.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "app/cli.hpp"
#include "state/store.hpp"
#include "transport/keys.hpp"

namespace agency::app {

int run_serve(const ServeArgs& args);
int run_sample_gateway(const SampleArgs& args);
int run_keys_add(const KeysArgs& args);
int run_keys_import(const KeysArgs& args);
// app/key_commands.cpp
int run_keys_list(const KeysArgs& args);
int run_keys_remove(const KeysArgs& args);
int run_keys_rotate(const KeysArgs& args);
int run_keys_update(const KeysArgs& args);
// The keys file `serve --http` will use (throws when it cannot be used; see there).
std::shared_ptr<const mcp::KeyStore> open_keys_for_serving(const std::string& path);
// The keys file serve --http reads: the one named (--keys-file, AGENCY_KEYS_FILE), else the
// default one `keys add` writes when it exists; "" for none.
std::string serving_keys_path(const std::string& named);
// `readme`: only the README's generated section.
int run_tools_doc(bool readme);

// app/state_commands.cpp: the state store by URL (PostgreSQL) or file (SQLite; default path
// when both are empty); throws StoreError saying why it cannot be used. Only serve and state
// migrate pass SchemaUpgrade::migrate: every other command refuses an older schema.
std::shared_ptr<state::Store> open_state(const std::string& state_url, const std::string& state_db,
                                         state::SchemaUpgrade upgrade);
// Throws unless `secret` can seal tokens for every instance of a shared store.
void require_shared_secret(const std::string& secret);
// This process among the instances of a shared store: host, pid and a random tail.
std::string instance_name();
int run_state_migrate(const StateArgs& args);
int run_state_export(const StateArgs& args);
int run_state_import(const StateArgs& args);
int run_state_backup(const StateArgs& args);
// app/write_log_commands.cpp
int run_write_log(const WriteLogArgs& args);
int run_write_log_prune(const WriteLogArgs& args);

}  // namespace agency::app

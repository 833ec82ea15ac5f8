// agency-mcp: an MCP tool server over an SEO agency's gateway.
//   agency-mcp serve                          MCP over stdio
//   agency-mcp serve --http --listen ADDR     MCP over Streamable HTTP at /mcp
//   agency-mcp sample-gateway --listen ADDR   the built-in sample gateway, standalone
//   agency-mcp keys add --name N --scopes read,write   (also keys list, remove, rotate)
//   agency-mcp --version
//   agency-mcp tools-doc                      the tool reference (docs/tools.md) on stdout
//   agency-mcp state migrate|export|import    the state store (docs/deploy.md)
//   agency-mcp write-log [prune]              the record of every action call
#include <cstdio>
#include <exception>
#include <thread>

#include "base/log.hpp"
#include "base/text.hpp"

#include "app/cli.hpp"
#include "app/commands.hpp"
#include "app/process.hpp"

int main(int argc, char** argv) {
    using namespace agency::app;
    CommandLine cli;
    const auto parsed = cli.parse(argc, argv);
    if (!parsed) return cli.exit_code();
    const Command command = *parsed;
    tune_malloc();
    small_thread_stacks();
    if (command == Command::serve) prefault_heap();
    // Schemas are parsed beside the start-up work that needs none (state, the gateway check).
    std::jthread schemas_warmed;
    if (command == Command::serve || command == Command::tools_doc) schemas_warmed = warm_schemas();
    try {
        setup_logging(cli.log_level, cli.log_file, cli.log_format);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "agency-mcp: %s\n", e.what());
        return 2;
    }
    try {
        switch (command) {
            case Command::serve: return run_serve(cli.serve);
            case Command::sample_gateway: return run_sample_gateway(cli.sample);
            case Command::keys_add: return run_keys_add(cli.keys);
            case Command::keys_import: return run_keys_import(cli.keys);
            case Command::keys_list: return run_keys_list(cli.keys);
            case Command::keys_remove: return run_keys_remove(cli.keys);
            case Command::keys_rotate: return run_keys_rotate(cli.keys);
            case Command::keys_update: return run_keys_update(cli.keys);
            case Command::tools_doc:
                if (cli.settings_section) {
                    std::fputs(cli.settings_table().c_str(), stdout);
                    return 0;
                }
                return run_tools_doc(cli.readme_section);
            case Command::state_migrate: return run_state_migrate(cli.state);
            case Command::state_export: return run_state_export(cli.state);
            case Command::state_import: return run_state_import(cli.state);
            case Command::state_backup: return run_state_backup(cli.state);
            case Command::write_log: return run_write_log(cli.write_log);
            case Command::write_log_prune: return run_write_log_prune(cli.write_log);
        }
    } catch (const std::exception& e) {
        agency::log::critical("{}", e.what());
        // With --log-file the reason would otherwise be only in the file.
        // Escaped as the log's text lines are (the reason may quote a gateway's answer).
        if (!cli.log_file.empty())
            std::fprintf(stderr, "agency-mcp: %s\n", agency::base::log_safe_text(e.what()).c_str());
    }
    return 1;
}

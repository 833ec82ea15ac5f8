// The MCP protocol's names and versions, in one place.
#pragma once

#include <array>
#include <string_view>

namespace agency::mcp {

inline constexpr std::string_view kModernVersion = "2026-07-28";
inline constexpr std::string_view kLatestLegacyVersion = "2025-11-25";
// Newest first: the first is what initialize falls back to for an unknown version.
inline constexpr std::array<std::string_view, 3> kLegacyVersions{"2025-11-25", "2025-06-18",
                                                                 "2025-03-26"};

// The syslog levels of logging/setLevel and notifications/message, least severe first: a
// level's index is what a session's threshold compares.
inline constexpr std::array<std::string_view, 8> kLogLevels{
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

// Modern per-request _meta keys (2026-07-28).
// Methods a probing client sends before it decides to open a session (Server::begin_work).
inline constexpr std::string_view kMethodDiscover = "server/discover";
inline constexpr std::string_view kMethodPing = "ping";

inline constexpr std::string_view kMetaVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view kMetaCapabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view kMetaLogLevel = "io.modelcontextprotocol/logLevel";
inline constexpr std::string_view kMetaServerInfo = "io.modelcontextprotocol/serverInfo";

// Tasks (2025-11-25 core; 2026-07-28 as an extension).
inline constexpr std::string_view kTasksExtension = "io.modelcontextprotocol/tasks";
// MCP Apps (SEP-1865): the extension a client declares when it renders views, and their type.
inline constexpr std::string_view kUiExtension = "io.modelcontextprotocol/ui";
inline constexpr std::string_view kViewMimeType = "text/html;profile=mcp-app";
inline constexpr std::string_view kRelatedTaskMeta = "io.modelcontextprotocol/related-task";

// Streamable HTTP headers.
inline constexpr std::string_view kHeaderSessionId = "Mcp-Session-Id";
inline constexpr std::string_view kHeaderProtocolVersion = "MCP-Protocol-Version";
inline constexpr std::string_view kHeaderMethod = "Mcp-Method";
inline constexpr std::string_view kHeaderName = "Mcp-Name";
inline constexpr std::string_view kHeaderParamPrefix = "Mcp-Param-";

}  // namespace agency::mcp

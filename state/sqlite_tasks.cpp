// SqliteStore as the core's TaskStore: one row per MCP task, replaced on every change.
#include <string>

#include "state/sqlite_internal.hpp"
#include "state/sqlite_store.hpp"

namespace agency::state {

using json = nlohmann::json;

// --- tasks (TaskStore) ------------------------------------------------------------------------

namespace {
constexpr const char* kTaskColumns =
    "id, owner, tool, era, status, status_message, created_ms, updated_ms, ttl_ms, poll_ms, "
    "arguments, result, error, input_requests, resume";

std::string json_or_null(const json& value) { return value.is_null() ? std::string() : value.dump(); }
}  // namespace

namespace {
TaskRecord task_from(const auto& st) {
    TaskRecord t;
    t.id = st.text(0);
    t.owner = st.text(1);
    t.tool = st.text(2);
    t.era = st.text(3);
    t.status = parse_task_status(st.text(4)).value_or(TaskStatus::failed);
    t.status_message = st.text(5);
    t.created_ms = st.integer(6);
    t.updated_ms = st.integer(7);
    t.ttl_ms = st.integer(8);
    t.poll_ms = st.integer(9);
    t.arguments = st.json_column(10);
    t.result = st.text(11);
    t.error = st.json_column(12);
    t.input_requests = st.json_column(13);
    t.resume = st.json_column(14);
    return t;
}
}  // namespace

void SqliteStore::put(const TaskRecord& t) {
    const auto lock = open_locked();
    Statement st(db_, (std::string("INSERT OR REPLACE INTO tasks (") + kTaskColumns +
                       ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
                          .c_str());
    st.bind(t.id).bind(t.owner).bind(t.tool).bind(t.era).bind(to_string(t.status));
    st.bind(t.status_message).bind(t.created_ms).bind(t.updated_ms).bind(t.ttl_ms).bind(t.poll_ms);
    st.bind(t.arguments.dump()).bind(t.result);
    for (const json* v : {&t.error, &t.input_requests, &t.resume}) {
        if (v->is_null())
            st.bind_null();
        else
            st.bind(json_or_null(*v));
    }
    st.run();
}

std::optional<TaskRecord> SqliteStore::get(std::string_view id) {
    const auto lock = open_locked();
    Statement st(db_, (std::string("SELECT ") + kTaskColumns + " FROM tasks WHERE id = ?").c_str());
    st.bind(id);
    if (!st.step()) return std::nullopt;
    return task_from(st);
}

std::vector<TaskRecord> SqliteStore::list(std::string_view owner, std::size_t offset,
                                         std::size_t limit) {
    const auto lock = open_locked();
    Statement st(db_, (std::string("SELECT ") + kTaskColumns +
                       " FROM tasks WHERE owner = ? ORDER BY created_ms DESC, id LIMIT ? OFFSET ?")
                          .c_str());
    st.bind(owner).bind(static_cast<std::int64_t>(limit)).bind(static_cast<std::int64_t>(offset));
    std::vector<TaskRecord> out;
    while (st.step()) out.push_back(task_from(st));
    return out;
}

std::vector<TaskRecord> SqliteStore::unfinished() {
    std::unique_lock<std::mutex> lock;
    if (!exists_locked(lock)) return {};
    Statement st(db_, (std::string("SELECT ") + kTaskColumns +
                       " FROM tasks WHERE status IN ('working','input_required') ORDER BY "
                       "created_ms")
                          .c_str());
    std::vector<TaskRecord> out;
    while (st.step()) out.push_back(task_from(st));
    return out;
}

void SqliteStore::erase_expired(std::int64_t now_ms) {
    const auto lock = open_locked();
    Statement st(db_, "DELETE FROM tasks WHERE ttl_ms > 0 AND created_ms + ttl_ms < ?");
    st.bind(now_ms).run();
}

}  // namespace agency::state

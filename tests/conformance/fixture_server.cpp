// Test-only MCP server: the product's core and HTTP transport with the conformance suite's
// fixture tools, resources and prompts (names and contents as the suite's reference server
// has them). The product binary carries none of this.
//   conformance_fixture [--listen 127.0.0.1:0]   prints its URL on stdout
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <thread>

#include "server/mcp_server.hpp"
#include "transport/http_transport.hpp"

using agency::mcp::json;
using agency::mcp::RequestContext;
using agency::mcp::ToolDef;
using agency::mcp::ToolResult;

namespace {

constexpr const char* kImage =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
constexpr const char* kAudio = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

const json kEmptyInput = {{"type", "object"}, {"properties", json::object()}};

ToolResult content(json blocks, bool is_error = false) {
    ToolResult r;
    r.content = std::move(blocks);
    r.is_error = is_error;
    return r;
}

json text_block(const std::string& text) { return {{"type", "text"}, {"text", text}}; }

json elicit(const std::string& message, json schema) {
    return {{"method", "elicitation/create"},
            {"params", {{"message", message}, {"requestedSchema", std::move(schema)}}}};
}

json sample(const std::string& prompt) {
    return {{"method", "sampling/createMessage"},
            {"params",
             {{"messages", json::array({{{"role", "user"},
                                          {"content", {{"type", "text"}, {"text", prompt}}}}})},
              {"maxTokens", 100}}}};
}

const json kRoots = {{"method", "roots/list"}, {"params", json::object()}};

std::string sampled_text(const json& answer) {
    const json& c = answer.value("content", json::object());
    return c.is_object() ? c.value("text", "") : std::string();
}

void add(agency::mcp::Server& server, std::string name, std::string description,
         std::function<ToolResult(const json&, RequestContext&)> handler, bool interactive = false,
         json schema = kEmptyInput) {
    ToolDef t;
    t.name = std::move(name);
    t.description = std::move(description);
    t.input_schema = std::move(schema);
    t.interactive = interactive;
    t.handler = std::move(handler);
    server.add_tool(std::move(t));
}

json object_schema(json properties, json required = json::array()) {
    return {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

// The tasks extension's fixtures (conformance tasks-* scenarios).
void register_task_tools(agency::mcp::Server& s) {
    using agency::mcp::TaskSupport;
    auto task_tool = [](std::string name, std::string description, TaskSupport support,
                          json schema,
                          std::function<ToolResult(const json&, RequestContext&)> handler) {
        ToolDef t;
        t.name = std::move(name);
        t.description = std::move(description);
        t.input_schema = std::move(schema);
        t.task_support = support;
        t.handler = std::move(handler);
        return t;
    };
    s.add_tool(task_tool("greet", "Greets someone (never a task)", TaskSupport::forbidden,
                         object_schema({{"name", {{"type", "string"}}}}),
                         [](const json& a, RequestContext&) {
                             return ToolResult::text("Hello, " + a.value("name", "World") + "!");
                         }));
    s.add_tool(task_tool(
        "slow_compute", "Sleeps for `seconds`, then answers; may run as a task",
        TaskSupport::optional,
        object_schema({{"seconds", {{"type", "number"}}}, {"label", {{"type", "string"}}}}),
        [](const json& a, RequestContext& ctx) {
            const std::chrono::milliseconds work(static_cast<int>(a.value("seconds", 0.0) * 1000));
            // Works for `seconds` unless cancelled first (the stop token wakes the wait).
            std::mutex mutex;
            std::condition_variable_any changed;
            std::unique_lock lock(mutex);
            (void)changed.wait_for(lock, ctx.stop, work, [] { return false; });
            if (ctx.stop.stop_requested()) return ToolResult::text("cancelled", true);
            return ToolResult::text("Computed " + a.value("label", std::string("result")));
        }));
    s.add_tool(task_tool("failing_job", "Fails with a tool error after about a second",
                         TaskSupport::required, kEmptyInput, [](const json&, RequestContext&) {
                             std::this_thread::sleep_for(std::chrono::seconds(1));
                             return ToolResult::text("the job failed", true);
                         }));
    s.add_tool(task_tool("protocol_error_job", "Fails with a protocol error",
                         TaskSupport::required, kEmptyInput,
                         [](const json&, RequestContext&) -> ToolResult {
                             throw agency::mcp::RpcError(agency::mcp::error_code::internal_error,
                                                         "the job hit a protocol error");
                         }));
    s.add_tool(task_tool(
        "confirm_delete", "Asks for confirmation, then deletes a file (as a task)",
        TaskSupport::required, object_schema({{"filename", {{"type", "string"}}}}, {"filename"}),
        [](const json& a, RequestContext& ctx) {
            const std::string file = a.value("filename", "");
            json answer = ctx.ask(
                "confirm", "elicitation/create",
                elicit("Delete " + file + "?",
                       object_schema({{"confirm", {{"type", "boolean"}}}}))["params"]);
            if (answer.value("action", "") != "accept")
                return ToolResult::text("Kept " + file);
            return ToolResult::text("Deleted " + file);
        }));
    s.add_tool(task_tool(
        "multi_input", "Asks two questions at once (as a task)", TaskSupport::required,
        kEmptyInput, [](const json&, RequestContext& ctx) {
            json schema = object_schema(
                {{"name", {{"type", "string"}}}, {"confirm", {{"type", "boolean"}}}});
            json questions = {{"first", elicit("First answer?", schema)},
                              {"second", elicit("Second answer?", schema)}};
            json answers = ctx.ask_all(questions);
            return ToolResult::text("Answers: " + answers.dump());
        }));
    ToolDef mrtr = task_tool(
        "test_tool_with_task", "Asks for a name, then works on it as a task",
        TaskSupport::required, kEmptyInput, [](const json&, RequestContext& ctx) {
            json answer = ctx.ask("user_name", "elicitation/create",
                                  elicit("What is your name?",
                                         object_schema({{"name", {{"type", "string"}}}}))["params"]);
            return ToolResult::text("Hello, " +
                                    answer.value("content", json::object()).value("name", "") +
                                    ", from a task");
        });
    mrtr.before_task = [](const json&, RequestContext& ctx) {
        ctx.ask("user_name", "elicitation/create",
                elicit("What is your name?", object_schema({{"name", {{"type", "string"}}}}))["params"]);
    };
    s.add_tool(std::move(mrtr));
}

void register_tools(agency::mcp::Server& s) {
    add(s, "test_simple_text", "Returns a simple text response", [](const json&, RequestContext&) {
        return ToolResult::text("This is a simple text response for testing.");
    });
    add(s, "test_image_content", "Returns an image", [](const json&, RequestContext&) {
        return content({{{"type", "image"}, {"data", kImage}, {"mimeType", "image/png"}}});
    });
    add(s, "test_audio_content", "Returns audio", [](const json&, RequestContext&) {
        return content({{{"type", "audio"}, {"data", kAudio}, {"mimeType", "audio/wav"}}});
    });
    add(s, "test_embedded_resource", "Returns an embedded resource",
        [](const json&, RequestContext&) {
            return content({{{"type", "resource"},
                             {"resource",
                              {{"uri", "test://embedded-resource"},
                               {"mimeType", "text/plain"},
                               {"text", "This is an embedded resource content."}}}}});
        });
    add(s, "test_multiple_content_types", "Returns text, image and resource",
        [](const json&, RequestContext&) {
            return content({text_block("Multiple content types test:"),
                            {{"type", "image"}, {"data", kImage}, {"mimeType", "image/png"}},
                            {{"type", "resource"},
                             {"resource",
                              {{"uri", "test://mixed-content-resource"},
                               {"mimeType", "application/json"},
                               {"text", R"({"test":"data","value":123})"}}}}});
        });
    add(
        s, "test_tool_with_logging", "Sends log messages while it runs",
        [](const json&, RequestContext& ctx) {
            for (const char* m :
                 {"Tool execution started", "Tool processing data", "Tool execution completed"}) {
                ctx.log("info", m);
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
            return ToolResult::text("Tool with logging executed successfully");
        },
        true);
    add(
        s, "test_tool_with_progress", "Reports progress while it runs",
        [](const json&, RequestContext& ctx) {
            for (int step : {0, 50, 100}) {
                ctx.progress(step, 100, "Completed step " + std::to_string(step) + " of 100");
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
            return ToolResult::text("Progress tool completed");
        },
        true);
    add(s, "test_error_handling", "Always fails", [](const json&, RequestContext&) {
        return ToolResult::text("This tool intentionally returns an error for testing", true);
    });
    add(
        s, "test_sampling", "Asks the client's model",
        [](const json& args, RequestContext& ctx) {
            json answer = ctx.ask("sample", "sampling/createMessage",
                                  sample(args.value("prompt", ""))["params"], false);
            return ToolResult::text("LLM response: " + sampled_text(answer));
        },
        true,
        {{"type", "object"},
         {"properties", {{"prompt", {{"type", "string"}}}}},
         {"required", {"prompt"}}});
    add(
        s, "test_elicitation", "Asks the user",
        [](const json& args, RequestContext& ctx) {
            json answer = ctx.ask(
                "response", "elicitation/create",
                elicit(args.value("message", ""),
                       {{"type", "object"},
                        {"properties",
                         {{"response", {{"type", "string"}, {"description", "User's response"}}}}},
                        {"required", {"response"}}})["params"],
                false);
            return ToolResult::text("User response: action=" + answer.value("action", "") +
                                    ", content=" + answer.value("content", json::object()).dump());
        },
        true,
        {{"type", "object"},
         {"properties", {{"message", {{"type", "string"}}}}},
         {"required", {"message"}}});
    add(
        s, "test_elicitation_sep1034_defaults", "Elicitation with defaults",
        [](const json&, RequestContext& ctx) {
            json schema = json::parse(R"json({"type":"object","properties":{
              "name":{"type":"string","description":"User name","default":"John Doe"},
              "age":{"type":"integer","description":"User age","default":30},
              "score":{"type":"number","description":"User score","default":95.5},
              "status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
              "verified":{"type":"boolean","description":"Verification status","default":true}},"required":[]})json");
            json answer = ctx.ask(
                "form", "elicitation/create",
                elicit("Please review and update the form fields with defaults", schema)["params"],
                false);
            return ToolResult::text("Elicitation completed: action=" + answer.value("action", "") +
                                    ", content=" + answer.value("content", json::object()).dump());
        },
        true);
    add(
        s, "test_elicitation_sep1330_enums", "Elicitation with enums",
        [](const json&, RequestContext& ctx) {
            json schema = json::parse(R"json({"type":"object","properties":{
              "untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},
              "titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
              "legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
              "untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},
              "titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}},
              "required":[]})json");
            json answer = ctx.ask(
                "form", "elicitation/create",
                elicit("Please select options from the enum fields", schema)["params"], false);
            return ToolResult::text("Elicitation completed: action=" + answer.value("action", "") +
                                    ", content=" + answer.value("content", json::object()).dump());
        },
        true);
    add(
        s, "json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features",
        [](const json& args, RequestContext&) {
            return ToolResult::text("Received: " + args.dump());
        },
        false, json::parse(R"json({"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
 "$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},
 "properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},
 "allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],
 "if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},
 "additionalProperties":false})json"));
    add(
        s, "test_header_param", "Mirrors its region argument into the Mcp-Param-Region header",
        [](const json& args, RequestContext&) {
            return ToolResult::text("Region: " + args.value("region", ""));
        },
        false,
        {{"type", "object"},
         {"properties", {{"region", {{"type", "string"}, {"x-mcp-header", "Region"}}}}},
         {"required", {"region"}}});
    add(s, "test_reconnection", "Answers after a short pause", [](const json&, RequestContext&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return ToolResult::text(
            "Reconnection test completed successfully. If you received this, the client "
            "properly reconnected after stream closure.");
    });

    // 2026-07-28 fixtures.
    {
        ToolDef t;
        t.name = "test_missing_capability";
        t.description = "Needs the client's sampling capability";
        t.input_schema = kEmptyInput;
        t.required_client_capabilities = {{"sampling", json::object()}};
        t.handler = [](const json&, RequestContext&) { return ToolResult::text("Success"); };
        s.add_tool(std::move(t));
    }
    add(
        s, "test_streaming_elicitation", "Streams a notification, then answers",
        [](const json&, RequestContext& ctx) {
            ctx.progress(1, 1, "streaming");
            return ToolResult::text("Streaming complete");
        },
        true);
    add(
        s, "test_logging_tool", "Logs only when the request asks for logs",
        [](const json&, RequestContext& ctx) {
            ctx.log("info", "evaluated");
            return ToolResult::text("Logging evaluated");
        },
        true);
    const json name_schema = {{"type", "object"},
                              {"properties", {{"name", {{"type", "string"}}}}},
                              {"required", {"name"}}};
    const json ok_schema = {{"type", "object"},
                            {"properties", {{"ok", {{"type", "boolean"}}}}},
                            {"required", {"ok"}}};
    add(s, "test_input_required_result_elicitation", "Asks the user's name (MRTR)",
        [name_schema](const json&, RequestContext& ctx) {
            json a = ctx.ask("user_name", "elicitation/create",
                             elicit("What is your name?", name_schema)["params"], false);
            return ToolResult::text("Hello, " +
                                    a.value("content", json::object()).value("name", "") + "!");
        });
    add(s, "test_input_required_result_sampling", "Asks the client's model (MRTR)",
        [](const json&, RequestContext& ctx) {
            json a = ctx.ask("sample_request", "sampling/createMessage",
                             sample("What is the capital of France?")["params"], false);
            return ToolResult::text(sampled_text(a));
        });
    add(s, "test_input_required_result_list_roots", "Asks the client's roots (MRTR)",
        [](const json&, RequestContext& ctx) {
            json a = ctx.ask("client_roots", "roots/list", json::object(), false);
            return ToolResult::text("Roots: " + a.value("roots", json::array()).dump());
        });
    add(s, "test_input_required_result_request_state", "Carries sealed state (MRTR)",
        [ok_schema](const json&, RequestContext& ctx) {
            json a = ctx.ask("confirm", "elicitation/create",
                             elicit("Confirm?", ok_schema)["params"]);
            return ToolResult::text(std::string("state-ok: ") + a.value("action", ""));
        });
    add(s, "test_input_required_result_multiple_inputs", "Asks three things at once (MRTR)",
        [name_schema](const json&, RequestContext& ctx) {
            json questions = {{"user_name", elicit("What is your name?", name_schema)},
                              {"greeting", sample("Say hello")},
                              {"client_roots", kRoots}};
            json a = ctx.ask_all(questions);
            return ToolResult::text("Name: " +
                                    a["user_name"].value("content", json::object()).value(
                                        "name", "") +
                                    ", greeting: " + sampled_text(a["greeting"]));
        });
    add(s, "test_input_required_result_multi_round", "Asks in two rounds (MRTR)",
        [name_schema](const json&, RequestContext& ctx) {
            json first = ctx.ask("user_name", "elicitation/create",
                                 elicit("What is your name?", name_schema)["params"]);
            json second = ctx.ask(
                "favorite_color", "elicitation/create",
                elicit("What is your favorite color?",
                       {{"type", "object"},
                        {"properties", {{"color", {{"type", "string"}}}}},
                        {"required", {"color"}}})["params"]);
            return ToolResult::text(
                first.value("content", json::object()).value("name", "") + " likes " +
                second.value("content", json::object()).value("color", ""));
        });
    add(s, "test_input_required_result_tampered_state", "Rejects altered state (MRTR)",
        [ok_schema](const json&, RequestContext& ctx) {
            ctx.ask("confirm", "elicitation/create", elicit("Confirm?", ok_schema)["params"]);
            return ToolResult::text("state verified");
        });
    add(s, "test_input_required_result_capabilities", "Asks only what the client supports",
        [name_schema](const json&, RequestContext& ctx) {
            json a;
            if (ctx.client_supports("elicitation"))
                a = ctx.ask("user_name", "elicitation/create",
                            elicit("What is your name?", name_schema)["params"]);
            else if (ctx.client_supports("sampling"))
                a = ctx.ask("greeting", "sampling/createMessage", sample("Say hello")["params"]);
            else
                a = ctx.ask("client_roots", "roots/list", json::object());
            return ToolResult::text("Answered: " + a.dump());
        });
}

void register_resources_and_prompts(agency::mcp::Server& s) {
    s.add_resource({"test://static-text", "static-text", "", "A static text resource",
                    "text/plain", [](RequestContext&) {
                        return json::array({{{"uri", "test://static-text"},
                                             {"mimeType", "text/plain"},
                                             {"text",
                                              "This is the content of the static text resource."}}});
                    }});
    s.add_resource({"test://static-binary", "static-binary", "", "A static binary resource",
                    "image/png", [](RequestContext&) {
                        return json::array({{{"uri", "test://static-binary"},
                                             {"mimeType", "image/png"},
                                             {"blob", kImage}}});
                    }});
    s.add_resource({"test://watched-resource", "watched-resource", "", "A subscribable resource",
                    "text/plain", [](RequestContext&) {
                        return json::array({{{"uri", "test://watched-resource"},
                                             {"mimeType", "text/plain"},
                                             {"text", "Watched resource content"}}});
                    }});
    s.add_resource_template(
        {"test://template/{id}/data", "template", "A templated resource", "application/json",
         [](const std::string& uri, RequestContext&) -> std::optional<json> {
             const std::string prefix = "test://template/", suffix = "/data";
             if (uri.rfind(prefix, 0) != 0 || uri.size() <= prefix.size() + suffix.size() ||
                 uri.compare(uri.size() - suffix.size(), suffix.size(), suffix) != 0)
                 return std::nullopt;
             std::string id = uri.substr(prefix.size(), uri.size() - prefix.size() - suffix.size());
             json body = {{"id", id}, {"templateTest", true}, {"data", "Data for ID: " + id}};
             return json::array(
                 {{{"uri", uri}, {"mimeType", "application/json"}, {"text", body.dump()}}});
         }});

    auto user_text = [](const std::string& text) {
        return json{{"role", "user"}, {"content", text_block(text)}};
    };
    s.add_prompt({"test_simple_prompt", "", "A simple prompt", json::array(),
                  [user_text](const json&, RequestContext&) {
                      return json{{"messages", {user_text("This is a simple prompt for testing.")}}};
                  }});
    s.add_prompt({"test_prompt_with_arguments", "", "A prompt with arguments",
                  {{{"name", "arg1"}, {"description", "First argument"}, {"required", true}},
                   {{"name", "arg2"}, {"description", "Second argument"}, {"required", true}}},
                  [user_text](const json& a, RequestContext&) {
                      return json{{"messages",
                                   {user_text("Prompt with arguments: arg1='" +
                                              a.value("arg1", "") + "', arg2='" +
                                              a.value("arg2", "") + "'")}}};
                  }});
    s.add_prompt(
        {"test_prompt_with_embedded_resource", "", "A prompt with an embedded resource",
         {{{"name", "resourceUri"}, {"description", "URI of the resource"}, {"required", true}}},
         [user_text](const json& a, RequestContext&) {
             json resource = {{"role", "user"},
                              {"content",
                               {{"type", "resource"},
                                {"resource",
                                 {{"uri", a.value("resourceUri", "")},
                                  {"mimeType", "text/plain"},
                                  {"text", "Embedded resource content for testing."}}}}}};
             return json{{"messages",
                          {resource, user_text("Please process the embedded resource above.")}}};
         }});
    s.add_prompt({"test_prompt_with_image", "", "A prompt with an image", json::array(),
                  [user_text](const json&, RequestContext&) {
                      json image = {{"role", "user"},
                                    {"content",
                                     {{"type", "image"}, {"data", kImage}, {"mimeType", "image/png"}}}};
                      return json{{"messages",
                                   {image, user_text("Please analyze the image above.")}}};
                  }});
    s.add_prompt({"test_input_required_result_prompt", "", "A prompt that asks for context",
                  json::array(), [user_text](const json&, RequestContext& ctx) {
                      json a = ctx.ask("user_context", "elicitation/create",
                                       elicit("What context should the prompt use?",
                                              {{"type", "object"},
                                               {"properties", {{"context", {{"type", "string"}}}}},
                                               {"required", {"context"}}})["params"],
                                       false);
                      return json{{"messages",
                                   {user_text("Context: " + a.value("content", json::object())
                                                                .value("context", ""))}}};
                  }});
    s.set_completion([](const json&, const json& argument, const json&) {
        std::string prefix = argument.value("value", "");
        json values = json::array();
        for (const char* v : {"test", "testing", "tested"})
            if (std::string(v).rfind(prefix, 0) == 0) values.push_back(v);
        return json{{"values", values}, {"total", values.size()}, {"hasMore", false}};
    });
}

}  // namespace

int main(int argc, char** argv) {
    // SIGINT and SIGTERM are taken by sigwait below: blocked before any thread starts, so that
    // every thread inherits the mask and none is interrupted by them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    std::string listen = "127.0.0.1:0";
    for (int i = 1; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--listen") listen = argv[i + 1];
    auto colon = listen.rfind(':');
    agency::mcp::Server server{agency::mcp::ServerOptions{}};
    register_tools(server);
    register_task_tools(server);
    register_resources_and_prompts(server);
    agency::mcp::HttpOptions options;
    options.host = listen.substr(0, colon);
    options.port = std::stoi(listen.substr(colon + 1));
    options.session_idle = std::chrono::minutes(5);
    agency::mcp::HttpTransport transport(server, options);
    transport.start();
    std::cout << transport.url() << std::endl;
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);  // until SIGINT or SIGTERM
    return 0;
}

// Issue 29: the client matrix. Each agent framework (and the SDKs and the Inspector CLI) is
// driven through its own code path from a tool call to what it hands its model, without a
// model: connect to `agency-mcp serve` over stdio (and Streamable HTTP where the framework has
// it), against a sample gateway that differs from the built-in defaults; list the tools; check
// that the model-facing text of list_keywords holds every row's id and keyword and the next
// cursor; run a deploy confirmation to exactly one gateway POST; read structured output where
// the framework offers it. docs/clients.md ("Client matrix") says what each one does.
// Run by ctest: node --test client_matrix.test.mjs with AGENCY_MCP_BIN set.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { Client as Client2, StreamableHTTPClientTransport as Http2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as Stdio2 } from '@modelcontextprotocol/client/stdio';
import { MCPServerStdio, MCPServerStreamableHttp, getAllMcpTools, RunContext } from '@openai/agents-core';
import { createMCPClient, ElicitationRequestSchema } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport as AiStdio } from '@ai-sdk/mcp/mcp-stdio';
import { jsonSchema } from 'ai';
import { MCPClient as MastraClient } from '@mastra/mcp';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { bin, startHttpServer } from './helpers.mjs';
import {
  startGateway, serverEnv, sdkClient, keywordArgs, assertModelSeesPage, draftArticle,
  exactlyOneDeploy, textOf, CONFIRMATION_ID,
} from './matrix_helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const MODERN = '2026-07-28';
let gateway, truth, truthRows, dir;
const seen = {};  // what each framework handed its model, printed at the end (for the docs)

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'client-matrix-'));
  gateway = await startGateway();
  truth = await sdkClient(gateway);
  const page = await truth.callTool({ name: 'list_keywords', arguments: keywordArgs });
  truthRows = page.structuredContent.rows;
  assert.equal(truthRows.length, 5);
});

after(async () => {
  await truth?.close();
  gateway?.child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
  if (process.env.MATRIX_SHOW) console.log(JSON.stringify(seen, null, 1));
});

const accept = { action: 'accept', content: { confirm: true } };

// The checks every framework goes through. `fw` gives: era, names (tool names as the framework
// shows them), page() -> {text, structured?}, deploy(args) -> text of the final answer (it runs
// the whole confirmation: an elicitation accepted, or the confirmation_id relayed).
async function matrix(t, label, fw) {
  await t.test(`${label}: negotiates an era and lists the tools`, () => {
    assert.ok(fw.names.includes('list_keywords') && fw.names.includes('deploy_article'), fw.names.join(' '));
  });
  await t.test(`${label}: the model is handed every row and the next cursor`, async () => {
    const { text, structured } = await fw.page();
    seen[label] = { era: fw.era, list_keywords: text.slice(0, 400) };
    assertModelSeesPage(text, truthRows, structured);
  });
  await t.test(`${label}: the deploy confirmation ends in exactly one gateway POST`, async () => {
    const args = await draftArticle(truth);
    const text = await exactlyOneDeploy(gateway, () => fw.deploy(args));
    seen[label].deploy = text.slice(0, 300);
    assert.match(text, /published/);
    assert.ok(text.includes(args.article_id), text);
  });
}

// Two calls through the framework: the first answers confirmation_required with an id, the
// second relays it. `call(args)` returns the model-facing text.
async function relayConfirmation(call, args) {
  const first = await call(args);
  assert.match(first, /confirmation_required/, first);
  const id = first.match(CONFIRMATION_ID)?.[0];
  assert.ok(id, `the model is handed the confirmation_id: ${first}`);
  return call({ ...args, confirmation_id: id });
}

async function withHttpServer(fn) {
  const server = await startHttpServer([], serverEnv(gateway));
  try {
    return await fn(server.url);
  } finally {
    server.child.kill('SIGTERM');
  }
}

// ---------------------------------------------------------------------------------------------
// @openai/agents: MCPServerStdio / MCPServerStreamableHttp, getAllMcpTools, the FunctionTool's
// invoke (what the runner hands the model as the tool output). No elicitation handler: the
// confirmation_id path.
async function openaiAgents(t, transport, url) {
  const make = (extra = {}) => (transport === 'stdio'
    ? new MCPServerStdio({ name: 'agency', command: bin, args: ['serve'], env: serverEnv(gateway), ...extra })
    : new MCPServerStreamableHttp({ name: 'agency', url, ...extra }));
  const server = make();
  const structuredServer = make({ useStructuredContent: true });
  await server.connect();
  await structuredServer.connect();
  try {
    const ctx = new RunContext({});
    const tools = await getAllMcpTools({ mcpServers: [server], runContext: ctx });
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
    const invoke = async (name, args) => textOf(await byName[name].invoke(ctx, JSON.stringify(args)));
    await matrix(t, `@openai/agents ${transport}`, {
      era: server.underlying?.session?.getNegotiatedProtocolVersion?.(),
      names: Object.keys(byName),
      page: async () => ({ text: await invoke('list_keywords', keywordArgs) }),
      deploy: (args) => relayConfirmation((a) => invoke('deploy_article', a), args),
    });
    await t.test(`@openai/agents ${transport}: useStructuredContent hands the model structuredContent`, async () => {
      const sTools = await getAllMcpTools({ mcpServers: [structuredServer], runContext: ctx });
      const out = await sTools.find((x) => x.name === 'list_keywords').invoke(ctx, JSON.stringify(keywordArgs));
      assert.equal(typeof out, 'string');
      const s = JSON.parse(out);
      assert.deepEqual(s.rows.map((r) => r.id), truthRows.map((r) => r.id));
      assert.ok(s.next_cursor);
    });
  } finally {
    await server.close();
    await structuredServer.close();
  }
}

test('@openai/agents 0.20 over stdio', async (t) => openaiAgents(t, 'stdio'));
test('@openai/agents 0.20 over Streamable HTTP', async (t) => withHttpServer((url) => openaiAgents(t, 'http', url)));

// ---------------------------------------------------------------------------------------------
// ai 7 + @ai-sdk/mcp 2: createMCPClient, tools(), the tool's execute then toModelOutput. An
// elicitation handler accepts the deploy.
async function aiSdk(t, transport, url) {
  const client = await createMCPClient({
    transport: transport === 'stdio'
      ? new AiStdio({ command: bin, args: ['serve'], env: serverEnv(gateway) })
      : { type: 'http', url },
    capabilities: { elicitation: {} },
  });
  const questions = [];
  client.onElicitationRequest(ElicitationRequestSchema, async (request) => {
    questions.push(request.params.message);
    return accept;
  });
  try {
    const tools = await client.tools();
    const run = async (tool, args) => {
      const output = await tool.execute(args, { toolCallId: 'call_1', messages: [] });
      const model = await tool.toModelOutput({ toolCallId: 'call_1', input: args, output });
      return { output, model };
    };
    await matrix(t, `ai-sdk ${transport}`, {
      era: client.initializeResult?.protocolVersion,
      names: Object.keys(tools),
      page: async () => {
        const { output, model } = await run(tools.list_keywords, keywordArgs);
        assert.equal(model.type, 'content');
        return { text: textOf(model.value), structured: output.structuredContent };
      },
      deploy: async (args) => {
        const { model } = await run(tools.deploy_article, args);
        assert.equal(questions.length, 1, 'the person was asked once');
        assert.ok(questions[0].includes(args.article_id), questions[0]);
        return textOf(model.value);
      },
    });
    await t.test(`ai-sdk ${transport}: with an outputSchema the model is handed structuredContent as JSON`, async () => {
      const listed = await client.listTools();
      const def = listed.tools.find((x) => x.name === 'list_keywords');
      const typed = await client.tools({
        schemas: { list_keywords: { inputSchema: jsonSchema(def.inputSchema), outputSchema: jsonSchema(def.outputSchema) } },
      });
      const { output, model } = await run(typed.list_keywords, keywordArgs);
      assert.deepEqual(output.rows.map((r) => r.id), truthRows.map((r) => r.id));
      assert.equal(model.type, 'json');
      assert.ok(model.value.next_cursor);
    });
  } finally {
    await client.close();
  }
}

test('ai 7 + @ai-sdk/mcp 2 over stdio', async (t) => aiSdk(t, 'stdio'));
test('ai 7 + @ai-sdk/mcp 2 over Streamable HTTP', async (t) => withHttpServer((url) => aiSdk(t, 'http', url)));

// ---------------------------------------------------------------------------------------------
// @mastra/mcp 2.0: MCPClient.listTools() (tools named server_tool), execute then toModelOutput.
// An inputRequests handler accepts the deploy.
async function mastra(t, transport, url) {
  const questions = [];
  const definition = {
    ...(transport === 'stdio' ? { command: bin, args: ['serve'], env: serverEnv(gateway) } : { url: new URL(url) }),
    inputRequests: async (request) => {
      questions.push(request.params?.message ?? JSON.stringify(request));
      return accept;
    },
  };
  const mcp = new MastraClient({ id: `matrix-${transport}-${process.pid}`, servers: { agency: definition } });
  try {
    const tools = await mcp.listTools();
    const run = async (tool, args) => {
      const output = await tool.execute(args, {});
      const model = tool.toModelOutput ? await tool.toModelOutput(output) : output;
      return { output, model };
    };
    const modelText = (model) => (model?.type === 'content' ? textOf(model.value)
      : model?.type === 'text' ? model.value : typeof model === 'string' ? model : JSON.stringify(model));
    const internal = [...(mcp.mcpClientsById?.values?.() ?? [])][0];
    await matrix(t, `@mastra/mcp ${transport}`, {
      era: internal?.negotiatedProtocolVersion,
      names: Object.keys(tools).map((n) => n.replace(/^agency_/, '')),
      page: async () => {
        const { output, model } = await run(tools.agency_list_keywords, keywordArgs);
        return { text: modelText(model), structured: output?.rows ? output : output?.structuredContent };
      },
      deploy: async (args) => {
        const { model } = await run(tools.agency_deploy_article, args);
        assert.equal(questions.length, 1, 'the person was asked once');
        return modelText(model);
      },
    });
    await t.test(`@mastra/mcp ${transport}: execute returns structuredContent (the tool declares an outputSchema)`, async () => {
      const { output } = await run(tools.agency_list_keywords, keywordArgs);
      assert.deepEqual(output.rows.map((r) => r.id), truthRows.map((r) => r.id));
      assert.ok(output.next_cursor);
    });
  } finally {
    await mcp.disconnect();
  }
}

test('@mastra/mcp 2.0 over stdio', async (t) => mastra(t, 'stdio'));
test('@mastra/mcp 2.0 over Streamable HTTP', async (t) => withHttpServer((url) => mastra(t, 'http', url)));

// ---------------------------------------------------------------------------------------------
// @langchain/mcp-adapters 1.1: MultiServerMCPClient.getTools(), the tool invoked with a tool call
// gives the ToolMessage the model reads (content; structuredContent goes to the artifact). No
// elicitation: the confirmation_id path.
async function langchain(t, transport, url) {
  const client = new MultiServerMCPClient({
    mcpServers: {
      agency: transport === 'stdio'
        ? { transport: 'stdio', command: bin, args: ['serve'], env: serverEnv(gateway) }
        : { transport: 'http', url },
    },
  });
  try {
    const tools = await client.getTools();
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
    let id = 0;
    // The ToolMessage's content is a string: with structuredContent (or _meta) in the result,
    // the JSON of the text block with structuredContent and meta attached to it.
    const invoke = async (name, args) => {
      const message = await byName[name].invoke({ name, args, id: `call_${++id}`, type: 'tool_call' });
      assert.equal(message.constructor.name, 'ToolMessage');
      const structured = message.artifact?.find((a) => a.type === 'mcp_structured_content')?.data;
      return { text: textOf(message.content), structured };
    };
    await matrix(t, `@langchain/mcp-adapters ${transport}`, {
      era: LATEST_PROTOCOL_VERSION,  // its client is the SDK v1 (deduplicated with ours)
      names: Object.keys(byName),
      page: () => invoke('list_keywords', keywordArgs),
      deploy: (args) => relayConfirmation(async (a) => (await invoke('deploy_article', a)).text, args),
    });
    await t.test(`@langchain/mcp-adapters ${transport}: the ToolMessage carries structuredContent (content and artifact)`, async () => {
      const { text, structured } = await invoke('list_keywords', keywordArgs);
      const block = JSON.parse(text);
      assert.equal(block.type, 'text');
      assert.deepEqual(block.structuredContent.rows.map((r) => r.id), truthRows.map((r) => r.id));
      assert.deepEqual(structured.rows.map((r) => r.id), truthRows.map((r) => r.id));
    });
  } finally {
    await client.close();
  }
}

test('@langchain/mcp-adapters 1.1 over stdio', async (t) => langchain(t, 'stdio'));
test('@langchain/mcp-adapters 1.1 over Streamable HTTP', async (t) => withHttpServer((url) => langchain(t, 'http', url)));

// ---------------------------------------------------------------------------------------------
// The Inspector CLI 1.0.3: --cli --method tools/call prints the whole result (a person reads it).
// Every call is a process of its own; over stdio each starts a server, so they share a state
// database for the confirmation to outlive the first.
async function inspector(t, transport, url) {
  const cli = path.join(here, 'node_modules/@modelcontextprotocol/inspector-cli/build/cli.js');
  const env = serverEnv(gateway);
  const stateDb = path.join(dir, `inspector-${transport}.db`);
  const target = transport === 'stdio'
    ? [bin, ...Object.entries(env).filter(([k]) => k.startsWith('AGENCY_')).flatMap(([k, v]) =>
      ['-e', `${k}=${k === 'AGENCY_STATE_DB' ? stateDb : v}`]), 'serve']
    : [url, '--transport', 'http'];
  const run = async (...args) => {
    const { stdout } = await promisify(execFile)(process.execPath, [cli, '--cli', ...target, ...args],
      { cwd: path.join(here, 'node_modules'), env, timeout: 60000 });
    return stdout;
  };
  const call = (name, args) => run('--method', 'tools/call', '--tool-name', name,
    ...Object.entries(args).flatMap(([k, v]) => ['--tool-arg', `${k}=${v}`]));
  const { tools } = JSON.parse(await run('--method', 'tools/list'));
  await matrix(t, `Inspector CLI ${transport}`, {
    era: 'legacy (initialize)',
    names: tools.map((x) => x.name),
    page: async () => {
      const text = await call('list_keywords', keywordArgs);
      return { text, structured: JSON.parse(text).structuredContent };
    },
    deploy: (args) => relayConfirmation((a) => call('deploy_article', a), args),
  });
}

test('Inspector CLI 1.0.3 over stdio', async (t) => inspector(t, 'stdio'));
test('Inspector CLI 1.0.3 over Streamable HTTP', async (t) => withHttpServer((url) => inspector(t, 'http', url)));

// ---------------------------------------------------------------------------------------------
// The official SDK v1 (2025-11-25): callTool, the content text. With an elicitation handler.
async function sdkV1(t, transport, url) {
  const client = new ClientV1({ name: 'matrix-sdk-v1', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const questions = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    questions.push(request.params.message);
    return accept;
  });
  await client.connect(transport === 'stdio'
    ? new StdioV1({ command: bin, args: ['serve'], env: serverEnv(gateway), stderr: 'ignore' })
    : new HttpV1(new URL(url)));
  try {
    const { tools } = await client.listTools();
    const call = (name, args) => client.callTool({ name, arguments: args });
    await matrix(t, `@modelcontextprotocol/sdk 1.x ${transport}`, {
      era: client.transport?.protocolVersion ?? LATEST_PROTOCOL_VERSION,
      names: tools.map((x) => x.name),
      page: async () => {
        const r = await call('list_keywords', keywordArgs);
        return { text: textOf(r.content), structured: r.structuredContent };
      },
      deploy: async (args) => {
        const r = await call('deploy_article', args);
        assert.equal(questions.length, 1, 'the person was asked once');
        return textOf(r.content);
      },
    });
  } finally {
    await client.close();
  }
}

test('@modelcontextprotocol/sdk 1.x over stdio', async (t) => sdkV1(t, 'stdio'));
test('@modelcontextprotocol/sdk 1.x over Streamable HTTP', async (t) => withHttpServer((url) => sdkV1(t, 'http', url)));

// ---------------------------------------------------------------------------------------------
// @modelcontextprotocol/client 2.x, pinned to each era with versionNegotiation: 2026-07-28 (an
// elicitation handler answers the input_required round) and legacy (no elicitation declared:
// the confirmation_id path).
async function client2(t, transport, url, mode) {
  const elicit = mode !== 'legacy';
  const client = new Client2({ name: 'matrix-client-2', version: '1.0.0' },
    { capabilities: elicit ? { elicitation: {} } : {}, versionNegotiation: { mode } });
  const questions = [];
  if (elicit) {
    client.setRequestHandler('elicitation/create', async (request) => {
      questions.push(request.params.message);
      return accept;
    });
  }
  await client.connect(transport === 'stdio'
    ? new Stdio2({ command: bin, args: ['serve'], env: serverEnv(gateway), stderr: 'ignore' })
    : new Http2(new URL(url)));
  const era = client.getNegotiatedProtocolVersion();
  const label = `@modelcontextprotocol/client 2.x ${transport} ${mode === 'legacy' ? 'legacy' : 'pinned ' + MODERN}`;
  try {
    assert.equal(era, mode === 'legacy' ? '2025-11-25' : MODERN);
    const { tools } = await client.listTools();
    const call = (name, args) => client.callTool({ name, arguments: args });
    await matrix(t, label, {
      era,
      names: tools.map((x) => x.name),
      page: async () => {
        const r = await call('list_keywords', keywordArgs);
        return { text: textOf(r.content), structured: r.structuredContent };
      },
      deploy: async (args) => {
        if (!elicit) return relayConfirmation(async (a) => textOf((await call('deploy_article', a)).content), args);
        const r = await call('deploy_article', args);
        assert.equal(questions.length, 1, 'the person was asked once');
        return textOf(r.content);
      },
    });
  } finally {
    await client.close();
  }
}

test('@modelcontextprotocol/client 2.x pinned to 2026-07-28 over stdio', async (t) => client2(t, 'stdio', null, { pin: MODERN }));
test('@modelcontextprotocol/client 2.x legacy over stdio', async (t) => client2(t, 'stdio', null, 'legacy'));
test('@modelcontextprotocol/client 2.x pinned to 2026-07-28 over Streamable HTTP',
  async (t) => withHttpServer((url) => client2(t, 'http', url, { pin: MODERN })));
test('@modelcontextprotocol/client 2.x legacy over Streamable HTTP',
  async (t) => withHttpServer((url) => client2(t, 'http', url, 'legacy')));

// ---------------------------------------------------------------------------------------------
// docs/clients.md, "Client matrix": every block tagged `matrix-test=NAME` runs as a module here
// (so its imports resolve to the pinned packages), with the binary and this gateway in place of
// the placeholders; it prints what the model is handed for one list_keywords call.
test('docs/clients.md: every client matrix snippet runs', async (t) => {
  const doc = readFileSync(path.join(here, '../../docs/clients.md'), 'utf8');
  const blocks = [...doc.matchAll(/^```js matrix-test=(\S+)\n([\s\S]*?)^```$/gm)];
  assert.deepEqual(blocks.map((m) => m[1]).sort(),
    ['ai-sdk', 'client-2', 'langchain', 'mastra', 'openai-agents', 'sdk-v1']);
  for (const [, name, code] of blocks) {
    await t.test(name, async () => {
      const file = path.join(here, `.matrix-snippet-${name}-${process.pid}.mjs`);
      writeFileSync(file, code.replaceAll('/path/to/agency-mcp', bin)
        .replaceAll('https://gateway.example.com/api', gateway.url));
      try {
        const { stdout } = await promisify(execFile)(process.execPath, [file], {
          env: { ...process.env, HOME: dir, XDG_STATE_HOME: dir }, timeout: 60000 });
        assert.match(stdout, /keyword/, stdout);
        seen[`snippet ${name}`] = stdout.slice(0, 300);
      } finally {
        rmSync(file, { force: true });
      }
    });
  }
});

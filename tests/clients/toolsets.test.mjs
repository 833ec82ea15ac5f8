// Toolsets through real clients (issue 18): the TypeScript SDK over stdio with --toolsets and
// the AGENCY_* variables, over HTTP with the X-MCP-* headers (which narrow one request), and the
// Inspector CLI. Run by ctest: node --test toolsets.test.mjs with AGENCY_MCP_BIN set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { bin, startHttpServer } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const rankings = ['generate_keyword_ideas', 'get_client', 'latest_rankings', 'list_clients',
  'list_keywords', 'list_rankings', 'ranking_changes'];

async function stdioClient(args, env = {}) {
  const clean = { ...process.env };
  for (const name of ['AGENCY_TOOLSETS', 'AGENCY_TOOLS', 'AGENCY_EXCLUDE_TOOLS', 'AGENCY_READ_ONLY'])
    delete clean[name];
  const transport = new StdioClientTransport({
    command: bin, args: ['serve', '--state-db', ':memory:', ...args], env: { ...clean, ...env }, stderr: 'pipe',
  });
  const client = new Client({ name: 'sdk-toolsets', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  return client;
}

const names = async (client) => (await client.listTools()).tools.map((t) => t.name).sort();

test('--toolsets keeps its tools and the clients ones; the instructions say which', async () => {
  const client = await stdioClient(['--toolsets', 'rankings']);
  try {
    assert.deepEqual(await names(client), rankings);
    assert.match(client.getInstructions(), /toolsets: clients, rankings\)/);
    assert.doesNotMatch(client.getInstructions(), /confirmation/);
    await assert.rejects(client.callTool({ name: 'list_backlinks', arguments: { client_id: 'demo-dental' } }),
      /unknown tool: list_backlinks/);
    const ok = await client.callTool({ name: 'list_keywords', arguments: { client_id: 'demo-dental', limit: 2 } });
    assert.ok(!ok.isError, JSON.stringify(ok).slice(0, 300));
  } finally { await client.close(); }
});

test('the environment variables do what the flags do, and exclusion wins', async () => {
  const client = await stdioClient([], {
    AGENCY_TOOLSETS: 'rankings, backlinks', AGENCY_TOOLS: 'list_calls',
    AGENCY_EXCLUDE_TOOLS: 'list_calls,generate_keyword_ideas', AGENCY_READ_ONLY: '1',
  });
  try {
    const listed = await names(client);
    assert.deepEqual(listed, ['get_client', 'latest_rankings', 'list_backlinks', 'list_clients',
      'list_keywords', 'list_rankings', 'ranking_changes']);
    assert.match(client.getInstructions(), /Read-only/);
  } finally { await client.close(); }
});

test('an unknown toolset stops the server with the list of toolsets', async () => {
  const run = promisify(execFile);
  await assert.rejects(run(bin, ['serve', '--state-db', ':memory:', '--toolsets', 'ranking']),
    (err) => /unknown toolset "ranking" \(toolsets: .*rankings/.test(err.stderr) && err.code !== 0);
});

test('over HTTP the X-MCP-* headers narrow that request and cannot widen the server', async () => {
  const { url, child } = await startHttpServer(['--state-db', ':memory:', '--exclude-tools', 'deploy_article']);
  const connect = async (headers) => {
    const client = new Client({ name: 'sdk-toolsets-http', version: '1.0.0' }, { capabilities: {} });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
    return client;
  };
  try {
    const narrow = await connect({ 'X-MCP-Toolsets': 'rankings' });
    assert.deepEqual(await names(narrow), rankings);
    await narrow.close();
    const readOnly = await connect({ 'X-MCP-Readonly': 'true', 'X-MCP-Tools': 'deploy_article,list_articles,generate_article' });
    assert.deepEqual(await names(readOnly), ['list_articles'], 'neither an excluded tool nor a write comes back');
    await readOnly.close();
    const everything = await connect({});
    const all = await names(everything);
    assert.ok(all.length >= 28 && !all.includes('deploy_article'), all.join(','));
    await everything.close();
    const bad = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'X-MCP-Toolsets': 'seo' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /unknown toolset \\"seo\\"/);
  } finally { child.kill('SIGTERM'); }
});

test('the Inspector CLI lists what AGENCY_TOOLS enables', async () => {
  const cli = path.join(here, 'node_modules/@modelcontextprotocol/inspector-cli/build/cli.js');
  // As in sdk_clients.test.mjs: run from node_modules, with the pinned Node first on PATH.
  const cwd = path.join(here, 'node_modules');
  const env = { ...process.env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}` };
  const { stdout } = await promisify(execFile)(process.execPath, [cli, '--cli', '-e', 'AGENCY_TOOLS=list_clients,list_calls',
    bin, 'serve', '--method', 'tools/list'], { cwd, env, timeout: 60000 });
  assert.deepEqual(JSON.parse(stdout).tools.map((t) => t.name).sort(), ['list_calls', 'list_clients']);
});

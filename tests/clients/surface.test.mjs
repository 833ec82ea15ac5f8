// Resources, prompts and completion through real clients against the product binary: the
// TypeScript SDK over stdio and Streamable HTTP (legacy era), raw 2026-07-28 requests over HTTP,
// and the Inspector CLI. Run by ctest: node --test surface.test.mjs, AGENCY_MCP_BIN set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { bin, startHttpServer } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const CLIENT = 'demo-plumbing';

function stateEnv() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agency-surface-'));
  return { AGENCY_STATE_DB: path.join(dir, 'state.db') };
}

async function rpcError(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected a JSON-RPC error, the call succeeded');
}

const json = (result) => JSON.parse(result.contents[0].text);

// What every client sees, whatever the transport.
async function exerciseSurface(client) {
  const { resources } = await client.listResources();
  assert.equal(resources[0].uri, 'agency://server/usage');
  assert.ok(resources.some((r) => r.uri === `agency://clients/${CLIENT}/overview`));
  for (const r of resources) assert.ok(r.name && r.uri, JSON.stringify(r));

  const { resourceTemplates } = await client.listResourceTemplates();
  assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate), [
    'agency://clients/{client_id}/overview',
    'agency://clients/{client_id}/audits/{report_id}',
    'agency://clients/{client_id}/articles/{article_id}',
    'agency://clients/{client_id}/write-log',
    'agency://audit-jobs/{audit_id}',
  ]);

  const usage = await client.readResource({ uri: 'agency://server/usage' });
  assert.equal(usage.contents[0].mimeType, 'text/markdown');
  assert.match(usage.contents[0].text, /Sample data/);  // no gateway configured

  const overview = json(await client.readResource({ uri: `agency://clients/${CLIENT}/overview` }));
  assert.equal(overview.client.id, CLIENT);
  assert.ok(overview.keywords.tracked_keywords > 0);
  assert.match(overview.keywords.first_tracked, /^\d{4}-\d{2}-\d{2}$/);
  const reportId = overview.audits.latest.id;
  const audit = json(await client.readResource({ uri: `agency://clients/${CLIENT}/audits/${reportId}` }));
  assert.equal(audit.report.id, reportId);

  // Completion: client ids, then a chosen client's report ids and article ids.
  const ids = await client.complete({
    ref: { type: 'ref/resource', uri: 'agency://clients/{client_id}/overview' },
    argument: { name: 'client_id', value: 'demo-pl' },
  });
  assert.deepEqual(ids.completion.values, [CLIENT]);
  assert.equal(ids.completion.total, 1);
  const reports = await client.complete({
    ref: { type: 'ref/resource', uri: 'agency://clients/{client_id}/audits/{report_id}' },
    argument: { name: 'report_id', value: '' },
    context: { arguments: { client_id: CLIENT } },
  });
  assert.ok(reports.completion.values.includes(reportId), JSON.stringify(reports));
  const articles = await client.complete({
    ref: { type: 'ref/resource', uri: 'agency://clients/{client_id}/articles/{article_id}' },
    argument: { name: 'article_id', value: '' },
    context: { arguments: { client_id: CLIENT } },
  });
  assert.ok(articles.completion.values.length > 0);
  const article = json(await client.readResource({
    uri: `agency://clients/${CLIENT}/articles/${articles.completion.values[0]}` }));
  assert.equal(article.article.id, articles.completion.values[0]);

  const missing = await rpcError(client.readResource({ uri: 'agency://clients/nobody/overview' }));
  assert.equal(missing.code, -32002);

  // Prompts.
  const { prompts } = await client.listPrompts();
  assert.deepEqual(prompts.map((p) => p.name),
    ['monthly_client_report', 'audit_triage', 'content_plan', 'backlink_outreach',
     'weekly_client_report', 'agency_week']);
  for (const p of prompts) {
    assert.ok(p.description && p.title);
    if (p.name === 'agency_week') continue;  // every client the caller reaches
    assert.deepEqual(p.arguments[0], { name: 'client_id', required: true,
      description: 'The client\'s id (string; list_clients gives them).' });
  }
  const triage = await client.getPrompt({ name: 'audit_triage',
    arguments: { client_id: CLIENT, report_id: reportId } });
  assert.match(triage.messages[0].content.text, new RegExp(`"report_id": "${reportId}"`));
  const bad = await rpcError(client.getPrompt({ name: 'monthly_client_report',
    arguments: { client_id: CLIENT, month: 'June' } }));
  assert.equal(bad.code, -32602);
  assert.match(bad.message, /month must be YYYY-MM/);
  const topics = await client.complete({
    ref: { type: 'ref/prompt', name: 'content_plan' },
    argument: { name: 'topic', value: '' },
    context: { arguments: { client_id: CLIENT } },
  });
  assert.ok(topics.completion.values.length > 0);
  return { reportId };
}

test('SDK over stdio: resources, prompts, completion', async () => {
  const transport = new StdioClientTransport({ command: bin, args: ['serve'], stderr: 'pipe',
    env: { ...process.env, ...stateEnv() } });
  const client = new Client({ name: 'surface-stdio', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  try {
    assert.equal(client.getServerCapabilities().resources.subscribe, true);
    await exerciseSurface(client);
  } finally {
    await client.close();
  }
});

test('SDK over Streamable HTTP: resources, prompts, completion; no subscribe advertised', async () => {
  const { url, child } = await startHttpServer([], stateEnv());
  try {
    const transport = new StreamableHTTPClientTransport(new URL(url));
    const client = new Client({ name: 'surface-http', version: '1.0.0' }, { capabilities: {} });
    await client.connect(transport);
    // A legacy HTTP session has no path for notifications outside a request.
    assert.equal(client.getServerCapabilities().resources.subscribe, undefined);
    await exerciseSurface(client);
    await transport.terminateSession();
    await client.close();
  } finally {
    child.kill('SIGTERM');
  }
});

// Starts `agency-mcp sample-gateway` with `args`; resolves with {url, child}.
function startSampleGateway(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['sample-gateway', '--listen', '127.0.0.1:0', ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const timer = setTimeout(() => reject(new Error('sample gateway did not start: ' + out)), 15000);
    const look = (chunk) => {
      out += chunk;
      const m = out.match(/(http:\/\/127\.0\.0\.1:\d+\S*)/);
      if (m) { clearTimeout(timer); resolve({ url: m[1], child }); }
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
  });
}

test('SDK over stdio: a subscribed audit job announces its change', async () => {
  // The audit takes 1.5 s at the gateway, so the job is still running when the client subscribes.
  const gateway = await startSampleGateway(['--fault', 'seo_audit:slow:100:1500']);
  const transport = new StdioClientTransport({ command: bin, args: ['serve'], stderr: 'pipe',
    env: { ...process.env, ...stateEnv(), AGENCY_GATEWAY_URL: gateway.url } });
  const client = new Client({ name: 'surface-subscribe', version: '1.0.0' }, { capabilities: {} });
  const updates = [];
  let wake;
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push(n.params.uri);
    if (wake) wake();
  });
  await client.connect(transport);
  try {
    const queued = await client.callTool({ name: 'run_seo_audit',
      arguments: { client_id: CLIENT, url: 'https://acmeplumbing.example/' } });
    assert.ok(!queued.isError, JSON.stringify(queued.content));
    const uri = `agency://audit-jobs/${queued.structuredContent.audit_id}`;
    await client.subscribeResource({ uri });
    const before = json(await client.readResource({ uri }));
    assert.ok(['queued', 'running'].includes(before.status), before.status);
    // An unrelated subscription hears nothing.
    await client.subscribeResource({ uri: 'agency://audit-jobs/someone-else' });
    // Each change is announced; the last one leaves the job succeeded.
    const deadline = Date.now() + 15000;
    let after = before;
    while (after.status !== 'succeeded') {
      const seen = updates.length;
      await new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no notifications/resources/updated (${after.status})`)),
          Math.max(0, deadline - Date.now()));
        wake = () => { if (updates.length > seen) { clearTimeout(timer); resolve(); } };
        wake();
      });
      after = json(await client.readResource({ uri }));
    }
    assert.deepEqual([...new Set(updates)], [uri]);
    await client.unsubscribeResource({ uri });
  } finally {
    await client.close();
    gateway.child.kill('SIGTERM');
  }
});

test('another principal cannot read an audit job resource', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'agency-keys-'));
  const keysFile = path.join(dir, 'keys');
  const addKey = async (name) => {
    const { stdout } = await promisify(execFile)(bin,
      ['keys', 'add', '--name', name, '--scopes', 'read,write', '--keys-file', keysFile]);
    return stdout.trim().split(/\s+/).pop();
  };
  const alice = await addKey('alice');
  const bob = await addKey('bob');
  const { url, child } = await startHttpServer(['--keys-file', keysFile], stateEnv());
  const connect = async (key) => {
    const transport = new StreamableHTTPClientTransport(new URL(url),
      { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
    const client = new Client({ name: 'surface-keys', version: '1.0.0' }, { capabilities: {} });
    await client.connect(transport);
    return client;
  };
  try {
    const a = await connect(alice);
    const b = await connect(bob);
    const queued = await a.callTool({ name: 'run_seo_audit',
      arguments: { client_id: CLIENT, url: 'https://acmeplumbing.example/' } });
    const uri = `agency://audit-jobs/${queued.structuredContent.audit_id}`;
    assert.equal(json(await a.readResource({ uri })).audit_id, queued.structuredContent.audit_id);
    const theirs = await rpcError(b.readResource({ uri }));
    const unknown = await rpcError(b.readResource({ uri: 'agency://audit-jobs/no-such-job' }));
    assert.equal(theirs.code, -32002);
    assert.equal(theirs.code, unknown.code);
    assert.equal(theirs.message.replace(uri, 'URI'),
      unknown.message.replace('agency://audit-jobs/no-such-job', 'URI'));
    await a.close();
    await b.close();
  } finally {
    child.kill('SIGTERM');
  }
});

// One 2026-07-28 request over HTTP, with the headers that era requires.
async function modern(url, method, params, name) {
  const headers = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': method,
    ...(name ? { 'Mcp-Name': name } : {}),
  };
  const body = { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {} } } };
  const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

test('2026-07-28 over HTTP serves resources, prompts and completion', async () => {
  const { url, child } = await startHttpServer([], stateEnv());
  try {
    const list = await modern(url, 'resources/list', {});
    assert.equal(list.body.result.resultType, 'complete');
    assert.ok(list.body.result.resources.length >= 4);
    const read = await modern(url, 'resources/read', { uri: `agency://clients/${CLIENT}/overview` },
      `agency://clients/${CLIENT}/overview`);
    assert.equal(read.status, 200);
    assert.equal(JSON.parse(read.body.result.contents[0].text).client_id, CLIENT);
    const missing = await modern(url, 'resources/read', { uri: 'agency://nothing' }, 'agency://nothing');
    assert.equal(missing.body.error.code, -32602);
    const prompt = await modern(url, 'prompts/get',
      { name: 'backlink_outreach', arguments: { client_id: CLIENT, count: '3' } }, 'backlink_outreach');
    assert.match(prompt.body.result.messages[0].content.text, /Pick 3 prospects/);
    const done = await modern(url, 'completion/complete', {
      ref: { type: 'ref/prompt', name: 'monthly_client_report' },
      argument: { name: 'client_id', value: 'demo-d' } });
    assert.deepEqual(done.body.result.completion.values, ['demo-dental']);
    const sub = await modern(url, 'resources/subscribe', { uri: 'agency://server/usage' });
    assert.equal(sub.body.error.code, -32601);
  } finally {
    child.kill('SIGTERM');
  }
});

test('Inspector CLI lists resources and prompts', async () => {
  const cli = path.join(here, 'node_modules/@modelcontextprotocol/inspector-cli/build/cli.js');
  const cwd = path.join(here, 'node_modules');
  const env = { ...process.env, ...stateEnv(),
    PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}` };
  const run = async (args) => {
    const { stdout } = await promisify(execFile)(process.execPath, [cli, '--cli', ...args],
      { cwd, env, timeout: 60000 });
    return JSON.parse(stdout);
  };
  const resources = await run([bin, 'serve', '--method', 'resources/list']);
  assert.ok(resources.resources.some((r) => r.uri === 'agency://server/usage'));
  const prompts = await run([bin, 'serve', '--method', 'prompts/list']);
  assert.equal(prompts.prompts.length, 6);
  const { url, child } = await startHttpServer([], stateEnv());
  try {
    const viaHttp = await run([url, '--transport', 'http', '--method', 'resources/templates/list']);
    assert.equal(viaHttp.resourceTemplates.length, 5);
  } finally {
    child.kill('SIGTERM');
  }
});

// Real MCP clients against the product binary: the TypeScript SDK over stdio and over
// Streamable HTTP, and the Inspector CLI. Run by ctest: node --test sdk_clients.test.mjs
// with AGENCY_MCP_BIN set to build/agency-mcp.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import { bin, startHttpServer } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

async function exercise(client) {
  const { tools } = await client.listTools();
  assert.ok(Array.isArray(tools));
  for (const t of tools) {
    assert.equal(typeof t.name, 'string');
    assert.equal(typeof t.description, 'string');
    assert.equal(t.inputSchema.type, 'object');
  }
  await client.ping();
  return tools;
}

test('TypeScript SDK over stdio: initialize, list tools, ping', async () => {
  const transport = new StdioClientTransport({ command: bin, args: ['serve'], stderr: 'pipe' });
  const client = new Client({ name: 'sdk-stdio-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  try {
    assert.equal(client.getServerVersion().name, 'agency-mcp');
    await exercise(client);
  } finally {
    await client.close();
  }
});

test('TypeScript SDK over Streamable HTTP: initialize, list tools, ping, end session', async () => {
  const { url, child } = await startHttpServer();
  try {
    const transport = new StreamableHTTPClientTransport(new URL(url));
    const client = new Client({ name: 'sdk-http-test', version: '1.0.0' }, { capabilities: {} });
    await client.connect(transport);
    assert.match(transport.sessionId, /^[0-9a-f]{32}$/);
    assert.equal(client.getServerVersion().name, 'agency-mcp');
    await exercise(client);
    await transport.terminateSession();
    await client.close();
  } finally {
    child.kill('SIGTERM');
  }
});

test('Inspector CLI lists tools over stdio and HTTP', async () => {
  const cli = path.join(here, 'node_modules/@modelcontextprotocol/inspector-cli/build/cli.js');
  // The Inspector CLI must run from a directory whose parent has a package.json.
  const cwd = path.join(here, 'node_modules');
  // Without --cli, cli.js starts the web Inspector, which this package does not ship. In CLI
  // mode it spawns `node` from PATH: make that the pinned Node running this test.
  const env = { ...process.env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}` };
  const run = async (args) => {
    const { stdout } = await promisify(execFile)(process.execPath, [cli, '--cli', ...args], { cwd, env, timeout: 60000 });
    return JSON.parse(stdout);
  };
  const viaStdio = await run([bin, 'serve', '--method', 'tools/list']);
  assert.ok(Array.isArray(viaStdio.tools));
  const { url, child } = await startHttpServer();
  try {
    const viaHttp = await run([url, '--transport', 'http', '--method', 'tools/list']);
    assert.deepEqual(viaHttp.tools.map((t) => t.name), viaStdio.tools.map((t) => t.name));
  } finally {
    child.kill('SIGTERM');
  }
});

// --- Reading a whole client through cursors ------------------------------------------------

const CLIENT_ID = 'demo-dental';
const PAGE = 37;  // not a divisor of the row count, so the last page is short

// What a JSON-RPC error from callTool looks like to an SDK caller.
async function rpcError(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected a JSON-RPC error, the call succeeded');
}

// list_clients, then every keyword row of CLIENT_ID, PAGE rows at a time following
// next_cursor; the SDK validates each structuredContent against list_keywords' outputSchema.
async function readAllKeywords(client) {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const name of ['list_clients', 'list_keywords']) {
    assert.ok(names.includes(name), `${name} is listed`);
    // callTool validates structured results only for tools whose outputSchema it has cached.
    const validate = client.getToolOutputValidator(name);
    assert.equal(typeof validate, 'function', `${name} has an outputSchema the SDK compiled`);
    assert.equal(validate({}).valid, false, `${name}'s outputSchema rejects an empty object`);
  }

  const clients = await client.callTool({ name: 'list_clients', arguments: {} });
  assert.ok(!clients.isError, JSON.stringify(clients.content));
  assert.ok(clients.structuredContent.rows.some((row) => row.id === CLIENT_ID),
    `list_clients names ${CLIENT_ID}`);

  const seen = new Map();  // row id -> how many times it came back
  let total;
  let pages = 0;
  let cursor;
  const cursors = [];
  do {
    const args = { client_id: CLIENT_ID, limit: PAGE, ...(cursor ? { cursor } : {}) };
    const result = await client.callTool({ name: 'list_keywords', arguments: args });
    assert.ok(!result.isError, JSON.stringify(result.content));
    const page = result.structuredContent;
    assert.equal(page.client_id, CLIENT_ID);
    assert.ok(page.rows.length > 0 && page.rows.length <= PAGE, `page ${pages} holds 1..${PAGE} rows`);
    assert.equal(page.returned, page.rows.length);
    if (total === undefined) total = page.total;
    assert.equal(page.total, total, 'total is stable across pages');
    for (const row of page.rows) {
      assert.equal(typeof row.id, 'string', 'every row has an id');
      seen.set(row.id, (seen.get(row.id) ?? 0) + 1);
    }
    cursor = page.next_cursor;
    if (cursor) cursors.push(cursor);
    pages += 1;
    assert.ok(pages <= 1000, 'the cursor chain ends');
  } while (cursor);

  const repeated = [...seen].filter(([, n]) => n > 1).map(([id]) => id);
  assert.deepEqual(repeated, [], 'no row comes back twice');
  assert.equal(seen.size, total, 'every row is seen once: as many ids as total');
  assert.ok(pages >= 2, `several pages (${pages} for ${total} rows)`);
  return { cursors, total, pages };
}

// A forged or misapplied cursor is a protocol error (-32602), not a tool result.
async function rejectsForgedCursors(client, cursors) {
  const call = (args) => client.callTool({ name: 'list_keywords', arguments: args });
  const real = cursors[0];
  // One character changed in the middle of a real cursor breaks its seal.
  const i = Math.floor(real.length / 2);
  const altered = real.slice(0, i) + (real[i] === 'A' ? 'B' : 'A') + real.slice(i + 1);
  const forged = [
    { args: { client_id: CLIENT_ID, limit: PAGE, cursor: altered }, why: /altered|not issued/ },
    { args: { client_id: CLIENT_ID, limit: PAGE, cursor: 'eyJvIjowfQ' }, why: /altered|not issued|malformed/ },
    { args: { client_id: 'demo-law', limit: PAGE, cursor: real }, why: /another client_id/ },
  ];
  for (const { args, why } of forged) {
    const error = await rpcError(call(args));
    assert.equal(error.code, -32602, `${JSON.stringify(args.cursor)}: ${error.message}`);
    assert.match(error.message, /invalid cursor/);
    assert.match(error.message, why);
  }
}

test('TypeScript SDK over stdio reads a whole client\'s keywords through cursors', async () => {
  const transport = new StdioClientTransport({ command: bin, args: ['serve'], stderr: 'pipe' });
  const client = new Client({ name: 'sdk-stdio-pages', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  try {
    const { cursors } = await readAllKeywords(client);
    await rejectsForgedCursors(client, cursors);
  } finally {
    await client.close();
  }
});

test('TypeScript SDK over Streamable HTTP reads a whole client\'s keywords through cursors', async () => {
  const { url, child } = await startHttpServer();
  try {
    const transport = new StreamableHTTPClientTransport(new URL(url));
    const client = new Client({ name: 'sdk-http-pages', version: '1.0.0' }, { capabilities: {} });
    await client.connect(transport);
    const { cursors } = await readAllKeywords(client);
    await rejectsForgedCursors(client, cursors);
    await transport.terminateSession();
    await client.close();
  } finally {
    child.kill('SIGTERM');
  }
});

// --- Confirmation before deploy, driven end to end by the SDK's elicitation support ----------

// A client that answers every elicitation with `answer` and records the questions.
function confirmingClient(answer) {
  const client = new Client({ name: 'sdk-confirm-test', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const questions = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    questions.push(request.params);
    return answer;
  });
  return { client, questions };
}

async function draftThenDeploy(client) {
  const keyword = `emergency dentist ${process.pid} ${Date.now()}`;
  const draft = await client.callTool({ name: 'generate_article', arguments: { client_id: 'demo-dental', keyword } });
  assert.ok(!draft.isError, JSON.stringify(draft));
  const articleId = draft.structuredContent.article_id;
  assert.ok(articleId);
  const deployed = await client.callTool({ name: 'deploy_article', arguments: { client_id: 'demo-dental', article_id: articleId } });
  return { articleId, title: draft.structuredContent.title, deployed };
}

// The article's status as list_articles reports it (newest first: a fresh draft is on page 1).
async function articleStatus(client, articleId) {
  const listed = await client.callTool({ name: 'list_articles', arguments: { client_id: 'demo-dental', limit: 100 } });
  assert.ok(!listed.isError, JSON.stringify(listed));
  return listed.structuredContent.rows.find((row) => row.id === articleId)?.status;
}

async function checkConfirmation(connect) {
  // Accepted: exactly one deploy happens and the question named the article.
  {
    const { client, questions } = confirmingClient({ action: 'accept', content: { confirm: true } });
    await connect(client);
    try {
      const { articleId, title, deployed } = await draftThenDeploy(client);
      assert.ok(!deployed.isError, JSON.stringify(deployed));
      assert.equal(deployed.structuredContent.ok, true);
      assert.equal(deployed.structuredContent.article_id, articleId);
      assert.equal(deployed.structuredContent.status, 'published');
      assert.equal(await articleStatus(client, articleId), 'published');
      assert.equal(questions.length, 1);
      assert.match(questions[0].message, new RegExp(articleId));
      if (title) assert.ok(questions[0].message.includes(title), questions[0].message);
    } finally {
      await client.close();
    }
  }
  // Declined: nothing is deployed and the result says so.
  {
    const { client, questions } = confirmingClient({ action: 'decline' });
    await connect(client);
    try {
      const { articleId, deployed } = await draftThenDeploy(client);
      assert.equal(deployed.isError, true);
      assert.match(deployed.content[0].text, /declined/);
      assert.notEqual(await articleStatus(client, articleId), 'published', 'a declined deploy publishes nothing');
      assert.ok(await articleStatus(client, articleId), 'the draft is still listed');
      assert.equal(questions.length, 1);
    } finally {
      await client.close();
    }
  }
}

test('TypeScript SDK over stdio confirms or declines deploy_article through elicitation', async () => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'agency-confirm-'));
  await checkConfirmation((client) => client.connect(new StdioClientTransport({
    command: bin, args: ['serve', '--state-db', path.join(stateDir, 'state.db')], stderr: 'pipe',
  })));
});

test('TypeScript SDK over Streamable HTTP confirms or declines deploy_article through elicitation', async () => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'agency-confirm-'));
  const { url, child } = await startHttpServer(['--state-db', path.join(stateDir, 'state.db')]);
  try {
    await checkConfirmation((client) => client.connect(new StreamableHTTPClientTransport(new URL(url))));
  } finally {
    child.kill('SIGTERM');
  }
});

// --- An audit job polled to completion, as a model would drive it --------------------------------

async function auditToCompletion(client) {
  const url = `https://www.brightsmile.example/sdk-audit-${process.pid}-${Date.now()}`;
  const queued = await client.callTool({ name: 'run_seo_audit', arguments: { client_id: 'demo-dental', url } });
  assert.ok(!queued.isError, JSON.stringify(queued));
  assert.equal(queued.structuredContent.status, 'queued');
  const auditId = queued.structuredContent.audit_id;
  assert.match(auditId, /^aud_/);

  const seen = ['queued'];
  let status;
  const deadline = Date.now() + 10000;
  for (;;) {
    const reply = await client.callTool({ name: 'get_audit_status', arguments: { client_id: 'demo-dental', audit_id: auditId } });
    assert.ok(!reply.isError, JSON.stringify(reply));
    status = reply.structuredContent;
    if (seen.at(-1) !== status.status) seen.push(status.status);
    if (status.status === 'succeeded' || status.status === 'failed') break;
    assert.ok(Date.now() < deadline, `audit still ${status.status} after 10 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
  // Statuses only move forward: queued, maybe running, then succeeded.
  assert.deepEqual(seen.filter((s) => s !== 'running'), ['queued', 'succeeded'], seen.join(' > '));
  assert.equal(status.ok, true);
  assert.equal(status.url, url);
  assert.equal(typeof status.score, 'number');
  assert.ok(status.score > 0 && status.score <= 100, String(status.score));
  assert.ok(Number.isInteger(status.issues_found) && status.issues_found > 0, String(status.issues_found));
  assert.ok(status.report_id);

  const issues = await client.callTool({ name: 'get_audit_issues', arguments: { client_id: 'demo-dental', audit_id: status.report_id } });
  assert.ok(!issues.isError, JSON.stringify(issues));
  assert.equal(issues.structuredContent.total, status.issues_found);
  assert.equal(issues.structuredContent.rows.length, status.issues_found);
  for (const issue of issues.structuredContent.rows) {
    assert.ok(['critical', 'warning', 'notice'].includes(issue.severity), JSON.stringify(issue));
    assert.equal(typeof issue.recommendation, 'string');
  }
}

test('TypeScript SDK over stdio polls an audit to completion and reads its issues', async () => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'agency-audit-'));
  const transport = new StdioClientTransport({
    command: bin, args: ['serve', '--state-db', path.join(stateDir, 'state.db')], stderr: 'pipe',
  });
  const client = new Client({ name: 'sdk-stdio-audit', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  try {
    await auditToCompletion(client);
  } finally {
    await client.close();
  }
});

test('TypeScript SDK over Streamable HTTP polls an audit to completion and reads its issues', async () => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'agency-audit-'));
  const { url, child } = await startHttpServer(['--state-db', path.join(stateDir, 'state.db')]);
  try {
    const client = new Client({ name: 'sdk-http-audit', version: '1.0.0' }, { capabilities: {} });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    await auditToCompletion(client);
    await client.close();
  } finally {
    child.kill('SIGTERM');
  }
});

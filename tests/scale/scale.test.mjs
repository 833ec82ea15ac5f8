// Several instances behind HAProxy (deploy/haproxy.cfg) on one PostgreSQL store and one sample
// gateway (issue 19): the TypeScript SDK and the conformance suite through HAProxy, stateless
// 2026-07-28 requests spread over instances, and what must happen once across instances (an
// audit whose instance is killed, a confirmation id and an idempotency key used on two instances
// at once, a client's credit limit, a task read elsewhere, sticky legacy sessions).
// Run by ctest (clients.scale) with AGENCY_MCP_BIN set. AGENCY_SCALE_STATE=sqlite runs the
// scenarios that share nothing on separate SQLite files and skips the others (a development aid
// for a binary without --state-url; ctest never sets it).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '../clients/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js';
import { StreamableHTTPClientTransport } from '../clients/node_modules/@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js';
import { Cluster, callTool, legacy, legacySession, modern, reasonOf, repo, sleep } from './cluster.mjs';

const stateMode = process.env.AGENCY_SCALE_STATE || 'postgres';
const shared = stateMode === 'postgres';
const needsShared = shared ? {} : { skip: 'needs the shared PostgreSQL store (AGENCY_SCALE_STATE=sqlite)' };
const PER_MINUTE = 4;  // generation actions per client per minute, on every instance

let cluster;
let lb;  // HAProxy's /mcp
const direct = (n) => cluster.instance(`agency${n}`).url;

before(async () => {
  cluster = new Cluster({
    state: stateMode,
    serveArgs: ['--max-actions-per-minute-per-client', String(PER_MINUTE)],
  });
  try {
    await cluster.start();
  } catch (e) {
    await cluster.stop();
    throw e;
  }
  lb = cluster.haproxy.url;
});

after(async () => { if (cluster && process.env.SCALE_DUMP_LOGS) console.error(cluster.logs()); if (cluster) await cluster.stop(); });

// Fails with what the instances and HAProxy logged.
function check(condition, message) {
  if (!condition) assert.fail(`${message}\n${cluster.logs()}`);
}

test('the TypeScript SDK (legacy session) through HAProxy; cursors open on any instance', async () => {
  const client = new Client({ name: 'scale-sdk', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(lb)));
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === 'list_keywords'));
    const clients = await client.callTool({ name: 'list_clients', arguments: {} });
    assert.equal(clients.isError, false);
    assert.ok(clients.structuredContent.rows.some((c) => c.id === 'demo-dental'));
    // A page over the SDK session, the next pages as stateless requests through HAProxy.
    const first = await client.callTool({ name: 'list_keywords', arguments: { client_id: 'demo-dental', limit: 3 } });
    assert.equal(first.isError, false, JSON.stringify(first));
    let cursor = first.structuredContent.next_cursor;
    assert.ok(cursor, 'a first page of 3 has a next_cursor');
    const seen = new Set(first.structuredContent.rows.map((k) => JSON.stringify(k)));
    const answeredBy = new Set();
    for (let page = 0; page < 6 && cursor; ++page) {
      const next = await callTool(lb, 'list_keywords', { client_id: 'demo-dental', limit: 3, cursor });
      check(!next.result.isError, `page ${page + 2}: ${JSON.stringify(next.result)}`);
      answeredBy.add(next.instance);
      for (const k of next.result.structuredContent.rows) {
        assert.ok(!seen.has(JSON.stringify(k)), 'a row shows on one page only');
        seen.add(JSON.stringify(k));
      }
      cursor = next.result.structuredContent.next_cursor;
    }
    assert.ok(answeredBy.size >= 2, `pages answered by ${[...answeredBy]}`);
  } finally {
    await client.close();
  }
  // Deterministically: minted by instance 1, opened by instance 2 and 3.
  const one = await callTool(direct(1), 'list_keywords', { client_id: 'demo-dental', limit: 2 });
  const cursor = one.result.structuredContent.next_cursor;
  for (const n of [2, 3]) {
    const other = await callTool(direct(n), 'list_keywords', { client_id: 'demo-dental', limit: 2, cursor });
    check(!other.result.isError, `instance ${n} refused instance 1's cursor: ${JSON.stringify(other.result)}`);
  }
});

test('2026-07-28 requests through HAProxy are spread and each answered right', async () => {
  const byInstance = new Map();
  const answers = await Promise.all(Array.from({ length: 12 }, (_, k) =>
    callTool(lb, 'get_client', { client_id: k % 2 ? 'demo-dental' : 'demo-law' })));
  answers.forEach((a, k) => {
    assert.equal(a.result.isError, false, JSON.stringify(a.result));
    assert.equal(a.result.structuredContent.id, k % 2 ? 'demo-dental' : 'demo-law');
    byInstance.set(a.instance, (byInstance.get(a.instance) || 0) + 1);
  });
  assert.deepEqual([...byInstance.keys()].sort(), ['agency1', 'agency2', 'agency3'],
                   `answered by ${JSON.stringify([...byInstance])}`);
  const list = await modern(lb, 'tools/list');
  assert.equal(list.status, 200);
  assert.ok(list.body.result.tools.length > 10);
});

// The conformance suite's server scenarios (those tests/conformance runs against the product),
// through HAProxy: every one opens a legacy session and relies on it staying on one instance.
test('conformance server scenarios through HAProxy', async () => {
  const clients = path.join(repo, 'tests/clients');
  const cli = path.join(clients, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'agency-scale-conf-'));
  const scenarios = ['server-initialize', 'ping', 'tools-list', 'server-sse-multiple-streams',
                     'logging-set-level', 'resources-list', 'prompts-list', 'completion-complete'];
  try {
    const runs = await Promise.all(scenarios.map((scenario) => new Promise((resolve) => {
      const child = spawn(process.execPath, [cli, 'server', '--url', lb, '--scenario', scenario], {
        cwd: out, env: { ...process.env, PATH: `${clients}/node_modules/.bin:${process.env.PATH}` },
      });
      let text = '';
      child.stdout.on('data', (c) => { text += c; });
      child.stderr.on('data', (c) => { text += c; });
      child.on('exit', (code) => resolve({ scenario, code, text }));
    })));
    for (const run of runs) assert.equal(run.code, 0, `${run.scenario}:\n${run.text.slice(-3000)}`);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});

test('one confirmation id redeemed on two instances at once: one deploy, one refusal', needsShared, async () => {
  const draft = await callTool(lb, 'generate_article', { client_id: 'demo-dental', keyword: `scale confirm ${process.pid}` });
  assert.equal(draft.result.isError, false, JSON.stringify(draft.result));
  const args = { client_id: 'demo-dental', article_id: draft.result.structuredContent.article_id };
  const preview = await callTool(lb, 'deploy_article', args);
  assert.equal(preview.result.structuredContent.status, 'confirmation_required');
  const confirmation_id = preview.result.structuredContent.confirmation_id;
  const [a, b] = await Promise.all([2, 3].map((n) => callTool(direct(n), 'deploy_article', { ...args, confirmation_id })));
  const results = [a.result, b.result];
  const done = results.filter((r) => !r.isError);
  const refused = results.filter((r) => r.isError);
  check(done.length === 1 && refused.length === 1, `answers: ${JSON.stringify(results)}`);
  assert.equal(done[0].structuredContent.status, 'published');
  assert.equal(reasonOf(refused[0]), 'confirmation');
  assert.match(refused[0].content[0].text, /already used/);
  const posts = await cluster.gatewayPosts('deploy_blog', args.article_id);
  check(posts.length === 1, `deploy_blog POSTs for ${args.article_id}: ${posts.length}`);
});

test('one idempotency key on two instances at once: one gateway POST', needsShared, async () => {
  const url = `https://www.brightsmile.example/scale-idem-${process.pid}`;
  const args = { client_id: 'demo-plumbing', url, idempotency_key: `idem-${process.pid}` };
  // The gateway is slow for this POST, so the second call arrives while the first is out.
  await cluster.fault({ target: 'index_url', mode: 'slow', delay_ms: 800, count: 1 });
  const [a, b] = await Promise.all([2, 3].map((n) => callTool(direct(n), 'index_url', args)));
  const results = [a.result, b.result];
  const first = results.find((r) => !r.isError && !r.structuredContent.replayed);
  check(first, `no first result: ${JSON.stringify(results)}`);
  const other = results.find((r) => r !== first);
  if (other.isError) {
    assert.equal(reasonOf(other), 'in_progress', JSON.stringify(other));
  } else {
    assert.equal(other.structuredContent.replayed, true);
    assert.equal(other.structuredContent.task_id, first.structuredContent.task_id);
  }
  const again = await callTool(lb, 'index_url', args);
  assert.equal(again.result.structuredContent.replayed, true, JSON.stringify(again.result));
  assert.equal(again.result.structuredContent.task_id, first.structuredContent.task_id);
  const posts = await cluster.gatewayPosts('index_url', url);
  check(posts.length === 1, `index_url POSTs: ${posts.length}`);
});

test("a client's credit limit holds across instances", needsShared, async () => {
  const answers = [];
  for (let k = 0; k < 2 * PER_MINUTE; ++k) {
    const n = (k % 3) + 1;
    const r = await callTool(direct(n), 'generate_article', { client_id: 'demo-law', keyword: `scale credit ${process.pid} ${k}` });
    answers.push(r.result);
  }
  const ok = answers.filter((r) => !r.isError);
  const limited = answers.filter((r) => reasonOf(r) === 'rate_limited');
  check(ok.length === PER_MINUTE && limited.length === PER_MINUTE,
        `ok ${ok.length}, rate_limited ${limited.length}: ${JSON.stringify(answers.map(reasonOf))}`);
  const posts = await cluster.gatewayPosts('generate_blog', `scale credit ${process.pid}`);
  assert.equal(posts.length, PER_MINUTE);
});

test('tasks/get answered by an instance that did not create the task', needsShared, async () => {
  const caps = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
  const url = `https://www.brightsmile.example/scale-task-${process.pid}`;
  const created = await modern(direct(2), 'tools/call', { name: 'run_seo_audit', arguments: { client_id: 'demo-dental', url } }, { caps });
  const task = created.body?.result;
  assert.equal(task?.resultType, 'task', JSON.stringify(created.body));
  let got;
  const deadline = Date.now() + 20000;
  do {
    await sleep(200);
    got = await modern(direct(3), 'tasks/get', { taskId: task.taskId }, { caps });
    check(got.body?.result, `tasks/get on instance 3: ${JSON.stringify(got.body)}`);
  } while (got.body.result.status === 'working' && Date.now() < deadline);
  assert.equal(got.body.result.taskId, task.taskId);
  assert.equal(got.body.result.status, 'completed', JSON.stringify(got.body.result));
  assert.equal(got.body.result.result.structuredContent.status, 'succeeded');
});

test('kill -9 the instance running an audit: another finishes it, one gateway POST', needsShared, async () => {
  const url = `https://www.brightsmile.example/scale-kill-${process.pid}`;
  // The POST stays at the gateway for 600 ms (less than the 2 s lease), so the kill lands
  // while it is out and the report is there when another instance takes the job over.
  await cluster.fault({ target: 'seo_audit', mode: 'slow', delay_ms: 600, count: 1 });
  const one = cluster.instance('agency1');
  const queued = await callTool(one.url, 'run_seo_audit', { client_id: 'demo-dental', url });
  const audit_id = queued.result.structuredContent.audit_id;
  assert.ok(audit_id, JSON.stringify(queued.result));
  let status;
  const deadline = Date.now() + 10000;
  do {
    const r = (await callTool(one.url, 'get_audit_status', { client_id: 'demo-dental', audit_id })).result;
    check(r.structuredContent, `get_audit_status on instance 1: ${JSON.stringify(r)}`);
    status = r.structuredContent.status;
  } while (status === 'queued' && Date.now() < deadline);
  assert.equal(status, 'running', 'the job was running (its POST out) when instance 1 was killed');
  await cluster.kill(one);

  const until = Date.now() + 30000;
  let record;
  do {
    await sleep(250);
    const r = (await callTool(lb, 'get_audit_status', { client_id: 'demo-dental', audit_id })).result;
    check(r.structuredContent, `get_audit_status through HAProxy: ${JSON.stringify(r)}`);
    record = r.structuredContent;
  } while (record.status !== 'succeeded' && record.status !== 'failed' && Date.now() < until);
  check(record.status === 'succeeded', `audit after the kill: ${JSON.stringify(record)}`);
  check(cluster.instances.some((i) => i.alive && i.log().includes(`audit job ${audit_id}`) &&
                                      /taking it over/.test(i.log())),
        'another instance took the audit over');
  await sleep(1000);  // nobody sends it again afterwards
  const posts = await cluster.gatewayPosts('seo_audit', url);
  check(posts.length === 1, `seo_audit POSTs for the audit: ${posts.length}`);
  const again = (await callTool(lb, 'get_audit_status', { client_id: 'demo-dental', audit_id })).result.structuredContent;
  assert.equal(again.report_id, record.report_id);
});

// Last: it kills the instance holding the session.
test('a legacy session sticks to its instance; when it dies the client gets 404 and starts again', async () => {
  const { session, instance } = await legacySession(lb);
  assert.ok(instance, 'HAProxy names the instance that answered');
  for (let k = 0; k < 6; ++k) {
    const r = await legacy(lb, { jsonrpc: '2.0', id: 100 + k, method: 'tools/call',
                                 params: { name: 'get_client', arguments: { client_id: 'demo-dental' } } }, session);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.instance, instance, 'every request of the session reaches its instance');
    assert.equal(r.body.result.isError, false);
  }
  // An answer to a server-to-client request that reaches another instance: 404, the session is
  // unknown there (nothing is routed between instances).
  const home = cluster.instance(instance);
  const elsewhere = cluster.instances.find((i) => i.alive && i !== home);
  const stray = await legacy(elsewhere.url, { jsonrpc: '2.0', id: 'srv-1', result: {} }, session);
  assert.equal(stray.status, 404);

  await cluster.kill(home);
  const lost = await legacy(lb, { jsonrpc: '2.0', id: 200, method: 'ping' }, session);
  assert.equal(lost.status, 404, 'the session died with its instance');
  assert.match(JSON.stringify(lost.body), /unknown or expired session/);
  const fresh = await legacySession(lb);
  assert.notEqual(fresh.instance, instance);
  const pong = await legacy(lb, { jsonrpc: '2.0', id: 201, method: 'ping' }, fresh.session);
  assert.equal(pong.status, 200);
  assert.equal(pong.instance, fresh.instance);
});

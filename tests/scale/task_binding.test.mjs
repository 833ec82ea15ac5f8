// A 2025-11-25 task is bound to its caller's key, not to the session or instance that made it
// (issue 29): two `agency-mcp serve --http` instances with one keys file on one PostgreSQL store.
// The task is made on instance A in a legacy session, A is killed with the task still running,
// and the same key reads its result on instance B in a new session; another key is told what an
// unknown task id gets. Run by ctest (clients.task_binding) with AGENCY_MCP_BIN set.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Cluster, post, sleep } from './cluster.mjs';

let cluster;
const keys = {};
let nextId = 1;

function addKey(file, name) {
  const r = spawnSync(cluster.bin, ['keys', 'add', '--name', name, '--scopes', 'read,write', '--keys-file', file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`keys add ${name}: ${r.stderr}`);
  return r.stdout.trim().split('\n')[0].trim();
}

before(async () => {
  cluster = new Cluster({ instances: 2, state: 'postgres' });
  const keysFile = path.join(cluster.dir, 'keys.json');
  keys.alice = addKey(keysFile, 'alice');
  keys.bob = addKey(keysFile, 'bob');
  cluster.opts.serveArgs = ['--keys-file', keysFile];
  try {
    await cluster.start();
  } catch (e) {
    await cluster.stop();
    throw e;
  }
});

after(async () => { if (cluster) await cluster.stop(); });

function check(condition, message) {
  if (!condition) assert.fail(`${message}\n${cluster.logs()}`);
}

// One legacy message with a key; {status, session, body}.
async function send(url, key, message, session, timeoutMs = 30000) {
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
                    'X-API-Key': key };
  if (session) {
    headers['Mcp-Session-Id'] = session;
    headers['MCP-Protocol-Version'] = '2025-11-25';
  }
  const r = await post(url, headers, JSON.stringify(message), timeoutMs);
  return { status: r.status, session: r.headers['mcp-session-id'], body: r.body };
}

// A new legacy session of `key` on the instance at `url`: call(method, params) sends requests.
async function session(url, key) {
  const init = await send(url, key, { jsonrpc: '2.0', id: nextId++, method: 'initialize', params: {
    protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'task-binding', version: '1' } } });
  check(init.status === 200 && init.session, `initialize: HTTP ${init.status} ${JSON.stringify(init.body)}`);
  const done = await send(url, key, { jsonrpc: '2.0', method: 'notifications/initialized' }, init.session);
  check(done.status === 202, `notifications/initialized: HTTP ${done.status}`);
  const call = async (method, params, timeoutMs) =>
    (await send(url, key, { jsonrpc: '2.0', id: nextId++, method, params }, init.session, timeoutMs)).body;
  return { id: init.session, call };
}

test("a key's task made on A is read to its end on B in a new session after A is killed", async () => {
  const [a, b] = cluster.instances;
  // The audit's POST stays out for 1.5 s: A dies with the task (and its job) still running.
  await cluster.fault({ target: 'seo_audit', mode: 'slow', delay_ms: 1500, count: 1 });
  const first = await session(a.url, keys.alice);
  const url = `https://www.brightsmile.example/task-binding-${process.pid}`;
  const created = await first.call('tools/call', {
    name: 'run_seo_audit', arguments: { client_id: 'demo-dental', url }, task: { ttl: 120000 } });
  const taskId = created?.result?.task?.taskId;
  check(taskId, `task creation on A: ${JSON.stringify(created)}`);
  assert.equal(created.result.task.status, 'working');
  // Killed once the task follows its audit job (its statusMessage says so): the job and the
  // task's resume point are stored, the audit's POST is out.
  for (const until = Date.now() + 10000; ;) {
    const now = (await first.call('tasks/get', { taskId })).result;
    check(now, 'tasks/get on A');
    if (/^audit (queued|running)/.test(now.statusMessage || '')) break;
    check(now.status === 'working' && Date.now() < until, `the task on A: ${JSON.stringify(now)}`);
    await sleep(20);
  }
  await cluster.kill(a);

  const started = Date.now();
  const second = await session(b.url, keys.alice);
  assert.notEqual(second.id, first.id);
  const got = await second.call('tasks/get', { taskId });
  check(got?.result?.taskId === taskId, `tasks/get on B, new session: ${JSON.stringify(got)}`);
  const listed = await second.call('tasks/list', {});
  check(listed?.result?.tasks?.some((t) => t.taskId === taskId), `tasks/list on B: ${JSON.stringify(listed)}`);

  // Another key, on B: exactly the answer of an unknown id, for every task method.
  const bob = await session(b.url, keys.bob);
  const unknownId = '0123456789abcdef0123456789abcdef';
  const unknown = (await bob.call('tasks/get', { taskId: unknownId })).error;
  assert.equal(unknown.code, -32602);
  for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
    const refused = (await bob.call(method, { taskId })).error;
    check(refused, `${method} by another key answered: ${JSON.stringify(refused)}`);
    assert.equal(refused.code, unknown.code, method);
    assert.equal(refused.message.replace(taskId, 'ID'), unknown.message.replace(unknownId, 'ID'), method);
  }
  assert.deepEqual((await bob.call('tasks/list', {})).result.tasks, []);

  // tasks/result waits while B takes the orphaned task over (A's lease runs out) to its end.
  const done = await second.call('tasks/result', { taskId }, 60000);
  check(done?.result, `tasks/result on B: ${JSON.stringify(done)}`);
  assert.equal(done.result.isError, false, JSON.stringify(done.result));
  assert.equal(done.result.structuredContent.status, 'succeeded');
  assert.equal(done.result._meta?.['io.modelcontextprotocol/related-task']?.taskId, taskId);
  const end = await second.call('tasks/get', { taskId });
  assert.equal(end.result.status, 'completed');
  check(b.log().includes(`task ${taskId}`) && /taking it over/.test(b.log()), 'B took the task over');
  console.error(`result read on B ${Date.now() - started} ms after A was killed`);
});

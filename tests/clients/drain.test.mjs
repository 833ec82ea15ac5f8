// Issue 21: health and graceful stop of the real binary. /healthz and /readyz (which accept
// any Host, as a balancer's check sends the machine's address); SIGTERM with a slow call in
// flight over HTTP (its answer arrives whole, /readyz says draining, new calls get 503, exit 0);
// a drain past --drain-timeout (the call is cancelled, the process still exits 0 at once); and
// stdio, where SIGTERM and end of input both answer the call in flight and exit 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { bin, startHttpServer } from './helpers.mjs';

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};
const SLOW_MS = 2500;  // each read of `clients` waits this long at the sample gateway

function tempState() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agency-drain-'));
  return { dir, env: { AGENCY_STATE_DB: path.join(dir, 'state.db') } };
}

// `agency-mcp sample-gateway` with `args`; resolves with {url, child}.
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

function exited(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.on('exit', (code, signal) => resolve(signal ? signal : code));
  });
}

// A 2026-07-28 tools/call: list_clients, which the slow gateway holds for SLOW_MS.
function listClients(url, id) {
  return fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'list_clients',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call',
      params: { name: 'list_clients', arguments: {}, _meta: META } }),
  });
}

// The JSON-RPC answer in a plain or SSE body (the last `data:` line of a stream).
async function answerOf(response) {
  const text = await response.text();
  if (!(response.headers.get('content-type') || '').startsWith('text/event-stream')) return JSON.parse(text);
  const data = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
  assert.ok(data.length > 0, `no event in the stream: ${text}`);
  return data[data.length - 1];
}

// One request through node:http, which sends the Host header it is given (fetch does not).
function request(url, pathname, { method = 'GET', host, headers = {}, body } = {}) {
  const u = new URL(pathname, url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method,
      headers: { ...headers, ...(host ? { Host: host } : {}) }, agent: false }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, body: text ? JSON.parse(text) : null,
        headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
const get = (url, pathname, host) => request(url, pathname, { host });

test('/healthz and /readyz answer without a key and whatever the Host', async () => {
  const state = tempState();
  const { url, child } = await startHttpServer([], state.env);
  try {
    const live = await get(url, '/healthz');
    assert.equal(live.status, 200);
    assert.equal(live.body.status, 'alive');
    assert.equal(live.headers['cache-control'], 'no-store');
    const ready = await get(url, '/readyz');
    assert.equal(ready.status, 200, JSON.stringify(ready.body));
    assert.equal(ready.body.status, 'ready');
    assert.deepEqual(Object.keys(ready.body.checks).sort(), ['draining', 'gateway', 'started', 'store', 'threads']);
    // A balancer's check names the machine by its address; /mcp still refuses that Host.
    const byAddress = await get(url, '/readyz', '10.1.2.3:8787');
    assert.equal(byAddress.status, 200, JSON.stringify(byAddress.body));
    assert.equal((await get(url, '/healthz', '10.1.2.3')).status, 200);
    const mcp = await request(url, '/mcp', { method: 'POST', host: '10.1.2.3:8787',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    assert.equal(mcp.status, 403, JSON.stringify(mcp.body));
    assert.match(mcp.body.error.message, /forbidden Host/);
    // An exclusion names a check that may be left out, or it is refused.
    assert.equal((await get(url, '/readyz?exclude=draining')).status, 400);
    const excluded = await get(url, '/readyz?exclude=store,gateway');
    assert.deepEqual(excluded.body.excluded, ['store', 'gateway']);
  } finally {
    child.kill('SIGKILL');
    fs.rmSync(state.dir, { recursive: true, force: true });
  }
});

test('/readyz is 503 naming the gateway while the gateway is unreachable', async () => {
  const gateway = await startSampleGateway([]);
  const state = tempState();
  const { url, child } = await startHttpServer(['--discovery-refresh', '1'],
    { ...state.env, AGENCY_GATEWAY_URL: gateway.url, AGENCY_CALL_TIMEOUT: '2' });
  try {
    assert.equal((await get(url, '/readyz')).status, 200);
    gateway.child.kill('SIGKILL');
    await exited(gateway.child);
    let ready;
    for (let i = 0; i < 80; i++) {  // the next refresh (1 s) fails within its 2 s budget
      ready = await get(url, '/readyz');
      if (ready.status === 503) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(ready.status, 503, JSON.stringify(ready.body));
    assert.deepEqual(ready.body.failed, ['gateway']);
    assert.equal(ready.body.checks.store, 'ok');
    assert.equal((await get(url, '/healthz')).status, 200, 'liveness does not depend on the gateway');
  } finally {
    child.kill('SIGKILL');
    gateway.child.kill('SIGKILL');
    fs.rmSync(state.dir, { recursive: true, force: true });
  }
});

test('SIGTERM over HTTP: the call in flight is answered, new calls get 503, exit 0', async () => {
  const gateway = await startSampleGateway(['--fault', `clients:slow:100:${SLOW_MS}`]);
  const state = tempState();
  const { url, child } = await startHttpServer(['--drain-timeout', '20'],
    { ...state.env, AGENCY_GATEWAY_URL: gateway.url });
  let log = '';
  child.stderr.on('data', (c) => { log += c; });
  try {
    const inFlight = listClients(url, 1);
    await new Promise((r) => setTimeout(r, 500));  // the call is waiting at the gateway
    const sent = Date.now();
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    const ready = await get(url, '/readyz');
    assert.equal(ready.status, 503);
    assert.deepEqual(ready.body.failed, ['draining']);
    assert.equal((await get(url, '/healthz')).status, 200, 'alive while draining');
    const refused = await listClients(url, 2);
    assert.equal(refused.status, 503);
    assert.ok(refused.headers.get('retry-after'));
    assert.equal(refused.headers.get('connection'), 'close');
    assert.match((await refused.json()).error.message, /shutting down/);

    const response = await inFlight;
    assert.equal(response.status, 200);
    const answer = await answerOf(response);
    assert.equal(answer.id, 1);
    assert.ok(answer.result?.structuredContent, JSON.stringify(answer));
    assert.notEqual(answer.result.isError, true, JSON.stringify(answer.result));
    assert.equal(await exited(child), 0, log);
    assert.ok(Date.now() - sent < SLOW_MS + 3000, 'exits once the call is answered');
    assert.match(log, /stopped cleanly/);
  } finally {
    child.kill('SIGKILL');
    gateway.child.kill('SIGKILL');
    fs.rmSync(state.dir, { recursive: true, force: true });
  }
});

test('SIGTERM past --drain-timeout cancels the call and still exits 0 promptly', async () => {
  const gateway = await startSampleGateway(['--fault', 'clients:slow:100:8000']);
  const state = tempState();
  const { url, child } = await startHttpServer(['--drain-timeout', '1'],
    { ...state.env, AGENCY_GATEWAY_URL: gateway.url, AGENCY_GATEWAY_READ_TIMEOUT_S: '20' });
  let log = '';
  child.stderr.on('data', (c) => { log += c; });
  try {
    const inFlight = listClients(url, 1);
    await new Promise((r) => setTimeout(r, 400));
    const sent = Date.now();
    child.kill('SIGTERM');
    const response = await inFlight;
    await response.text();  // the stream ends (not reset) once the call is cancelled
    assert.equal(await exited(child), 0, log);
    assert.ok(Date.now() - sent < 5000, `took ${Date.now() - sent} ms`);
    assert.match(log, /cancelling them/);
  } finally {
    child.kill('SIGKILL');
    gateway.child.kill('SIGKILL');
    fs.rmSync(state.dir, { recursive: true, force: true });
  }
});

// serve over stdio with a legacy list_clients call in flight; `stop` ends it.
async function stdioStop(stop) {
  const gateway = await startSampleGateway(['--fault', `clients:slow:100:${SLOW_MS}`]);
  const state = tempState();
  const child = spawn(bin, ['serve'], { env: { ...process.env, ...state.env, AGENCY_GATEWAY_URL: gateway.url },
    stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => { out += c; });
  child.stderr.on('data', (c) => { err += c; });
  try {
    const send = (m) => child.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
    send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {},
      clientInfo: { name: 't', version: '1' } } });
    send({ method: 'notifications/initialized' });
    send({ id: 2, method: 'tools/call', params: { name: 'list_clients', arguments: {} } });
    await new Promise((r) => setTimeout(r, 600));
    stop(child);
    const code = await exited(child);
    const answers = out.trim().split('\n').map((l) => JSON.parse(l));
    const call = answers.find((a) => a.id === 2);
    assert.ok(call?.result?.structuredContent, `no answer to the call: ${out}\n${err}`);
    assert.equal(code, 0, err);
  } finally {
    child.kill('SIGKILL');
    gateway.child.kill('SIGKILL');
    fs.rmSync(state.dir, { recursive: true, force: true });
  }
}

test('stdio: SIGTERM answers the call in flight and exits 0', () => stdioStop((c) => c.kill('SIGTERM')));
test('stdio: end of input answers the call in flight and exits 0', () => stdioStop((c) => c.stdin.end()));

// Issue 48: a desktop client started before the gateway is reachable (a laptop before its VPN)
// gets a working server: tools listed, each call answering at once with why, /readyz 503, and
// the same calls working once the gateway answers, without a restart.
test('a server started before its gateway answers says why at once and works once it answers', async () => {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const port = await new Promise((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address();
      probe.close(() => resolve(free));
    });
  });
  const gatewayUrl = `http://127.0.0.1:${port}/api`;
  const state = tempState();
  const env = { ...state.env, AGENCY_GATEWAY_URL: gatewayUrl };
  const { url, child } = await startHttpServer([], env);
  const transport = new StdioClientTransport({ command: bin, args: ['serve', '--state-db', ':memory:'],
    env: { ...process.env, AGENCY_GATEWAY_URL: gatewayUrl }, stderr: 'pipe' });
  const client = new Client({ name: 'claude-ai', version: '0' });
  let gateway;
  try {
    await client.connect(transport);
    const names = (await client.listTools()).tools.map((t) => t.name);
    for (const name of ['list_clients', 'list_keywords', 'generate_article', 'deploy_article'])
      assert.ok(names.includes(name), `${name} is listed while the gateway is away: ${names}`);
    const away = await client.callTool({ name: 'list_clients', arguments: {} });
    assert.equal(away.isError, true, JSON.stringify(away));
    const text = away.content[0].text;
    assert.ok(text.includes(`cannot reach the gateway at ${gatewayUrl}`), text);
    assert.match(text, /keeps trying/);
    assert.match(text, /AGENCY_GATEWAY_URL/);
    const notReady = await get(url, '/readyz');
    assert.equal(notReady.status, 503, JSON.stringify(notReady.body));
    assert.deepEqual(notReady.body.failed, ['gateway']);

    gateway = spawn(bin, ['sample-gateway', '--listen', `127.0.0.1:${port}`], { stdio: 'ignore' });
    // The gateway's own clients, read from it directly.
    let expected;
    for (let i = 0; i < 100 && !expected; i++) {
      try {
        const r = await fetch(`${gatewayUrl}?resource=clients`);
        if (r.ok) expected = (await r.json()).data.map((c) => c.id).sort();
      } catch { await new Promise((r) => setTimeout(r, 100)); }
    }
    assert.ok(expected?.length > 0, 'the sample gateway did not start');
    let answer;
    for (let i = 0; i < 60; i++) {  // retries back off 1, 2, 4, 8 s: within 20 s
      answer = await client.callTool({ name: 'list_clients', arguments: {} });
      if (!answer.isError) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.notEqual(answer.isError, true, JSON.stringify(answer));
    assert.deepEqual(answer.structuredContent.rows.map((r) => r.id).sort(), expected);
    let ready;
    for (let i = 0; i < 60; i++) {
      ready = await get(url, '/readyz');
      if (ready.status === 200) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.equal(ready.status, 200, JSON.stringify(ready.body));
  } finally {
    await client.close().catch(() => {});
    child.kill('SIGKILL');
    gateway?.kill('SIGKILL');
    fs.rmSync(state.dir, { recursive: true, force: true });
  }
});

// A bounded mutation run against the real binary, as issue 15 measured it: valid requests with
// one part replaced by a wrong type, a long string, deep nesting, invalid UTF-8 or a NUL byte.
// Over stdio and over HTTP, no message may end the process, and the server still answers a
// plain ping after all of them. Seeded, so a failure reproduces.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { bin, startHttpServer } from './helpers.mjs';

const COUNT = Number(process.env.MUTATION_COUNT || 2000);
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

// Valid requests to start from: every tool family, tasks, resources, prompts, completion.
const BASES = [
  { method: 'ping' },
  { method: 'tools/list', params: { _meta: META } },
  { method: 'tools/call', params: { name: 'list_clients', arguments: {}, _meta: META } },
  { method: 'tools/call', params: { name: 'get_client', arguments: { client_id: 'demo-dental' }, _meta: META } },
  { method: 'tools/call', params: { name: 'list_rankings', arguments: { client_id: 'demo-dental', keyword: 'implants', from: '2025-01-01', to: '2025-12-31', limit: 5 }, _meta: META } },
  { method: 'tools/call', params: { name: 'list_calls', arguments: { client_id: 'demo-dental', from: '2025-01-01', limit: 3 }, _meta: META } },
  { method: 'tools/call', params: { name: 'list_keywords', arguments: { client_id: 'demo-dental', cursor: 'abc.def' }, _meta: META } },
  { method: 'tools/call', params: { name: 'read_resource', arguments: { client_id: 'demo-dental', resource: 'citations' }, _meta: META } },
  { method: 'tools/call', params: { name: 'generate_keyword_ideas', arguments: { client_id: 'demo-dental', seed: 'implants', idempotency_key: 'k1' }, _meta: META } },
  { method: 'tools/call', params: { name: 'deploy_article', arguments: { client_id: 'demo-dental', article_id: 'a1', confirmation_id: 'x.y' }, _meta: META } },
  { method: 'tools/call', params: { name: 'get_audit_status', arguments: { audit_id: 'aud_1' }, inputResponses: { confirm: { action: 'accept' } }, requestState: 'a.b', _meta: META } },
  { method: 'tasks/get', params: { taskId: 'abc', _meta: META } },
  { method: 'resources/list', params: { _meta: META } },
  { method: 'resources/read', params: { uri: 'agency://clients', _meta: META } },
  { method: 'prompts/list', params: { _meta: META } },
  { method: 'completion/complete', params: { ref: { type: 'ref/prompt', name: 'x' }, argument: { name: 'client_id', value: 'de' }, _meta: META } },
  { method: 'server/discover', params: { _meta: META } },
  { method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'm', version: '1' } } },
];

// mulberry32: small, seeded, good enough to pick mutations.
function rng(seed) {
  return () => {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const MARK = '\u0001MUTATION\u0001';
const deep = (n) => '['.repeat(n) + ']'.repeat(n);

// Every place in a value: [parent, key] pairs.
function places(value, out = []) {
  if (value && typeof value === 'object') {
    for (const k of Object.keys(value)) {
      out.push([value, k]);
      places(value[k], out);
    }
  }
  return out;
}

// One mutated message as bytes.
function mutate(random, id) {
  const base = structuredClone(BASES[Math.floor(random() * BASES.length)]);
  // The routing headers a modern HTTP client sends, from the request before it is mutated.
  const params = base.params || {};
  const route = {
    method: base.method,
    name: base.method === 'resources/read' ? params.uri
      : base.method === 'tasks/get' ? params.taskId : params.name,
  };
  const msg = { jsonrpc: '2.0', id, ...base };
  const spots = places(msg);
  const [parent, key] = spots[Math.floor(random() * spots.length)];
  const kind = Math.floor(random() * 9);
  let raw = null;  // replacement text spliced in place of the marker
  switch (kind) {
    case 0: parent[key] = [1, 'two', { three: 3 }]; break;
    case 1: parent[key] = { nested: { deeper: [null] } }; break;
    case 2: parent[key] = random() < 0.5 ? 12345678901234567890 : -0.5; break;
    case 3: parent[key] = random() < 0.5 ? null : true; break;
    case 4: parent[key] = 'x'.repeat(1 + Math.floor(random() * 300000)); break;
    case 5: parent[key] = MARK; raw = deep(10 + Math.floor(random() * 60000)); break;
    case 6: parent[key] = MARK; raw = '"\xff\xfe invalid \xc3"'; break;
    case 7: parent[key] = MARK; raw = '"a\\u0000b"'; break;
    default: parent[key] = 'ok'; break;
  }
  let text = JSON.stringify(msg);
  let bytes;
  if (raw !== null) {
    const i = text.indexOf(JSON.stringify(MARK));
    const head = Buffer.from(text.slice(0, i));
    const tail = Buffer.from(text.slice(i + JSON.stringify(MARK).length));
    bytes = Buffer.concat([head, Buffer.from(raw, 'latin1'), tail]);
  } else {
    bytes = Buffer.from(text);
  }
  // Sometimes a raw NUL byte and garbage after a complete message, or a cut-off message.
  const r = random();
  if (r < 0.04) bytes = Buffer.concat([bytes, Buffer.from([0]), Buffer.from('garbage')]);
  else if (r < 0.08) bytes = bytes.subarray(0, Math.floor(bytes.length * random()));
  return { bytes, method: route.method, name: route.name };
}

function messages(seed) {
  const random = rng(seed);
  const out = [];
  for (let i = 0; i < COUNT; i++) out.push(mutate(random, i + 1));
  return out;
}

// MUTATION_DUMP=FILE writes the stdio run's lines to FILE, to replay by hand:
// agency-mcp serve < FILE
if (process.env.MUTATION_DUMP) {
  fs.writeFileSync(process.env.MUTATION_DUMP, Buffer.concat(messages(15).map(({ bytes }) =>
    Buffer.concat([bytes.filter((b) => b !== 0x0a), Buffer.from('\n')]))));
}

test('stdio: no mutated message ends the process', async () => {
  const child = spawn(bin, ['serve', '--state-db', ':memory:'], {
    stdio: ['pipe', 'pipe', 'pipe'],
    // Off: the mutated calls are meant to reach the tools, not the per-caller rate limit.
    env: { ...process.env, AGENCY_GATEWAY_URL: '', AGENCY_LOG_LEVEL: 'error', AGENCY_RATE_LIMIT: 'off' },
  });
  let out = '';
  let err = '';
  child.stdin.on('error', () => {});  // a dead server is reported below, with its stderr
  child.stdout.on('data', (c) => { out += c; });
  child.stderr.on('data', (c) => { err += c; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  for (const { bytes } of messages(15)) {
    if (child.exitCode !== null || child.signalCode !== null) break;
    if (!child.stdin.write(Buffer.concat([bytes.filter((b) => b !== 0x0a), Buffer.from('\n')])))
      await Promise.race([new Promise((resolve) => child.stdin.once('drain', resolve)), exited]);
  }
  if (child.exitCode === null) child.stdin.write('{"jsonrpc":"2.0","id":"final","method":"ping"}\n');
  // The final ping answers while every call before it is still the server's.
  const deadline = Date.now() + 120000;
  while (!out.includes('"id":"final"') && Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(out.includes('"id":"final"'), `no answer to the final ping; stderr tail: ${err.slice(-2000)}`);
  child.stdin.end();
  const { code, signal } = await exited;
  assert.equal(signal, null, `killed by ${signal}: ${err.slice(-2000)}`);
  assert.equal(code, 0, err.slice(-2000));
  assert.ok(!/\bcritical\b/.test(err), err.slice(-2000));
  // Every line out is one JSON-RPC message.
  for (const line of out.split('\n').filter(Boolean)) JSON.parse(line);
});

test('HTTP: no mutated message ends the process or gets a 5xx', async () => {
  const { url, child } = await startHttpServer(['--state-db', ':memory:'],
                                               { AGENCY_GATEWAY_URL: '', AGENCY_RATE_LIMIT: 'off' });
  try {
    const headers = {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2026-07-28',
    };
    const fives = [];
    for (const { bytes, method, name } of messages(16)) {
      const h = { ...headers, 'Mcp-Method': method };
      if (name !== undefined) h['Mcp-Name'] = name;
      let res;
      try {
        res = await fetch(url, { method: 'POST', headers: h, body: bytes, signal: AbortSignal.timeout(60000) });
        await res.arrayBuffer();
      } catch (e) {
        assert.fail(`${e.cause?.code || e.message} (server ${child.exitCode === null ? 'alive' : 'exited ' + child.exitCode + ' ' + child.signalCode}) on ${bytes.length} bytes: ${bytes.subarray(0, 300).toString()}`);
      }
      if (res.status >= 500) fives.push(`${res.status}: ${bytes.subarray(0, 200).toString()}`);
    }
    assert.deepEqual(fives, []);
    const ping = await fetch(url, {
      method: 'POST', headers: { ...headers, 'Mcp-Method': 'server/discover' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: META } }),
    });
    assert.equal(ping.status, 200);
    assert.equal(child.exitCode, null);
  } finally {
    child.kill('SIGTERM');
  }
});

// Issue 48: the team's server, as docs/clients.md ("Your team's server") sets it up. agency-mcp
// serves plain HTTP on loopback with a keys file and --allowed-host NAME; HAProxy from Debian
// runs deploy/haproxy-team.cfg, terminating TLS with a certificate from a throwaway CA; the
// TypeScript SDK reaches https://NAME:PORT/mcp trusting that CA (the name resolved to loopback,
// as a team's DNS would), with the caller's key. Also: the name the server was not told is
// refused, a request without the key is refused, and an untrusted certificate stops the client.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, fetch as undiciFetch } from 'undici';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { bin, startHttpServer } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const NAME = 'mcp.agency.test';
let dir, key, server, haproxy, front;

function freePort() {
  return new Promise((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

// A fetch that resolves NAME to loopback and trusts `ca` (undefined: the system's CAs only).
function fetchTrusting(ca) {
  const dispatcher = new Agent({ connect: { ca, lookup: (host, opts, cb) =>
    host === NAME ? (opts?.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4))
                  : cb(new Error(`unexpected host ${host}`)) } });
  return (url, init) => undiciFetch(url, { ...init, dispatcher });
}

before(async () => {
  if (spawnSync('haproxy', ['-v']).error) throw new Error('haproxy is not installed (scripts/install-test-deps.sh)');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agency-team-'));
  const sh = (cmd) => execFileSync('sh', ['-c', cmd], { cwd: dir, stdio: 'ignore' });
  sh("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj '/CN=team test CA' -keyout ca.key -out ca.pem");
  sh(`openssl req -newkey rsa:2048 -nodes -subj '/CN=${NAME}' -keyout server.key -out server.csr`);
  sh(`printf 'subjectAltName=DNS:${NAME}\\n' > ext.cnf`);
  sh('openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile ext.cnf -out server.pem');
  sh('cat server.pem server.key > haproxy.pem');
  const keysFile = path.join(dir, 'keys.json');
  key = execFileSync(bin, ['keys', 'add', '--name', 'alice', '--keys-file', keysFile],
    { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  server = await startHttpServer(['--keys-file', keysFile, '--allowed-host', NAME, '--state-db', ':memory:']);
  const port = await freePort();
  const env = { ...process.env, AGENCY_LISTEN: `127.0.0.1:${port}`,
    AGENCY_TLS_PEM: path.join(dir, 'haproxy.pem'), AGENCY_BACKEND: new URL(server.url).host };
  haproxy = spawn('haproxy', ['-db', '-f', path.join(here, '../../deploy/haproxy-team.cfg')],
    { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  haproxy.stderr.on('data', (c) => { log += c; });
  front = `https://${NAME}:${port}/mcp`;
  const ca = fs.readFileSync(path.join(dir, 'ca.pem'));
  for (let i = 0; ; i++) {
    try { await fetchTrusting(ca)(front, { method: 'GET' }); break; } catch (e) {
      if (i > 100) throw new Error(`haproxy did not answer on ${front}: ${e.cause?.message ?? e}\n${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
});

after(() => {
  haproxy?.kill('SIGKILL');
  server?.child.kill('SIGKILL');
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('over https through the TLS proxy, with the key, a call answers', async () => {
  const ca = fs.readFileSync(path.join(dir, 'ca.pem'));
  const transport = new StreamableHTTPClientTransport(new URL(front),
    { fetch: fetchTrusting(ca), requestInit: { headers: { 'X-API-Key': key } } });
  const client = new Client({ name: 'team-member', version: '1' });
  await client.connect(transport);
  try {
    assert.equal(client.getServerVersion().name, 'agency-mcp');
    const answer = await client.callTool({ name: 'list_clients', arguments: {} });
    assert.notEqual(answer.isError, true, JSON.stringify(answer));
    assert.ok(answer.structuredContent.rows.length > 0);
  } finally {
    await client.close();
  }
});

test('without the key, or under another name, or without trusting the CA, nothing answers', async () => {
  const ca = fs.readFileSync(path.join(dir, 'ca.pem'));
  const init = { method: 'POST', headers: { 'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' };
  const bare = await fetchTrusting(ca)(front, init);
  assert.equal(bare.status, 401, await bare.text());
  // A Host the server was not told (--allowed-host names NAME): refused behind the proxy too
  // (node:https, since fetch sets Host itself).
  const other = await new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port: new URL(front).port, path: '/mcp', method: 'POST',
      ca, servername: NAME, headers: { ...init.headers, 'X-API-Key': key, Host: 'other.example' } }, (res) => {
      let text = '';
      res.on('data', (c) => { text += c; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
  assert.equal(other.status, 403, other.text);
  assert.match(other.text, /forbidden Host/);
  await assert.rejects(fetchTrusting(undefined)(front, init), (e) =>
    /certificate/i.test(String(e.cause?.code ?? '') + String(e.cause?.message ?? '')));
});

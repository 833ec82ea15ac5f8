// A multi-instance deployment for tests and the scale benchmark: one standalone sample gateway,
// a throwaway PostgreSQL cluster (scripts/pg-cluster.sh), several `agency-mcp serve --http`
// instances sharing it and one AGENCY_SERVER_SECRET, and HAProxy running deploy/haproxy.cfg
// (the file docs/deploy.md shows) in the foreground. Every process is a child, ended by stop().
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const haproxyConfig = process.env.SCALE_HAPROXY_CFG || path.join(repo, 'deploy/haproxy.cfg');
export const instanceUnit = path.join(repo, 'deploy/agency-mcp@.service');
const pgScript = path.join(repo, 'scripts/pg-cluster.sh');
export const MODERN = '2026-07-28';

// A loopback port nobody listens on right now (HAProxy needs its port before it starts).
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The HTTP settings deploy/agency-mcp@.service gives every instance behind HAProxy
// (`Environment=AGENCY_HTTP_...=value` lines): the instances here run with them, so that what
// is tested is the shipped pair of HAProxy and instance settings.
export function unitHttpEnvironment() {
  const env = {};
  for (const line of fs.readFileSync(instanceUnit, 'utf8').split('\n')) {
    const m = line.match(/^Environment=(AGENCY_HTTP_[A-Z_]+)=(\S+)\s*$/);
    if (m) env[m[1]] = m[2];
  }
  return env;
}

// TCP connections in /proc/net/tcp (IPv4) whose local port is `port`, established:
// [{peerPort}] (the instance's side of its connections).
export function establishedAt(port) {
  const rows = fs.readFileSync('/proc/net/tcp', 'utf8').trim().split('\n').slice(1);
  const found = [];
  for (const row of rows) {
    const [, local, remote, state] = row.trim().split(/\s+/);
    if (state !== '01' || parseInt(local.split(':')[1], 16) !== port) continue;
    found.push({ peerPort: parseInt(remote.split(':')[1], 16) });
  }
  return found;
}

// Spawns `bin args`; resolves with {child, match, log()} once `pattern` shows on `stream`.
function startChild(name, command, args, { env = {}, stream = 'stderr', pattern, timeoutMs = 20000 }) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const log = () => out;
    const timer = pattern && setTimeout(() => reject(new Error(`${name} did not start in ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const onData = (chunk) => {
      out += chunk;
      if (out.length > 1_000_000) out = out.slice(-500_000);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    if (!pattern) { resolve({ child, log }); return; }
    child[stream].on('data', () => {
      const m = out.match(pattern);
      if (m && timer) { clearTimeout(timer); resolve({ child, match: m, log }); }
    });
    child.once('error', (e) => { clearTimeout(timer); reject(new Error(`${name}: ${e.message}`)); });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? signal}) before it was ready:\n${out}`));
    });
  });
}

// A throwaway PostgreSQL cluster; its URL, or an error saying what is missing.
function startPostgres(dir) {
  if (!fs.existsSync(pgScript)) {
    throw new Error(`${pgScript} is missing: the multi-instance test needs the PostgreSQL store ` +
                    '(scripts/pg-cluster.sh from the PostgreSQL branch)');
  }
  const run = spawnSync('bash', [pgScript, 'start', dir], { encoding: 'utf8', timeout: 60000 });
  if (run.status !== 0) throw new Error(`scripts/pg-cluster.sh start failed (${run.status}): ${run.stderr}`);
  return run.stdout.trim().split('\n').pop();
}

export class Cluster {
  // opts: instances (3), state ('postgres' | 'sqlite': separate files, for what needs no sharing),
  // serveArgs (extra `serve` options), env (extra instance environment), gatewayArgs.
  constructor(opts = {}) {
    this.opts = { instances: 3, state: 'postgres', serveArgs: [], env: {}, gatewayArgs: [], ...opts };
    this.bin = opts.bin || process.env.AGENCY_MCP_BIN;
    if (!this.bin) throw new Error('AGENCY_MCP_BIN must name the agency-mcp binary');
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agency-scale-'));
    this.instances = [];  // {name, url, child, log, alive}
    this.secret = 'scale-test-secret-' + 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
  }

  async start() {
    const gw = await startChild('sample gateway', this.bin,
      ['sample-gateway', '--listen', '127.0.0.1:0', ...this.opts.gatewayArgs],
      { stream: 'stdout', pattern: /(http:\/\/127\.0\.0\.1:\d+)\/api/ });
    this.gateway = { child: gw.child, url: gw.match[0], control: gw.match[1], log: gw.log };
    if (this.opts.state === 'postgres') {
      // As root the cluster runs as `postgres`, which must get through to its directory.
      fs.chmodSync(this.dir, 0o711);
      this.pgDir = path.join(this.dir, 'pg');
      this.stateUrl = startPostgres(this.pgDir);
    }
    for (let i = 1; i <= this.opts.instances; ++i) this.instances.push(await this.startInstance(i));
    await this.startHaproxy();
    return this;
  }

  stateArgs(i) {
    return this.opts.state === 'postgres' ? ['--state-url', this.stateUrl]
                                          : ['--state-db', path.join(this.dir, `state${i}.db`)];
  }

  async startInstance(i) {
    const args = ['serve', '--http', '--listen', '127.0.0.1:0', '--gateway-url', this.gateway.url,
                  ...this.stateArgs(i), ...this.opts.serveArgs];
    const env = { ...unitHttpEnvironment(), AGENCY_SERVER_SECRET: this.secret,
                  AGENCY_STATE_LEASE_MS: '2000', ...this.opts.env };
    try {
      const s = await startChild(`instance ${i}`, this.bin, args, {
        env, pattern: /MCP over Streamable HTTP at (http:\/\/\S+)/,
      });
      const url = s.match[1];
      return { name: `agency${i}`, index: i, url, port: Number(new URL(url).port), child: s.child,
               log: s.log, alive: true };
    } catch (e) {
      if (/state-url/.test(e.message) && /not|unknown|extra/i.test(e.message))
        throw new Error('agency-mcp serve does not accept --state-url: the multi-instance test ' +
                        'needs the PostgreSQL store wired into the CLI.\n' + e.message);
      throw e;
    }
  }

  async startHaproxy() {
    const found = spawnSync('haproxy', ['-v'], { encoding: 'utf8' });
    if (found.error) throw new Error('haproxy is not installed: the multi-instance test runs ' +
                                     'deploy/haproxy.cfg (scripts/install-test-deps.sh installs haproxy)');
    const port = await freePort();
    const env = { AGENCY_LISTEN: `127.0.0.1:${port}`, AGENCY_CHECK_MS: '500',
                  AGENCY_STATS_SOCKET: path.join(this.dir, 'haproxy.sock') };
    this.instances.forEach((inst, k) => { env[`AGENCY_${k + 1}`] = new URL(inst.url).host; });
    const hp = await startChild('haproxy', 'haproxy', ['-db', '-f', haproxyConfig], { env });
    this.haproxy = { child: hp.child, log: hp.log, url: `http://127.0.0.1:${port}/mcp`,
                     socket: env.AGENCY_STATS_SOCKET };
    hp.child.once('exit', (code, signal) => { this.haproxy.exited = code ?? signal; });
    const deadline = Date.now() + 15000;
    for (;;) {
      if (this.haproxy.exited !== undefined) throw new Error(`haproxy exited (${this.haproxy.exited}):\n${hp.log()}`);
      try {
        const r = await fetch(this.haproxy.url, { method: 'OPTIONS' });
        if (r.status === 204) break;
      } catch { /* not listening yet */ }
      if (Date.now() > deadline) throw new Error(`haproxy did not answer on ${this.haproxy.url}:\n${hp.log()}`);
      await sleep(50);
    }
  }

  instance(name) { return this.instances.find((i) => i.name === name); }

  // One command on HAProxy's runtime API (AGENCY_STATS_SOCKET); its answer.
  haproxyCommand(command) {
    return new Promise((resolve, reject) => {
      const sock = net.createConnection({ path: this.haproxy.socket });
      let text = '';
      sock.setEncoding('utf8');
      sock.on('connect', () => sock.write(command + '\n'));
      sock.on('data', (c) => { text += c; });
      sock.on('end', () => resolve(text));
      sock.on('error', reject);
    });
  }

  // HAProxy's counters for each instance: {agency1: {connect, reuse}, ...}: connections it
  // opened to the instance, and requests it sent on a connection it already had.
  async haproxyServerStats() {
    const [head, ...rows] = (await this.haproxyCommand('show stat')).trim().split('\n');
    const names = head.replace(/^# /, '').split(',');
    const byServer = {};
    for (const row of rows) {
      const f = Object.fromEntries(row.split(',').map((v, k) => [names[k], v]));
      if (f.pxname === 'agency' && /^agency\d+$/.test(f.svname))
        byServer[f.svname] = { connect: Number(f.connect), reuse: Number(f.reuse) };
    }
    return byServer;
  }

  // kill -9, resolved once the process is gone (its listening socket closed: until then a new
  // connection may still be accepted by the kernel, and its request lost with the process).
  // With HAProxy in front, resolved once HAProxy has also dropped the connections it kept to
  // the instance: the kernel closes them at once, but a request HAProxy sends on one before it
  // has read that close is lost with it and answered 502 (deploy/haproxy.cfg, docs/deploy.md);
  // the tests' claims are about what follows the kill, so they start after that instant.
  async kill(inst) {
    const gone = new Promise((resolve) => inst.child.once('exit', resolve));
    inst.child.kill('SIGKILL');
    inst.alive = false;
    await gone;
    if (!this.haproxy) return;
    const deadline = Date.now() + 10000;
    let kept;
    while ((kept = await this.haproxyKeptConnections(inst.name)) > 0) {
      if (Date.now() > deadline) throw new Error(`HAProxy still keeps ${kept} connections to ${inst.name}`);
      await sleep(20);
    }
  }

  // Connections HAProxy holds to an instance, in use or idle (`show servers conn`).
  async haproxyKeptConnections(name) {
    const [head, ...rows] = (await this.haproxyCommand('show servers conn agency')).trim().split('\n');
    const names = head.replace(/^# /, '').split(' ');
    for (const row of rows) {
      const f = Object.fromEntries(row.trim().split(/\s+/).map((v, k) => [names[k], v]));
      if (f['bkname/svname'] === `agency/${name}`)
        return Number(f.used_cur) + Number(f.idle_cur);
    }
    throw new Error(`show servers conn names no agency/${name}:\n${head}\n${rows.join('\n')}`);
  }

  // The sample gateway's request log: [{method, target, client_id, detail, status, ...}].
  async gatewayRequests() {
    return (await fetch(`${this.gateway.control}/_control/requests`)).json();
  }

  async gatewayPosts(target, contains) {
    const log = await this.gatewayRequests();
    return log.filter((e) => e.method === 'POST' && e.target === target &&
                              (contains === undefined || e.detail.includes(contains)));
  }

  async fault(fault) {
    const r = await fetch(`${this.gateway.control}/_control/faults`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(fault),
    });
    if (r.status !== 200) throw new Error(`fault refused: ${await r.text()}`);
  }

  // Everything the processes wrote, for a failing test's message.
  logs() {
    const parts = this.instances.map((i) => `--- ${i.name} ---\n${i.log().slice(-4000)}`);
    if (this.haproxy) parts.push(`--- haproxy ---\n${this.haproxy.log().slice(-2000)}`);
    return parts.join('\n');
  }

  async stop() {
    const children = [this.haproxy?.child, ...this.instances.map((i) => i.child), this.gateway?.child];
    for (const c of children) if (c && c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    await sleep(200);
    for (const c of children) if (c && c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    if (this.pgDir) spawnSync('bash', [pgScript, 'stop', this.pgDir], { timeout: 30000 });
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

// The JSON-RPC answer in a response body, JSON or an SSE stream (the last event with an id).
function answerOf(type, text) {
  if (!(type || '').includes('text/event-stream')) return text ? JSON.parse(text) : null;
  let last = null;
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
    if (!data) continue;
    const message = JSON.parse(data);
    if (message.id !== undefined && (message.result !== undefined || message.error !== undefined)) last = message;
  }
  return last;
}

// One POST on a connection of its own (agent: false). A kept-alive connection to HAProxy may be
// closed just as an instance dies, which fails the next request sent on it; clients retry such a
// transport error on a new connection, and the tests need a deterministic answer instead.
export function post(url, headers, body, timeoutMs = 60000) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent: false, timeout: timeoutMs,
                                    headers: { ...headers, 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode, headers: res.headers,
                    body: res.statusCode === 202 ? null : answerOf(res.headers['content-type'], text) });
        } catch (e) { reject(new Error(`HTTP ${res.statusCode}, unreadable body: ${text.slice(0, 500)}`)); }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

let nextId = 1;

// One 2026-07-28 request (stateless: any instance may answer). caps: clientCapabilities.
export async function modern(url, method, params = {}, { caps = {}, name, timeoutMs } = {}) {
  const headers = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': MODERN,
    'Mcp-Method': method,
  };
  const mcpName = name ?? (method === 'tools/call' ? params.name : params.taskId);
  if (mcpName) headers['Mcp-Name'] = mcpName;
  const body = { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': caps } } };
  const r = await post(url, headers, JSON.stringify(body), timeoutMs);
  return { status: r.status, instance: r.headers['x-agency-instance'], body: r.body };
}

// A tools/call in the 2026-07-28 era; {result, instance, status}.
export async function callTool(url, tool, args, opts = {}) {
  const r = await modern(url, 'tools/call', { name: tool, arguments: args }, opts);
  if (!r.body?.result) throw new Error(`${tool} on ${url}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return { ...r, result: r.body.result };
}

// The error reason of a tool result (its text is {"error": {"reason", ...}}), or null.
export function reasonOf(result) {
  if (!result.isError) return null;
  const fromStructured = result.structuredContent?.error?.reason;
  if (fromStructured) return fromStructured;
  for (const c of result.content || []) {
    try { return JSON.parse(c.text).error.reason; } catch { /* a summary line */ }
  }
  return 'unknown';
}

// One legacy (2025-11-25) HTTP message; session: the Mcp-Session-Id to send.
export async function legacy(url, message, session) {
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  if (session) {
    headers['Mcp-Session-Id'] = session;
    headers['MCP-Protocol-Version'] = '2025-11-25';
  }
  const r = await post(url, headers, JSON.stringify(message), 30000);
  return { status: r.status, instance: r.headers['x-agency-instance'],
           session: r.headers['mcp-session-id'], body: r.body };
}

// initialize + notifications/initialized; {session, instance}.
export async function legacySession(url) {
  const init = await legacy(url, { jsonrpc: '2.0', id: nextId++, method: 'initialize', params: {
    protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'scale-test', version: '1' } } });
  if (init.status !== 200 || !init.session) throw new Error(`initialize: HTTP ${init.status} ${JSON.stringify(init.body)}`);
  const done = await legacy(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, init.session);
  if (done.status !== 202) throw new Error(`notifications/initialized: HTTP ${done.status}`);
  return { session: init.session, instance: init.instance };
}

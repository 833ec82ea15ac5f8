// docs/clients.md, exercised: every fenced block tagged `clients-test=CLIENT/TRANSPORT` is
// parsed (JSON, or the command line), the server it describes is started with the built
// binary, and it must answer initialize and tools/list. Run by ctest with AGENCY_MCP_BIN set.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { bin } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const doc = readFileSync(path.join(here, '../../docs/clients.md'), 'utf8');

// The tagged blocks, by tag.
function snippets() {
  const found = new Map();
  const fence = /^```(\w+) clients-test=(\S+)\n([\s\S]*?)^```$/gm;
  for (const m of doc.matchAll(fence)) {
    assert.ok(!found.has(m[2]), `${m[2]} appears once`);
    found.set(m[2], { lang: m[1], text: m[3] });
  }
  return found;
}
const blocks = snippets();

// The README's copy of a tagged block is the one tested here, word for word.
test('README.md\'s tagged blocks are docs/clients.md\'s', () => {
  const readme = readFileSync(path.join(here, '../../README.md'), 'utf8');
  const fence = /^```(\w+) clients-test=(\S+)\n([\s\S]*?)^```$/gm;
  let n = 0;
  for (const m of readme.matchAll(fence)) {
    n++;
    assert.equal(m[3], blocks.get(m[2])?.text, `README.md's ${m[2]} block as in docs/clients.md`);
  }
  assert.ok(n >= 1, 'README.md shows the image set-up for Claude Desktop');
});

// A command line as a POSIX shell splits it (quotes, no expansion: none is used).
function words(line) {
  const out = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (const m of line.trim().matchAll(re)) out.push(m[1] ?? m[2] ?? m[3]);
  return out;
}

let dir, gateway, key, keysFile;
const GATEWAY_KEY = 'YOUR_GATEWAY_API_KEY';  // the sample gateway takes any key

// What the reader replaces, replaced the same way (docs/clients.md's table).
function fill(text, env = {}) {
  return text
    .replaceAll('/path/to/agency-mcp', bin)
    .replaceAll('https://gateway.example.com/api', gateway.url)
    .replaceAll('YOUR_AGENCY_MCP_KEY', key)
    .replaceAll('${input:agency-mcp-key}', key)
    .replaceAll('${input:agency-gateway-key}', GATEWAY_KEY)
    .replace(/\$\{env:(\w+)\}/g, (_, name) => {
      const known = { AGENCY_MCP_KEY: key, AGENCY_API_KEY: GATEWAY_KEY };
      assert.ok(name in known, `the test knows \${env:${name}}`);
      return known[name];
    })
    .replace(/\$\{(\w+)\}/g, (whole, name) => env[name] ?? whole);
}

function startProcess(args, env, pattern) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let seen = '';
    const look = (chunk) => {
      seen += chunk;
      const m = seen.match(pattern);
      if (m) resolve({ url: m[1], child });
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.on('exit', (code) => reject(new Error(`${args[0]} exited ${code}: ${seen}`)));
  });
}

// `serve --http` with the keys file, on a free port; the snippet's URL gets that port.
async function startHttp() {
  return startProcess(['serve', '--http', '--listen', '127.0.0.1:0', '--keys-file', keysFile,
    '--state-db', ':memory:'], { AGENCY_GATEWAY_URL: gateway.url, AGENCY_API_KEY: GATEWAY_KEY },
  /MCP over Streamable HTTP at (http:\/\/\S+)/);
}

function onServerPort(snippetUrl, serverUrl) {
  const want = new URL(snippetUrl);
  const have = new URL(serverUrl);
  assert.equal(want.hostname, '127.0.0.1', 'the snippet names the loopback address');
  assert.equal(want.port, '8787', 'the snippet uses the documented port');
  assert.equal(want.pathname, have.pathname, 'the snippet names the MCP endpoint');
  want.port = have.port;
  return want;
}

async function expectAnswers(client, { sample }) {
  const info = client.getServerVersion();
  assert.equal(info.name, 'agency-mcp');
  // The gateway the snippet names was used (the built-in sample data says so in the title).
  assert.equal(/sample data/.test(info.title ?? ''), sample, info.title);
  const { tools } = await client.listTools();
  assert.ok(tools.some((t) => t.name === 'list_clients'), 'tools/list answers');
}

async function overStdio({ command, args, env }) {
  const transport = new StdioClientTransport({
    command: fill(command), args: (args ?? []).map((a) => fill(a)),
    // Only what the snippet sets (and PATH), as a client starting the server would.
    env: { PATH: process.env.PATH, ...Object.fromEntries(Object.entries(env ?? {}).map(([k, v]) => [k, fill(v)])) },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', () => {});
  const client = new Client({ name: 'client-docs', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  try {
    await expectAnswers(client, { sample: !env?.AGENCY_GATEWAY_URL });
  } finally {
    await client.close();
  }
}

async function overHttp(snippetUrl, headers) {
  const server = await startHttp();
  try {
    const url = onServerPort(fill(snippetUrl), server.url);
    // Without the snippet's headers the server refuses: the header is what lets it in.
    const bare = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(bare.status, 401);
    const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
    const client = new Client({ name: 'client-docs', version: '1.0.0' }, { capabilities: {} });
    await client.connect(transport);
    try {
      await expectAnswers(client, { sample: false });
    } finally {
      await client.close();
    }
  } finally {
    server.child.kill('SIGTERM');
  }
}

function headerPair(text) {
  const colon = text.indexOf(':');
  assert.ok(colon > 0, `a "Name: value" header: ${text}`);
  return [text.slice(0, colon).trim(), text.slice(colon + 1).trim()];
}

function block(tag) {
  const b = blocks.get(tag);
  assert.ok(b, `docs/clients.md has a block tagged clients-test=${tag}`);
  return b;
}

function json(tag) {
  const b = block(tag);
  assert.equal(b.lang, 'json');
  return JSON.parse(b.text);
}

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'client-docs-'));
  keysFile = path.join(dir, 'keys.json');
  key = execFileSync(bin, ['keys', 'add', '--name', 'docs', '--keys-file', keysFile], { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  gateway = await startProcess(['sample-gateway', '--listen', '127.0.0.1:0'], {}, /(http:\/\/127\.0\.0\.1:\d+\/\S*)/);
});

after(() => {
  gateway?.child.kill('SIGTERM');
  if (imageLoaded) {
    const version = execFileSync(bin, ['--version']).toString().trim().split(' ').pop();
    try {
      execFileSync('podman', ['--runtime', 'runc', '--cgroup-manager=cgroupfs', 'rmi', '-f',
        `docker.io/library/agency-mcp:${version}`], { stdio: 'ignore' });
    } catch { /* already gone */ }
  }
  rmSync(dir, { recursive: true, force: true });
});

test('every client has a stdio and an HTTP snippet, and nothing else is tagged', () => {
  const want = ['claude-desktop', 'claude-code', 'vscode', 'cursor', 'inspector']
    .flatMap((c) => [`${c}/stdio`, `${c}/http`]).concat(['claude-desktop', 'claude-code', 'vscode', 'cursor'].map((c) => `${c}/docker`));
  assert.deepEqual([...blocks.keys()].sort(), want.sort());
});

for (const client of ['claude-desktop', 'cursor']) {
  test(`${client} over stdio: mcpServers.agency starts the server`, async () => {
    const entry = json(`${client}/stdio`).mcpServers.agency;
    await overStdio(entry);
  });
}

test('vscode over stdio: servers.agency (type stdio) starts the server', async () => {
  const config = json('vscode/stdio');
  const entry = config.servers.agency;
  assert.equal(entry.type, 'stdio');
  for (const ref of JSON.stringify(entry).matchAll(/\$\{input:([\w-]+)\}/g))
    assert.ok(config.inputs.some((i) => i.id === ref[1] && i.password), `input ${ref[1]} is declared secret`);
  await overStdio(entry);
});

test('vscode over HTTP: servers.agency (type http) reaches the server with its header', async () => {
  const config = json('vscode/http');
  const entry = config.servers.agency;
  assert.equal(entry.type, 'http');
  assert.ok(config.inputs.some((i) => i.id === 'agency-mcp-key' && i.password));
  await overHttp(entry.url, Object.fromEntries(Object.entries(entry.headers).map(([k, v]) => [k, fill(v)])));
});

test('cursor over HTTP: mcpServers.agency.url with its header', async () => {
  const entry = json('cursor/http').mcpServers.agency;
  await overHttp(entry.url, Object.fromEntries(Object.entries(entry.headers).map(([k, v]) => [k, fill(v)])));
});

test('claude-desktop over HTTP: the mcp-remote bridge gets the URL and header', async () => {
  const entry = json('claude-desktop/http').mcpServers.agency;
  assert.equal(entry.command, 'npx');
  const args = entry.args;
  assert.match(args[1], /^mcp-remote@\d+\.\d+\.\d+$/, 'the bridge is pinned');
  const header = args[args.indexOf('--header') + 1];
  assert.ok(!/\s/.test(header), 'no space in the header argument (mcp-remote on Windows)');
  await overHttp(args[2], Object.fromEntries([headerPair(fill(header, entry.env)).map((v) => fill(v))]));
});

// `claude mcp add [options] NAME COMMAND_OR_URL [-- command args...]`
function claudeMcpAdd(tag) {
  const b = block(tag);
  assert.equal(b.lang, 'sh');
  const argv = words(b.text);
  assert.deepEqual(argv.slice(0, 3), ['claude', 'mcp', 'add']);
  const parsed = { env: {}, headers: {}, positional: [], command: [] };
  for (let i = 3; i < argv.length; ++i) {
    const a = argv[i];
    if (a === '--') { parsed.command = argv.slice(i + 1); break; }
    if (a === '--transport') parsed.transport = argv[++i];
    else if (a === '--env' || a === '-e') {
      const [k, ...v] = argv[++i].split('=');
      parsed.env[k] = v.join('=');
    } else if (a === '--header' || a === '-H') {
      const [k, v] = headerPair(argv[++i]);
      parsed.headers[k] = v;
    } else if (a.startsWith('-')) assert.fail(`unexpected option ${a}`);
    else parsed.positional.push(a);
  }
  return parsed;
}

test('claude-code over stdio: claude mcp add ... -- COMMAND starts the server', async () => {
  const p = claudeMcpAdd('claude-code/stdio');
  assert.equal(p.transport, 'stdio');
  assert.deepEqual(p.positional, ['agency']);
  await overStdio({ command: p.command[0], args: p.command.slice(1), env: p.env });
});

test('claude-code over HTTP: claude mcp add --transport http NAME URL --header', async () => {
  const p = claudeMcpAdd('claude-code/http');
  assert.equal(p.transport, 'http');
  assert.equal(p.positional[0], 'agency');
  const headers = Object.fromEntries(Object.entries(p.headers).map(([k, v]) => [k, fill(v)]));
  await overHttp(p.positional[1], headers);
});

// The Inspector CLI itself (pinned in package.json) runs the snippet's command line. The
// snippet names that version: without one, npx takes the newest release whose `engines` accept
// the user's Node, which on Node 20 is 0.15.0, a CLI without --header or --transport.
const inspectorVersion = JSON.parse(readFileSync(path.join(here, 'package.json'), 'utf8'))
  .dependencies['@modelcontextprotocol/inspector-cli'];
async function inspector(tag, serverUrl) {
  const b = block(tag);
  assert.equal(b.lang, 'sh');
  const argv = words(fill(b.text));
  assert.deepEqual(argv.slice(0, 3),
    ['npx', `@modelcontextprotocol/inspector@${inspectorVersion}`, '--cli']);
  let rest = argv.slice(3);
  if (serverUrl) rest = rest.map((a) => (a.startsWith('http://') ? onServerPort(a, serverUrl).href : a));
  const cli = path.join(here, 'node_modules/@modelcontextprotocol/inspector-cli/build/cli.js');
  const env = { ...process.env, PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}` };
  delete env.AGENCY_GATEWAY_URL;
  const { stdout } = await promisify(execFile)(process.execPath, [cli, '--cli', ...rest],
    { cwd: path.join(here, 'node_modules'), env, timeout: 60000 });
  const { tools } = JSON.parse(stdout);
  assert.ok(tools.some((t) => t.name === 'list_clients'));
}

test('inspector over stdio: the Inspector CLI lists the tools', async () => {
  await inspector('inspector/stdio');
});

test('inspector over HTTP: the Inspector CLI lists the tools with the key header', async () => {
  const server = await startHttp();
  try {
    await inspector('inspector/http', server.url);
  } finally {
    server.child.kill('SIGTERM');
  }
});

// The container image's snippets (issue 48): the image built from this tree, loaded with
// podman, run with the snippet's arguments. docker becomes podman with what these machines
// need (runc, cgroupfs, ulimits) and the host's network (the sample gateway is on its loopback).
// Needs root, podman and umoci (make test installs them): skipped, saying so, otherwise.
function imageRunnable() {
  if (process.getuid() !== 0) return 'the image needs root';
  for (const tool of ['podman', 'umoci']) {
    try { execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }); } catch { return `no ${tool}`; }
  }
  return '';
}
let imageLoaded = false;
function loadImage() {
  if (imageLoaded) return;
  const out = path.join(dir, 'image');
  execFileSync(path.join(here, '../../scripts/make-image.sh'), [path.dirname(bin), out], { stdio: 'ignore' });
  const version = execFileSync(bin, ['--version']).toString().trim().split(' ').pop();
  execFileSync('podman', ['--runtime', 'runc', '--cgroup-manager=cgroupfs', 'load', '-q', '-i',
    path.join(out, `agency-mcp-${version}-oci.tar`)], { stdio: 'ignore' });
  imageLoaded = true;
}
async function overDocker({ command, args, env }) {
  assert.equal(command, 'docker');
  assert.deepEqual(args.slice(0, 3), ['run', '-i', '--rm']);
  const version = execFileSync(bin, ['--version']).toString().trim().split(' ').pop();
  assert.equal(args[args.length - 1], `agency-mcp:${version}`, 'the snippet names this version\'s image');
  for (const name of Object.keys(env)) assert.ok(args.includes(name), `-e ${name} hands the container ${name}`);
  loadImage();
  await overStdio({ command: 'podman', env, args: ['--runtime', 'runc', '--cgroup-manager=cgroupfs', 'run',
    '--network', 'host', '--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096', ...args.slice(1)] });
}

test('claude-desktop with the image: docker run -i --rm starts the server', async (t) => {
  const why = imageRunnable();
  if (why) return t.skip(why);
  await overDocker(json('claude-desktop/docker').mcpServers.agency);
});

test('claude-code with the image: claude mcp add ... -- docker run -i --rm', async (t) => {
  const why = imageRunnable();
  if (why) return t.skip(why);
  const p = claudeMcpAdd('claude-code/docker');
  assert.equal(p.transport, 'stdio');
  await overDocker({ command: p.command[0], args: p.command.slice(1), env: p.env });
});

test('vscode with the image: servers.agency (type stdio) runs docker', async (t) => {
  const why = imageRunnable();
  if (why) return t.skip(why);
  const config = json('vscode/docker');
  const entry = config.servers.agency;
  assert.equal(entry.type, 'stdio');
  for (const ref of JSON.stringify(entry).matchAll(/\$\{input:([\w-]+)\}/g))
    assert.ok(config.inputs.some((i) => i.id === ref[1] && i.password), `input ${ref[1]} is declared secret`);
  await overDocker({ ...entry, env: Object.fromEntries(Object.entries(entry.env).map(([k, v]) => [k, fill(v)])) });
});

test('cursor with the image: mcpServers.agency runs docker', async (t) => {
  const why = imageRunnable();
  if (why) return t.skip(why);
  const entry = json('cursor/docker').mcpServers.agency;
  await overDocker({ ...entry, env: Object.fromEntries(Object.entries(entry.env).map(([k, v]) => [k, fill(v)])) });
});

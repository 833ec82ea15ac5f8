// Issue 48: the MCP bundle as a desktop host meets it. scripts/make-mcpb.sh builds it from the
// binary under test; @anthropic-ai/mcpb (pinned) validated and packed it, and unpacks it here;
// then its manifest's mcp_config is run the way a host runs it (${__dirname} and
// ${user_config.*} filled in; an optional setting left empty arrives as the literal
// placeholder), by the TypeScript SDK over stdio.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { bin } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const src = path.resolve(here, '../..');
const mcpbCli = path.join(here, 'node_modules/.bin/mcpb');
let dir;
let bundle;
let unpacked;
let manifest;

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agency-mcpb-'));
  execFileSync(path.join(src, 'scripts/make-mcpb.sh'), [path.dirname(bin), dir], { stdio: 'inherit' });
  bundle = fs.readdirSync(dir).find((f) => f.endsWith('.mcpb'));
  assert.ok(bundle, 'no .mcpb was made');
  unpacked = path.join(dir, 'unpacked');
  execFileSync(mcpbCli, ['unpack', path.join(dir, bundle), unpacked], { stdio: 'ignore' });
  manifest = JSON.parse(fs.readFileSync(path.join(unpacked, 'manifest.json'), 'utf8'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

// The command, arguments and environment a host derives from the manifest.
function launch(userConfig) {
  const fill = (text) => text
    .replaceAll('${__dirname}', unpacked)
    .replace(/\$\{user_config\.([a-z_]+)\}/g, (whole, key) => userConfig[key] ?? whole);
  const cfg = manifest.server.mcp_config;
  const env = Object.fromEntries(Object.entries(cfg.env).map(([k, v]) => [k, fill(v)]));
  return { command: fill(cfg.command), args: cfg.args.map(fill), env };
}

async function withBundle(userConfig, fn) {
  const { command, args, env } = launch(userConfig);
  const transport = new StdioClientTransport({ command, args: [...args, '--state-db', ':memory:'],
    env: { PATH: process.env.PATH, HOME: dir, ...env }, stderr: 'pipe' });
  const client = new Client({ name: 'claude-ai', version: '0' });
  await client.connect(transport);
  try { return await fn(client); } finally { await client.close(); }
}

test('the bundle validates, keeps the execute bit, and lists the server\'s own tools', async () => {
  execFileSync(mcpbCli, ['validate', path.join(unpacked, 'manifest.json')], { stdio: 'ignore' });
  assert.equal(manifest.server.type, 'binary');
  const entry = path.join(unpacked, manifest.server.entry_point);
  assert.ok(fs.statSync(entry).mode & 0o111, `${entry} lost its execute bit`);
  assert.ok(fs.statSync(path.join(unpacked, 'server/lib/agency-mcp')).mode & 0o111);
  assert.equal(manifest.user_config.api_key.sensitive, true);
  assert.equal(manifest.user_config.gateway_url.required, false);
  const listed = await withBundle({}, async (client) => (await client.listTools()).tools.map((t) => t.name));
  assert.deepEqual(manifest.tools.map((t) => t.name).sort(), listed.sort());
  const sha = fs.readFileSync(path.join(dir, `${bundle}.sha256`), 'utf8').split(/\s+/)[0];
  const actual = execFileSync('sha256sum', [path.join(dir, bundle)]).toString().split(/\s+/)[0];
  assert.equal(sha, actual);
});

test('settings left empty arrive as placeholders and mean the built-in sample data', async () => {
  assert.match(launch({}).env.AGENCY_GATEWAY_URL, /^\$\{user_config\.gateway_url\}$/);
  await withBundle({}, async (client) => {
    const answer = await client.callTool({ name: 'list_clients', arguments: {} });
    assert.notEqual(answer.isError, true, JSON.stringify(answer));
    assert.equal(answer._meta?.['agency-mcp/sample-data'], true, JSON.stringify(answer._meta));
    assert.ok(answer.structuredContent.rows.length > 0);
  });
});

test('a gateway URL in the settings is the gateway the bundle reads', async () => {
  const gateway = spawn(bin, ['sample-gateway', '--listen', '127.0.0.1:0', '--other-member-names'],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    const url = await new Promise((resolve, reject) => {
      let out = '';
      const look = (c) => { out += c; const m = out.match(/(http:\/\/127\.0\.0\.1:\d+\/\S*)/); if (m) resolve(m[1]); };
      gateway.stdout.on('data', look);
      gateway.stderr.on('data', look);
      setTimeout(() => reject(new Error('no sample gateway: ' + out)), 15000);
    });
    const expected = (await (await fetch(`${url}?resource=clients`)).json()).data.map((c) => c.id).sort();
    await withBundle({ gateway_url: url }, async (client) => {
      const answer = await client.callTool({ name: 'list_clients', arguments: {} });
      assert.notEqual(answer.isError, true, JSON.stringify(answer));
      assert.equal(answer._meta?.['agency-mcp/sample-data'], undefined, 'a configured gateway is no sample');
      assert.deepEqual(answer.structuredContent.rows.map((r) => r.id).sort(), expected);
    });
  } finally {
    gateway.kill('SIGKILL');
  }
});

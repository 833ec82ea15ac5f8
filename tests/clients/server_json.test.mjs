// server.json (the MCP Registry entry at the repository root) against the binary it
// describes. No npm package ships the registry's JSON Schema (see docs/design.md, "server.json"),
// so the checks below are the registry's documented rules for the fields this file uses,
// written out here, not the schema itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bin } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const server = JSON.parse(readFileSync(path.join(here, '../../server.json'), 'utf8'));

test('server.json version is the version agency-mcp --version prints', () => {
  const printed = execFileSync(bin, ['--version']).toString().trim();
  assert.equal(printed, `agency-mcp ${server.version}`);
  for (const p of server.packages) {
    assert.equal(p.version, server.version, `${p.identifier} has the same version`);
    if (p.registryType === 'oci') assert.ok(p.identifier.endsWith(`:${server.version}`), `${p.identifier} is this version's image`);
    else assert.ok(p.identifier.includes(`v${server.version}/`), `${p.identifier} is this version's release`);
  }
});

test('server.json follows the registry rules for the fields it uses', () => {
  assert.match(server.$schema, /^https:\/\/static\.modelcontextprotocol\.io\/schemas\/\d{4}-\d{2}-\d{2}\/server\.schema\.json$/);
  assert.match(server.name, /^io\.github\.[a-zA-Z0-9-]+\/[a-zA-Z0-9._-]+$/);
  assert.ok(server.description.length >= 1 && server.description.length <= 100, 'description: 1 to 100 characters');
  assert.match(server.version, /^\d+\.\d+\.\d+$/, 'an exact semantic version');
  assert.deepEqual(Object.keys(server.repository).sort(), ['source', 'url']);
  const allowed = new Set(['registryType', 'registryBaseUrl', 'identifier', 'version', 'fileSha256',
    'runtimeHint', 'transport', 'runtimeArguments', 'packageArguments', 'environmentVariables']);
  for (const p of server.packages) {
    for (const k of Object.keys(p)) assert.ok(allowed.has(k), `package member ${k} is in the schema`);
    assert.ok(['npm', 'pypi', 'oci', 'nuget', 'mcpb'].includes(p.registryType));
    assert.equal(p.transport.type, 'stdio');
    for (const a of p.packageArguments ?? []) assert.ok(a.type === 'positional' ? 'value' in a || 'valueHint' in a : 'name' in a);
    for (const v of p.environmentVariables) {
      assert.match(v.name, /^[A-Z][A-Z0-9_]*$/);
      assert.equal(typeof v.description, 'string');
      assert.ok(['string', 'number', 'boolean', 'filepath'].includes(v.format ?? 'string'));
    }
  }
});

test('server.json documents the gateway URL and its key (a secret)', () => {
  const vars = Object.fromEntries(server.packages[0].environmentVariables.map((v) => [v.name, v]));
  assert.ok(vars.AGENCY_GATEWAY_URL);
  assert.equal(vars.AGENCY_API_KEY?.isSecret, true);
  assert.deepEqual(server.packages[0].packageArguments.map((a) => a.value), ['serve']);
  // What the entry starts answers: `agency-mcp serve --help` names the same variables.
  const help = execFileSync(bin, ['serve', '--help']).toString();
  for (const name of Object.keys(vars)) assert.ok(help.includes(name), `serve --help names ${name}`);
});

// Issue 48: the release step (scripts/make-release.sh) makes the archive, the image and the
// bundle, and writes the server.json that goes with them: its packages are exactly the image
// and the bundle it made, the bundle with its SHA-256.
test('the release step\'s server.json lists exactly the packages it made, with their SHA-256', (t) => {
  if (process.getuid() !== 0) return t.skip('the image needs root (its home belongs to its user)');
  const out = mkdtempSync(path.join(os.tmpdir(), 'agency-release-'));
  try {
    execFileSync(path.join(here, '../../scripts/make-release.sh'), [path.dirname(bin), out], { stdio: 'ignore' });
    const released = JSON.parse(readFileSync(path.join(out, 'server.json'), 'utf8'));
    const files = readdirSync(out).filter((f) => !f.endsWith('.sha256') && f !== 'server.json');
    const sha = (f) => createHash('sha256').update(readFileSync(path.join(out, f))).digest('hex');
    const listed = released.packages.map((p) => p.registryType === 'mcpb'
      ? p.identifier.split('/').pop() : `agency-mcp-${released.version}-oci.tar`);
    assert.deepEqual(listed.sort(), files.filter((f) => f.endsWith('.mcpb') || f.endsWith('-oci.tar')).sort());
    for (const p of released.packages.filter((x) => x.registryType === 'mcpb')) {
      const file = p.identifier.split('/').pop();
      assert.equal(p.fileSha256, sha(file), `${file}'s fileSha256`);
      assert.equal(readFileSync(path.join(out, `${file}.sha256`), 'utf8').split(/\s+/)[0], sha(file));
    }
    // Everything else is the repository's server.json.
    const strip = (s) => ({ ...s, packages: s.packages.map(({ fileSha256, ...rest }) => rest) });
    assert.deepEqual(strip(released), strip(server));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

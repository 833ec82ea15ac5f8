// server.json (the MCP Registry entry at the repository root) against the binary it
// describes. No npm package ships the registry's JSON Schema (see docs/design.md, "server.json"),
// so the checks below are the registry's documented rules for the fields this file uses,
// written out here, not the schema itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
    assert.ok(p.identifier.includes(`v${server.version}/`), `${p.identifier} is this version's release`);
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

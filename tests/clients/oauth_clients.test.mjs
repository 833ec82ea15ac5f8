// Issue 35: an OAuth caller limited to some of the agency's clients by a claim of its access
// token. A real authorization server (oidc-provider, as in oauth.test.mjs) issues RFC 9068 JWTs
// whose `clients` (or `groups`) claim depends on the account signed in; agency-mcp runs with
// --oauth-clients-claim clients and --oauth-client-groups (a group mapped to demo-law). A token
// naming demo-law (or in the group mapped to it) lists demo-law alone and cannot act for another
// client; a token naming none is refused (403); a malformed
// claim is refused (401); the writes are read back with `write-log --caller`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import Provider from 'oidc-provider';
import { bin } from './helpers.mjs';
import {
  freePort, jwtResourceFeatures, listenForIssuer, startAgencyOn, walkToRedirect,
} from './oauth_flow.mjs';

const REDIRECT = 'http://127.0.0.1:1/callback';
const b64u = (data) => Buffer.from(data).toString('base64url');
// What each account's token says (the provider's extraTokenClaims).
const ACCOUNTS = {
  'law-writer': { clients: ['demo-law'] },
  'law-group': { groups: ['writers-law', 'offline-people'] },
  'nobody': {},
  'malformed': { clients: 42 },
};

const startAgency = startAgencyOn;

let issuer; let issuerServer; let mcpUrl; let agency; let dir; let stateDb;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agency-oauth-clients-'));
  stateDb = path.join(dir, 'state.db');
  const groupsFile = path.join(dir, 'groups.json');
  fs.writeFileSync(groupsFile, JSON.stringify({ 'writers-law': ['demo-law'], admins: '*' }));
  const mcpPort = await freePort();
  mcpUrl = `http://127.0.0.1:${mcpPort}/mcp`;
  ({ server: issuerServer, url: issuer } = await listenForIssuer());
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', alg: 'RS256', use: 'sig' };
  const provider = new Provider(issuer, {
    clients: [{
      client_id: 'agency-test', token_endpoint_auth_method: 'none', application_type: 'native',
      redirect_uris: [REDIRECT], grant_types: ['authorization_code'], response_types: ['code'],
    }],
    jwks: { keys: [signingKey] },
    scopes: ['openid', 'agency:read', 'agency:write'],
    pkce: { required: () => true },
    findAccount: async (ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    extraTokenClaims: async (ctx, token) => ACCOUNTS[token.accountId] ?? {},
    features: jwtResourceFeatures(() => mcpUrl),
  });
  issuerServer.on('request', provider.callback());
  agency = await startAgency(mcpPort, ['--state-db', stateDb, '--oauth-issuer', issuer,
    '--oauth-resource', mcpUrl, '--oauth-clients-claim', 'clients',
    '--oauth-client-groups', groupsFile]);
});

after(() => {
  agency?.child.kill();
  issuerServer?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

// The provider's login and consent pages walked for `account`; the code at the redirect URI.
async function authorize(url, account) {
  return new URL(await walkToRedirect(url, account, REDIRECT)).searchParams.get('code');
}

// An access token for `account` from the provider (authorization code + PKCE).
async function tokenFor(account) {
  const verifier = b64u(crypto.randomBytes(32));
  const challenge = b64u(crypto.createHash('sha256').update(verifier).digest());
  const url = new URL(`${issuer}/auth`);
  url.search = new URLSearchParams({
    client_id: 'agency-test', response_type: 'code', redirect_uri: REDIRECT,
    scope: 'agency:read agency:write', resource: mcpUrl,
    code_challenge: challenge, code_challenge_method: 'S256',
  });
  const code = await authorize(url, account);
  const res = await fetch(`${issuer}/token`, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT,
      client_id: 'agency-test', code_verifier: verifier, resource: mcpUrl }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  const claims = JSON.parse(Buffer.from(body.access_token.split('.')[1], 'base64url'));
  for (const [k, v] of Object.entries(ACCOUNTS[account])) assert.deepEqual(claims[k], v, 'the provider put the claim in');
  return body.access_token;
}

// A 2026-07-28 tools/call with `token`: the status, the challenge and the JSON body.
async function call(token, name, args = {}) {
  const res = await fetch(mcpUrl, { method: 'POST', headers: {
    'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}`,
    'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name,
  }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args,
    _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
             'io.modelcontextprotocol/clientCapabilities': {} } } }) });
  return { status: res.status, challenge: res.headers.get('www-authenticate'), body: await res.json() };
}

function writeLog(...args) {
  const out = execFileSync(bin, ['write-log', '--state-db', stateDb, ...args],
    { encoding: 'utf8', env: { ...process.env, AGENCY_STATE_URL: '', AGENCY_STATE_DB: '' } });
  return out.split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

test('a token naming demo-law is admitted, and its write is read back by caller', async () => {
  const token = await tokenFor('law-writer');
  const wrote = await call(token, 'generate_article', { client_id: 'demo-law', keyword: 'scoped by a claim' });
  assert.equal(wrote.status, 200, JSON.stringify(wrote));
  assert.equal(wrote.body.result.isError, false, JSON.stringify(wrote.body));
  const caller = `oauth:${issuer} law-writer`;
  const rows = writeLog('--caller', caller);
  assert.ok(rows.length >= 1, 'the write is in the log');
  assert.ok(rows.every((r) => r.principal === caller), JSON.stringify(rows));
  assert.ok(rows.some((r) => r.tool === 'generate_article' && r.client_id === 'demo-law'), JSON.stringify(rows));
  assert.deepEqual(writeLog('--caller', `oauth:${issuer} law-group`), [], 'only that caller\'s rows');
});

// The enforcement (tools/pipeline/client_scope.cpp, merged from i35-scopes) on an OAuth principal.
test('a token naming demo-law lists demo-law alone and cannot act for another client', async () => {
  for (const account of ['law-writer', 'law-group']) {
    const token = await tokenFor(account);
    const listed = await call(token, 'list_clients');
    assert.equal(listed.status, 200, JSON.stringify(listed));
    const ids = listed.body.result.structuredContent.rows.map((r) => r.id);
    assert.deepEqual(ids, ['demo-law'], account);
    assert.doesNotMatch(JSON.stringify(listed.body.result), /demo-dental/, account);
    const other = await call(token, 'generate_article', { client_id: 'demo-dental', keyword: 'not mine' });
    assert.equal(other.status, 200, JSON.stringify(other));
    assert.equal(other.body.result.isError, true, `${account}: ${JSON.stringify(other.body)}`);
  }
  assert.ok(!writeLog('--client', 'demo-dental').some((r) => r.outcome === 'ok'),
    'nothing was done for demo-dental');
});

test('a group mapped to demo-law admits its member', async () => {
  const listed = await call(await tokenFor('law-group'), 'list_clients');
  assert.equal(listed.status, 200, JSON.stringify(listed));
  assert.equal(listed.body.result.isError, false);
});

test('a token naming no client is refused at the door, a malformed claim too', async () => {
  const none = await call(await tokenFor('nobody'), 'list_clients');
  assert.equal(none.status, 403, JSON.stringify(none));
  assert.match(none.body.error.message, /none of the agency's clients/);
  assert.equal(none.body.result, undefined);
  const bad = await call(await tokenFor('malformed'), 'list_clients');
  assert.equal(bad.status, 401, JSON.stringify(bad));
  assert.match(bad.challenge, /error="invalid_token"/);
  assert.match(bad.body.error.message, /'clients' claim/);
  assert.match(agency.log(), /reaches no client/);
});

// Issue 20: agency-mcp as an OAuth 2.1 resource server, against a real authorization server
// (oidc-provider, pinned in package-lock.json) on loopback issuing RFC 9068 JWT access tokens for
// the agency-mcp URL (resource indicators), and the TypeScript SDK's client with its OAuth
// support: discovery, authorization code + PKCE (consent answered here through the provider's
// interaction pages), a token on every request, a refresh, and step-up to the write scope.
// Then the attacks, each refused before any tool runs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import Provider from 'oidc-provider';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import {
  freePort, jwtResourceFeatures, listenForIssuer, startAgencyOn, walkToRedirect,
} from './oauth_flow.mjs';

const REDIRECT = 'http://127.0.0.1:1/callback';  // never fetched: the code is read from it
const b64u = (data) => Buffer.from(data).toString('base64url');

// `agency-mcp serve --http` on a chosen port (the OAuth resource URL names it before start).
function startAgency(port, args) {
  return startAgencyOn(port, ['--state-db', ':memory:', ...args]);
}

let issuer; let provider; let issuerServer; let signingKey; let mcpUrl; let agency;
const refreshes = [];

before(async () => {
  const mcpPort = await freePort();
  mcpUrl = `http://127.0.0.1:${mcpPort}/mcp`;
  ({ server: issuerServer, url: issuer } = await listenForIssuer());
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', alg: 'RS256', use: 'sig' };
  provider = new Provider(issuer, {
    clients: [{
      client_id: 'agency-test', token_endpoint_auth_method: 'none', application_type: 'native',
      redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    }],
    jwks: { keys: [signingKey] },
    scopes: ['openid', 'offline_access', 'agency:read', 'agency:write'],
    pkce: { required: () => true },
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    findAccount: async (ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    features: jwtResourceFeatures(() => mcpUrl),
  });
  provider.on('grant.success', (ctx) => {
    if (ctx.oidc.params.grant_type === 'refresh_token') refreshes.push(Date.now());
  });
  issuerServer.on('request', provider.callback());
  agency = await startAgency(mcpPort, ['--oauth-issuer', issuer, '--oauth-resource', mcpUrl]);
});

after(() => {
  agency?.child.kill();
  issuerServer?.close();
});

// Walks an authorization URL through the provider's login and consent pages (as a person
// would), returning the code sent to the redirect URI.
async function authorize(url, account = 'alice') {
  const next = await walkToRedirect(url, account, REDIRECT);
  const answer = new URL(next);
  assert.equal(answer.searchParams.get('error'), null, next);
  return answer.searchParams.get('code');
}

// A token straight from the provider (code + PKCE by hand), for any resource.
async function issueToken(resource, scope = 'agency:read') {
  const verifier = b64u(crypto.randomBytes(32));
  const challenge = b64u(crypto.createHash('sha256').update(verifier).digest());
  const url = new URL(`${issuer}/auth`);
  url.search = new URLSearchParams({
    client_id: 'agency-test', response_type: 'code', redirect_uri: REDIRECT, scope, resource,
    code_challenge: challenge, code_challenge_method: 'S256',
  });
  const code = await authorize(url);
  const res = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code', code, redirect_uri: REDIRECT, client_id: 'agency-test',
      code_verifier: verifier, resource,
    }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.access_token;
}

// The SDK's OAuthClientProvider, answering consent through authorize().
class TestAuth {
  constructor() { this.client = { client_id: 'agency-test' }; this.hideRefresh = false; }
  get redirectUrl() { return REDIRECT; }
  get clientMetadata() {
    return { client_name: 'agency-mcp oauth test', redirect_uris: [REDIRECT],
             grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
             token_endpoint_auth_method: 'none' };
  }
  clientInformation() { return this.client; }
  saveClientInformation(info) { this.client = info; }
  // SDK 1.32.2 answers a step-up challenge by refreshing when it holds a refresh token, which
  // cannot widen a grant; the test hides it then, so that the SDK authorizes again.
  tokens() {
    if (!this.saved) return undefined;
    return this.hideRefresh ? { ...this.saved, refresh_token: undefined } : this.saved;
  }
  saveTokens(tokens) { this.saved = tokens; }
  async redirectToAuthorization(url) {
    this.requestedScope = url.searchParams.get('scope');
    this.requestedResource = url.searchParams.get('resource');
    this.code = await authorize(url);
  }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
}

// Every request the SDK sends, with its Authorization header.
function recordingFetch(log) {
  return async (url, init = {}) => {
    const headers = new Headers(init.headers);
    if (String(url).startsWith(mcpUrl)) log.push(headers.get('authorization'));
    return fetch(url, init);
  };
}

async function connect(authProvider, log) {
  const make = () => new StreamableHTTPClientTransport(new URL(mcpUrl),
    { authProvider, fetch: recordingFetch(log) });
  let transport = make();
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  try {
    await client.connect(transport);
    return { client, transport };
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  await transport.finishAuth(authProvider.code);
  transport = make();
  await client.connect(transport);
  return { client, transport };
}

test('metadata and the first challenge send a client to the issuer', async () => {
  for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
    const res = await fetch(new URL(path, mcpUrl));
    assert.equal(res.status, 200);
    const doc = await res.json();
    assert.equal(doc.resource, mcpUrl);
    assert.deepEqual(doc.authorization_servers, [issuer]);
    assert.deepEqual(doc.scopes_supported, ['agency:read', 'agency:write']);
  }
  const res = await fetch(mcpUrl, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
  assert.equal(res.status, 401);
  const challenge = res.headers.get('www-authenticate');
  assert.match(challenge, /^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp", scope="agency:read"$/);
});

test('the SDK signs in, refreshes and steps up to the write scope for an action', async () => {
  const auth = new TestAuth();
  const log = [];
  const { client } = await connect(auth, log);
  assert.equal(auth.requestedResource, mcpUrl);
  assert.equal(auth.requestedScope, 'agency:read');
  // Token on every request after sign-in.
  const tools = await client.listTools();
  assert.ok(tools.tools.some((t) => t.name === 'list_clients'));
  // A read-scoped caller still sees the write tools, so it can find them and step up.
  assert.ok(tools.tools.some((t) => t.name === 'generate_article'));
  const read = await client.callTool({ name: 'list_clients', arguments: {} });
  assert.ok(!read.isError, JSON.stringify(read));
  const signedIn = log.slice(log.findIndex((h) => h));
  assert.ok(signedIn.length >= 3 && signedIn.every((h) => /^Bearer ey/.test(h)), JSON.stringify(signedIn.map((h) => h?.slice(0, 12))));

  // The access token goes bad: the SDK refreshes and goes on.
  const before = auth.saved.access_token;
  auth.saved = { ...auth.saved, access_token: before.slice(0, -4) + 'AAAA' };
  const again = await client.callTool({ name: 'list_clients', arguments: {} });
  assert.ok(!again.isError);
  assert.equal(refreshes.length, 1);
  assert.notEqual(auth.saved.access_token, before);

  // An action needs agency:write: 403 insufficient_scope, the SDK authorizes again with it.
  auth.hideRefresh = true;
  const args = { name: 'generate_article', arguments: { client_id: 'demo-dental', keyword: 'oauth step-up' } };
  await assert.rejects(client.callTool(args), UnauthorizedError);
  assert.equal(auth.requestedScope, 'agency:read agency:write');
  const raw = await modernCall(auth.saved.access_token, args);
  assert.equal(raw.status, 403);
  assert.match(raw.headers.get('www-authenticate'),
    /^Bearer resource_metadata="[^"]+", error="insufficient_scope", scope="agency:read agency:write"$/);
  await client.transport.finishAuth(auth.code);
  auth.hideRefresh = false;
  const wrote = await client.callTool(args);
  assert.ok(!wrote.isError, JSON.stringify(wrote));
  await client.close();
});

// A modern (2026-07-28) tools/call with `token` as the bearer (or in the URL).
function modernCall(token, { name, arguments: args }, { inUrl = false } = {}) {
  const url = inUrl ? `${mcpUrl}?access_token=${encodeURIComponent(token)}` : mcpUrl;
  const headers = { 'content-type': 'application/json', accept: 'application/json',
    'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name };
  if (!inUrl) headers.authorization = `Bearer ${token}`;
  return fetch(url, { method: 'POST', headers, body: JSON.stringify({
    jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args,
      _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
               'io.modelcontextprotocol/clientCapabilities': {} } } }) });
}

// An action call with `token`; the status, challenge and body it got.
async function present(token, options) {
  const res = await modernCall(token,
    { name: 'generate_article', arguments: { client_id: 'demo-dental', keyword: 'attack' } }, options);
  const body = await res.json();
  return { status: res.status, challenge: res.headers.get('www-authenticate'), body };
}

function sign(header, claims, key = signingKey) {
  const input = `${b64u(JSON.stringify(header))}.${b64u(JSON.stringify(claims))}`;
  const pkey = crypto.createPrivateKey({ key, format: 'jwk' });
  return `${input}.${crypto.sign('sha256', Buffer.from(input), pkey).toString('base64url')}`;
}

test('attacks are refused before any tool runs', async () => {
  const good = await issueToken(mcpUrl, 'agency:read agency:write');
  const [, payload] = good.split('.');
  const claims = JSON.parse(Buffer.from(payload, 'base64url'));
  const now = Math.floor(Date.now() / 1000);
  const header = { alg: 'RS256', kid: 'test-key', typ: 'at+jwt' };
  const publicJwk = { kty: 'RSA', n: signingKey.n, e: signingKey.e };
  const publicPem = crypto.createPublicKey({ key: publicJwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
  const hs256 = (secret) => {
    const input = `${b64u(JSON.stringify({ alg: 'HS256', kid: 'test-key', typ: 'at+jwt' }))}.${payload}`;
    return `${input}.${crypto.createHmac('sha256', secret).update(input).digest('base64url')}`;
  };
  const stranger = { ...crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }) };
  const attacks = {
    'alg none': `${b64u(JSON.stringify({ alg: 'none', typ: 'at+jwt' }))}.${payload}.`,
    'HS256 keyed with the public PEM': hs256(publicPem),
    'HS256 keyed with the public JWK': hs256(JSON.stringify(publicJwk)),
    'wrong audience': sign(header, { ...claims, aud: 'http://127.0.0.1:1/mcp' }),
    'wrong issuer': sign(header, { ...claims, iss: 'http://127.0.0.1:1' }),
    'expired': sign(header, { ...claims, iat: now - 7200, exp: now - 3600 }),
    'unknown kid': sign({ ...header, kid: 'not-a-key' }, claims, stranger),
    'another resource': await issueToken('https://other.example.com/mcp', 'agency:read agency:write'),
  };
  for (const [name, token] of Object.entries(attacks)) {
    const got = await present(token);
    assert.equal(got.status, 401, `${name}: ${JSON.stringify(got)}`);
    assert.match(got.challenge, /error="invalid_token"/, name);
    assert.equal(got.body.result, undefined, name);
  }
  // The good token itself works (so the refusals above are the attacks', not the setup's).
  const ok = await present(good);
  assert.equal(ok.status, 200, JSON.stringify(ok));
  assert.equal(ok.body.result.isError, false, JSON.stringify(ok));
  // A token in the URL is refused, even a good one.
  const inUrl = await present(good, { inUrl: true });
  assert.equal(inUrl.status, 400);
  assert.match(inUrl.challenge, /error="invalid_request"/);
  assert.match(inUrl.body.error.message, /not accepted in the URL/);
  // No token, good or forged, reached the server's log.
  for (const token of [good, ...Object.values(attacks)]) {
    const secretPart = token.split('.')[2] || token.split('.')[1];
    assert.ok(!agency.log().includes(secretPart), 'a token was logged');
  }
  assert.match(agency.log(), /OAuth: token refused/);
});

test('unreachable issuer keys fail closed with 503', async () => {
  const deadPort = await freePort();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/mcp`;
  const dead = await startAgency(port, ['--oauth-issuer', `http://127.0.0.1:${deadPort}`,
    '--oauth-resource', url]);
  try {
    const token = sign({ alg: 'RS256', kid: 'test-key', typ: 'at+jwt' },
      { iss: `http://127.0.0.1:${deadPort}`, aud: url, sub: 'alice', exp: Math.floor(Date.now() / 1000) + 300, scope: 'agency:read' });
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    assert.equal(res.status, 503);
    assert.ok(res.headers.get('retry-after'));
    assert.match((await res.json()).error.message, /keys cannot be fetched/);
  } finally {
    dead.child.kill();
  }
});

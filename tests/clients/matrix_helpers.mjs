// The client matrix's shared parts (client_matrix.test.mjs): one sample gateway that differs
// from the built-in defaults, the server's environment, the gateway's POST counters, the ground
// truth of a list_keywords page, and the checks of what a framework hands its model.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { bin, startGateway as startSampleGateway } from './helpers.mjs';

// `sample-gateway` with its variations: rows only as the spec describes them (no deployed_at or
// sent_at: the deploy answer carries the gateway's own names, e.g. post_title), audit reports
// with counts and no issue list. Resolves with {url, child}.
export function startGateway(extra = ['--bare-records', '--counts-only-reports']) {
  return startSampleGateway(extra);
}

// The gateway's counters: {posts, posts_by_action: {deploy_blog: n, ...}, ...}.
export async function gatewayStats(gateway) {
  const r = await fetch(new URL('/_control/stats', gateway.url));
  assert.equal(r.status, 200);
  return r.json();
}

// What the server is started with: the default answer shapes (no --structured-text).
export function serverEnv(gateway) {
  const env = { ...process.env, AGENCY_GATEWAY_URL: gateway.url, AGENCY_API_KEY: 'matrix-gateway-key',
    AGENCY_STATE_DB: ':memory:' };
  delete env.AGENCY_STRUCTURED_TEXT;
  return env;
}

// A plain SDK v1 client on the same gateway: the ground truth (structuredContent) and the
// articles that can be deployed.
export async function sdkClient(gateway) {
  const client = new Client({ name: 'matrix-truth', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StdioClientTransport({ command: bin, args: ['serve'], env: serverEnv(gateway), stderr: 'ignore' }));
  return client;
}

export const KEYWORDS_CLIENT = 'demo-plumbing';
export const keywordArgs = { client_id: KEYWORDS_CLIENT, limit: 5 };

// Cursors are opaque: base64url JSON, a dot, a signature.
const CURSOR = /eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}/;

// The model-facing text of one list_keywords {client_id, limit: 5} call holds every row's id and
// keyword and the next cursor (the same call's next_cursor where the framework shows it to the
// test too). Substrings only: no text format is assumed.
export function assertModelSeesPage(text, truthRows, structured) {
  assert.equal(typeof text, 'string');
  assert.equal(truthRows.length, 5);
  const missing = [];
  for (const row of truthRows) {
    if (!text.includes(row.id)) missing.push(`id ${row.id}`);
    if (!text.includes(row.keyword)) missing.push(`keyword "${row.keyword}"`);
  }
  const cursor = structured?.next_cursor;
  if (cursor) {
    if (!text.includes(cursor)) missing.push('the next_cursor value');
  } else if (!CURSOR.test(text)) missing.push('a next_cursor value');
  assert.deepEqual(missing, [], `the model is not handed everything; it is handed: ${text.slice(0, 600)}`);
  if (structured) assert.deepEqual(structured.rows.map((r) => r.id), truthRows.map((r) => r.id));
}

// A draft blog article (from list_articles) not handed out before; when the sample's drafts are
// used up, a new one (generate_article). Only blogs: the gateway deploys with deploy_blog, and
// deploy_article answers not_found for a geo article's id.
const handedOut = new Set();
export async function draftArticle(truth) {
  for (const client_id of ['demo-law', 'demo-dental', 'demo-plumbing']) {
    const r = await truth.callTool({ name: 'list_articles', arguments: { client_id, limit: 100 } });
    assert.ok(!r.isError, JSON.stringify(r).slice(0, 400));
    const row = r.structuredContent.rows.find((a) => a.resource === 'blogs' && a.status === 'draft' && !handedOut.has(a.id));
    if (row) {
      handedOut.add(row.id);
      return { client_id, article_id: row.id };
    }
  }
  const draft = await truth.callTool({ name: 'generate_article',
    arguments: { client_id: 'demo-law', keyword: `client matrix ${handedOut.size} ${process.pid}` } });
  assert.equal(draft.structuredContent?.status, 'drafted', JSON.stringify(draft).slice(0, 400));
  handedOut.add(draft.structuredContent.article_id);
  return { client_id: 'demo-law', article_id: draft.structuredContent.article_id };
}

export const CONFIRMATION_ID = /cf_[A-Za-z0-9_-]+/;

// Runs `flow` and checks the gateway saw exactly one POST, a deploy.
export async function exactlyOneDeploy(gateway, flow) {
  const before = await gatewayStats(gateway);
  const out = await flow();
  const after = await gatewayStats(gateway);
  assert.equal(after.posts - before.posts, 1, 'exactly one gateway POST');
  const deploys = Object.entries(after.posts_by_action).filter(([a]) => a.startsWith('deploy_'))
    .reduce((n, [a, c]) => n + c - (before.posts_by_action[a] ?? 0), 0);
  assert.equal(deploys, 1, 'and it is the deploy');
  return out;
}

// The text parts of MCP content blocks.
export function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) content = [content];
  return content.filter((b) => b && b.type === 'text').map((b) => b.text).join('\n');
}

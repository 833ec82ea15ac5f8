// Issue 17's read answers through the TypeScript SDK (which checks every structuredContent
// against the tool's outputSchema): the aggregate ranking read, size budgets, fields, the notes
// of empty answers, report_id, and a gateway that gives audit counts without the issues.
// Run by ctest: node --test read_answers.test.mjs with AGENCY_MCP_BIN set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { bin, startGateway } from './helpers.mjs';

async function connect(env = {}) {
  const transport = new StdioClientTransport({
    command: bin, args: ['serve', '--state-db', ':memory:'], env: { ...process.env, ...env }, stderr: 'pipe',
  });
  const client = new Client({ name: 'sdk-read-answers', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  await client.listTools();  // the SDK learns the output schemas it validates against
  return client;
}

async function call(client, name, args) {
  const reply = await client.callTool({ name, arguments: args });
  assert.ok(!reply.isError, JSON.stringify(reply).slice(0, 600));
  return reply.structuredContent;
}


test('ranking_changes answers "which keywords dropped most last month" in one call', async () => {
  const client = await connect();
  try {
    const s = await call(client, 'ranking_changes', {
      client_id: 'demo-plumbing', from: '2026-10-14', to: '2026-11-14', direction: 'dropped', limit: 5,
    });
    assert.equal(s.from_date, '2026-10-14');
    assert.equal(s.to_date, '2026-11-14');
    assert.ok(s.keywords_compared > 0);
    assert.equal(s.total, s.dropped);
    assert.ok(s.rows.length > 0 && s.rows.length <= 5);
    let previous = Infinity;  // biggest drop first
    for (const row of s.rows) {
      assert.ok(row.change < 0, JSON.stringify(row));
      assert.equal(row.change, row.from_position - row.to_position);
      assert.ok(-row.change <= previous, JSON.stringify(s.rows));
      previous = -row.change;
      assert.equal(typeof row.url, 'string');
    }
    // Weekly tracking: the dates used are the tracking dates on or before from and to.
    const weekly = await call(client, 'ranking_changes', { client_id: 'demo-law', from: '2026-10-15', to: '2026-11-10' });
    assert.ok(weekly.from_date <= '2026-10-15' && weekly.to_date <= '2026-11-10', JSON.stringify(weekly).slice(0, 300));
    assert.notEqual(weekly.to_date, '2026-11-10');
  } finally {
    await client.close();
  }
});

test('pages stay inside their size budget, say when they are cut, and take fields', async () => {
  const client = await connect();
  try {
    const first = await call(client, 'list_keywords', { client_id: 'demo-plumbing' });
    assert.ok(JSON.stringify(first).length <= 24500, String(JSON.stringify(first).length));
    assert.equal(first.truncated, true);
    assert.ok(first.next_cursor);
    const small = await call(client, 'list_keywords', { client_id: 'demo-plumbing', limit: 100, fields: ['keyword', 'position'] });
    assert.equal(small.rows.length, 100);
    assert.equal(small.truncated, false);
    for (const row of small.rows) assert.deepEqual(Object.keys(row).sort(), ['keyword', 'position']);
    const latest = await call(client, 'latest_rankings', { client_id: 'demo-plumbing', fields: ['keyword', 'position'] });
    assert.equal(latest.total, 25);
  } finally {
    await client.close();
  }
});

test('empty answers say why, and audit issues are read by report_id', async () => {
  const client = await connect();
  try {
    const none = await call(client, 'list_rankings', { client_id: 'demo-plumbing', from: '2025-06-01', to: '2025-06-30' });
    assert.equal(none.rows.length, 0);
    assert.match(none.note, /covers \d{4}-\d{2}-\d{2} to 2026-11-14/);
    const audits = await call(client, 'list_audits', { client_id: 'demo-dental', limit: 1 });
    const report = audits.rows[0];
    assert.equal(typeof report.critical_issues, 'number');  // a member beyond the spec, passed through
    const issues = await call(client, 'get_audit_issues', { client_id: 'demo-dental', report_id: report.id });
    assert.equal(issues.total, report.issues_found);
  } finally {
    await client.close();
  }
});

test('a gateway that returns audit counts without issue detail is reported as such', async () => {
  const { url, child } = await startGateway(['--counts-only-reports']);
  const client = await connect({ AGENCY_GATEWAY_URL: url, AGENCY_API_KEY: '' });
  try {
    const audits = await call(client, 'list_audits', { client_id: 'demo-dental', limit: 1 });
    const report = audits.rows[0];
    assert.ok(report.issues_found > 0);
    const issues = await call(client, 'get_audit_issues', { client_id: 'demo-dental', report_id: report.id });
    assert.equal(issues.rows.length, 0);
    assert.equal(issues.audit.detail_available, false);
    assert.match(issues.note, /counts/);
  } finally {
    await client.close();
    child.kill('SIGTERM');
  }
});

// MCP Tasks (2025-11-25) driven by the TypeScript SDK's own task client against the product
// binary: run_seo_audit as a task over stdio and Streamable HTTP, polled to its end.
// Run by ctest with AGENCY_MCP_BIN set to build/agency-mcp.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import os from 'node:os';
import { mkdtempSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { bin, startHttpServer } from './helpers.mjs';

async function auditAsTask(client, url) {
  const { tools } = await client.listTools();
  const audit = tools.find((t) => t.name === 'run_seo_audit');
  assert.equal(audit.execution?.taskSupport, 'optional');
  assert.ok(client.getServerCapabilities().tasks?.requests?.tools?.call, 'tasks capability');

  const seen = [];
  let result;
  let taskId;
  const stream = client.experimental.tasks.callToolStream(
    { name: 'run_seo_audit', arguments: { client_id: 'demo-dental', url } },
    undefined,
    { task: { ttl: 60000 } },
  );
  for await (const message of stream) {
    seen.push(message.type);
    if (message.type === 'taskCreated') taskId = message.task.taskId;
    if (message.type === 'result') result = message.result;
    if (message.type === 'error') assert.fail(`task error: ${message.error}`);
  }
  assert.ok(taskId, 'a task was created');
  assert.equal(seen[0], 'taskCreated');
  assert.equal(seen.at(-1), 'result');
  assert.equal(result.isError, false);
  assert.equal(result.structuredContent.status, 'succeeded');
  assert.equal(typeof result.structuredContent.score, 'number');
  assert.equal(result._meta?.['io.modelcontextprotocol/related-task']?.taskId, taskId);

  const task = await client.experimental.tasks.getTask(taskId);
  assert.equal(task.status, 'completed');
  const { tasks } = await client.experimental.tasks.listTasks();
  assert.ok(tasks.some((t) => t.taskId === taskId), 'tasks/list shows the task');
  await assert.rejects(client.experimental.tasks.getTask('not-a-task'), /-32602|unknown task/i);
}

test('TypeScript SDK runs run_seo_audit as a task over stdio', async () => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'agency-tasks-'));
  const transport = new StdioClientTransport({
    command: bin, args: ['serve', '--state-db', path.join(stateDir, 'state.db')], stderr: 'pipe',
  });
  const client = new Client({ name: 'sdk-tasks-stdio', version: '1.0.0' }, { capabilities: {} });
  await client.connect(transport);
  try {
    await auditAsTask(client, 'https://www.brightsmile.example/sdk-task-stdio');
  } finally {
    await client.close();
  }
});

test('TypeScript SDK runs run_seo_audit as a task over Streamable HTTP', async () => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'agency-tasks-'));
  const { url, child } = await startHttpServer(['--state-db', path.join(stateDir, 'state.db')]);
  const client = new Client({ name: 'sdk-tasks-http', version: '1.0.0' }, { capabilities: {} });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    await auditAsTask(client, 'https://www.brightsmile.example/sdk-task-http');
    await client.close();
  } finally {
    child.kill();
  }
});

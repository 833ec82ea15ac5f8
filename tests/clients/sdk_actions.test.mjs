// Issue 17 through a real MCP client (the TypeScript SDK over stdio, against the product binary
// and its built-in sample gateway): what a person is shown before a send or a deploy, an
// outreach e-mail sent to the recipient the caller gave, and the elicitation-only mode.
// Run by ctest: node --test sdk_actions.test.mjs with AGENCY_MCP_BIN set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import os from 'node:os';
import { mkdtempSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { bin } from './helpers.mjs';

async function connect({ elicit, extraArgs = [] }) {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'agency-actions-'));
  const capabilities = elicit ? { elicitation: {} } : {};
  const client = new Client({ name: 'sdk-actions-test', version: '1.0.0' }, { capabilities });
  const questions = [];
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      questions.push(request.params);
      return elicit;
    });
  }
  await client.connect(new StdioClientTransport({
    command: bin,
    args: ['serve', '--state-db', path.join(stateDir, 'state.db'), ...extraArgs],
    stderr: 'pipe',
  }));
  return { client, questions };
}

const accept = { action: 'accept', content: { confirm: true } };

test('send_prospect_email shows recipient, subject and text, and sends to the given recipient', async () => {
  const { client, questions } = await connect({ elicit: accept });
  try {
    const drafted = await client.callTool({
      name: 'generate_outreach_email',
      arguments: { client_id: 'demo-law', prospect: 'https://legal-resources.example/guides',
                   recipient: 'sam.editor@legal-resources.example' },
    });
    assert.ok(!drafted.isError, JSON.stringify(drafted));
    assert.equal(drafted.structuredContent.recipient, 'sam.editor@legal-resources.example');

    const sent = await client.callTool({
      name: 'send_prospect_email',
      arguments: { client_id: 'demo-law', email_id: drafted.structuredContent.email_id },
    });
    assert.ok(!sent.isError, JSON.stringify(sent));
    assert.equal(sent.structuredContent.status, 'sent');
    assert.equal(sent.structuredContent.recipient, 'sam.editor@legal-resources.example');
    assert.equal(questions.length, 1);
    const shown = questions[0].message;
    assert.ok(shown.includes('sam.editor@legal-resources.example'), shown);
    assert.ok(shown.includes(drafted.structuredContent.title), shown);
    assert.ok(shown.includes("I'm reaching out from"), shown);
    assert.ok(!shown.includes('<p>'), shown);

    const bad = await client.callTool({
      name: 'send_prospect_email',
      arguments: { client_id: 'demo-law', email_id: drafted.structuredContent.email_id, recipient: 'nobody' },
    });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /recipient/);
  } finally {
    await client.close();
  }
});

test('deploy_article shows the title, an excerpt and where it is published', async () => {
  const { client, questions } = await connect({ elicit: accept });
  try {
    const keyword = `dental sealants ${process.pid}`;
    const draft = await client.callTool({ name: 'generate_article', arguments: { client_id: 'demo-dental', keyword } });
    assert.ok(!draft.isError, JSON.stringify(draft));
    assert.equal(draft.structuredContent.status, 'drafted');
    const deployed = await client.callTool({
      name: 'deploy_article',
      arguments: { client_id: 'demo-dental', article_id: draft.structuredContent.article_id },
    });
    assert.ok(!deployed.isError, JSON.stringify(deployed));
    assert.equal(deployed.structuredContent.status, 'published');
    const shown = questions[0].message;
    assert.ok(shown.includes(draft.structuredContent.title), shown);
    assert.match(shown, /Excerpt: .*Homeowners in/s);
    assert.match(shown, /on https?:\/\/\S+/);
  } finally {
    await client.close();
  }
});

test('--confirm elicitation-only refuses a client that cannot ask a person', async () => {
  const { client } = await connect({ elicit: null, extraArgs: ['--confirm', 'elicitation-only'] });
  try {
    const draft = await client.callTool({ name: 'generate_article', arguments: { client_id: 'demo-dental', keyword: 'night guards' } });
    assert.ok(!draft.isError, JSON.stringify(draft));
    const args = { client_id: 'demo-dental', article_id: draft.structuredContent.article_id };
    const refused = await client.callTool({ name: 'deploy_article', arguments: args });
    assert.equal(refused.isError, true);
    const error = JSON.parse(refused.content[0].text).error;
    assert.equal(error.reason, 'confirmation_required');
    assert.match(error.message, /elicitation/);
    const relayed = await client.callTool({ name: 'deploy_article', arguments: { ...args, confirmation_id: 'cf_from_the_model' } });
    assert.equal(JSON.parse(relayed.content[0].text).error.reason, 'confirmation_required');
  } finally {
    await client.close();
  }
});

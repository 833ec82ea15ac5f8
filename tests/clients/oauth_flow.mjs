// Shared by the OAuth suites: a free loopback port, `agency-mcp serve --http` on it, and an
// authorization URL walked through oidc-provider's login and consent pages as a person would.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { bin } from './helpers.mjs';

// A port the kernel picked on 127.0.0.1, released for the caller to listen on.
export function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// An HTTP server for a test's issuer on an ephemeral loopback port (the test routes its
// requests), and the issuer URL it answers at.
export async function listenForIssuer() {
  const server = http.createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${server.address().port}` };
}

// `agency-mcp serve --http` on a chosen port (the OAuth resource URL names it before start), with
// `args` after the listen address; resolves with {child, log} once it serves.
export function startAgencyOn(port, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['serve', '--http', '--listen', `127.0.0.1:${port}`, ...args],
      { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    const timer = setTimeout(() => reject(new Error('server did not start: ' + stderr)), 15000);
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      if (/MCP over Streamable HTTP at /.test(stderr)) { clearTimeout(timer); resolve({ child, log: () => stderr }); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited ${code}: ${stderr}`)); });
  });
}

// oidc-provider's `features` for a test issuer: its dev login and consent pages, and resource
// indicators whose default is `resource()` (read when asked: the test sets the URL later), each
// granted agency:read and agency:write as an RS256 JWT for 300 s.
export function jwtResourceFeatures(resource) {
  return {
    devInteractions: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => resource(),
      useGrantedResource: async () => true,
      getResourceServerInfo: async (ctx, indicator) => ({
        scope: 'agency:read agency:write',
        audience: indicator,
        accessTokenFormat: 'jwt',
        accessTokenTTL: 300,
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  };
}

// Follows `url` (logging in and consenting as `account`) until a redirect to `redirect`;
// returns that redirect's URL, which carries the code (or an error).
export async function walkToRedirect(url, account, redirect) {
  const jar = new Map();
  const cookies = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const keep = (res) => {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const at = pair.indexOf('=');
      jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
  };
  let next = String(url);
  for (let step = 0; step < 12; step++) {
    if (next.startsWith(redirect)) return next;
    let res = await fetch(next, { redirect: 'manual', headers: { cookie: cookies() } });
    keep(res);
    if (res.status === 200 && new URL(next).pathname.startsWith('/interaction/')) {
      const page = await res.text();
      const prompt = page.includes('name="login"') ? 'login' : 'consent';
      res = await fetch(next, {
        method: 'POST', redirect: 'manual',
        headers: { cookie: cookies(), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ prompt, login: account, password: 'x' }),
      });
      keep(res);
    }
    assert.ok(res.status >= 300 && res.status < 400, `step ${step}: ${res.status} at ${next}`);
    next = new URL(res.headers.get('location'), next).href;
  }
  throw new Error('the authorization did not reach the redirect URI');
}

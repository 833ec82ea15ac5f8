// Shared by the real-client suites: starting the product binary.
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';

export const bin = process.env.AGENCY_MCP_BIN;
assert.ok(bin, 'AGENCY_MCP_BIN must name the agency-mcp binary');

// Starts `agency-mcp serve --http` on an ephemeral port; resolves with {url, child}.
export function startHttpServer(extraArgs = [], env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['serve', '--http', '--listen', '127.0.0.1:0', ...extraArgs], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    const timer = setTimeout(() => reject(new Error('server did not start: ' + stderr)), 15000);
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const m = stderr.match(/MCP over Streamable HTTP at (http:\/\/\S+)/);
      if (m) { clearTimeout(timer); resolve({ url: m[1], child }); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited ${code}: ${stderr}`)); });
  });
}

// A sample gateway of its own (`agency-mcp sample-gateway`) with the given variation options
// (`--bare-records`, `--counts-only-reports`, ...): resolves with {url, child}.
export function startGateway(extra = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['sample-gateway', '--listen', '127.0.0.1:0', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/(http:\/\/127\.0\.0\.1:\d+\/\S*)/);
      if (m) resolve({ url: m[1], child });
    });
    child.on('exit', (code) => reject(new Error(`sample gateway exited ${code}: ${out}`)));
  });
}

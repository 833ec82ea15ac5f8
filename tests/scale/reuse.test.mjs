// HAProxy (deploy/haproxy.cfg) keeps its connections to the instances alive and reuses them
// (issue 33), and it, not the instance, ends an idle one: an instance that closed a kept
// connection just as HAProxy sent a request on it would fail that request with a 502 that no
// client retries. Three instances on SQLite files (reads only: nothing is shared) with the HTTP
// settings of deploy/agency-mcp@.service, one sample gateway.
// Run by ctest (clients.scale_reuse) with AGENCY_MCP_BIN set.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Cluster, callTool, establishedAt, sleep, unitHttpEnvironment } from './cluster.mjs';

let cluster;
let lb;

before(async () => {
  cluster = new Cluster({ instances: 3, state: 'sqlite', serveArgs: ['--rate-limit', 'off'] });
  try {
    await cluster.start();
  } catch (e) {
    await cluster.stop();
    throw e;
  }
  lb = cluster.haproxy.url;
});

after(async () => { if (cluster) await cluster.stop(); });

const instancePorts = () => cluster.instances.map((i) => i.port);

// The instances' side of their connections from HAProxy: peer ports, established.
function heldConnections() {
  return new Set(instancePorts().flatMap((p) => establishedAt(p).map((c) => `${p}:${c.peerPort}`)));
}

// `count` calls through HAProxy, `lanes` at a time, each on a client connection of its own.
async function calls(count, lanes) {
  let next = 0;
  await Promise.all(Array.from({ length: lanes }, async () => {
    while (next < count) {
      const k = next++;
      const r = await callTool(lb, 'get_client', { client_id: k % 2 ? 'demo-dental' : 'demo-law' });
      assert.equal(r.result.isError, false, JSON.stringify(r.result));
    }
  }));
}

function sum(stats, key) {
  return Object.values(stats).reduce((n, s) => n + s[key], 0);
}

test('many calls through HAProxy travel over a few kept-alive connections to the instances', async (t) => {
  await calls(8, 4);  // the pool fills
  const before = await cluster.haproxyServerStats();
  const N = 240;
  await calls(N, 4);
  const after = await cluster.haproxyServerStats();
  const opened = sum(after, 'connect') - sum(before, 'connect');
  const reused = sum(after, 'reuse') - sum(before, 'reuse');
  assert.ok(opened <= N / 10 && reused >= N - opened,
            `HAProxy opened ${opened} connection(s) to the instances and reused one ${reused} ` +
            `time(s) for ${N} calls: each call should ride a kept-alive connection\n${cluster.logs()}`);
  t.diagnostic(`${N} calls: ${opened} connection(s) opened to the instances, ${reused} reuse(s)`);
  // The instances' side: the connections outlive the calls, and there are few of them.
  const held = heldConnections();
  assert.ok(held.size >= 1 && held.size <= N / 8,
            `the instances hold ${held.size} connection(s) after ${N} calls`);
});

// The race cannot happen if HAProxy always closes an idle connection before the instance
// would: measure how long HAProxy keeps idle ones after a burst, against the instances' idle
// timeout from deploy/agency-mcp@.service (or the binary's default when the unit sets none).
test('HAProxy ends its idle connections to an instance long before the instance would', async (t) => {
  const help = spawnSync(cluster.bin, ['serve', '--help-all'], { encoding: 'utf8' }).stdout;
  const defaultIdle = Number(help.match(/--http-idle-timeout[\s\S]*?\(default (\d+)\)/)?.[1]);
  assert.ok(defaultIdle > 0, 'serve --help-all names the default of --http-idle-timeout');
  const idleS = Number(unitHttpEnvironment().AGENCY_HTTP_IDLE_TIMEOUT_S ?? defaultIdle);

  await calls(24, 24);  // 24 at once: HAProxy opens connections it will not need afterwards
  const start = Date.now();
  const pooled = heldConnections();
  assert.ok(pooled.size >= 1, `after a burst of 24 calls the instances hold ${pooled.size} connection(s)`);
  let left = pooled;
  while (left.size && Date.now() - start < 120000) {
    await sleep(200);
    const now = heldConnections();
    left = new Set([...left].filter((c) => now.has(c)));
  }
  const lastMs = Date.now() - start;
  assert.equal(left.size, 0, `${left.size} of ${pooled.size} idle connection(s) to the instances ` +
               `still open after ${lastMs} ms`);
  // HAProxy's estimate of the connections each instance still needs (`need_est`): 0 once
  // nothing uses them. A server's own health checks would hold it at 1 (and its last idle
  // connection open): they run on the servers of agency_checks instead.
  const needs = (await cluster.haproxyCommand('show servers conn agency')).trim().split('\n')
    .filter((l) => /^agency\/agency\d/.test(l)).map((l) => Number(l.split(/\s+/)[8]));
  assert.deepEqual(needs, needs.map(() => 0),
                   `HAProxy still counts on idle connections to the instances (need_est ${needs}): ` +
                   'it would keep one open past any idle timeout');
  t.diagnostic(`${pooled.size} idle connection(s) after the burst, the last closed by HAProxy ` +
               `after ${(lastMs / 1000).toFixed(1)} s; the instances' idle timeout: ${idleS} s`);
  // HAProxy's idle life must stay far below the instance's idle timeout, or an instance would
  // close a connection HAProxy is about to send a request on.
  assert.ok(lastMs <= idleS * 1000 / 10,
            `the last idle connection ended after ${(lastMs / 1000).toFixed(1)} s, and the ` +
            `instances close an idle connection after ${idleS} s: HAProxy must end its own ` +
            'well before (within a tenth of it), so that no request is sent on a connection ' +
            'the instance is closing');
});

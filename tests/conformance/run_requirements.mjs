// Runs one frozen requirement set of the pinned conformance suite, each server scenario once,
// against the server it needs: the product, or the fixture server for the scenarios listed in
// fixture-scenarios.txt. Usage (run_requirements.sh starts the servers):
//   node run_requirements.mjs REVISION PRODUCT_URL FIXTURE_URL RESULTS_DIR
// Results: RESULTS_DIR/{product,fixture}/server-SCENARIO-TIME/checks.json, the suite's own
// output (-o), which requirements_table.mjs turns into docs/conformance.md.
//
// Each scenario runs as the suite's CLI runs it under --requirements: `server --scenario S
// --spec-version REVISION --force` is the same call of its scenario runner (the revision's wire,
// applicability forced). The CLI is one process per invocation and ends with process.exit; one
// node start per scenario costs about a second, so the CLI module is evaluated once per
// scenario in this process instead (a fresh module instance, the suite's state included), with
// process.exit taken as that invocation's verdict.
//
// A scenario passes when the CLI's verdict is 0 and none of its checks is a FAILURE or a
// WARNING (stricter than the suite, which lets warnings pass): the baseline is empty.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fixtureScenarios, requirementSet, serverFor, suiteCli } from './requirements.mjs';

const [revision, productUrl, fixtureUrl, resultsDir] = process.argv.slice(2);
if (!resultsDir) {
  console.error('usage: run_requirements.mjs REVISION PRODUCT_URL FIXTURE_URL RESULTS_DIR');
  process.exit(2);
}
const set = requirementSet(revision);
const needs = fixtureScenarios();
const urls = { product: productUrl, fixture: fixtureUrl };
const exit = process.exit;
const argv = process.argv;
let runs = 0;

async function runCli(args) {
  const verdict = await new Promise((resolve) => {
    process.exit = (code) => resolve(code ?? 0);
    process.argv = [argv[0], suiteCli, ...args];
    import(`${pathToFileURL(suiteCli).href}?run=${runs++}`).catch((e) => {
      console.error(e);
      resolve(1);
    });
  });
  process.exit = exit;
  process.argv = argv;
  return verdict;
}

function checksOf(dir, scenario) {
  const prefix = `server-${scenario.replaceAll('/', '-')}-`;
  const runsOf = readdirSync(dir).filter((d) => d.startsWith(prefix) && /^\d{4}-/.test(d.slice(prefix.length)));
  if (runsOf.length !== 1) throw new Error(`expected one result of ${scenario} in ${dir}, found ${runsOf.length}`);
  return JSON.parse(readFileSync(join(dir, runsOf[0], 'checks.json'), 'utf8'));
}

const started = Date.now();
const rows = [];
for (const { scenario, required, reason } of set) {
  const server = serverFor(scenario, needs);
  const out = join(resultsDir, server);
  const t0 = Date.now();
  const verdict = await runCli(['server', '--url', urls[server], '--scenario', scenario,
    '--spec-version', revision, '--force', '-o', out]);
  const checks = checksOf(out, scenario);
  const count = (s) => checks.filter((c) => c.status === s).length;
  const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  const ok = verdict === 0 && bad.length === 0 && checks.length > 0;
  rows.push({ scenario, ok, line: `${ok ? '✓' : '✗'} ${scenario} [${required ? 'required' : `not scored: ${reason}`}] on ${server}: ` +
    `${count('SUCCESS')} passed, ${count('FAILURE')} failed, ${count('WARNING')} warnings, ` +
    `${count('SKIPPED') + count('INFO')} skipped/info (${((Date.now() - t0) / 1000).toFixed(1)} s)` +
    bad.map((c) => `\n    ${c.status} ${c.id}: ${c.errorMessage ?? c.description}`).join('') });
}
for (const key of needs.keys())
  if (!['2025-11-25', '2026-07-28'].some((r) => requirementSet(r).some((s) => s.scenario === key)))
    rows.push({ scenario: key, ok: false, line: `✗ fixture-scenarios.txt names ${key}, in no requirement set` });

console.log(`\n=== requirements ${revision}: ${set.length} server scenarios ` +
  `(${set.filter((s) => serverFor(s.scenario, needs) === 'product').length} on the product), ` +
  `${((Date.now() - started) / 1000).toFixed(1)} s ===`);
for (const r of rows) console.log(r.line);
const failed = rows.filter((r) => !r.ok);
console.log(failed.length ? `\n${failed.length} scenario(s) failed` : '\nall scenarios passed');
exit(failed.length ? 1 : 0);

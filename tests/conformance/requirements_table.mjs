// The per-requirement results of the frozen requirement sets as Markdown, from the suite's own
// output: RESULTS/REVISION/{product,fixture}/server-SCENARIO-TIME/checks.json, as
// run_requirements.sh writes them. scripts/conformance-table.sh runs both sets and puts the
// tables into docs/conformance.md.
//   node requirements_table.mjs RESULTS REVISION...
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixtureScenarios, requirementSet, serverFor } from './requirements.mjs';

const [results, ...revisions] = process.argv.slice(2);
if (!results || revisions.length === 0) {
  console.error('usage: requirements_table.mjs RESULTS REVISION...');
  process.exit(2);
}
const needs = fixtureScenarios();
const cell = (text) => String(text ?? '').replace(/\s+/g, ' ').replaceAll('|', '\\|').trim();
const rank = { FAILURE: 4, WARNING: 3, SUCCESS: 2, SKIPPED: 1, INFO: 0 };
const word = { FAILURE: '**fail**', WARNING: '**warning**', SUCCESS: 'pass', SKIPPED: 'skipped', INFO: 'info' };

function checksOf(dir, scenario) {
  const prefix = `server-${scenario.replaceAll('/', '-')}-`;
  const found = existsSync(dir)
    ? readdirSync(dir).filter((d) => d.startsWith(prefix) && /^\d{4}-/.test(d.slice(prefix.length)))
    : [];
  if (found.length !== 1) throw new Error(`expected one result of ${scenario} in ${dir}, found ${found.length}`);
  return JSON.parse(readFileSync(join(dir, found[0], 'checks.json'), 'utf8'));
}

// One row per check id of a scenario (a check the scenario makes several times, such as one
// per rejected request, is one requirement): its worst status and why, and every case it
// describes.
function requirementsOf(checks) {
  const byId = new Map();
  for (const c of checks) {
    const seen = byId.get(c.id);
    if (!seen) byId.set(c.id, { ...c, times: 1, cases: [c.description] });
    else {
      seen.times += 1;
      if (!seen.cases.includes(c.description)) seen.cases.push(c.description);
      if (rank[c.status] > rank[seen.status]) Object.assign(seen, { ...c, times: seen.times, cases: seen.cases });
    }
  }
  return [...byId.values()];
}

function why(check) {
  if (check.status === 'SUCCESS') return '';
  return cell(check.errorMessage ?? check.details?.note ?? check.details?.message ?? '');
}

const out = [];
for (const revision of revisions) {
  const set = requirementSet(revision);
  const rows = set.map((s) => {
    const server = serverFor(s.scenario, needs);
    const checks = checksOf(join(results, revision, server), s.scenario);
    const count = (st) => checks.filter((c) => c.status === st).length;
    const pass = count('FAILURE') === 0 && count('WARNING') === 0;
    // Passing with no successful check: the scenario found nothing of the server to check.
    const result = !pass ? '**fail**' : count('SUCCESS') ? 'pass' : 'pass (nothing exercised)';
    const extra = ['WARNING', 'SKIPPED', 'INFO'].filter(count).map((st) => `, ${count(st)} ${st.toLowerCase()}`);
    return { ...s, server, checks, pass, result,
      tally: `${count('SUCCESS')}/${count('SUCCESS') + count('FAILURE')} passed${extra.join('')}` };
  });
  const required = rows.filter((r) => r.required);
  const count = (list) => {
    const passed = list.filter((r) => r.pass);
    const idle = passed.filter((r) => r.result !== 'pass').length;
    return `${passed.length} pass${idle ? ` (${idle} with nothing exercised)` : ''}`;
  };
  out.push(`### ${revision}`, '',
    `Of the ${required.length} server scenarios the revision requires, ${count(required)}; of the ` +
    `${rows.length - required.length} it runs without scoring, ${count(rows.filter((r) => !r.required))}.`, '',
    '| Scenario | Requirement | Runs on | Checks | Result |', '|---|---|---|---|---|');
  for (const r of rows)
    out.push(`| \`${r.scenario}\` | ${r.required ? 'required' : `not scored (${r.reason})`} | ` +
      `${r.server} | ${r.tally} | ${r.result} |`);
  out.push('', '<details><summary>Every requirement (check) of ' + revision + '</summary>', '',
    '| Requirement | Scenario | What it checks | Result |', '|---|---|---|---|');
  for (const r of rows)
    for (const c of requirementsOf(r.checks)) {
      const note = why(c);
      out.push(`| \`${c.id}\` | \`${r.scenario}\` | ${c.cases.map(cell).join('; ')}${c.times > 1 ? ` (×${c.times})` : ''} | ` +
        `${word[c.status] ?? c.status}${note ? `: ${note}` : ''} |`);
    }
  out.push('', '</details>', '');
}
process.stdout.write(out.join('\n'));

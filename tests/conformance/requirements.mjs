// What run_requirements.mjs and requirements_table.mjs share: a frozen requirement set of the
// pinned conformance suite (conformance-next) and where each of its server scenarios runs.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const suiteDir = join(here, '..', 'clients', 'node_modules', 'conformance-next');
export const suiteCli = join(suiteDir, 'dist', 'index.js');

// requirements/REV.yaml of the suite: `server:` (required, scored) and `not_scored:` (run and
// reported, each with its reason). The file is frozen and plain (lists of names, and mappings
// of scalars under not_scored), so a line reader is enough.
export function requirementSet(revision) {
  const text = readFileSync(join(suiteDir, 'requirements', `${revision}.yaml`), 'utf8');
  const scenarios = [];
  let section = null;
  let entry = null;
  for (const line of text.split('\n')) {
    if (/^\S/.test(line) && !line.startsWith('#')) section = line.replace(/:.*$/, '');
    const item = line.match(/^ {2}- (?:scenario: )?([\w/.-]+)\s*$/);
    if (section === 'server' && item) scenarios.push({ scenario: item[1], required: true });
    if (section !== 'not_scored') continue;
    if (item) entry = { scenario: item[1], required: false };
    const field = line.match(/^ {4}(leg|reason): (\S+)/);
    if (entry && field) entry[field[1]] = field[2];
    if (entry && entry.leg === 'server' && entry.reason) {
      scenarios.push({ scenario: entry.scenario, required: false, reason: entry.reason });
      entry = null;
    }
  }
  if (scenarios.length === 0) throw new Error(`no server scenarios in requirements/${revision}.yaml`);
  return scenarios;
}

// fixture-scenarios.txt: scenario -> what of the fixture server it needs.
export function fixtureScenarios() {
  const needs = new Map();
  for (const line of readFileSync(join(here, 'fixture-scenarios.txt'), 'utf8').split('\n')) {
    const m = line.match(/^([\w/.-]+)\s+(.+)$/);
    if (m && !line.startsWith('#')) needs.set(m[1], m[2].trim());
  }
  return needs;
}

export const serverFor = (scenario, needs) => (needs.has(scenario) ? 'fixture' : 'product');

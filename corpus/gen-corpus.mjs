#!/usr/bin/env node
// gen-corpus.mjs — the independent corpus generator.
//
// For every family module in corpus/gen/, build the cases and their expected
// answers from the family's criteria document and ANNEX (never from the Go
// engine), write corpus/<criteria-name>/corpus.json, compute the pin (SHA-256
// of the JCS serialization of the corpus object without `sha256`) and write
// it into the served criteria document criteria/<criteria-name>/criteria.json
// by replacing only the 64 hex characters of its corpus.sha256 value.
//
// Deterministic: seeded PRNG only, no clock, no Math.random.
// Usage: node corpus/gen-corpus.mjs [--check]   (--check: write nothing, exit 1 if stale)

import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jcs, sha256Hex, deepEqual } from './gen/lib.mjs';
import * as streamDivergence from './gen/stream-divergence.mjs';
import * as settlementEvidence from './gen/settlement-evidence.mjs';
import * as memoryScopeHygiene from './gen/memory-scope-hygiene.mjs';
import * as contextComposition from './gen/context-composition.mjs';

const FAMILIES = [streamDivergence, settlementEvidence, memoryScopeHygiene, contextComposition];

const corpusDir = dirname(fileURLToPath(import.meta.url));
const repoRoot = dirname(corpusDir);
const checkOnly = process.argv.includes('--check');

let stale = false;

for (const family of FAMILIES) {
  const name = family.criteriaName;
  const criteriaPath = join(repoRoot, 'criteria', name, 'criteria.json');
  const annexPath = join(repoRoot, 'criteria', name, 'ANNEX.md');
  const criteriaRaw = readFileSync(criteriaPath);
  const criteria = JSON.parse(criteriaRaw.toString('utf8'));
  const annexText = readFileSync(annexPath, 'utf8');

  const { cases } = family.build({ criteria, annexText });

  const corpus = {
    id: criteria.corpus.id,
    criteria_id: criteria.criteria_id,
    criteria_revision: criteria.criteria_revision,
    service: criteria.service,
    generator: 'corpus/gen-corpus.mjs',
    cases,
  };
  const pin = sha256Hex(jcs(corpus));
  corpus.sha256 = pin;
  const corpusText = JSON.stringify(corpus, null, 1) + '\n';

  // Round trip: the file as written must re-pin to the same value.
  const reread = JSON.parse(corpusText);
  const { sha256: _drop, ...withoutPin } = reread;
  if (sha256Hex(jcs(withoutPin)) !== pin) throw new Error(`${name}: pin does not round-trip`);

  const newCriteriaRaw = repin(criteriaRaw, criteria, pin, name);

  const corpusPath = join(corpusDir, name, 'corpus.json');
  let oldCorpus = null;
  try { oldCorpus = readFileSync(corpusPath, 'utf8'); } catch { /* first run */ }
  const corpusChanged = oldCorpus !== corpusText;
  const criteriaChanged = !newCriteriaRaw.equals(criteriaRaw);

  if (checkOnly) {
    if (corpusChanged || criteriaChanged) {
      stale = true;
      console.error(`${name}: corpus.json or the criteria pin is stale (run node corpus/gen-corpus.mjs)`);
    }
  } else {
    mkdirSync(dirname(corpusPath), { recursive: true });
    if (corpusChanged) writeFileSync(corpusPath, corpusText);
    if (criteriaChanged) writeFileSync(criteriaPath, newCriteriaRaw);
    verifyRepin(criteriaPath, criteriaRaw, criteria, pin, name);
  }
  const bytes = Buffer.byteLength(corpusText);
  console.log(`${name}: ${cases.length} cases, ${bytes} bytes, pin ${pin}${checkOnly ? '' : corpusChanged || criteriaChanged ? ' (written)' : ' (unchanged)'}`);
}

if (stale) process.exit(1);

// Replace only the 64 hex characters of the corpus sha256 value in the raw
// criteria bytes; every other byte stays identical.
function repin(raw, criteria, pin, name) {
  const text = raw.toString('latin1'); // byte-preserving view: indices are byte offsets
  const old = criteria.corpus && criteria.corpus.sha256;
  if (typeof old !== 'string' || !/^[0-9a-f]{64}$/.test(old)) throw new Error(`${name}: criteria corpus.sha256 is not 64 lowercase hex`);
  const anchor = `"corpus":{"id":${JSON.stringify(criteria.corpus.id)},"sha256":"`;
  const at = text.indexOf(anchor);
  if (at < 0 || text.indexOf(anchor, at + 1) >= 0) throw new Error(`${name}: corpus pin anchor not found exactly once in ${name} criteria`);
  const start = at + anchor.length;
  if (text.slice(start, start + 64) !== old || text[start + 64] !== '"') throw new Error(`${name}: unexpected bytes at the corpus pin`);
  const out = Buffer.from(raw);
  out.write(pin, start, 64, 'latin1');
  return out;
}

function verifyRepin(path, oldRaw, oldDoc, pin, name) {
  const newRaw = readFileSync(path);
  if (newRaw.length !== oldRaw.length) throw new Error(`${name}: criteria length changed`);
  const diffs = [];
  for (let i = 0; i < newRaw.length; i++) if (newRaw[i] !== oldRaw[i]) diffs.push(i);
  const newDoc = JSON.parse(newRaw.toString('utf8'));
  if (newDoc.corpus.sha256 !== pin) throw new Error(`${name}: criteria pin not written`);
  if (diffs.length) {
    const start = newRaw.indexOf(Buffer.from(`"sha256":"${pin}"`)) + '"sha256":"'.length;
    if (diffs[0] < start || diffs[diffs.length - 1] >= start + 64) throw new Error(`${name}: criteria bytes changed outside the pin`);
  }
  const expected = JSON.parse(JSON.stringify(oldDoc));
  expected.corpus.sha256 = pin;
  if (!deepEqual(expected, newDoc)) throw new Error(`${name}: criteria content changed beyond the pin`);
}

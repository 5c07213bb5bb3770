// memory-scope-hygiene/v1 corpus cases and their expected answers.
//
// Written from criteria/memory-scope-hygiene/criteria.json and
// criteria/memory-scope-hygiene/ANNEX.md alone: this module implements the
// refusal rules (ANNEX A-2/A-3, in the ANNEX's rule order), scope (A-4),
// liveness (A-5), the five factors (A-6..A-9) with the sharing-marker
// convention and decision precedence, the coverage block, the pre-check and
// report answer shapes (A-1) and the verdict line (A-10) on its own. It never
// calls the Go engine.

import { createHash } from 'node:crypto';
import { utf8, utf8Length, assert, deepEqual, commonMembers } from './lib.mjs';

export const criteriaName = 'memory-scope-hygiene';

const CHECK_END = '<check-end UTC>';
const PIN = '<pin>';
const NA = 'NOT ASSESSABLE';

// ANNEX A-3: codes / statuses / static messages, in the table's order.
// Cross-checked against the ANNEX table text at generation time.
const REFUSALS = {
  body_bytes_cap: { status: 413, message: 'request body exceeds the published cap' },
  export_required: { status: 400, message: 'request body is not a JSON object' },
  family_required: { status: 400, message: 'family is missing' },
  family_unknown: { status: 400, message: 'family is not one of mem0, zep_graphiti, letta, generic' },
  form_invalid: { status: 400, message: 'form is missing or not full_text or hash_only' },
  records_required: { status: 400, message: 'records is missing or not an array' },
  records_empty: { status: 400, message: 'records is empty' },
  record_count_cap: { status: 400, message: 'more records than the published cap' },
  record_not_object: { status: 400, message: 'a record is not an object' },
  record_id_required: { status: 400, message: 'a record id is missing or not a string' },
  record_id_duplicate: { status: 400, message: 'a record id is duplicated in the submission' },
  content_text_required: { status: 400, message: 'a full-text record has no content_text string' },
  content_hash_required: { status: 400, message: 'a hash-only record has no non-empty content_hash string' },
  manifest_invalid: { status: 400, message: 'manifest is not an object' },
  declared_scope_keys_invalid: { status: 400, message: 'declared_scope_keys is not an array of strings' },
  variant_unknown: { status: 400, message: 'variant is not published for the declared family' },
};

const FAMILIES = ['mem0', 'zep_graphiti', 'letta', 'generic'];
const FORMS = ['full_text', 'hash_only'];
// criteria input_contract_text; first entry is the published default.
const VARIANTS = {
  mem0: ['platform', 'oss'],
  zep_graphiti: ['graphiti', 'zep_cloud'],
  letta: ['mixed', 'blocks', 'passages'],
  generic: ['claim-jsonl'],
};
// criteria extension_rule / ANNEX A-4.
const DEFAULT_KEYS = {
  mem0: ['user_id', 'agent_id', 'app_id', 'run_id'],
  zep_graphiti: ['group_id', 'graph_id'],
  generic: [],
};
// ANNEX A-4: "A declared key named `content`, `content_text`, `content_hash`,
// `hash`, `source`, `score`, `grade`, `band` or `composite` is dropped: it is
// never a scope key." Cross-checked against the ANNEX text in selfTest.
const DROPPED_KEYS = ['content', 'content_text', 'content_hash', 'hash', 'source', 'score', 'grade', 'band', 'composite'];
// ANNEX A-4: "ASCII letters are compared without case (`Source` and `SCORE`
// are dropped too ...); every other character exactly (`ſource`, with
// U+017F, is kept)." Only A-Z is folded to a-z; toLowerCase is not used, as
// it would fold non-ASCII letters too (and U+212A KELVIN SIGN to k).
const asciiFold = (s) => s.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));
const isDroppedKey = (k) => DROPPED_KEYS.includes(asciiFold(k));
const FACTORS = ['scope_presence', 'unscoped_rate', 'cross_scope_clusters', 'scope_conflicts', 'duplicates'];
const DEAD_STATES = new Set(['superseded', 'deleted', 'expired']);

// ANNEX static reasons.
const R = {
  genericNoKey: 'no scope key declared (generic schema defines none)',
  scopeFiltered: 'scope-filtered export',
  multiScope: 'multi-scope not demonstrated',
  singleScope: 'single scope: not assessable by construction',
  singleGraph: 'single graph: not assessable intra-graph',
  zero: 'zero denominator',
  noFieldFamily: 'no source/target scope field in this family',
  noFields: 'no record carries attributed_scope, history_scope, episode_group_ids or endpoint_group_ids',
  n4: 'malformed sharing marker',
  n3: 'contradictory sharing declarations',
  n2: 'origin pointer does not resolve',
  n5: 'copies carry different sets of declared scope keys',
  b5: 'attribution conflict: sources disagree',
  n1: 'partial marker coverage',
};
const MARKED_LABEL = 'declared shared by the operator';

// The harness injects a fresh base58 caller (32 bytes -> at most 44 chars)
// into a pre-check whose body is a JSON object; sizes assume the longest.
const SIZING_CALLER = '1'.repeat(44);

const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
const isPlainObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const nonEmptyString = (v) => typeof v === 'string' && v !== '';
const setNonNull = (r, k) => hasOwn(r, k) && r[k] !== null;

// 100 × part / whole rounded half up to one decimal, exact integer arithmetic.
export function pct(part, whole) {
  assert(Number.isInteger(part) && Number.isInteger(whole) && whole > 0 && part >= 0, 'pct inputs');
  const p = BigInt(part), w = BigInt(whole);
  const tenths = (2000n * p + w) / (2n * w); // floor(1000p/w + 1/2)
  return `${tenths / 10n}.${tenths % 10n}%`;
}

function hasLoneSurrogate(s) {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (!(d >= 0xdc00 && d <= 0xdfff)) return true;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) return true;
  }
  return false;
}
function anyLoneSurrogate(v) {
  if (typeof v === 'string') return hasLoneSurrogate(v);
  if (Array.isArray(v)) return v.some(anyLoneSurrogate);
  if (isPlainObject(v)) return Object.keys(v).some((k) => hasLoneSurrogate(k) || anyLoneSurrogate(v[k]));
  return false;
}

export function build({ criteria, annexText }) {
  const caps = criteria.input_contract.caps;
  const CAP = { body: caps.body_bytes, records: caps.records_per_audit };
  assert(CAP.body === 262144 && CAP.records === 1000, 'caps differ from the criteria text');
  assert(criteria.ops.length === 1 && criteria.ops[0] === 'audit', 'ops');
  assert(criteria.service === 'scope-hygiene', 'service');
  const service = criteria.service;
  const OP = 'audit';
  const PRICE = { usdc_units: criteria.price.usdc_units_per_call, label: criteria.price.label, status: criteria.price.status };
  assert(deepEqual(PRICE, { usdc_units: 50000, label: '$0.05', status: 'RULED' }), 'price as the ANNEX prints it');
  const UNDECLARED_LABEL = criteria.undeclared_label;
  assert(criteria.scope_text.includes(`"${UNDECLARED_LABEL}"`), 'undeclared label verbatim in scope_text');
  assert(criteria.scope_text.includes(MARKED_LABEL), 'marked-shared wording verbatim in scope_text');
  assert(criteria.marker_convention.includes('"GLOBAL" and " global" are NOT reserved'), 'M2 reserved value');
  // The variant lists and defaults as the criteria text states them.
  const ict = criteria.input_contract_text;
  for (const s of ['Mem0 platform or oss (default platform)', 'Zep/Graphiti graphiti or zep_cloud (default graphiti)',
    'Letta mixed, blocks or passages (default mixed)', 'generic claim-jsonl (only value)']) assert(ict.includes(s), 'variant text ' + s);
  for (const f of FAMILIES) for (const fm of FORMS) {
    const row = criteria.assessability_matrix[f][fm];
    assert(deepEqual(Object.keys(row), FACTORS), `matrix row ${f}/${fm}`);
  }

  // ------------------------------------------------------------ answer model

  const common = (op, kind) => commonMembers(criteria, service, OP, op, kind);

  function refusal(op, code, facts = {}) {
    const r = REFUSALS[code];
    assert(r, 'unknown refusal ' + code);
    return { status: r.status, answer: { ...common(op, 'refusal'), error: { code, message: r.message, ...facts } } };
  }

  // ANNEX A-3, first failure wins; per-record rules on every record before the next rule.
  function validate(body) {
    if (!isPlainObject(body)) return { code: 'export_required' };
    if (!hasOwn(body, 'family')) return { code: 'family_required' };
    if (!FAMILIES.includes(body.family)) return { code: 'family_unknown' };
    if (!FORMS.includes(hasOwn(body, 'form') ? body.form : undefined)) return { code: 'form_invalid' };
    const records = hasOwn(body, 'records') ? body.records : undefined;
    if (!Array.isArray(records)) return { code: 'records_required' };
    if (records.length === 0) return { code: 'records_empty' };
    if (records.length > CAP.records) return { code: 'record_count_cap', facts: { cap: CAP.records, record_count: records.length } };
    for (let i = 0; i < records.length; i++) if (!isPlainObject(records[i])) return { code: 'record_not_object', facts: { record_index: i } };
    for (let i = 0; i < records.length; i++) {
      if (!hasOwn(records[i], 'id') || typeof records[i].id !== 'string') return { code: 'record_id_required', facts: { record_index: i } };
    }
    const seen = new Set();
    for (let i = 0; i < records.length; i++) {
      if (seen.has(records[i].id)) return { code: 'record_id_duplicate', facts: { record_index: i } };
      seen.add(records[i].id);
    }
    if (body.form === 'full_text') {
      for (let i = 0; i < records.length; i++) {
        if (!hasOwn(records[i], 'content_text') || typeof records[i].content_text !== 'string') return { code: 'content_text_required', facts: { record_index: i } };
      }
    } else {
      for (let i = 0; i < records.length; i++) {
        if (!hasOwn(records[i], 'content_hash') || !nonEmptyString(records[i].content_hash)) return { code: 'content_hash_required', facts: { record_index: i } };
      }
    }
    const manifest = hasOwn(body, 'manifest') ? body.manifest : null;
    if (manifest !== null && !isPlainObject(manifest)) return { code: 'manifest_invalid' };
    if (manifest !== null && hasOwn(manifest, 'declared_scope_keys')) {
      const d = manifest.declared_scope_keys;
      if (!Array.isArray(d) || !d.every((k) => typeof k === 'string')) return { code: 'declared_scope_keys_invalid' };
    }
    const variant = hasOwn(body, 'variant') ? body.variant : null;
    if (variant !== null && !VARIANTS[body.family].includes(variant)) return { code: 'variant_unknown' };
    return null;
  }

  // ------------------------------------------------------------ measurement

  function analyse(body) {
    const family = body.family, form = body.form, letta = family === 'letta';
    const variantDefaulted = !hasOwn(body, 'variant') || body.variant === null;
    const variant = variantDefaulted ? VARIANTS[family][0] : body.variant;
    const manifest = isPlainObject(body.manifest) ? body.manifest : null;
    const mList = (k) => {
      const v = manifest && hasOwn(manifest, k) ? manifest[k] : null;
      return Array.isArray(v) ? v.filter((x) => typeof x === 'string') : [];
    };
    const M = {
      global_scopes: mList('global_scopes'),
      global_content_keys: mList('global_content_keys'),
      global_claim_ids: mList('global_claim_ids'),
      private_scopes: mList('private_scopes'),
    };
    const gScopes = new Set(M.global_scopes), gKeys = new Set(M.global_content_keys);
    const gIds = new Set(M.global_claim_ids), pScopes = new Set(M.private_scopes);

    // A-4 declared keys. Duplicates keep the first; then the reserved names
    // are dropped ("The keys left are the declared keys everywhere
    // (`coverage.scope_keys`, the gates of A-6 and A-7);
    // `coverage.scope_keys_dropped` lists the dropped names in declared
    // order, first occurrences only (`[]` when none)").
    let keys = null, keysSource = 'family default', keysDropped = [];
    if (!letta) {
      let declared;
      if (manifest && hasOwn(manifest, 'declared_scope_keys')) {
        declared = [...new Set(manifest.declared_scope_keys)];
        keysSource = 'manifest';
      } else declared = DEFAULT_KEYS[family];
      // Deduped by exact name above; the drop then compares ASCII letters
      // without case, so `Source` and `source` are two declared keys, both
      // dropped and both listed, in declared order.
      keys = declared.filter((k) => !isDroppedKey(k));
      keysDropped = declared.filter((k) => isDroppedKey(k));
    }
    const noKeys = !letta && keys.length === 0;

    // Liveness: supersedes targets (A-5).
    const supersededIds = new Set();
    for (const r of body.records) {
      if (!hasOwn(r, 'supersedes')) continue;
      const t = typeof r.supersedes === 'string' ? [r.supersedes] : Array.isArray(r.supersedes) ? r.supersedes.filter((x) => typeof x === 'string') : [];
      // "another record's `supersedes` ... names its id (a record whose own
      // `supersedes` names its own id is not made not-live by it)".
      for (const id of t) if (id !== r.id) supersededIds.add(id);
    }

    // Open points (see the report): a case whose answer would depend on a
    // reading the criteria and ANNEX leave open is flagged here and refused
    // by addCase, so the corpus pins only what the texts decide.
    const open = [];
    if (manifest) {
      for (const k of ['global_scopes', 'global_content_keys', 'global_claim_ids', 'private_scopes']) {
        const v = manifest[k];
        if (hasOwn(manifest, k) && !(Array.isArray(v) && v.every((x) => typeof x === 'string'))) open.push(`manifest.${k} not an array of strings`);
        if (Array.isArray(v) && new Set(v).size !== v.length) open.push(`manifest.${k} repeats an entry`);
      }
      if (hasOwn(manifest, 'declared_scope_keys') && letta) open.push('declared_scope_keys on Letta');
      if (letta && (M.global_scopes.length || M.private_scopes.length)) open.push('global_scopes/private_scopes on Letta (no scope value)');
    }
    const recs = body.records.map((r, idx) => {
      const ck = form === 'full_text' ? r.content_text : r.content_hash;
      let scope = null; // {ident, value, print, keyset}
      if (letta) {
        const set = Array.isArray(r.attached_to) ? [...new Set(r.attached_to.filter(nonEmptyString))].sort() : [];
        if (set.length) scope = { ident: JSON.stringify(set), value: null, print: set, set, global: false };
      } else {
        const present = [];
        for (const k of keys) {
          let v = r[k];
          if (family === 'mem0' && k === 'run_id' && !nonEmptyString(v) && nonEmptyString(r.session_id)) v = r.session_id;
          if (nonEmptyString(v)) present.push([k, v]);
        }
        if (present.length) {
          const value = present.map((p) => p[1]).join('|');
          const global = value === 'global';
          scope = {
            ident: JSON.stringify(present), value, global,
            print: global ? 'global' : Object.fromEntries(present),
            keyset: present.map((p) => p[0]).join('\u0000'),
          };
        }
      }
      const inv = setNonNull(r, 'invalid_at'), exp = setNonNull(r, 'expired_at');
      const live = !(supersededIds.has(r.id) || setNonNull(r, 'replaced_by') || setNonNull(r, 'superseded_by') ||
        r.is_deleted === true || inv || exp || DEAD_STATES.has(r.lifecycle_state) || DEAD_STATES.has(r.state));
      const template = letta && r.is_template === true;
      const sourcePassage = letta && (r.source_passage === true || (setNonNull(r, 'file_id') && scope === null));
      return {
        r, idx, id: r.id, ck, scope, live, anomaly: inv !== exp,
        contested: family === 'generic' && live && r.state === 'pending',
        template, sourcePassage,
      };
    });
    const byId = new Map(recs.map((x) => [x.id, x]));
    const live = recs.filter((x) => x.live);
    const distinctScopes = new Set(recs.filter((x) => x.scope).map((x) => x.scope.ident)).size;
    {
      const d = (xs) => new Set(xs.filter((x) => x.scope).map((x) => x.scope.ident)).size;
      if (letta && d(recs) !== d(recs.filter((x) => !x.template && !x.sourcePassage))) open.push('distinct scopes: all records vs eligible');
      if (family === 'zep_graphiti' && (d(recs) < 2) !== (d(live) < 2)) open.push('distinct scopes gate: all records vs live');
      for (const x of recs) {
        for (const k of ['shared', 'origin_claim_id', 'origin_scope']) if (hasOwn(x.r, k) && x.r[k] === null) open.push(`${k} null`);
        if (isPlainObject(x.r.metadata) && x.r.metadata.shared === null) open.push('metadata.shared null');
      }
      const gl = new Set(recs.filter((x) => x.scope && x.scope.global).map((x) => x.scope.ident));
      if (gl.size > 1) open.push('two different key sets with scope value global');
    }

    // ---- factors 1 and 2 (A-6)
    const eligible = recs.filter((x) => !x.template && !x.sourcePassage);
    const scopedEligible = eligible.filter((x) => x.scope).length;
    const F = {};
    if (family === 'generic' && noKeys) {
      F.scope_presence = { status: NA, reason: R.genericNoKey };
      F.unscoped_rate = { status: NA, reason: R.genericNoKey };
    } else {
      F.scope_presence = eligible.length === 0 ? { status: NA, reason: R.zero }
        : { status: 'ASSESSABLE', rate: pct(scopedEligible, eligible.length), scoped: scopedEligible, eligible: eligible.length, distinct_scopes: distinctScopes };
      const multi = manifest && manifest.multi_scope === true;
      let gate = null;
      if (family === 'mem0' && manifest && manifest.scope_filtered === true) gate = R.scopeFiltered;
      else if (family === 'zep_graphiti' && variant === 'graphiti' && distinctScopes < 2 && !multi) gate = R.multiScope;
      else if (family === 'zep_graphiti' && variant === 'zep_cloud' && distinctScopes < 2 && !multi) gate = R.singleScope;
      else if (eligible.length === 0) gate = R.zero;
      const unscoped = eligible.length - scopedEligible;
      F.unscoped_rate = gate ? { status: NA, reason: gate }
        : { status: 'ASSESSABLE', rate: pct(unscoped, eligible.length), unscoped, eligible: eligible.length, distinct_scopes: distinctScopes };
    }

    // ---- factor 3 (A-7)
    let crossGate = null;
    if (family === 'generic' && noKeys) crossGate = R.genericNoKey;
    else if (family === 'zep_graphiti' && variant === 'zep_cloud' && distinctScopes < 2) crossGate = R.singleGraph;
    else if (live.length === 0) crossGate = R.zero;

    // Clusters (computed only when the factor is assessable).
    const clusters = [];
    const clusterOf = new Map(); // record id -> cluster size, for the M4 depth bound
    if (!crossGate) {
      const groups = new Map();
      for (const x of recs) {
        if (!x.live || !x.scope || x.template) continue;
        if (!groups.has(x.ck)) groups.set(x.ck, []);
        groups.get(x.ck).push(x);
      }
      for (const members of groups.values()) {
        let candidate;
        if (letta) {
          candidate = false;
          for (let i = 0; i < members.length && !candidate; i++) {
            for (let j = i + 1; j < members.length && !candidate; j++) {
              const a = new Set(members[i].scope.set);
              if (!members[j].scope.set.some((v) => a.has(v))) candidate = true;
            }
          }
        } else {
          candidate = new Set(members.filter((x) => !x.scope.global).map((x) => x.scope.ident)).size >= 2;
        }
        if (!candidate) continue;
        clusters.push(members);
        for (const x of members) clusterOf.set(x.id, members.length);
      }
    }

    // Markers (A-7). bound: the cluster size for a cluster member, else the
    // number of records of the submission sharing the record's content key.
    const sameKeyCount = new Map();
    for (const x of recs) sameKeyCount.set(x.ck, (sameKeyCount.get(x.ck) || 0) + 1);
    const meta = (x) => (isPlainObject(x.r.metadata) ? x.r.metadata : null);
    const m1 = (x) => x.r.shared === true || x.r.sharing === 'global' || (meta(x) && (meta(x).shared === true || meta(x).sharing === 'global'));
    const hasPointer = (x) => hasOwn(x.r, 'origin_claim_id');
    function m4(x) {
      if (!hasPointer(x) || !nonEmptyString(x.r.origin_claim_id)) return false;
      const bound = clusterOf.has(x.id) ? clusterOf.get(x.id) : sameKeyCount.get(x.ck);
      const seen = new Set([x.id]);
      let cur = x, steps = 0;
      for (;;) {
        const oid = cur.r.origin_claim_id;
        if (!nonEmptyString(oid)) return false;
        steps++;
        if (steps > bound) return false;
        if (seen.has(oid) && gIds.has(oid)) open.push('M4 cycle through a global_claim_ids id');
        if (seen.has(oid)) return false;
        if (gIds.has(oid) && byId.has(oid)) {
          const o = byId.get(oid);
          if (o.ck !== x.ck || (hasOwn(cur.r, 'origin_scope') && (!o.scope || o.scope.value !== cur.r.origin_scope))) open.push('M4 global_claim_ids origin present but mismatched');
        }
        if (!clusterOf.has(x.id) && steps > 1) open.push('M4 depth bound outside a cluster');
        if (gIds.has(oid)) return true;
        const o = byId.get(oid);
        if (!o) return false;
        if (o.ck !== x.ck) return false;
        if (hasOwn(cur.r, 'origin_scope') && (!o.scope || o.scope.value === null || o.scope.value !== cur.r.origin_scope)) return false;
        if (!hasPointer(o)) return true;
        seen.add(oid);
        cur = o;
      }
    }
    const covered = (x) => m1(x) || (x.scope && x.scope.value !== null && gScopes.has(x.scope.value)) ||
      gKeys.has(x.ck) || gIds.has(x.id) || m4(x);
    const nonSharing = (x) => x.r.shared === false || (meta(x) && meta(x).shared === false) ||
      (x.scope && x.scope.value !== null && pScopes.has(x.scope.value));
    const malformed = (x) => (hasOwn(x.r, 'shared') && typeof x.r.shared !== 'boolean') ||
      (meta(x) && hasOwn(meta(x), 'shared') && typeof meta(x).shared !== 'boolean') ||
      (hasPointer(x) && !nonEmptyString(x.r.origin_claim_id)) ||
      (hasOwn(x.r, 'origin_scope') && typeof x.r.origin_scope !== 'string');

    const b5NotRun = [];
    const printMember = (x) => ({ id: x.id, scope: x.scope.print });
    const outClusters = clusters.map((members, index) => {
      const copies = members.filter((x) => !x.scope.global);
      const globals = members.filter((x) => x.scope.global);
      const out = {
        members: copies.map(printMember),
        global_members: globals.map(printMember),
        distinct_scopes: new Set(copies.map((x) => x.scope.ident)).size,
      };
      const na = (reason) => Object.assign(out, { classification: NA, reason });
      const early = () => { if (!copies.every((x) => typeof x.r.source === 'string')) open.push('b5_not_run for a cluster decided before B5'); };
      if (copies.some(malformed)) { early(); return na(R.n4); }
      if (copies.some((x) => covered(x) && nonSharing(x)) ||
        copies.some((x) => x.scope.value !== null && gScopes.has(x.scope.value) && pScopes.has(x.scope.value))) { early(); return na(R.n3); }
      if (copies.some((x) => hasPointer(x) && !m4(x))) { early(); return na(R.n2); }
      if (!letta && new Set(copies.map((x) => x.scope.keyset)).size > 1) { early(); return na(R.n5); }
      if (copies.some((x) => x.sourcePassage)) open.push('source passage in a Letta cluster');
      const cov = copies.map(covered);
      const all = cov.every(Boolean), any = cov.some(Boolean);
      let distinctSources = 0;
      if (copies.every((x) => typeof x.r.source === 'string')) {
        distinctSources = new Set(copies.map((x) => x.r.source)).size;
        if (distinctSources >= 2 && all) {
          na(R.b5);
          out.referred_to_scope_conflicts = copies.map((x) => x.id);
          return out;
        }
      } else b5NotRun.push(index);
      if (any && !all) return na(R.n1);
      if (letta) {
        const lineage = (k) => nonEmptyString(copies[0].r[k]) && copies.every((x) => x.r[k] === copies[0].r[k]);
        if (lineage('template_id') || lineage('base_template_id')) return Object.assign(out, { classification: 'template lineage' });
      }
      if (all) return Object.assign(out, { classification: 'marked shared', label: MARKED_LABEL });
      Object.assign(out, { classification: 'undeclared', label: UNDECLARED_LABEL });
      if (distinctSources >= 2) out.distinct_sources = distinctSources;
      return out;
    });

    const markedLive = live.filter((x) => x.scope && !x.scope.global && covered(x)).length;
    if (live.some((x) => !x.scope && covered(x))) open.push('marker on a live unscoped record (P0)');
    if (live.some((x) => x.template && covered(x))) open.push('marker on a Letta template');
    const markedShare = live.length ? pct(markedLive, live.length) : { status: NA, reason: R.zero }; // the token always travels with its reason (ANNEX A-1)
    if (crossGate) F.cross_scope_clusters = { status: NA, reason: crossGate };
    else {
      const count = (c) => outClusters.filter((k) => k.classification === c).length;
      F.cross_scope_clusters = {
        status: 'ASSESSABLE',
        candidates: outClusters.length,
        marked_shared: count('marked shared'),
        undeclared: count('undeclared'),
        ambiguous: count(NA),
        template_lineage: count('template lineage'),
        marked_live: markedLive,
        live_records: live.length,
        marked_share: markedShare,
        clusters: outClusters,
      };
    }

    // ---- factor 4 (A-8)
    const CHECKED = ['attributed_scope', 'history_scope', 'episode_group_ids', 'endpoint_group_ids'];
    if (letta || family === 'generic') F.scope_conflicts = { status: NA, reason: R.noFieldFamily };
    else if (!recs.some((x) => CHECKED.some((k) => setNonNull(x.r, k)))) F.scope_conflicts = { status: NA, reason: R.noFields };
    else {
      const sub = { attributed_vs_storage: [], history_vs_storage: [], episode_groups: [], endpoint_groups: [] };
      for (const x of recs) {
        const storage = typeof x.r.storage_scope === 'string' ? x.r.storage_scope : x.scope ? x.scope.value : null;
        if (setNonNull(x.r, 'attributed_scope') && (storage === null || x.r.attributed_scope !== storage)) sub.attributed_vs_storage.push(x.id);
        if (setNonNull(x.r, 'history_scope') && (storage === null || x.r.history_scope !== storage)) sub.history_vs_storage.push(x.id);
        const gid = hasOwn(x.r, 'group_id') ? x.r.group_id : undefined;
        if (Array.isArray(x.r.episode_group_ids) && x.r.episode_group_ids.some((v) => gid === undefined || v !== gid)) sub.episode_groups.push(x.id);
        if (Array.isArray(x.r.endpoint_group_ids) && x.r.endpoint_group_ids.some((v) => gid === undefined || v !== gid)) sub.endpoint_groups.push(x.id);
      }
      F.scope_conflicts = { status: 'ASSESSABLE' };
      let total = 0;
      for (const [k, ids] of Object.entries(sub)) {
        F.scope_conflicts[k] = { conflicts: ids.length, record_ids: ids };
        total += ids.length;
      }
      F.scope_conflicts.total = total;
    }

    // ---- factor 5 (A-9)
    if (live.length === 0) F.duplicates = { status: NA, reason: R.zero };
    else {
      const groups = new Map(); // partition ident + content key -> records
      for (const x of live) {
        if (x.contested) continue;
        const k = JSON.stringify([x.scope ? x.scope.ident : null, x.ck]);
        if (!groups.has(k)) groups.set(k, []);
        groups.get(k).push(x);
      }
      let excess = 0;
      const dclusters = [];
      for (const g of groups.values()) {
        excess += Math.max(0, g.length - 1);
        if (g.length >= 2 && g.some((x) => x.template)) open.push('template block in a duplicate group');
        if (g.length >= 2) dclusters.push({ first: g[0].idx, c: { scope: g[0].scope ? g[0].scope.print : null, count: g.length, record_ids: g.map((x) => x.id) } });
      }
      dclusters.sort((a, b) => a.first - b.first);
      F.duplicates = { status: 'ASSESSABLE', excess, live_records: live.length, rate: pct(excess, live.length), clusters: dclusters.map((d) => d.c) };
    }

    const absent = (list, have) => list.filter((v) => !have.has(v)).length;
    const scopeValues = new Set(recs.filter((x) => x.scope && x.scope.value !== null).map((x) => x.scope.value));
    const coverage = {
      scope_keys: letta ? ['attached_to'] : keys,
      scope_keys_source: keysSource,
      scope_keys_dropped: keysDropped,
      marked_live: markedLive,
      live_records: live.length,
      marked_share: markedShare,
      declared_but_absent: {
        global_scopes: absent(M.global_scopes, scopeValues),
        global_content_keys: absent(M.global_content_keys, new Set(recs.map((x) => x.ck))),
        global_claim_ids: absent(M.global_claim_ids, new Set(recs.map((x) => x.id))),
        private_scopes: absent(M.private_scopes, scopeValues),
      },
      split_state_anomalies: { count: recs.filter((x) => x.anomaly).length, record_ids: recs.filter((x) => x.anomaly).map((x) => x.id) },
      contested_heads: { count: recs.filter((x) => x.contested).length, record_ids: recs.filter((x) => x.contested).map((x) => x.id) },
      b5_not_run: { count: b5NotRun.length, cluster_indexes: b5NotRun },
      templates: recs.filter((x) => x.template).length,
      source_passages: recs.filter((x) => x.sourcePassage).length,
    };
    return { family, form, variant, variantDefaulted, records: recs.length, liveRecords: live.length, F, coverage, open };
  }

  // criteria verdict_grammar.line, filled in order; the instant stays a placeholder.
  function verdictLine(a) {
    let line = criteria.verdict_grammar.line;
    const fill = (ph, val) => {
      const at = line.indexOf(ph);
      assert(at >= 0, 'verdict grammar placeholder ' + ph);
      line = line.slice(0, at) + String(val) + line.slice(at + ph.length);
    };
    const F = a.F;
    fill('<n>', a.records);
    fill('<n>', a.liveRecords);
    fill('<rate|NOT ASSESSABLE>', F.unscoped_rate.status === NA ? NA : F.unscoped_rate.rate);
    fill('<k|NOT ASSESSABLE>', F.cross_scope_clusters.status === NA ? NA : F.cross_scope_clusters.undeclared);
    fill('<k|NOT ASSESSABLE>', F.scope_conflicts.status === NA ? NA : F.scope_conflicts.total);
    fill('<k>', F.duplicates.status === NA ? NA : F.duplicates.excess);
    assert(line.endsWith(' — ' + CHECK_END), 'verdict line ends with the check-end placeholder');
    assert(!/<(?!check-end UTC>)[^>]*>/.test(line), 'unfilled verdict placeholder');
    return line;
  }

  function precheckAnswer(a) {
    const factors = {};
    for (const f of FACTORS) {
      factors[f] = a.F[f].status === NA ? { status: NA, reason: a.F[f].reason } : { status: 'ASSESSABLE' };
    }
    return {
      ...common('precheck', 'precheck'),
      assessable: true,
      family: a.family, form: a.form, variant: a.variant, variant_defaulted: a.variantDefaulted,
      records: a.records, live_records: a.liveRecords,
      matrix_row: criteria.assessability_matrix[a.family][a.form],
      factors,
      price: PRICE,
    };
  }

  function reportAnswer(a) {
    return {
      ...common(OP, 'report'),
      family: a.family, form: a.form, variant: a.variant,
      records: a.records, live_records: a.liveRecords,
      factors: a.F,
      coverage: a.coverage,
      scope_text: criteria.scope_text,
      honesty_line: criteria.honesty_line,
      retention: criteria.retention,
      price: PRICE,
      verdict_line: verdictLine(a),
    };
  }

  // The whole route: raw request bytes in, {status, answer|body_text} out.
  function expectedFor(path, bodyBytes) {
    const prefix = `/${service}/`;
    const op = path.startsWith(prefix) ? path.slice(prefix.length) : null;
    if (op !== 'precheck' && op !== OP) return { status: 404, body_text: 'NOT COVERED' };
    if (bodyBytes.length > CAP.body) return refusal(op, 'body_bytes_cap', { cap: CAP.body });
    let body;
    try {
      body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bodyBytes));
    } catch {
      return refusal(op, 'export_required');
    }
    if (anyLoneSurrogate(body)) return refusal(op, 'export_required');
    const v = validate(body);
    if (v) return refusal(op, v.code, v.facts);
    const a = analyse(body);
    if (op === 'precheck') return { status: 200, answer: precheckAnswer(a), open: a.open };
    return { status: 200, answer: reportAnswer(a), open: a.open };
  }

  selfTest({ analyse, verdictLine, validate, annexText, criteria, UNDECLARED_LABEL });

  // ------------------------------------------------------------ case builders

  const cases = [];
  const names = new Set();

  function addCase(route, name, description, req) {
    assert(/^[a-z0-9]+(-[a-z0-9]+)*$/.test(name), 'kebab-case name ' + name);
    assert(!names.has(name), 'duplicate case name ' + name);
    assert(/^[^\n]+\.$/.test(description), 'one-sentence description for ' + name);
    names.add(name);
    const path = route.startsWith('/') ? route : `/${service}/${route}`;
    const request = { method: 'POST', path };
    let bytes;
    if (hasOwn(req, 'body_text')) {
      request.body_text = req.body_text;
      bytes = utf8(req.body_text);
    } else {
      request.body = req.body;
      let sent = req.body;
      if (path.endsWith('/precheck') && isPlainObject(sent) && !hasOwn(sent, 'caller')) sent = { ...sent, caller: SIZING_CALLER };
      bytes = utf8(JSON.stringify(sent));
    }
    const exp = expectedFor(path, bytes);
    const got = exp.answer && exp.answer.error ? exp.answer.error.code : (exp.answer ? exp.answer.kind : exp.body_text);
    assert(got === req.expectCode, `case ${name}: intended ${req.expectCode}, model gives ${got}`);
    if (req.check) req.check(exp.answer, name);
    assert(!exp.open || exp.open.length === 0, `case ${name} depends on an open point: ${exp.open && [...new Set(exp.open)].join('; ')}`);
    // Custody: no content or content hash ever appears in an expected answer.
    if (exp.answer && isPlainObject(request.body) && Array.isArray(request.body.records)) assertNoContent(exp.answer, request.body.records, name);
    const expect = { status: exp.status };
    if (exp.body_text !== undefined) expect.body_text = exp.body_text;
    else expect.answer = exp.answer;
    cases.push({ name, provenance: 'synthetic', description, request, expect });
  }
  const pre = (name, description, req) => addCase('precheck', name, description, req);
  const aud = (name, description, req) => addCase(OP, name, description, req);

  function assertNoContent(answer, records, name) {
    const strings = new Set();
    const walk = (v) => {
      if (typeof v === 'string') strings.add(v);
      else if (Array.isArray(v)) v.forEach(walk);
      else if (isPlainObject(v)) Object.values(v).forEach(walk);
    };
    walk(answer);
    for (const r of records) {
      if (!isPlainObject(r)) continue;
      for (const k of ['content_text', 'content_hash']) {
        if (typeof r[k] === 'string' && r[k].length > 3) assert(!strings.has(r[k]), `case ${name}: content echoed`);
      }
    }
  }

  // Check helpers.
  const checkClusters = (...want) => (a, name) => {
    const got = a.factors.cross_scope_clusters.clusters.map((c) => (c.classification === NA ? c.reason : c.classification));
    assert(deepEqual(got, want), `case ${name}: clusters ${JSON.stringify(got)} want ${JSON.stringify(want)}`);
  };
  const checkThat = (fn, what) => (a, name) => assert(fn(a), `case ${name}: ${what}`);
  const all = (...fns) => (a, name) => fns.forEach((f) => f(a, name));

  // Record builders.
  const md5 = (s) => createHash('md5').update(utf8(s)).digest('hex');
  const mk = (form) => (id, text, fields = {}) => ({
    id, ...(form === 'full_text' ? { content_text: text } : { content_hash: md5(text) }), ...fields,
  });
  const ft = mk('full_text'), ho = mk('hash_only');
  const ex = (family, form, records, more = {}) => ({ family, form, ...more, records });
  const TS = '2026-10-14T09:12:44Z';

  // ============================================================ baselines: every family x form, both routes

  const mem0Records = (r) => [
    r('mem-01', 'Prefers window seats on long flights', { user_id: 'alice', categories: ['travel'], created_at: TS }),
    r('mem-02', 'Prefers window seats on long flights', { user_id: 'bob', categories: ['travel'], created_at: TS }),
    r('mem-03', 'Books refundable fares by default', { agent_id: 'travel-agent', metadata: { topic: 'fares' } }),
    r('mem-04', 'Lives in Lisbon', { user_id: 'alice', replaced_by: 'mem-05', lifecycle_state: 'active' }),
    r('mem-05', 'Lives in Porto', { user_id: 'alice' }),
    r('mem-06', 'Lives in Porto', { user_id: 'alice' }),
    r('mem-07', 'Allergic to peanuts', { metadata: { note: 'imported' } }),
    r('mem-08', 'Asked about lounge access', { user_id: 'carol', session_id: 'sess-9' }),
  ];
  const zepRecords = (r) => [
    r('e1a7c0d2-0001', 'Alice WORKS_AT Acme', { group_id: 'tenant_a', source_node_uuid: 'n-1', target_node_uuid: 'n-2', name: 'WORKS_AT', episode_group_ids: ['tenant_a'], endpoint_group_ids: ['tenant_a', 'tenant_a'], valid_at: TS, invalid_at: null, expired_at: null }),
    r('e1a7c0d2-0002', 'Alice WORKS_AT Acme', { group_id: 'tenant_b', name: 'WORKS_AT', episode_group_ids: ['tenant_b'], endpoint_group_ids: ['tenant_b', 'tenant_a'], invalid_at: null, expired_at: null }),
    r('e1a7c0d2-0003', 'Alice LIVES_IN Berlin', { group_id: 'tenant_a', name: 'LIVES_IN', invalid_at: '2026-09-01T00:00:00Z', expired_at: '2026-09-02T10:00:00Z' }),
    r('e1a7c0d2-0004', 'Alice LIVES_IN Munich', { group_id: 'tenant_a', name: 'LIVES_IN', invalid_at: null, expired_at: null }),
    r('e1a7c0d2-0005', 'Alice LIVES_IN Munich', { group_id: 'tenant_a', name: 'LIVES_IN' }),
    r('e1a7c0d2-0006', 'Bob KNOWS Alice', { name: 'KNOWS' }),
  ];
  const lettaRecords = (r) => [
    r('block-persona', 'You are a concise support assistant.', { label: 'persona', attached_to: ['agent-a', 'agent-b'] }),
    r('block-human-a', 'Customer: Dana, plan Pro, region EU', { label: 'human', attached_to: ['agent-a'] }),
    r('block-human-c', 'Customer: Dana, plan Pro, region EU', { label: 'human', attached_to: ['agent-c'] }),
    r('block-template', 'You are a concise support assistant.', { label: 'persona', is_template: true, template_name: 'support-persona' }),
    r('passage-1', 'Refund window is 30 days', { archive_id: 'arch-1', attached_to: ['agent-a'] }),
    r('passage-2', 'Refund window is 30 days', { archive_id: 'arch-1', attached_to: ['agent-a'] }),
    r('passage-file', 'Section 4: warranty terms', { source_id: 'src-1', file_id: 'file-9', file_name: 'terms.pdf' }),
    r('passage-orphan', 'Escalate billing disputes to tier 2', { archive_id: 'arch-unresolved' }),
  ];
  const genericRecords = (r) => [
    r('c-1', 'Service tier is gold', { source: 'crm-export', created_at: TS }),
    r('c-2', 'Service tier is gold', { source: 'crm-export', created_at: TS }),
    r('c-3', 'Contract renews in March', { source: 'contracts' }),
    r('c-4', 'Contract renews in April', { source: 'contracts', supersedes: 'c-3' }),
    r('c-5', 'Primary contact is Lee', { source: 'crm-export', state: 'pending' }),
    r('c-6', 'Primary contact is Lee', { source: 'crm-export' }),
    r('c-7', 'Primary contact is Lee', { source: 'crm-export' }),
  ];
  const BASE = { mem0: mem0Records, zep_graphiti: zepRecords, letta: lettaRecords, generic: genericRecords };

  for (const family of FAMILIES) {
    for (const form of FORMS) {
      const body = ex(family, form, BASE[family](mk(form)));
      const tag = `${family.replace('_', '-')}-${form.replace('_', '-')}`;
      pre(`precheck-${tag}-baseline`,
        `A ${family} ${form} export with the default variant returns the full ${family}/${form} matrix row, the resolved per-factor status and the record and live-record counts, with no factor figure.`,
        { body, expectCode: 'precheck' });
      aud(`audit-${tag}-baseline`,
        `A representative ${family} ${form} export with the default variant is reported factor by factor with the coverage block and the verdict line.`,
        { body, expectCode: 'report' });
    }
  }

  // ============================================================ the ANNEX A-1 example

  const a1Body = ex('mem0', 'full_text', [
    ft('m1', 'Works night shifts', { user_id: 'alice' }),
    ft('m2', 'Works night shifts', { user_id: 'bob' }),
    ft('m3', 'Speaks Portuguese'),
    ft('m4', 'Drives a blue car', { user_id: 'alice', replaced_by: 'm9' }),
  ]);
  aud('audit-annex-a1-example',
    'An export shaped as the ANNEX A-1 report example gives 75.0% scope presence, 25.0% unscoped over 2 distinct scopes, one undeclared cluster with B5 not run, and no duplicates.',
    {
      body: a1Body, expectCode: 'report',
      check: all(checkClusters('undeclared'), checkThat((a) => a.factors.unscoped_rate.rate === '25.0%' && a.coverage.b5_not_run.cluster_indexes[0] === 0, 'A-1 figures')),
    });

  // ============================================================ variants: default and explicit

  const smallMem0 = (r) => [r('v-1', 'Prefers email contact', { user_id: 'u1' }), r('v-2', 'Prefers email contact', { user_id: 'u1' })];
  pre('precheck-mem0-variant-platform-explicit',
    'An explicit Mem0 variant platform is accepted and printed with variant_defaulted false.',
    { body: ex('mem0', 'full_text', smallMem0(ft), { variant: 'platform' }), expectCode: 'precheck', check: checkThat((a) => a.variant_defaulted === false, 'explicit') });
  aud('audit-mem0-variant-oss-hash-only',
    'A Mem0 OSS export in hash-only form (MD5 hex hashes as-is) with variant oss is reported under variant oss.',
    { body: ex('mem0', 'hash_only', [ho('oss-1', 'Likes jazz', { user_id: 'u1', run_id: 'r-1', actor_id: 'u1', role: 'user' }), ho('oss-2', 'Likes jazz', { user_id: 'u2', run_id: 'r-1' }), ho('oss-3', 'Plays piano', { agent_id: 'dj', run_id: 'r-1' })], { variant: 'oss' }), expectCode: 'report' });
  pre('precheck-mem0-variant-null-defaulted',
    'A null variant takes the Mem0 default platform and is printed with variant_defaulted true.',
    { body: ex('mem0', 'hash_only', smallMem0(ho), { variant: null }), expectCode: 'precheck', check: checkThat((a) => a.variant === 'platform' && a.variant_defaulted === true, 'null default') });
  pre('precheck-zep-graphiti-variant-graphiti-explicit',
    'An explicit zep_graphiti variant graphiti is accepted with variant_defaulted false.',
    { body: ex('zep_graphiti', 'full_text', [ft('g-1', 'Acme HQ_IN Oslo', { group_id: 'g1' }), ft('g-2', 'Acme HQ_IN Oslo', { group_id: 'g2' })], { variant: 'graphiti' }), expectCode: 'precheck' });
  pre('precheck-zep-cloud-variant-hash-only',
    'A zep_cloud hash-only export of two graphs is accepted with its matrix row and both scope gates open.',
    { body: ex('zep_graphiti', 'hash_only', [ho('z-1', 'Order 88 shipped', { graph_id: 'user-1' }), ho('z-2', 'Order 88 shipped', { graph_id: 'user-2' })], { variant: 'zep_cloud' }), expectCode: 'precheck', check: checkThat((a) => a.factors.unscoped_rate.status === 'ASSESSABLE' && a.factors.cross_scope_clusters.status === 'ASSESSABLE', 'gates open') });
  pre('precheck-letta-variant-mixed-explicit',
    'An explicit Letta variant mixed is accepted with variant_defaulted false.',
    { body: ex('letta', 'full_text', [ft('b-1', 'Tone: friendly', { attached_to: ['agent-1'] })], { variant: 'mixed' }), expectCode: 'precheck' });
  aud('audit-letta-variant-blocks',
    'A Letta blocks-only export (variant blocks) is reported under variant blocks with the same scope-set rules.',
    { body: ex('letta', 'full_text', [ft('b-1', 'Tone: friendly', { label: 'style', attached_to: ['agent-1'] }), ft('b-2', 'Tone: friendly', { label: 'style', attached_to: ['agent-2'] }), ft('b-3', 'Plan: Team', { label: 'human', attached_to: ['agent-2'] })], { variant: 'blocks' }), expectCode: 'report', check: checkClusters('undeclared') });
  aud('audit-letta-variant-passages-hash-only',
    'A Letta passages-only hash-only export (variant passages) with archive resolution in attached_to is reported under variant passages.',
    { body: ex('letta', 'hash_only', [ho('p-1', 'SLA is 99.9%', { archive_id: 'a1', attached_to: ['agent-1', 'agent-2'] }), ho('p-2', 'SLA is 99.9%', { archive_id: 'a1', attached_to: ['agent-1', 'agent-2'] }), ho('p-3', 'Support hours 9-5', { archive_id: 'a2' })], { variant: 'passages' }), expectCode: 'report' });
  pre('precheck-generic-variant-claim-jsonl-explicit',
    'An explicit generic variant claim-jsonl is accepted with variant_defaulted false.',
    { body: ex('generic', 'hash_only', [ho('c-1', 'claim one')], { variant: 'claim-jsonl' }), expectCode: 'precheck' });

  // ============================================================ gates (A-6, A-7)

  const filtered = ex('mem0', 'full_text', [
    ft('f-1', 'Prefers aisle seats', { user_id: 'alice' }), ft('f-2', 'Prefers aisle seats', { user_id: 'alice' }), ft('f-3', 'Vegetarian', { user_id: 'alice' }),
  ], { manifest: { scope_filtered: true } });
  pre('precheck-mem0-scope-filtered',
    'A Mem0 export declared scope-filtered resolves unscoped_rate NOT ASSESSABLE (scope-filtered export) while scope_presence stays assessable.',
    { body: filtered, expectCode: 'precheck', check: checkThat((a) => a.factors.unscoped_rate.reason === R.scopeFiltered && a.factors.scope_presence.status === 'ASSESSABLE', 'filtered') });
  aud('audit-mem0-scope-filtered',
    'A scope-filtered Mem0 export prints unscoped_rate NOT ASSESSABLE with its reason and the verdict line says unscoped: NOT ASSESSABLE, never a zero.',
    { body: filtered, expectCode: 'report', check: checkThat((a) => a.verdict_line.includes('unscoped: NOT ASSESSABLE'), 'verdict NA') });
  aud('audit-mem0-scope-filtered-string-true-ignored',
    'A scope_filtered value that is the string "true" rather than the boolean true does not trigger the gate, so unscoped_rate is graded.',
    { body: ex('mem0', 'full_text', [ft('f-1', 'Prefers aisle seats', { user_id: 'alice' }), ft('f-2', 'Has a dog')], { manifest: { scope_filtered: 'true' } }), expectCode: 'report', check: checkThat((a) => a.factors.unscoped_rate.rate === '50.0%', 'graded') });

  aud('audit-graphiti-two-groups-demonstrated',
    'A Graphiti export with two distinct group_id scopes demonstrates multi-scope, so unscoped_rate is graded with distinct_scopes 2.',
    { body: ex('zep_graphiti', 'full_text', [ft('g-1', 'Acme HQ_IN Oslo', { group_id: 'g1' }), ft('g-2', 'Acme CEO Kari', { group_id: 'g2' }), ft('g-3', 'Acme FOUNDED 1999')]), expectCode: 'report', check: checkThat((a) => a.factors.unscoped_rate.distinct_scopes === 2 && a.factors.unscoped_rate.rate === '33.3%', 'graded') });
  aud('audit-graphiti-single-group-manifest-multi-scope',
    'A Graphiti export with one group but manifest.multi_scope true passes the multi-scope gate and grades unscoped_rate.',
    { body: ex('zep_graphiti', 'hash_only', [ho('g-1', 'Acme HQ_IN Oslo', { group_id: 'g1' }), ho('g-2', 'Acme CEO Kari', { group_id: 'g1' }), ho('g-3', 'Acme FOUNDED 1999')], { manifest: { multi_scope: true } }), expectCode: 'report', check: checkThat((a) => a.factors.unscoped_rate.status === 'ASSESSABLE' && a.factors.unscoped_rate.distinct_scopes === 1, 'graded') });
  const graphitiSingle = ex('zep_graphiti', 'full_text', [ft('g-1', 'Acme HQ_IN Oslo', { group_id: 'g1' }), ft('g-2', 'Acme HQ_IN Oslo', { group_id: 'g1' }), ft('g-3', 'Acme FOUNDED 1999')]);
  aud('audit-graphiti-single-group-not-demonstrated',
    'A Graphiti export with a single group and no manifest.multi_scope prints unscoped_rate NOT ASSESSABLE (multi-scope not demonstrated) while clusters and duplicates stay graded.',
    { body: graphitiSingle, expectCode: 'report', check: checkThat((a) => a.factors.unscoped_rate.reason === R.multiScope && a.factors.cross_scope_clusters.status === 'ASSESSABLE', 'gate') });
  aud('audit-graphiti-one-group-scope-presence-distinct-scopes',
    'A Graphiti export whose every record is in one group prints scope_presence 100.0% with distinct_scopes 1 while unscoped_rate is NOT ASSESSABLE (multi-scope not demonstrated).',
    {
      body: ex('zep_graphiti', 'full_text', [ft('g-1', 'Acme HQ_IN Oslo', { group_id: 'g1' }), ft('g-2', 'Acme CEO Kari', { group_id: 'g1' })]),
      expectCode: 'report',
      check: checkThat((a) => deepEqual(a.factors.scope_presence, { status: 'ASSESSABLE', rate: '100.0%', scoped: 2, eligible: 2, distinct_scopes: 1 }) && a.factors.unscoped_rate.reason === R.multiScope, 'one group'),
    });
  pre('precheck-graphiti-single-group-not-demonstrated',
    'The pre-check resolves unscoped_rate NOT ASSESSABLE (multi-scope not demonstrated) for a single-group Graphiti export without computing any factor.',
    { body: graphitiSingle, expectCode: 'precheck' });
  const zepCloudSingle = ex('zep_graphiti', 'full_text', [
    ft('z-1', 'Prefers morning deliveries', { graph_id: 'user-42' }), ft('z-2', 'Prefers morning deliveries', { graph_id: 'user-42' }), ft('z-3', 'Lives in Ghent', { graph_id: 'user-42' }),
  ], { variant: 'zep_cloud' });
  aud('audit-zep-cloud-single-graph',
    'A Zep Cloud export of a single graph prints unscoped_rate NOT ASSESSABLE by construction and cross_scope_clusters NOT ASSESSABLE intra-graph, while duplicates are graded.',
    { body: zepCloudSingle, expectCode: 'report', check: checkThat((a) => a.factors.unscoped_rate.reason === R.singleScope && a.factors.cross_scope_clusters.reason === R.singleGraph && a.factors.duplicates.excess === 1, 'gates') });
  pre('precheck-zep-cloud-single-graph',
    'The pre-check resolves both Zep Cloud single-graph gates for a one-graph export.',
    { body: zepCloudSingle, expectCode: 'precheck' });
  aud('audit-zep-cloud-single-graph-manifest-multi-scope',
    'manifest.multi_scope true opens the Zep Cloud unscoped_rate gate but not the cross-graph condition, which needs two distinct graphs in the submission.',
    { body: { ...zepCloudSingle, manifest: { multi_scope: true } }, expectCode: 'report', check: checkThat((a) => a.factors.unscoped_rate.status === 'ASSESSABLE' && a.factors.cross_scope_clusters.reason === R.singleGraph, 'gates') });
  aud('audit-zep-cloud-multi-graph',
    'A Zep Cloud submission of several graphs grades clusters across graphs: identical facts in two user graphs form one undeclared cluster.',
    { body: ex('zep_graphiti', 'hash_only', [ho('z-1', 'Prefers morning deliveries', { graph_id: 'user-1' }), ho('z-2', 'Prefers morning deliveries', { graph_id: 'user-2' }), ho('z-3', 'Lives in Ghent', { graph_id: 'user-2' })], { variant: 'zep_cloud' }), expectCode: 'report', check: checkClusters('undeclared') });

  const genericKeyed = ex('generic', 'full_text', [
    ft('k-1', 'Quota is 10 GB', { tenant: 'acme', project: 'p1', source: 'billing' }),
    ft('k-2', 'Quota is 10 GB', { tenant: 'globex', project: 'p1', source: 'billing' }),
    ft('k-3', 'Quota is 10 GB', { tenant: 'acme', project: 'p1', source: 'billing' }),
    ft('k-4', 'Region is eu-west', { project: 'p2', source: 'infra' }),
    ft('k-5', 'Region is eu-west', { tenant: '', source: 'infra' }),
  ], { manifest: { declared_scope_keys: ['tenant', 'project'] } });
  aud('audit-generic-declared-keys',
    'A generic export with declared scope keys tenant and project grades scope_presence, unscoped_rate and cross_scope_clusters over exactly those keys, joined in declared order.',
    { body: genericKeyed, expectCode: 'report', check: all(checkClusters('undeclared'), checkThat((a) => a.coverage.scope_keys_source === 'manifest' && a.factors.duplicates.excess === 1, 'keys')) });
  pre('precheck-generic-declared-keys',
    'The pre-check of a generic export with declared scope keys resolves the three scope factors ASSESSABLE and scope_conflicts NOT ASSESSABLE for the family.',
    { body: genericKeyed, expectCode: 'precheck' });
  aud('audit-generic-no-declared-keys-ignores-scope-like-fields',
    'A generic export without declared keys grades only duplicates: user_id, scope and source members are never read as scope, and scope_conflicts is NOT ASSESSABLE for the family.',
    { body: ex('generic', 'full_text', [ft('c-1', 'Uses SSO', { user_id: 'alice', scope: 'tenant-a', source: 'okta' }), ft('c-2', 'Uses SSO', { user_id: 'bob', scope: 'tenant-b', source: 'okta' }), ft('c-3', 'Uses SSO', { user_id: 'bob', scope: 'tenant-b' })]), expectCode: 'report', check: checkThat((a) => a.factors.cross_scope_clusters.reason === R.genericNoKey && a.factors.duplicates.excess === 2, 'no keys') });
  aud('audit-generic-declared-keys-empty-array',
    'A generic export whose manifest declares an empty declared_scope_keys array declares no key, so the three scope factors are NOT ASSESSABLE.',
    { body: ex('generic', 'hash_only', [ho('c-1', 'Uses SSO', { scope: 'tenant-a' }), ho('c-2', 'Uses SSO', { scope: 'tenant-b' })], { manifest: { declared_scope_keys: [] } }), expectCode: 'report', check: checkThat((a) => a.factors.scope_presence.reason === R.genericNoKey, 'no keys') });

  // ============================================================ declared keys (A-4)

  aud('audit-mem0-declared-keys-replace-defaults',
    'manifest.declared_scope_keys ["user_id"] replaces the Mem0 default set, so agent_id is ignored for scope and an agent-only record is unscoped.',
    { body: ex('mem0', 'full_text', [ft('d-1', 'Uses metric units', { user_id: 'alice', agent_id: 'a1' }), ft('d-2', 'Uses metric units', { user_id: 'alice', agent_id: 'a2' }), ft('d-3', 'Prefers tea', { agent_id: 'a1' })], { manifest: { declared_scope_keys: ['user_id'] } }), expectCode: 'report', check: checkThat((a) => a.factors.unscoped_rate.unscoped === 1 && a.factors.cross_scope_clusters.candidates === 0 && a.factors.duplicates.excess === 1, 'replaced') });
  aud('audit-mem0-declared-keys-empty-array',
    'An empty declared_scope_keys on Mem0 declares no key: every record is unscoped (scope_presence 0.0%), no cluster forms and duplicates use the single unscoped partition.',
    { body: ex('mem0', 'full_text', [ft('d-1', 'Uses metric units', { user_id: 'alice' }), ft('d-2', 'Uses metric units', { user_id: 'bob' })], { manifest: { declared_scope_keys: [] } }), expectCode: 'report', check: checkThat((a) => a.factors.scope_presence.rate === '0.0%' && a.factors.duplicates.excess === 1, 'empty') });
  aud('audit-mem0-declared-keys-order-and-repeats',
    'Declared keys ["agent_id","user_id","agent_id"] keep the first occurrence, and the scope value joins present values in declared order for global_scopes matching.',
    { body: ex('mem0', 'full_text', [ft('d-1', 'Weekly digest on Mondays', { user_id: 'alice', agent_id: 'mailer' }), ft('d-2', 'Weekly digest on Mondays', { user_id: 'bob', agent_id: 'mailer' })], { manifest: { declared_scope_keys: ['agent_id', 'user_id', 'agent_id'], global_scopes: ['mailer|alice', 'mailer|bob', 'alice|mailer'] } }), expectCode: 'report', check: all(checkClusters('marked shared'), checkThat((a) => a.coverage.declared_but_absent.global_scopes === 1, 'absent')) });
  aud('audit-mem0-session-id-read-as-run-id',
    'A Mem0 session_id is read as run_id when run_id is absent, so records with the same session_id share the scope and a present run_id wins over session_id.',
    { body: ex('mem0', 'full_text', [ft('s-1', 'Asked for a refund', { session_id: 'sess-1' }), ft('s-2', 'Asked for a refund', { run_id: 'sess-1' }), ft('s-3', 'Asked for a refund', { run_id: 'run-2', session_id: 'sess-1' })]), expectCode: 'report', check: all(checkClusters('undeclared'), checkThat((a) => a.factors.duplicates.excess === 1, 'same scope')) });
  aud('audit-mem0-non-string-and-empty-key-values-ignored',
    'Scope key values that are empty strings, numbers, null or objects are not present, so such records are unscoped.',
    { body: ex('mem0', 'hash_only', [ho('n-1', 'Owns a bike', { user_id: '' }), ho('n-2', 'Owns a bike', { user_id: 42 }), ho('n-3', 'Owns a bike', { agent_id: null, app_id: { id: 'x' } }), ho('n-4', 'Owns a bike', { run_id: ['r1'] })]), expectCode: 'report', check: checkThat((a) => a.factors.unscoped_rate.rate === '100.0%' && a.factors.duplicates.excess === 3, 'unscoped') });
  aud('audit-mem0-different-key-sets-are-different-scopes',
    'Records sharing a value under different keys (user_id alice vs agent_id alice) are in different scopes, and a cluster whose copies carry different key sets is N5 ambiguous.',
    { body: ex('mem0', 'full_text', [ft('k-1', 'Timezone is CET', { user_id: 'alice', source: 'profile' }), ft('k-2', 'Timezone is CET', { agent_id: 'alice', source: 'profile' })]), expectCode: 'report', check: checkClusters(R.n5) });

  // A-4 reserved names: content, content_text, content_hash, hash, source,
  // score, grade, band, composite are dropped from the declared keys.
  const noScopeKeyPrinted = (k) => (a) => {
    const f = a.factors.cross_scope_clusters;
    const scopes = [...(f.clusters || []).flatMap((c) => [...c.members, ...c.global_members]).map((m) => m.scope), ...a.factors.duplicates.clusters.map((c) => c.scope)];
    return scopes.every((sc) => !isPlainObject(sc) || !hasOwn(sc, k));
  };
  aud('audit-generic-declared-keys-source-dropped',
    'Declared keys ["source","tenant","source"] drop the reserved name source (listed once in coverage.scope_keys_dropped) and grade the scope factors over tenant alone, so a source-only record is unscoped and scopes never print a source.',
    {
      body: ex('generic', 'full_text', [
        ft('k-1', 'Quota is 10 GB', { tenant: 'acme', source: 'billing' }),
        ft('k-2', 'Quota is 10 GB', { tenant: 'globex', source: 'billing' }),
        ft('k-3', 'Region is eu-west', { source: 'infra' }),
        ft('k-4', 'Region is eu-west', { tenant: 'acme', source: 'infra' }),
        ft('k-5', 'Region is eu-west', { tenant: 'acme', source: 'infra' }),
      ], { manifest: { declared_scope_keys: ['source', 'tenant', 'source'] } }),
      expectCode: 'report',
      check: all(checkClusters('undeclared'), checkThat((a) => deepEqual(a.coverage.scope_keys, ['tenant']) && deepEqual(a.coverage.scope_keys_dropped, ['source']) &&
        a.coverage.scope_keys_source === 'manifest' && a.factors.scope_presence.rate === '80.0%' && a.factors.unscoped_rate.distinct_scopes === 2 && a.factors.duplicates.excess === 1, 'source dropped'),
      checkThat(noScopeKeyPrinted('source'), 'no source in a scope')),
    });
  aud('audit-mem0-declared-keys-content-text-dropped',
    'Mem0 declared keys ["user_id","content_text"] drop content_text, so a record without user_id is unscoped rather than scoped by its own text, and no scope prints content.',
    {
      body: ex('mem0', 'full_text', [
        ft('d-1', 'Prefers green tea', { user_id: 'alice' }),
        ft('d-2', 'Prefers green tea', { user_id: 'bob' }),
        ft('d-3', 'Prefers black coffee', { agent_id: 'barista' }),
      ], { manifest: { declared_scope_keys: ['user_id', 'content_text'] } }),
      expectCode: 'report',
      check: all(checkClusters('undeclared'), checkThat((a) => deepEqual(a.coverage.scope_keys, ['user_id']) && deepEqual(a.coverage.scope_keys_dropped, ['content_text']) &&
        a.factors.unscoped_rate.unscoped === 1 && a.factors.scope_presence.distinct_scopes === 2, 'content_text dropped'),
      checkThat(noScopeKeyPrinted('content_text'), 'no content_text in a scope')),
    });
  const genericContentTextOnly = ex('generic', 'full_text', [
    ft('c-1', 'Uses SSO', { tenant: 'acme' }),
    ft('c-2', 'Uses SSO', { tenant: 'globex' }),
    ft('c-3', 'Uses MFA', { tenant: 'acme' }),
  ], { manifest: { declared_scope_keys: ['content_text'] } });
  aud('audit-generic-declared-keys-content-text-only-no-key',
    'A generic export declaring only ["content_text"] declares no scope key once the reserved name is dropped, so scope_presence, unscoped_rate and cross_scope_clusters are NOT ASSESSABLE (no scope key declared).',
    {
      body: genericContentTextOnly, expectCode: 'report',
      check: checkThat((a) => a.factors.scope_presence.reason === R.genericNoKey && a.factors.unscoped_rate.reason === R.genericNoKey && a.factors.cross_scope_clusters.reason === R.genericNoKey &&
        deepEqual(a.coverage.scope_keys, []) && deepEqual(a.coverage.scope_keys_dropped, ['content_text']) && a.coverage.scope_keys_source === 'manifest' && a.factors.duplicates.excess === 1, 'no key'),
    });
  pre('precheck-generic-declared-keys-content-text-only-no-key',
    'The pre-check of a generic export declaring only ["content_text"] resolves scope_presence and unscoped_rate NOT ASSESSABLE (no scope key declared), the reserved name being dropped.',
    { body: genericContentTextOnly, expectCode: 'precheck', check: checkThat((a) => a.factors.scope_presence.reason === R.genericNoKey && a.factors.unscoped_rate.reason === R.genericNoKey, 'no key') });
  // A-4 case rule: ASCII letters compared without case, every other
  // character exactly. `\u017Fource` (LATIN SMALL LETTER LONG S) is kept.
  const longSource = '\u017Fource';
  const orderCaseKeys = ['hash', 'tenant', 'grade', 'SCORE', 'composite', 'grade', 'Source', 'hash', longSource, 'source', 'content_hash', 'Source'];
  // Expected key lists from this module's own A-4 rule (exact-name dedupe, then drop).
  const orderCaseDeclared = [...new Set(orderCaseKeys)];
  const orderCaseKept = orderCaseDeclared.filter((k) => !isDroppedKey(k));
  const orderCaseDropped = orderCaseDeclared.filter((k) => isDroppedKey(k));
  assert(deepEqual(orderCaseKept, ['tenant', longSource]) && deepEqual(orderCaseDropped, ['hash', 'grade', 'SCORE', 'composite', 'Source', 'source', 'content_hash']), 'order-and-case key lists');
  aud('audit-generic-declared-keys-reserved-names-order-and-case',
    'Reserved names are dropped with ASCII letters compared without case and listed in declared order once each (hash, grade, SCORE, composite, Source, source, content_hash), while "\u017Fource" (U+017F) is not reserved and stays a scope key beside tenant, printed in the scopes of the records that carry it.',
    {
      body: ex('generic', 'hash_only', [
        ho('h-1', 'Plan is Team', { tenant: 't1', [longSource]: 'eu', Source: 'crm', hash: 'h1', grade: 'A', composite: 'x' }),
        ho('h-2', 'Plan is Team', { tenant: 't2', [longSource]: 'eu', Source: 'crm', SCORE: '9' }),
        ho('h-3', 'Plan is Free', { Source: 'crm', source: 'crm', SCORE: '7' }),
        ho('h-4', 'Plan is Free', { [longSource]: 'us', grade: 'A', hash: 'h4', composite: 'y' }),
        ho('h-5', 'Plan is Team', { tenant: 't1', [longSource]: 'eu', source: 'billing' }),
      ], { manifest: { declared_scope_keys: orderCaseKeys } }),
      expectCode: 'report',
      check: all(checkClusters('undeclared'), checkThat((a) => deepEqual(a.coverage.scope_keys, orderCaseKept) && deepEqual(a.coverage.scope_keys_dropped, orderCaseDropped) &&
        a.factors.scope_presence.rate === '80.0%' && a.factors.scope_presence.distinct_scopes === 3 && a.factors.duplicates.excess === 1, 'reserved names'),
      checkThat((a) => a.factors.duplicates.clusters.length === 1 && deepEqual(a.factors.duplicates.clusters[0].scope, { tenant: 't1', [longSource]: 'eu' }), 'long-s key printed'),
      ...['Source', 'source', 'SCORE', 'hash', 'grade', 'composite'].map((k) => checkThat(noScopeKeyPrinted(k), `no ${k} in a scope`))),
    });

  // ============================================================ markers M1..M4

  const pairMem0 = (a, b, more = {}, r = ft, text = 'Ships with DHL by default') =>
    ex('mem0', r === ft ? 'full_text' : 'hash_only', [r('a', text, { user_id: 'alice', ...a }), r('b', text, { user_id: 'bob', ...b })], more);

  aud('audit-m1-record-shared-true',
    'M1: shared true on every copy classifies the cluster marked shared, labelled declared shared by the operator, with a 100.0% marked share.',
    { body: pairMem0({ shared: true }, { shared: true }), expectCode: 'report', check: all(checkClusters('marked shared'), checkThat((a) => a.coverage.marked_share === '100.0%', 'share')) });
  aud('audit-m1-metadata-shared-true-hash-only',
    'M1 inside metadata (metadata.shared true) covers hash-only copies, which classify marked shared.',
    { body: pairMem0({ metadata: { shared: true } }, { metadata: { shared: true, category: 'ops' } }, {}, ho), expectCode: 'report', check: checkClusters('marked shared') });
  aud('audit-m1-sharing-global-record-and-metadata',
    'M1 as sharing "global" at record level on one copy and inside metadata on the other covers both copies.',
    { body: pairMem0({ sharing: 'global' }, { metadata: { sharing: 'global' } }), expectCode: 'report', check: checkClusters('marked shared') });
  aud('audit-m1-sharing-uppercase-not-a-marker',
    'sharing "GLOBAL" at record level and metadata sharing "Global" or visibility "shared" are not markers, so the cluster is undeclared.',
    { body: pairMem0({ sharing: 'GLOBAL' }, { metadata: { sharing: 'Global', visibility: 'shared' } }), expectCode: 'report', check: checkClusters('undeclared') });
  aud('audit-m1-shared-false-no-marker-undeclared',
    'shared false on both copies is an explicit non-sharing declaration with no marker, so the cluster is undeclared (B2).',
    { body: pairMem0({ shared: false }, { metadata: { shared: false } }), expectCode: 'report', check: checkClusters('undeclared') });
  aud('audit-annex-a7-example-partial-coverage',
    'The ANNEX A-7 example: copies alice with shared true and bob unmarked is N1 partial marker coverage, counted ambiguous.',
    { body: pairMem0({ shared: true }, {}), expectCode: 'report', check: all(checkClusters(R.n1), checkThat((a) => a.factors.cross_scope_clusters.ambiguous === 1 && a.verdict_line.includes('undeclared cross-scope clusters: 0'), 'ambiguous')) });

  aud('audit-m2-global-partition-member',
    'M2: a copy whose scope value is exactly "global" is listed in global_members, never classified, and the two other scopes form the cluster.',
    {
      body: ex('mem0', 'full_text', [ft('g', 'Office closes at 18:00', { user_id: 'global' }), ft('a', 'Office closes at 18:00', { user_id: 'alice' }), ft('b', 'Office closes at 18:00', { user_id: 'bob', shared: true }), ft('c', 'Office closes at 18:00', { user_id: 'carol', shared: true })]),
      expectCode: 'report', check: all(checkClusters(R.n1), checkThat((a) => a.factors.cross_scope_clusters.clusters[0].global_members.length === 1, 'global member')),
    });
  aud('audit-m2-global-plus-one-scope-no-cluster',
    'Identical content in the global partition and one other scope spans only one non-global scope and is not a candidate.',
    { body: ex('mem0', 'full_text', [ft('g', 'Office closes at 18:00', { user_id: 'global' }), ft('a', 'Office closes at 18:00', { user_id: 'alice' }), ft('g2', 'Office closes at 18:00', { user_id: 'global' })]), expectCode: 'report', check: checkThat((a) => a.factors.cross_scope_clusters.candidates === 0 && a.factors.duplicates.clusters[0].scope === 'global', 'no cluster') });
  aud('audit-m2-unreserved-global-lookalikes',
    'Scope values "GLOBAL", " global" and "shared" are not reserved: they are ordinary scopes and the cluster is undeclared with four distinct scopes.',
    { body: ex('mem0', 'full_text', [ft('u1', 'Office closes at 18:00', { user_id: 'GLOBAL' }), ft('u2', 'Office closes at 18:00', { user_id: ' global' }), ft('u3', 'Office closes at 18:00', { user_id: 'shared' }), ft('u4', 'Office closes at 18:00', { user_id: 'alice' })]), expectCode: 'report', check: all(checkClusters('undeclared'), checkThat((a) => a.factors.cross_scope_clusters.clusters[0].distinct_scopes === 4, 'four scopes')) });
  aud('audit-m2-global-joined-value-not-global',
    'A record with user_id "global" and agent_id "bot" has scope value "global|bot", which is not the reserved global partition.',
    { body: ex('mem0', 'full_text', [ft('x', 'Office closes at 18:00', { user_id: 'global', agent_id: 'bot' }), ft('y', 'Office closes at 18:00', { user_id: 'alice', agent_id: 'bot' })]), expectCode: 'report', check: checkThat((a) => a.factors.cross_scope_clusters.clusters[0].global_members.length === 0, 'not global') });

  aud('audit-m3a-global-scopes-with-absent-entries',
    'M3-a: copies whose scope values are in manifest.global_scopes are covered, and entries matching no record are counted as declared but absent.',
    { body: pairMem0({}, {}, { manifest: { global_scopes: ['alice', 'bob', 'dave', 'erin'] } }), expectCode: 'report', check: all(checkClusters('marked shared'), checkThat((a) => a.coverage.declared_but_absent.global_scopes === 2, 'absent')) });
  aud('audit-m3b-global-content-keys-full-text',
    'M3-b in full-text form: the exact content text in global_content_keys covers every copy; a near-identical entry is declared but absent.',
    { body: pairMem0({}, {}, { manifest: { global_content_keys: ['Ships with DHL by default', 'Ships with DHL by default '] } }), expectCode: 'report', check: all(checkClusters('marked shared'), checkThat((a) => a.coverage.declared_but_absent.global_content_keys === 1, 'absent')) });
  aud('audit-m3b-global-content-keys-hash-only',
    'M3-b in hash-only form: the submitted content_hash in global_content_keys covers every copy; an upper-cased hash is a different key, declared but absent.',
    { body: pairMem0({}, {}, { manifest: { global_content_keys: [md5('Ships with DHL by default'), md5('Ships with DHL by default').toUpperCase()] } }, ho), expectCode: 'report', check: all(checkClusters('marked shared'), checkThat((a) => a.coverage.declared_but_absent.global_content_keys === 1, 'absent')) });
  aud('audit-m3c-global-claim-ids',
    'M3-c: copies whose ids are in global_claim_ids are covered; an id absent from the submission is counted declared but absent.',
    { body: pairMem0({}, {}, { manifest: { global_claim_ids: ['a', 'b', 'zz-missing'] } }), expectCode: 'report', check: all(checkClusters('marked shared'), checkThat((a) => a.coverage.declared_but_absent.global_claim_ids === 1, 'absent')) });
  aud('audit-m3-mixed-markers-cover-all-copies',
    'Different markers on different copies (M1, M3-a, M3-c) still cover every copy, so the three-scope cluster is marked shared.',
    { body: ex('mem0', 'full_text', [ft('a', 'Invoices are due net 30', { user_id: 'alice', shared: true }), ft('b', 'Invoices are due net 30', { user_id: 'bob' }), ft('c', 'Invoices are due net 30', { user_id: 'carol' })], { manifest: { global_scopes: ['bob'], global_claim_ids: ['c'], private_scopes: ['nobody'] } }), expectCode: 'report', check: all(checkClusters('marked shared'), checkThat((a) => a.coverage.declared_but_absent.private_scopes === 1, 'private absent')) });

  const S = { source: 'kb' }; // agreeing sources: B5 runs in every reading
  const gen = (records, manifest = {}, r = ft) => ex('generic', r === ft ? 'full_text' : 'hash_only', records, { manifest: { declared_scope_keys: ['scope'], ...manifest } });
  const T = 'Policy P-7 applies to all tenants';
  aud('audit-m4-origin-resolves',
    'M4: a copy whose origin_claim_id names a root record with the same content is covered; with the origin covered by M1 the cluster is marked shared.',
    { body: gen([ft('root', T, { scope: 'tenant-a', shared: true }), ft('copy', T, { scope: 'tenant-b', origin_claim_id: 'root' })]), expectCode: 'report', check: checkClusters('marked shared') });
  aud('audit-m4-origin-scope-matches',
    'M4 with origin_scope equal to the origin record\'s actual scope value resolves, and the origin carrying global_claim_ids covers the root copy.',
    { body: gen([ft('root', T, { scope: 'tenant-a' }), ft('copy', T, { scope: 'tenant-b', origin_claim_id: 'root', origin_scope: 'tenant-a' })], { global_claim_ids: ['root'] }), expectCode: 'report', check: checkClusters('marked shared') });
  aud('audit-m4-chain-to-root',
    'M4 chains are followed to their root: c3 -> c2 -> c1 resolves in two steps within a three-member cluster, and c1 carries M1.',
    { body: gen([ft('c1', T, { scope: 'tenant-a', shared: true }), ft('c2', T, { scope: 'tenant-b', origin_claim_id: 'c1' }), ft('c3', T, { scope: 'tenant-c', origin_claim_id: 'c2' })]), expectCode: 'report', check: checkClusters('marked shared') });
  aud('audit-m4-chain-to-absent-global-claim-id',
    'An M4 chain ending at an id in global_claim_ids resolves even though that record is absent from the submission; the absent id is counted.',
    { body: gen([ft('x', T, { scope: 'tenant-a', origin_claim_id: 'canon-1' }), ft('y', T, { scope: 'tenant-b', origin_claim_id: 'x' })], { global_claim_ids: ['canon-1'] }), expectCode: 'report', check: all(checkClusters('marked shared'), checkThat((a) => a.coverage.declared_but_absent.global_claim_ids === 1, 'absent')) });
  aud('audit-m4-missing-origin-n2',
    'N2: an origin_claim_id naming a record absent from the submission and not in global_claim_ids does not resolve, so the cluster is NOT ASSESSABLE, not unmarked.',
    { body: gen([ft('x', T, { scope: 'tenant-a', shared: true, ...S }), ft('y', T, { scope: 'tenant-b', origin_claim_id: 'gone', ...S })]), expectCode: 'report', check: checkClusters(R.n2) });
  aud('audit-m4-content-mismatch-n2',
    'N2: an origin whose content differs from the copy\'s (even by a trailing space) does not resolve.',
    { body: gen([ft('o', T + ' ', { scope: 'tenant-z' }), ft('x', T, { scope: 'tenant-a', origin_claim_id: 'o', ...S }), ft('y', T, { scope: 'tenant-b', shared: true, ...S })]), expectCode: 'report', check: checkClusters(R.n2) });
  aud('audit-m4-origin-scope-mismatch-n2',
    'N2: origin_scope differing from the origin record\'s actual scope value does not resolve.',
    { body: gen([ft('o', T, { scope: 'tenant-a', shared: true, ...S }), ft('x', T, { scope: 'tenant-b', origin_claim_id: 'o', origin_scope: 'tenant-c', ...S })]), expectCode: 'report', check: checkClusters(R.n2) });
  aud('audit-m4-cycle-n2',
    'N2: origin pointers forming a cycle with no root in global_claim_ids do not resolve.',
    { body: gen([ft('p', T, { scope: 'tenant-a', origin_claim_id: 'q', ...S }), ft('q', T, { scope: 'tenant-b', origin_claim_id: 'p', ...S })]), expectCode: 'report', check: checkClusters(R.n2) });
  aud('audit-m4-depth-within-bound-via-non-live-origins',
    'An M4 chain through superseded records of the same content resolves in two steps, equal to the two-member cluster size (non-live origins count as chain links).',
    {
      body: gen([
        ft('old-2', T, { scope: 'tenant-a', state: 'superseded' }),
        ft('old-1', T, { scope: 'tenant-a', origin_claim_id: 'old-2', state: 'superseded' }),
        ft('x', T, { scope: 'tenant-a', origin_claim_id: 'old-1' }),
        ft('y', T, { scope: 'tenant-b', shared: true }),
      ]),
      expectCode: 'report', check: checkClusters('marked shared'),
    });
  aud('audit-m4-depth-bound-exceeded-n2',
    'An M4 chain needing three steps in a two-member cluster exceeds the depth bound and does not resolve (N2).',
    {
      body: gen([
        ft('old-3', T, { scope: 'tenant-a', state: 'superseded' }),
        ft('old-2', T, { scope: 'tenant-a', origin_claim_id: 'old-3', state: 'superseded' }),
        ft('old-1', T, { scope: 'tenant-a', origin_claim_id: 'old-2', state: 'superseded' }),
        ft('x', T, { scope: 'tenant-a', origin_claim_id: 'old-1', ...S }),
        ft('y', T, { scope: 'tenant-b', shared: true, ...S }),
      ]),
      expectCode: 'report', check: checkClusters(R.n2),
    });
  aud('audit-m4-outside-cluster-counts-in-marked-share',
    'A resolving M4 pointer on a record outside any cluster (its origin is in the global partition) still counts in the marked share of live records.',
    { body: gen([ft('g', T, { scope: 'global' }), ft('a', T, { scope: 'tenant-a', origin_claim_id: 'g' }), ft('b', 'Unrelated note', { scope: 'tenant-b' })]), expectCode: 'report', check: checkThat((a) => a.coverage.marked_live === 1 && a.coverage.marked_share === '33.3%' && a.factors.cross_scope_clusters.candidates === 0, 'share') });

  // ============================================================ decisions N4 > N3 > N2 > N5 > B5 > N1 > B1 > B2

  aud('audit-n4-malformed-marker-forms',
    'N4 in each form: shared "yes", metadata.shared 1, an empty origin_claim_id and a non-string origin_scope each make their cluster NOT ASSESSABLE (malformed sharing marker), outranking partial coverage.',
    {
      body: ex('mem0', 'full_text', [
        ft('a1', 'Fact one', { user_id: 'alice', shared: 'yes', ...S }), ft('a2', 'Fact one', { user_id: 'bob', shared: true, ...S }),
        ft('b1', 'Fact two', { user_id: 'alice', metadata: { shared: 1 }, ...S }), ft('b2', 'Fact two', { user_id: 'bob', ...S }),
        ft('c1', 'Fact three', { user_id: 'alice', origin_claim_id: '', ...S }), ft('c2', 'Fact three', { user_id: 'bob', shared: true, ...S }),
        ft('d1', 'Fact four', { user_id: 'alice', origin_claim_id: 'd2', origin_scope: ['bob'], ...S }), ft('d2', 'Fact four', { user_id: 'bob', shared: true, ...S }),
      ]),
      expectCode: 'report', check: checkClusters(R.n4, R.n4, R.n4, R.n4),
    });
  aud('audit-n4-origin-claim-id-number-beats-n3',
    'N4 outranks N3: a numeric origin_claim_id on one copy and a contradictory declaration on the other give malformed sharing marker.',
    { body: pairMem0({ origin_claim_id: 7, ...S }, { shared: true, metadata: { shared: false }, ...S }), expectCode: 'report', check: checkClusters(R.n4) });
  aud('audit-n3-shared-true-and-metadata-false',
    'N3: a copy with shared true at record level and shared false in metadata is a contradictory declaration.',
    { body: pairMem0({ shared: true, metadata: { shared: false }, ...S }, { shared: true, ...S }), expectCode: 'report', check: checkClusters(R.n3) });
  aud('audit-n3-global-and-private-scopes',
    'N3: a copy scope value listed in both global_scopes and private_scopes is contradictory.',
    { body: pairMem0(S, S, { manifest: { global_scopes: ['alice', 'bob'], private_scopes: ['bob'] } }), expectCode: 'report', check: checkClusters(R.n3) });
  aud('audit-n3-marker-with-private-scope-beats-n2',
    'N3 outranks N2: a copy marked by global_claim_ids in a private scope plus a broken pointer on the other copy give contradictory sharing declarations.',
    { body: pairMem0(S, { origin_claim_id: 'nowhere', ...S }, { manifest: { global_claim_ids: ['a'], private_scopes: ['alice'] } }), expectCode: 'report', check: checkClusters(R.n3) });
  aud('audit-n2-beats-n5',
    'N2 outranks N5: a broken pointer in a cluster whose copies also carry different key sets gives origin pointer does not resolve.',
    { body: ex('mem0', 'full_text', [ft('a', 'Ships with DHL by default', { user_id: 'alice', origin_claim_id: 'nope', ...S }), ft('b', 'Ships with DHL by default', { agent_id: 'bot', shared: true, ...S })]), expectCode: 'report', check: checkClusters(R.n2) });
  aud('audit-n5-beats-b5-and-n1',
    'N5 outranks B5 and N1: copies with different declared key sets, disagreeing sources and partial coverage give copies carry different sets of declared scope keys.',
    { body: ex('mem0', 'full_text', [ft('a', 'Ships with DHL by default', { user_id: 'alice', source: 'crm', shared: true }), ft('b', 'Ships with DHL by default', { user_id: 'bob', run_id: 'r1', source: 'kb' })]), expectCode: 'report', check: checkClusters(R.n5) });
  aud('audit-n5-global-member-key-set-ignored',
    'The global member is not a copy, so its different key set does not trigger N5 among copies that share one key set.',
    { body: ex('generic', 'full_text', [ft('g', 'Holiday calendar 2027', { scope: 'global' }), ft('a', 'Holiday calendar 2027', { tenant: 't1', scope: 'eu' }), ft('b', 'Holiday calendar 2027', { tenant: 't2', scope: 'eu' })], { manifest: { declared_scope_keys: ['tenant', 'scope'] } }), expectCode: 'report', check: checkClusters('undeclared') });

  aud('audit-b5-agreement-with-coverage-b1',
    'B5 agreement plus full coverage leaves B1 standing: identical sources are never a marker, the markers decide marked shared.',
    { body: pairMem0({ shared: true, source: 'handbook.pdf' }, { shared: true, source: 'handbook.pdf' }), expectCode: 'report', check: all(checkClusters('marked shared'), checkThat((a) => a.coverage.b5_not_run.count === 0, 'ran')) });
  aud('audit-b5-agreement-without-coverage-b2',
    'B5 agreement without coverage leaves B2: identical sources, identical timestamps and generic-looking content are non-markers, so the cluster is undeclared.',
    { body: pairMem0({ source: 'handbook.pdf', created_at: TS }, { source: 'handbook.pdf', created_at: TS }, {}, ft, 'OK'), expectCode: 'report', check: all(checkClusters('undeclared'), checkThat((a) => !('distinct_sources' in a.factors.cross_scope_clusters.clusters[0]), 'no distinct_sources')) });
  aud('audit-b5-disagreement-with-coverage-veto',
    'B5 veto: disagreeing sources on fully covered copies classify NOT ASSESSABLE (attribution conflict) and refer the copies to scope_conflicts.',
    { body: pairMem0({ shared: true, source: 'crm' }, { shared: true, source: 'helpdesk' }), expectCode: 'report', check: all(checkClusters(R.b5), checkThat((a) => deepEqual(a.factors.cross_scope_clusters.clusters[0].referred_to_scope_conflicts, ['a', 'b']), 'referred')) });
  aud('audit-b5-disagreement-without-coverage-b2-distinct-sources',
    'B5 disagreement without coverage leaves B2 undeclared and prints the distinct source count (3), never the source values.',
    { body: ex('mem0', 'full_text', [ft('a', 'Ships with DHL by default', { user_id: 'alice', source: 'crm' }), ft('b', 'Ships with DHL by default', { user_id: 'bob', source: 'helpdesk' }), ft('c', 'Ships with DHL by default', { user_id: 'carol', source: 'crm' }), ft('d', 'Ships with DHL by default', { user_id: 'dave', source: 'email' })]), expectCode: 'report', check: all(checkClusters('undeclared'), checkThat((a) => a.factors.cross_scope_clusters.clusters[0].distinct_sources === 3, 'distinct')) });
  aud('audit-b5-disagreement-partial-coverage-n1',
    'Disagreeing sources with partial coverage are not a veto: the decision continues to N1 partial marker coverage.',
    { body: pairMem0({ shared: true, source: 'crm' }, { source: 'helpdesk' }), expectCode: 'report', check: checkClusters(R.n1) });
  aud('audit-b5-not-run-source-partly-omitted',
    'B5 does not run when a copy has no string source: the cluster index is listed in coverage.b5_not_run and B2 prints no distinct_sources.',
    {
      body: ex('mem0', 'full_text', [
        ft('x1', 'Prefers SMS', { user_id: 'u1', source: 'crm' }), ft('x2', 'Prefers SMS', { user_id: 'u2', source: 'kb' }),
        ft('y1', 'Prefers phone calls', { user_id: 'u1', source: 'crm' }), ft('y2', 'Prefers phone calls', { user_id: 'u2', source: 17 }),
        ft('z1', 'Prefers letters', { user_id: 'u1', shared: true }), ft('z2', 'Prefers letters', { user_id: 'u3', shared: true }),
      ]),
      expectCode: 'report',
      check: all(checkClusters('undeclared', 'undeclared', 'marked shared'), checkThat((a) => deepEqual(a.coverage.b5_not_run, { count: 2, cluster_indexes: [1, 2] }), 'b5 not run')),
    });
  aud('audit-b1-and-b2-counts-in-verdict',
    'Several clusters are classified independently and ordered by their earliest member; the verdict line counts only the undeclared ones.',
    {
      body: ex('mem0', 'hash_only', [
        ho('r1', 'fact one', { user_id: 'u1' }), ho('r2', 'fact two', { user_id: 'u1', shared: true }), ho('r3', 'fact three', { user_id: 'u1' }),
        ho('r4', 'fact one', { user_id: 'u2' }), ho('r5', 'fact two', { user_id: 'u2', shared: true }), ho('r6', 'fact three', { user_id: 'u3' }),
        ho('r7', 'fact four', { user_id: 'u1' }),
      ]),
      expectCode: 'report',
      check: all(checkClusters('undeclared', 'marked shared', 'undeclared'), checkThat((a) => a.verdict_line.includes('undeclared cross-scope clusters: 2'), 'verdict')),
    });

  // ============================================================ liveness (A-5) and inert markers

  aud('audit-liveness-each-kind',
    'Each liveness rule removes a record: supersedes (string and array), replaced_by, superseded_by, is_deleted true, lifecycle_state deleted, state expired and superseded.',
    {
      body: ex('mem0', 'full_text', [
        ft('l-01', 'Fact A', { user_id: 'u1' }), ft('l-02', 'Fact B', { user_id: 'u1' }), ft('l-03', 'Fact C', { user_id: 'u1' }),
        ft('l-04', 'Fact D', { user_id: 'u1', supersedes: 'l-01' }), ft('l-05', 'Fact E', { user_id: 'u1', supersedes: ['l-02', 'l-03', 'missing'] }),
        ft('l-06', 'Fact F', { user_id: 'u1', replaced_by: 'l-04' }), ft('l-07', 'Fact G', { user_id: 'u1', superseded_by: 'l-05' }),
        ft('l-08', 'Fact H', { user_id: 'u1', is_deleted: true }), ft('l-09', 'Fact I', { user_id: 'u1', lifecycle_state: 'deleted' }),
        ft('l-10', 'Fact J', { user_id: 'u1', state: 'expired' }), ft('l-11', 'Fact K', { user_id: 'u1', lifecycle_state: 'superseded' }),
        ft('l-12', 'Fact L', { user_id: 'u1' }),
      ]),
      expectCode: 'report', check: checkThat((a) => a.live_records === 3 && a.factors.scope_presence.eligible === 12, 'live 3'),
    });
  aud('audit-liveness-near-values-stay-live',
    'Values that only resemble non-liveness stay live: replaced_by null, is_deleted "true" or 1, state "Superseded", lifecycle_state "archived", invalid_at and expired_at null.',
    {
      body: ex('mem0', 'full_text', [
        ft('k-1', 'Fact A', { user_id: 'u1', replaced_by: null }), ft('k-2', 'Fact A', { user_id: 'u1', is_deleted: 'true' }),
        ft('k-3', 'Fact A', { user_id: 'u1', is_deleted: 1 }), ft('k-4', 'Fact A', { user_id: 'u1', state: 'Superseded' }),
        ft('k-5', 'Fact A', { user_id: 'u1', lifecycle_state: 'archived', invalid_at: null, expired_at: null, superseded_by: null }),
      ]),
      expectCode: 'report', check: checkThat((a) => a.live_records === 5 && a.factors.duplicates.excess === 4, 'all live'),
    });
  aud('audit-graphiti-split-state-anomalies',
    'Graphiti edges with exactly one of invalid_at and expired_at set are split-state anomalies (not live, listed in coverage); both set is not live without an anomaly.',
    {
      body: ex('zep_graphiti', 'full_text', [
        ft('e-1', 'Kim WORKS_AT Initech', { group_id: 'g1', invalid_at: '2026-01-01T00:00:00Z', expired_at: null }),
        ft('e-2', 'Kim WORKS_AT Initech', { group_id: 'g2', expired_at: '2026-01-02T00:00:00Z' }),
        ft('e-3', 'Kim WORKS_AT Initech', { group_id: 'g3', invalid_at: '2026-01-01T00:00:00Z', expired_at: '2026-01-02T00:00:00Z' }),
        ft('e-4', 'Kim WORKS_AT Initrode', { group_id: 'g1', invalid_at: null, expired_at: null }),
        ft('e-5', 'Kim WORKS_AT Initech', { group_id: 'g4' }),
      ]),
      expectCode: 'report',
      check: checkThat((a) => a.live_records === 2 && deepEqual(a.coverage.split_state_anomalies, { count: 2, record_ids: ['e-1', 'e-2'] }) && a.factors.cross_scope_clusters.candidates === 0, 'anomalies'),
    });
  aud('audit-superseded-records-never-cluster',
    'Superseded copies never form or join a cluster: identical content in three scopes where two copies are superseded gives no candidate.',
    { body: ex('mem0', 'full_text', [ft('a', 'Rate limit is 100 rps', { user_id: 'alice' }), ft('b', 'Rate limit is 100 rps', { user_id: 'bob', replaced_by: 'b2' }), ft('c', 'Rate limit is 100 rps', { user_id: 'carol', lifecycle_state: 'superseded' }), ft('b2', 'Rate limit is 200 rps', { user_id: 'bob' })]), expectCode: 'report', check: checkThat((a) => a.factors.cross_scope_clusters.candidates === 0, 'no cluster') });
  aud('audit-markers-on-non-live-records-inert',
    'Markers on non-live records are inert: they neither cover the live copies nor count in the marked share, so the live cluster is undeclared.',
    { body: ex('mem0', 'full_text', [ft('a', 'Rate limit is 100 rps', { user_id: 'alice' }), ft('b', 'Rate limit is 100 rps', { user_id: 'bob' }), ft('c', 'Rate limit is 100 rps', { user_id: 'carol', shared: true, is_deleted: true }), ft('d', 'Rate limit is 100 rps', { user_id: 'dave', sharing: 'global', replaced_by: 'x' })], { manifest: { global_claim_ids: ['c'] } }), expectCode: 'report', check: all(checkClusters('undeclared'), checkThat((a) => a.coverage.marked_live === 0 && a.coverage.marked_share === '0.0%', 'inert')) });
  aud('audit-generic-contested-heads',
    'Generic heads with state pending are contested: live, listed in coverage, and left out of duplicate groups while staying in the live denominator.',
    {
      body: ex('generic', 'full_text', [
        ft('h-1', 'Owner is team-blue', { source: 'cmdb' }), ft('h-2', 'Owner is team-blue', { source: 'cmdb', state: 'pending' }),
        ft('h-3', 'Owner is team-blue', { source: 'cmdb', state: 'pending' }), ft('h-4', 'Owner is team-blue', { source: 'cmdb' }),
        ft('h-5', 'Owner is team-red', { source: 'cmdb', state: 'pending', supersedes: 'h-9' }), ft('h-6', 'Owner is team-green', { state: 'pending', is_deleted: true }),
      ]),
      expectCode: 'report',
      check: checkThat((a) => deepEqual(a.coverage.contested_heads, { count: 3, record_ids: ['h-2', 'h-3', 'h-5'] }) && a.factors.duplicates.excess === 1 && a.factors.duplicates.live_records === 5, 'contested'),
    });
  aud('audit-liveness-self-supersede-stays-live',
    'A record whose own supersedes names its own id (as a string, or inside an array that also names another record) is not made not-live by it, so it stays live and counts in duplicates.',
    {
      body: ex('generic', 'full_text', [
        ft('s1', 'Renewal date is 1 March', { supersedes: 's1' }),
        ft('s2', 'Renewal date is 1 March'),
        ft('t0', 'Owner is team-blue'),
        ft('t1', 'Owner is team-red', { supersedes: ['t1', 't0'] }),
      ]),
      expectCode: 'report',
      check: checkThat((a) => a.live_records === 3 && a.factors.duplicates.excess === 1 && deepEqual(a.factors.duplicates.clusters[0].record_ids, ['s1', 's2']), 'self-supersede live'),
    });
  pre('precheck-liveness-self-supersede-stays-live',
    'The pre-check counts a lone self-superseding record as live.',
    { body: ex('generic', 'hash_only', [ho('s1', 'Renewal date is 1 March', { supersedes: 's1' })]), expectCode: 'precheck', check: checkThat((a) => a.live_records === 1, 'live') });
  aud('audit-liveness-self-supersede-and-superseded-by-another',
    'A self-superseding record that another record also supersedes (string or array form) is not live: only another record\'s supersedes counts, and it does.',
    {
      body: ex('mem0', 'full_text', [
        ft('s1', 'Lives in Lisbon', { user_id: 'u1', supersedes: 's1' }),
        ft('s1b', 'Lives in Porto', { user_id: 'u1', supersedes: 's1' }),
        ft('u1', 'Works remotely', { user_id: 'u2', supersedes: ['u1'] }),
        ft('u2', 'Works from the office', { user_id: 'u2', supersedes: ['x-9', 'u1'] }),
        ft('v1', 'Lives in Porto', { user_id: 'u1' }),
      ]),
      expectCode: 'report',
      check: checkThat((a) => a.live_records === 3 && a.factors.duplicates.excess === 1 && deepEqual(a.factors.duplicates.clusters[0].record_ids, ['s1b', 'v1']), 'superseded by another'),
    });
  aud('audit-pending-state-not-contested-outside-generic',
    'state pending is a contested head only in the generic family: a Mem0 record with state pending is an ordinary live record counted in duplicates.',
    { body: ex('mem0', 'full_text', [ft('p-1', 'Owner is team-blue', { user_id: 'u1', state: 'pending' }), ft('p-2', 'Owner is team-blue', { user_id: 'u1' })]), expectCode: 'report', check: checkThat((a) => a.coverage.contested_heads.count === 0 && a.factors.duplicates.excess === 1, 'not contested') });

  // ============================================================ Letta (L-1..L-4)

  const L = 'Customer prefers Spanish';
  aud('audit-letta-shared-block-one-record-not-cluster',
    'L-1: one block attached to three agents is one record in a scope set of three and never a cross-scope cluster by itself.',
    { body: ex('letta', 'full_text', [ft('blk-1', L, { label: 'human', attached_to: ['agent-c', 'agent-a', 'agent-b'] }), ft('blk-2', 'Other block', { label: 'notes', attached_to: ['agent-a'] })]), expectCode: 'report', check: checkThat((a) => a.factors.cross_scope_clusters.candidates === 0 && a.factors.unscoped_rate.distinct_scopes === 2, 'no cluster') });
  aud('audit-letta-overlapping-sets-not-cluster',
    'L-2: two copies whose scope sets overlap ({a,b} and {b,c}) are not a candidate; scope sets print sorted.',
    { body: ex('letta', 'full_text', [ft('blk-1', L, { attached_to: ['agent-b', 'agent-a'] }), ft('blk-2', L, { attached_to: ['agent-c', 'agent-b'] })]), expectCode: 'report', check: checkThat((a) => a.factors.cross_scope_clusters.candidates === 0, 'overlap') });
  aud('audit-letta-disjoint-sets-cluster',
    'L-2: a content key with two records of disjoint scope sets is a candidate and every live scoped record of that key is a member, including an overlapping one.',
    { body: ex('letta', 'hash_only', [ho('blk-1', L, { attached_to: ['agent-a', 'agent-b'] }), ho('blk-2', L, { attached_to: ['agent-b'] }), ho('blk-3', L, { attached_to: ['agent-c'] })]), expectCode: 'report', check: all(checkClusters('undeclared'), checkThat((a) => a.factors.cross_scope_clusters.clusters[0].members.length === 3 && a.factors.cross_scope_clusters.clusters[0].distinct_scopes === 3, 'members')) });
  aud('audit-letta-same-set-duplicates',
    'Letta duplicates partition by scope set: the same content in two blocks with equal sets (in any order) is intra-scope excess, not a cluster.',
    { body: ex('letta', 'full_text', [ft('blk-1', L, { attached_to: ['agent-a', 'agent-b'] }), ft('blk-2', L, { attached_to: ['agent-b', 'agent-a', ''] })]), expectCode: 'report', check: checkThat((a) => a.factors.duplicates.excess === 1 && a.factors.cross_scope_clusters.candidates === 0, 'dup') });
  aud('audit-letta-templates-excluded',
    'L-4: template blocks are excluded from the scope_presence and unscoped_rate denominators and never join a cluster, and are counted in coverage.',
    {
      body: ex('letta', 'full_text', [
        ft('tpl-1', L, { is_template: true, template_name: 'support' }), ft('tpl-2', L, { is_template: true, attached_to: ['agent-y'] }),
        ft('blk-1', L, { attached_to: ['agent-z'] }), ft('blk-2', 'Plan: Free', { attached_to: ['agent-y'] }), ft('blk-3', 'Plan: Pro'),
      ]),
      expectCode: 'report', check: checkThat((a) => a.coverage.templates === 2 && a.factors.scope_presence.eligible === 3 && a.factors.cross_scope_clusters.candidates === 0, 'templates'),
    });
  aud('audit-letta-template-lineage-template-id',
    'L-4: copies in disjoint agents sharing one template_id are a template-lineage cluster, counted separately and never as undeclared.',
    { body: ex('letta', 'full_text', [ft('blk-1', L, { template_id: 'tpl-support', attached_to: ['agent-a'] }), ft('blk-2', L, { template_id: 'tpl-support', attached_to: ['agent-b'] })]), expectCode: 'report', check: all(checkClusters('template lineage'), checkThat((a) => a.factors.cross_scope_clusters.template_lineage === 1 && a.factors.cross_scope_clusters.undeclared === 0, 'lineage')) });
  aud('audit-letta-template-lineage-base-template-id',
    'L-4: copies sharing one base_template_id (with differing template_id) are template lineage.',
    { body: ex('letta', 'hash_only', [ho('blk-1', L, { template_id: 't-1', base_template_id: 'base-9', attached_to: ['agent-a'] }), ho('blk-2', L, { template_id: 't-2', base_template_id: 'base-9', attached_to: ['agent-b'] })]), expectCode: 'report', check: checkClusters('template lineage') });
  aud('audit-letta-mixed-lineage-undeclared',
    'Copies that do not all share one template lineage (one copy has none) are not template lineage, so the cluster is undeclared.',
    { body: ex('letta', 'full_text', [ft('blk-1', L, { template_id: 'tpl-support', attached_to: ['agent-a'] }), ft('blk-2', L, { attached_to: ['agent-b'] }), ft('blk-3', L, { template_id: '', attached_to: ['agent-c'] })]), expectCode: 'report', check: checkClusters('undeclared') });
  aud('audit-letta-marked-beats-template-lineage',
    'Template lineage is decided after N1: lineage copies partially marked shared are N1 partial marker coverage.',
    { body: ex('letta', 'full_text', [ft('blk-1', L, { template_id: 'tpl-support', attached_to: ['agent-a'], shared: true }), ft('blk-2', L, { template_id: 'tpl-support', attached_to: ['agent-b'] })]), expectCode: 'report', check: checkClusters(R.n1) });
  aud('audit-letta-fully-marked-lineage-is-template-lineage',
    'Template lineage precedes B1: lineage copies that are all marked shared still classify template lineage.',
    { body: ex('letta', 'full_text', [ft('blk-1', L, { template_id: 'tpl-support', attached_to: ['agent-a'], shared: true }), ft('blk-2', L, { template_id: 'tpl-support', attached_to: ['agent-b'], metadata: { shared: true } })]), expectCode: 'report', check: checkClusters('template lineage') });
  aud('audit-letta-source-passages-excluded',
    'Source passages (source_passage true, or file_id with no archive resolution) are excluded from the scope_presence and unscoped_rate denominators and counted in coverage.',
    {
      body: ex('letta', 'full_text', [
        ft('sp-1', 'Warranty: 2 years', { source_passage: true, source_id: 's1', attached_to: ['agent-a'] }), ft('sp-2', 'Warranty: 2 years', { file_id: 'f-1', file_name: 'w.pdf' }),
        ft('ap-1', 'Refunds within 30 days', { archive_id: 'ar-1', attached_to: ['agent-a'] }), ft('ap-2', 'Escalate to tier 2', { archive_id: 'ar-2' }),
        ft('fp-1', 'Returns policy', { file_id: 'f-2', attached_to: ['agent-b'] }), ft('np-1', 'Shipping times', { file_id: null }),
      ]),
      expectCode: 'report', check: checkThat((a) => a.coverage.source_passages === 2 && a.factors.scope_presence.eligible === 4 && a.factors.unscoped_rate.rate === '50.0%', 'source passages'),
    });
  aud('audit-letta-attached-to-not-array',
    'A Letta attached_to that is a string or holds only empty strings is an empty scope set, so the record is unscoped (an orphan).',
    { body: ex('letta', 'hash_only', [ho('o-1', 'Orphan note', { attached_to: 'agent-a' }), ho('o-2', 'Orphan note', { attached_to: ['', 5] }), ho('o-3', 'Attached note', { attached_to: ['agent-a'] })]), expectCode: 'report', check: checkThat((a) => a.factors.unscoped_rate.unscoped === 2 && a.factors.duplicates.excess === 1, 'orphans') });
  const lettaZero = ex('letta', 'full_text', [ft('tpl-1', 'Persona template', { is_template: true }), ft('sp-1', 'Manual page 3', { file_id: 'f-1' }), ft('sp-2', 'Manual page 3', { source_passage: true })]);
  aud('audit-letta-scope-presence-distinct-scopes',
    'Letta scope_presence carries distinct_scopes, the number of different scope sets (set order ignored), the same count unscoped_rate prints.',
    {
      body: ex('letta', 'full_text', [
        ft('blk-1', 'Tone: friendly', { attached_to: ['agent-a'] }), ft('blk-2', 'Plan: Pro', { attached_to: ['agent-b', 'agent-a'] }),
        ft('blk-3', 'Region: EU', { attached_to: ['agent-a', 'agent-b'] }), ft('blk-4', 'Tone: formal', { attached_to: ['agent-c'] }),
        ft('psg-1', 'Escalate billing disputes', { archive_id: 'arch-x' }),
      ]),
      expectCode: 'report',
      check: checkThat((a) => a.factors.scope_presence.rate === '80.0%' && a.factors.scope_presence.distinct_scopes === 3 && a.factors.unscoped_rate.distinct_scopes === 3, 'letta distinct'),
    });
  aud('audit-letta-zero-eligible-zero-denominator',
    'A Letta export of only template blocks and source passages has no eligible record: scope_presence and unscoped_rate are NOT ASSESSABLE (zero denominator), never 0.0%.',
    { body: lettaZero, expectCode: 'report', check: checkThat((a) => a.factors.scope_presence.reason === R.zero && a.verdict_line.includes('unscoped: NOT ASSESSABLE'), 'zero') });
  pre('precheck-letta-zero-eligible-zero-denominator',
    'The pre-check resolves scope_presence and unscoped_rate NOT ASSESSABLE (zero denominator) for a Letta export with no eligible record.',
    { body: lettaZero, expectCode: 'precheck' });

  // ============================================================ scope_conflicts (A-8)

  aud('audit-conflicts-each-sub-check',
    'scope_conflicts prints each sub-check with its count and record ids and the total, over live and non-live records, with a record counting in several sub-checks.',
    {
      body: ex('zep_graphiti', 'full_text', [
        ft('c-1', 'f1', { group_id: 'g1', attributed_scope: 'g1', history_scope: 'g1', episode_group_ids: ['g1'], endpoint_group_ids: ['g1', 'g1'] }),
        ft('c-2', 'f2', { group_id: 'g1', attributed_scope: 'g2', episode_group_ids: ['g1', 'g2'] }),
        ft('c-3', 'f3', { group_id: 'g2', storage_scope: 'g9', attributed_scope: 'g2', history_scope: 'g9' }),
        ft('c-4', 'f4', { group_id: 'g2', history_scope: 'g1', endpoint_group_ids: ['g2', 'g3'], invalid_at: TS, expired_at: TS }),
        ft('c-5', 'f5', { attributed_scope: 'g1', episode_group_ids: ['g1'] }),
        ft('c-6', 'f6', { group_id: 'g3', attributed_scope: null, history_scope: null, episode_group_ids: [], endpoint_group_ids: [] }),
      ]),
      expectCode: 'report',
      check: checkThat((a) => {
        const s = a.factors.scope_conflicts;
        return deepEqual(s.attributed_vs_storage.record_ids, ['c-2', 'c-3', 'c-5']) && deepEqual(s.history_vs_storage.record_ids, ['c-4']) &&
          deepEqual(s.episode_groups.record_ids, ['c-2', 'c-5']) && deepEqual(s.endpoint_groups.record_ids, ['c-4']) && s.total === 7;
      }, 'sub-checks'),
    });
  aud('audit-conflicts-mem0-joined-scope-value',
    'For Mem0 the effective storage scope is the joined scope value, so attributed_scope "alice|r1" matches user_id alice with run_id r1 and "alice" conflicts.',
    { body: ex('mem0', 'full_text', [ft('a', 'x', { user_id: 'alice', run_id: 'r1', attributed_scope: 'alice|r1' }), ft('b', 'y', { user_id: 'alice', run_id: 'r1', attributed_scope: 'alice' }), ft('c', 'z', { user_id: 'alice', history_scope: 'alice', storage_scope: 5 })]), expectCode: 'report', check: checkThat((a) => a.factors.scope_conflicts.total === 1, 'one conflict') });
  aud('audit-conflicts-empty-arrays-assessable-zero',
    'An export whose only checked fields are empty episode_group_ids arrays is assessable with zero conflicts (fields present), not NOT ASSESSABLE.',
    { body: ex('zep_graphiti', 'hash_only', [ho('e-1', 'x', { group_id: 'g1', episode_group_ids: [] }), ho('e-2', 'y', { group_id: 'g2' })]), expectCode: 'report', check: checkThat((a) => a.factors.scope_conflicts.status === 'ASSESSABLE' && a.factors.scope_conflicts.total === 0 && a.verdict_line.includes('conflicts: 0'), 'zero') });
  aud('audit-conflicts-null-fields-not-assessable',
    'Checked fields that are all null make scope_conflicts NOT ASSESSABLE with its reason, and the verdict line prints conflicts: NOT ASSESSABLE, never zero.',
    { body: ex('mem0', 'full_text', [ft('a', 'x', { user_id: 'u1', attributed_scope: null, history_scope: null, episode_group_ids: null }), ft('b', 'y', { user_id: 'u2' })]), expectCode: 'report', check: checkThat((a) => a.factors.scope_conflicts.reason === R.noFields && a.verdict_line.includes('conflicts: NOT ASSESSABLE'), 'NA') });
  aud('audit-conflicts-letta-fields-not-assessable',
    'Letta scope_conflicts is NOT ASSESSABLE for the family even when records carry attributed_scope and episode_group_ids.',
    { body: ex('letta', 'full_text', [ft('b-1', 'x', { attached_to: ['agent-a'], attributed_scope: 'agent-b', episode_group_ids: ['g'] })]), expectCode: 'report', check: checkThat((a) => a.factors.scope_conflicts.reason === R.noFieldFamily, 'NA') });
  pre('precheck-conflicts-generic-fields-not-assessable',
    'The pre-check resolves generic scope_conflicts NOT ASSESSABLE for the family even with declared keys and attributed_scope fields.',
    { body: ex('generic', 'full_text', [ft('c-1', 'x', { tenant: 't1', attributed_scope: 't2' })], { manifest: { declared_scope_keys: ['tenant'] } }), expectCode: 'precheck', check: checkThat((a) => a.factors.scope_conflicts.reason === R.noFieldFamily, 'NA') });
  aud('audit-conflicts-b5-veto-referral',
    'A B5-vetoed Graphiti cluster lists its copies as referred_to_scope_conflicts while scope_conflicts reports the attribution mismatches on the same records.',
    {
      body: ex('zep_graphiti', 'full_text', [
        ft('e-1', 'Dana ROLE admin', { group_id: 'g1', source: 'ldap', shared: true, attributed_scope: 'g1' }),
        ft('e-2', 'Dana ROLE admin', { group_id: 'g2', source: 'hr', shared: true, attributed_scope: 'g1' }),
      ]),
      expectCode: 'report', check: all(checkClusters(R.b5), checkThat((a) => deepEqual(a.factors.scope_conflicts.attributed_vs_storage.record_ids, ['e-2']), 'conflict')),
    });

  // ============================================================ duplicates (A-9), exactness

  aud('audit-duplicates-several-partitions',
    'Duplicates count per scope partition, including the unscoped and global partitions: excess is the sum of max(0, n - 1) with clusters ordered by earliest member.',
    {
      body: ex('mem0', 'full_text', [
        ft('d-01', 'Likes hiking', { user_id: 'u1', ...S }), ft('d-02', 'Likes hiking', { user_id: 'u2', ...S }), ft('d-03', 'Likes hiking', { user_id: 'u1', ...S }),
        ft('d-04', 'Needs invoices in PDF'), ft('d-05', 'Needs invoices in PDF'), ft('d-06', 'Needs invoices in PDF'),
        ft('d-07', 'Support is 24/7', { user_id: 'global' }), ft('d-08', 'Support is 24/7', { user_id: 'global' }),
        ft('d-09', 'Likes hiking', { user_id: 'u1', agent_id: 'a1', ...S }), ft('d-10', 'Likes hiking', { user_id: 'u1', is_deleted: true }),
        ft('d-11', 'Likes hiking', { user_id: 'u1', ...S }),
      ]),
      expectCode: 'report',
      check: checkThat((a) => a.factors.duplicates.excess === 5 && a.factors.duplicates.clusters.length === 3 && a.factors.duplicates.rate === '50.0%', 'dups'),
    });
  aud('audit-duplicates-marked-shared-sole-copy-zero',
    'No double counting: a marked-shared cluster whose copies are each the sole live copy in their scope contributes zero duplicates.',
    { body: ex('mem0', 'hash_only', [ho('a', 'Company holiday list', { user_id: 'u1', shared: true }), ho('b', 'Company holiday list', { user_id: 'u2', shared: true }), ho('c', 'Company holiday list', { user_id: 'u3', shared: true })]), expectCode: 'report', check: checkThat((a) => a.factors.duplicates.excess === 0 && a.factors.cross_scope_clusters.marked_shared === 1, 'zero') });
  aud('audit-duplicates-marker-never-excuses-intra-scope',
    'A marker never excuses intra-scope duplication: two marked copies in one scope still count one excess, and the cross-scope spread is classified once.',
    { body: ex('mem0', 'full_text', [ft('a1', 'Company holiday list', { user_id: 'u1', shared: true }), ft('a2', 'Company holiday list', { user_id: 'u1', shared: true }), ft('b', 'Company holiday list', { user_id: 'u2', shared: true })]), expectCode: 'report', check: checkThat((a) => a.factors.duplicates.excess === 1 && a.factors.cross_scope_clusters.candidates === 1, 'excess') });
  aud('audit-near-duplicates-never-clustered',
    'Exactness: content differing by one space, letter case or Unicode normalisation form is different content, never clustered and never a duplicate.',
    {
      body: ex('mem0', 'full_text', [
        ft('n-1', 'Prefers café seating', { user_id: 'u1' }), ft('n-2', 'Prefers café  seating', { user_id: 'u2' }),
        ft('n-3', 'prefers café seating', { user_id: 'u3' }), ft('n-4', 'Prefers cafe\u0301 seating', { user_id: 'u4' }),
        ft('n-5', 'Prefers café seating ', { user_id: 'u1' }), ft('n-6', 'Prefers café seating', { user_id: 'u1', metadata: { note: 'same text, same scope' } }),
      ]),
      expectCode: 'report', check: checkThat((a) => a.factors.cross_scope_clusters.candidates === 0 && a.factors.duplicates.excess === 1, 'exact'),
    });
  aud('audit-near-duplicate-hashes-never-clustered',
    'In hash-only form the supplied hash is taken as-is: hashes differing in letter case are different keys, never clustered nor duplicated.',
    { body: ex('mem0', 'hash_only', [{ id: 'h-1', content_hash: 'ab12cd34', user_id: 'u1' }, { id: 'h-2', content_hash: 'AB12CD34', user_id: 'u2' }, { id: 'h-3', content_hash: 'ab12cd34 ', user_id: 'u1' }]), expectCode: 'report', check: checkThat((a) => a.factors.cross_scope_clusters.candidates === 0 && a.factors.duplicates.excess === 0, 'exact') });
  aud('audit-generic-unscoped-single-partition',
    'The generic scopeless form uses the single unnamed partition: duplicates print scope null and source diversity never splits a partition.',
    { body: ex('generic', 'hash_only', [ho('c-1', 'Quota 5 GB', { source: 'a' }), ho('c-2', 'Quota 5 GB', { source: 'b' }), ho('c-3', 'Quota 5 GB', { source: 'c' }), ho('c-4', 'Quota 6 GB', { source: 'a' })]), expectCode: 'report', check: checkThat((a) => a.factors.duplicates.excess === 2 && a.factors.duplicates.clusters[0].scope === null, 'unscoped') });

  // ============================================================ rounding, zero denominators

  {
    // 1 excess over 16 live = 6.25% -> 6.3%; 15 scoped of 16 eligible = 93.75% -> 93.8%; 1/16 unscoped -> 6.3%.
    const recs = [];
    for (let i = 1; i <= 15; i++) recs.push(ho(`q-${String(i).padStart(2, '0')}`, `Preference ${i}`, { user_id: `u${i % 5}` }));
    recs.push(ho('q-16', 'Preference 1', { user_id: 'u1' }));
    recs[2] = ho('q-03', 'Preference 3', {});
    aud('audit-rates-six-point-two-five-rounds-up',
      'Exact half-up rounding: 15/16 scoped prints 93.8%, 1/16 unscoped prints 6.3% and one duplicate over 16 live records prints 6.3%, never the binary-float 6.2%.',
      { body: ex('mem0', 'hash_only', recs), expectCode: 'report', check: checkThat((a) => a.factors.scope_presence.rate === '93.8%' && a.factors.unscoped_rate.rate === '6.3%' && a.factors.duplicates.rate === '6.3%', 'half up') });
  }
  const allDead = ex('mem0', 'full_text', [ft('x-1', 'Old fact', { user_id: 'u1', is_deleted: true }), ft('x-2', 'Old fact', { user_id: 'u2', replaced_by: 'x-9' })]);
  aud('audit-all-records-non-live-zero-denominator',
    'With no live record, duplicates and cross_scope_clusters (whose marked share divides by live records) are NOT ASSESSABLE (zero denominator), and the verdict line never prints them as zero.',
    { body: allDead, expectCode: 'report', check: checkThat((a) => a.factors.duplicates.reason === R.zero && a.verdict_line.includes('live duplicates: NOT ASSESSABLE'), 'zero') });
  pre('precheck-all-records-non-live-zero-denominator',
    'The pre-check of an export with no live record reports live_records 0 and resolves duplicates and cross_scope_clusters NOT ASSESSABLE (zero denominator).',
    { body: allDead, expectCode: 'precheck' });

  // ============================================================ refusals (A-3)

  const okRec = (i) => ({ id: `r-${i}`, content_text: `fact ${i}` });
  const okBody = { family: 'mem0', form: 'full_text', records: [okRec(1), okRec(2)] };
  aud('audit-refusal-body-not-json',
    'A body that is not JSON text is refused export_required with no facts.',
    { body_text: 'family=mem0&form=full_text', expectCode: 'export_required' });
  pre('precheck-refusal-body-array',
    'A JSON array wrapping an export is refused export_required on the pre-check.',
    { body: [okBody], expectCode: 'export_required' });
  aud('audit-refusal-body-lone-surrogate',
    'JSON text whose string holds an escaped lone surrogate is refused export_required (ANNEX A-2).',
    { body_text: '{"family":"mem0","form":"full_text","records":[{"id":"r-1","content_text":"bad \\ud800 text"}]}', expectCode: 'export_required' });
  aud('audit-refusal-family-missing',
    'An export without family is refused family_required.',
    { body: { form: 'full_text', records: [okRec(1)] }, expectCode: 'family_required' });
  pre('precheck-refusal-family-wrong-case',
    'A family of "Mem0" is not one of the four published families (exact match) and is refused family_unknown.',
    { body: { ...okBody, family: 'Mem0' }, expectCode: 'family_unknown' });
  aud('audit-refusal-family-not-string',
    'A family that is present but not a string is refused family_unknown.',
    { body: { ...okBody, family: ['mem0'] }, expectCode: 'family_unknown' });
  aud('audit-refusal-form-missing',
    'An export without form is refused form_invalid.',
    { body: { family: 'letta', records: [okRec(1)] }, expectCode: 'form_invalid' });
  pre('precheck-refusal-form-unknown',
    'A form of "hash" is refused form_invalid on the pre-check.',
    { body: { ...okBody, form: 'hash' }, expectCode: 'form_invalid' });
  aud('audit-refusal-records-missing',
    'An export without records is refused records_required.',
    { body: { family: 'generic', form: 'hash_only' }, expectCode: 'records_required' });
  aud('audit-refusal-records-empty',
    'An empty records array is refused records_empty.',
    { body: { ...okBody, records: [] }, expectCode: 'records_empty' });
  {
    const many = (n, f) => Array.from({ length: n }, (_, i) => ({ id: `r${i}`, content_hash: md5(`fact ${i < 997 ? i : i - 990}`), user_id: `u${i % 10}`, ...(f ? f(i) : {}) }));
    const ok1000 = { family: 'mem0', form: 'hash_only', records: many(1000) };
    aud('audit-record-count-1000-accepted',
      'Exactly 1,000 records (the cap) are accepted and audited; three contents repeat inside one scope (excess 3, 0.3%).',
      { body: ok1000, expectCode: 'report', check: checkThat((a) => a.factors.duplicates.rate === '0.3%', 'rate') });
    pre('precheck-record-count-1000-accepted',
      'Exactly 1,000 records (the cap) are accepted by the pre-check.',
      { body: ok1000, expectCode: 'precheck' });
    aud('audit-refusal-record-count-1001',
      'A submission of 1,001 records is refused record_count_cap with the cap and the record count, before any per-record rule.',
      { body: { family: 'mem0', form: 'hash_only', records: many(1001) }, expectCode: 'record_count_cap' });
    const bad = many(1001);
    bad[500] = 'not a record';
    aud('audit-order-record-count-cap-beats-record-not-object',
      'A 1,001-record submission containing a non-object record is refused record_count_cap, the earlier rule.',
      { body: { family: 'mem0', form: 'hash_only', records: bad }, expectCode: 'record_count_cap' });
  }
  aud('audit-refusal-record-not-object',
    'A record that is an array is refused record_not_object with its index.',
    { body: { ...okBody, records: [okRec(1), okRec(2), [okRec(3)]] }, expectCode: 'record_not_object', check: checkThat((a) => a.error.record_index === 2, 'index') });
  aud('audit-refusal-record-id-missing',
    'A record without id is refused record_id_required with its index.',
    { body: { ...okBody, records: [okRec(1), { content_text: 'no id' }] }, expectCode: 'record_id_required' });
  pre('precheck-refusal-record-id-number',
    'A numeric record id is not a string and is refused record_id_required.',
    { body: { ...okBody, records: [{ id: 7, content_text: 'x' }] }, expectCode: 'record_id_required' });
  aud('audit-refusal-record-id-duplicate',
    'A duplicated record id is refused record_id_duplicate naming the later record\'s index.',
    { body: { ...okBody, records: [okRec(1), okRec(2), okRec(3), { id: 'r-2', content_text: 'again' }] }, expectCode: 'record_id_duplicate', check: checkThat((a) => a.error.record_index === 3, 'later') });
  aud('audit-record-id-empty-string-accepted',
    'An empty-string record id is a string and is accepted; ids are printed as submitted.',
    { body: { family: 'mem0', form: 'full_text', records: [{ id: '', content_text: 'Same', user_id: 'u1' }, { id: 'r-1', content_text: 'Same', user_id: 'u1' }] }, expectCode: 'report', check: checkThat((a) => deepEqual(a.factors.duplicates.clusters[0].record_ids, ['', 'r-1']), 'ids') });
  aud('audit-refusal-content-text-missing',
    'A full-text record carrying only content_hash is refused content_text_required.',
    { body: { ...okBody, records: [okRec(1), { id: 'r-2', content_hash: 'abc' }] }, expectCode: 'content_text_required' });
  aud('audit-content-text-empty-string-accepted',
    'An empty content_text is a string exactly as submitted and is accepted; two empty texts in one scope are duplicates.',
    { body: { family: 'mem0', form: 'full_text', records: [{ id: 'r-1', content_text: '', user_id: 'u1' }, { id: 'r-2', content_text: '', user_id: 'u1' }] }, expectCode: 'report', check: checkThat((a) => a.factors.duplicates.excess === 1, 'dup') });
  aud('audit-refusal-content-hash-empty',
    'A hash-only record whose content_hash is empty is refused content_hash_required.',
    { body: { family: 'zep_graphiti', form: 'hash_only', records: [{ id: 'e-1', content_hash: 'a1' }, { id: 'e-2', content_hash: '' }] }, expectCode: 'content_hash_required' });
  pre('precheck-refusal-content-hash-missing',
    'A hash-only record carrying content_text but no content_hash is refused content_hash_required on the pre-check.',
    { body: { family: 'letta', form: 'hash_only', records: [{ id: 'b-1', content_text: 'plain' }] }, expectCode: 'content_hash_required' });
  aud('audit-refusal-manifest-array',
    'A manifest that is an array is refused manifest_invalid.',
    { body: { ...okBody, manifest: [{ declared_scope_keys: ['user_id'] }] }, expectCode: 'manifest_invalid' });
  aud('audit-manifest-null-is-absent',
    'A null manifest is treated as absent and the family default keys apply.',
    { body: { ...okBody, manifest: null }, expectCode: 'report', check: checkThat((a) => a.coverage.scope_keys_source === 'family default', 'default') });
  aud('audit-refusal-declared-scope-keys-string',
    'declared_scope_keys given as a string is refused declared_scope_keys_invalid.',
    { body: { ...okBody, manifest: { declared_scope_keys: 'user_id' } }, expectCode: 'declared_scope_keys_invalid' });
  pre('precheck-refusal-declared-scope-keys-mixed',
    'declared_scope_keys holding a non-string entry is refused declared_scope_keys_invalid on the pre-check.',
    { body: { ...okBody, manifest: { declared_scope_keys: ['user_id', 5] } }, expectCode: 'declared_scope_keys_invalid' });
  aud('audit-refusal-variant-of-other-family',
    'A variant published for another family (graphiti on mem0) is refused variant_unknown.',
    { body: { ...okBody, variant: 'graphiti' }, expectCode: 'variant_unknown' });
  pre('precheck-refusal-variant-not-string',
    'A variant that is not a string is refused variant_unknown.',
    { body: { ...okBody, family: 'generic', variant: 1 }, expectCode: 'variant_unknown' });
  // rule order
  aud('audit-order-family-unknown-beats-form-invalid',
    'An unknown family and an invalid form are refused family_unknown, the earlier rule.',
    { body: { family: 'chroma', form: 'jsonl', records: [] }, expectCode: 'family_unknown' });
  aud('audit-order-records-empty-beats-manifest-invalid',
    'An empty records array and an invalid manifest are refused records_empty, the earlier rule.',
    { body: { ...okBody, records: [], manifest: 'x' }, expectCode: 'records_empty' });
  aud('audit-order-record-not-object-beats-earlier-id-missing',
    'A record without id at index 0 and a non-object record at index 3 are refused record_not_object at index 3: each rule runs over every record before the next rule.',
    { body: { ...okBody, records: [{ content_text: 'no id' }, okRec(1), okRec(2), null] }, expectCode: 'record_not_object', check: checkThat((a) => a.error.record_index === 3, 'index') });
  aud('audit-order-id-duplicate-beats-earlier-content-missing',
    'A record missing content_text at index 0 and a duplicated id at index 2 are refused record_id_duplicate at index 2.',
    { body: { ...okBody, records: [{ id: 'r-0' }, okRec(1), okRec(1)] }, expectCode: 'record_id_duplicate', check: checkThat((a) => a.error.record_index === 2, 'index') });
  aud('audit-order-content-hash-beats-manifest-and-variant',
    'A missing content_hash, an array manifest and an unknown variant are refused content_hash_required, the earliest rule.',
    { body: { family: 'mem0', form: 'hash_only', variant: 'cloud', manifest: [], records: [{ id: 'r-1', content_hash: 'a' }, { id: 'r-2' }] }, expectCode: 'content_hash_required', check: checkThat((a) => a.error.record_index === 1, 'index') });
  aud('audit-order-manifest-invalid-beats-variant-unknown',
    'A string manifest and an unknown variant are refused manifest_invalid, the earlier rule.',
    { body: { ...okBody, variant: 'enterprise', manifest: 'global' }, expectCode: 'manifest_invalid' });
  pre('precheck-order-declared-keys-beats-variant-unknown',
    'Invalid declared_scope_keys and an unknown variant are refused declared_scope_keys_invalid, the earlier rule.',
    { body: { ...okBody, family: 'zep_graphiti', variant: 'zep', manifest: { declared_scope_keys: [['group_id']] } }, expectCode: 'declared_scope_keys_invalid' });
  aud('audit-unknown-members-and-caller-ignored',
    'Unknown top-level, manifest and record members and a caller member on the paid route are ignored.',
    { body: { ...okBody, caller: 'not-a-wallet', exported_at: TS, manifest: { note: 'x', retention_days: 30 }, records: [{ ...okRec(1), user_id: 'u1', extra: { a: 1 } }] }, expectCode: 'report' });

  // ============================================================ body cap (host pre-gate), 404

  {
    const recs = [];
    for (let i = 0; i < 200; i++) recs.push({ id: `mem-${String(i).padStart(3, '0')}`, content_text: `Preference number ${i % 190} for the account`, user_id: `user-${i % 7}`, created_at: TS });
    const compact = JSON.stringify({ family: 'mem0', form: 'full_text', records: recs });
    const n = utf8Length(compact);
    assert(n < CAP.body, 'body-cap base fits');
    const exact = compact + ' '.repeat(CAP.body - n);
    const over = exact + ' ';
    assert(utf8Length(exact) === CAP.body && utf8Length(over) === CAP.body + 1, 'body-cap sizes');
    aud('audit-body-262144-bytes-accepted',
      'A request body of exactly 262,144 bytes (a compact export padded with spaces) passes the body cap and is audited.',
      { body_text: exact, expectCode: 'report' });
    aud('audit-body-262145-bytes-refused',
      'A request body of 262,145 bytes (one over the cap) is refused 413 body_bytes_cap naming the cap, before parsing.',
      { body_text: over, expectCode: 'body_bytes_cap' });
    pre('precheck-body-262145-bytes-refused',
      'A pre-check body of 262,145 bytes is refused 413 body_bytes_cap by the pre-gate.',
      { body_text: over, expectCode: 'body_bytes_cap' });
  }

  addCase(`/${service}/analyse`, 'post-analyse-not-covered',
    'A POST to an op this service does not offer answers 404 with the static body NOT COVERED.',
    { body: okBody, expectCode: 'NOT COVERED' });

  return { cases };
}

// ---------------------------------------------------------------- self-tests

// The ANNEX's own examples, checked against this implementation before any
// case is written, and the refusal table checked against the ANNEX text.
function selfTest({ analyse, verdictLine, validate, annexText, criteria, UNDECLARED_LABEL }) {
  // Rounding (DESIGN.md: exact half up).
  assert(pct(1, 3) === '33.3%' && pct(2, 3) === '66.7%' && pct(0, 5) === '0.0%' && pct(1, 16) === '6.3%' && pct(5, 5) === '100.0%' && pct(1, 400) === '0.3%' && pct(3, 1000) === '0.3%', 'pct');
  assert(pct(1, 8) === '12.5%' && pct(15, 16) === '93.8%' && pct(1, 2000) === '0.1%' && pct(1, 2001) === '0.0%', 'pct half');

  // A-3 table: every code, status and message as the ANNEX prints them.
  const rows = [...annexText.matchAll(/^\| `([a-z_0-9]+)` \| (\d{3}) \| `([^`]+)` \|/gm)];
  assert(rows.length === Object.keys(REFUSALS).length, 'ANNEX refusal table row count');
  rows.forEach((m, i) => {
    const code = m[1];
    assert(Object.keys(REFUSALS)[i] === code, 'ANNEX refusal order ' + code);
    assert(REFUSALS[code].status === Number(m[2]) && REFUSALS[code].message === m[3], 'ANNEX refusal text ' + code);
  });
  // Every reason string the ANNEX fixes appears in it verbatim.
  const flat = annexText.replace(/\s+/g, ' ');
  for (const reason of Object.values(R)) assert(flat.includes('`' + reason + '`'), 'ANNEX reason ' + reason);
  assert(annexText.includes('"label": "declared shared by the operator"'), 'ANNEX marked label');
  assert(annexText.includes(UNDECLARED_LABEL), 'ANNEX undeclared label');

  // A-1 report example.
  const body = {
    family: 'mem0', form: 'full_text', records: [
      { id: 'm1', content_text: 'same', user_id: 'alice' }, { id: 'm2', content_text: 'same', user_id: 'bob' },
      { id: 'm3', content_text: 'x' }, { id: 'm4', content_text: 'y', user_id: 'alice', replaced_by: 'm9' },
    ],
  };
  assert(validate(body) === null, 'A-1 body valid');
  const a = analyse(body);
  assert(a.records === 4 && a.liveRecords === 3, 'A-1 counts');
  assert(deepEqual(a.F.scope_presence, { status: 'ASSESSABLE', rate: '75.0%', scoped: 3, eligible: 4, distinct_scopes: 2 }), 'A-1 scope_presence');
  assert(deepEqual(a.F.unscoped_rate, { status: 'ASSESSABLE', rate: '25.0%', unscoped: 1, eligible: 4, distinct_scopes: 2 }), 'A-1 unscoped_rate');
  assert(deepEqual(a.F.cross_scope_clusters, {
    status: 'ASSESSABLE', candidates: 1, marked_shared: 0, undeclared: 1, ambiguous: 0, template_lineage: 0,
    marked_live: 0, live_records: 3, marked_share: '0.0%',
    clusters: [{
      members: [{ id: 'm1', scope: { user_id: 'alice' } }, { id: 'm2', scope: { user_id: 'bob' } }],
      global_members: [], distinct_scopes: 2, classification: 'undeclared', label: UNDECLARED_LABEL,
    }],
  }), 'A-1 clusters');
  assert(deepEqual(a.F.scope_conflicts, { status: NA, reason: R.noFields }), 'A-1 conflicts');
  assert(deepEqual(a.F.duplicates, { status: 'ASSESSABLE', excess: 0, live_records: 3, rate: '0.0%', clusters: [] }), 'A-1 duplicates');
  assert(deepEqual(a.coverage, {
    scope_keys: ['user_id', 'agent_id', 'app_id', 'run_id'], scope_keys_source: 'family default', scope_keys_dropped: [],
    marked_live: 0, live_records: 3, marked_share: '0.0%',
    declared_but_absent: { global_scopes: 0, global_content_keys: 0, global_claim_ids: 0, private_scopes: 0 },
    split_state_anomalies: { count: 0, record_ids: [] }, contested_heads: { count: 0, record_ids: [] },
    b5_not_run: { count: 1, cluster_indexes: [0] }, templates: 0, source_passages: 0,
  }), 'A-1 coverage');
  const line = verdictLine(a).replace(CHECK_END, '2026-11-29T15:47:22Z');
  assert(line === 'MEMORY SCOPE-HYGIENE — records: 4 · live: 3 · unscoped: 25.0% · undeclared cross-scope clusters: 1 · conflicts: NOT ASSESSABLE · live duplicates: 0 — 2026-11-29T15:47:22Z', 'A-1 verdict');
  assert(annexText.includes(`"verdict_line": "${line}"`), 'A-1 verdict as printed in the ANNEX');

  // A-7 example: N1.
  const n1 = analyse({ family: 'mem0', form: 'full_text', records: [
    { id: 'm1', content_text: 'k', user_id: 'alice', shared: true }, { id: 'm2', content_text: 'k', user_id: 'bob' }] });
  assert(n1.F.cross_scope_clusters.clusters[0].reason === R.n1, 'A-7 example');

  // A-4: the dropped names exactly as the ANNEX lists them, and its examples.
  const dm = flat.match(/A declared key named ((?:`[a-z_]+`,? (?:or )?)+)is dropped/);
  assert(dm, 'ANNEX A-4 dropped-key sentence');
  assert(deepEqual([...dm[1].matchAll(/`([a-z_]+)`/g)].map((m) => m[1]), DROPPED_KEYS), 'ANNEX A-4 dropped-key list');
  const a4 = analyse({ family: 'generic', form: 'full_text', manifest: { declared_scope_keys: ['source', 'tenant', 'source'] }, records: [{ id: 'x', content_text: 'x', tenant: 't', source: 's' }] });
  assert(deepEqual(a4.coverage.scope_keys, ['tenant']) && deepEqual(a4.coverage.scope_keys_dropped, ['source']), 'A-4 example dropped source');
  assert(deepEqual(a4.F.scope_presence, { status: 'ASSESSABLE', rate: '100.0%', scoped: 1, eligible: 1, distinct_scopes: 1 }), 'A-4 example scope');
  const a4b = analyse({ family: 'generic', form: 'full_text', manifest: { declared_scope_keys: ['content_text'] }, records: [{ id: 'x', content_text: 'x' }] });
  assert(deepEqual(a4b.coverage.scope_keys, []) && deepEqual(a4b.coverage.scope_keys_dropped, ['content_text']), 'A-4 example content_text');
  assert(a4b.F.scope_presence.reason === R.genericNoKey && a4b.F.unscoped_rate.reason === R.genericNoKey && a4b.F.cross_scope_clusters.reason === R.genericNoKey, 'A-4 example no key');
  // A-4 case rule, as the ANNEX words it and with its own examples.
  assert(flat.includes('ASCII letters are compared without case (`Source` and `SCORE` are dropped too') && flat.includes('every other character exactly (`\u017Fource`, with U+017F, is kept)'), 'ANNEX A-4 case sentence');
  assert(isDroppedKey('Source') && isDroppedKey('SCORE') && isDroppedKey('Content_Hash') && !isDroppedKey('\u017Fource') && !isDroppedKey('\u017Fcore') && !isDroppedKey('hash ') && !isDroppedKey('HASH\u0130'), 'A-4 ASCII-only fold');
  assert(!isDroppedKey('s\u212Aore') && asciiFold('\u212A') === '\u212A' && asciiFold('AZaz@[') === 'azaz@[', 'A-4 fold leaves non-ASCII letters');
  const a4c = analyse({ family: 'generic', form: 'full_text', manifest: { declared_scope_keys: ['Source', 'tenant', 'source', 'SCORE', '\u017Fource', 'Source'] }, records: [{ id: 'x', content_text: 'x', tenant: 't', '\u017Fource': 'u', Source: 's', source: 's', SCORE: '1' }] });
  assert(deepEqual(a4c.coverage.scope_keys, ['tenant', '\u017Fource']) && deepEqual(a4c.coverage.scope_keys_dropped, ['Source', 'source', 'SCORE']), 'A-4 case example');

  // A-5 example: a self-supersede alone is live; another record's supersedes makes it not live.
  const s1 = analyse({ family: 'generic', form: 'full_text', records: [{ id: 's1', content_text: 'x', supersedes: 's1' }] });
  assert(s1.liveRecords === 1 && s1.open.length === 0, 'A-5 example self-supersede live');
  const s1b = analyse({ family: 'generic', form: 'full_text', records: [{ id: 's1', content_text: 'x', supersedes: 's1' }, { id: 's1b', content_text: 'y', supersedes: 's1' }] });
  assert(s1b.liveRecords === 1, 'A-5 example superseded by another record');

  // Pre-check example: the matrix rows exist for every family/form.
  assert(criteria.assessability_matrix.mem0.full_text.scope_presence.status === 'ASSESSABLE', 'matrix');
}

// context-composition/v1 corpus cases and their expected answers.
//
// Written from criteria/context-composition/criteria.json, the family's
// ANNEX.md (C-1 to C-16), docs/context-audit-formats.md (facts about the real
// Letta files) and the three public Letta fixtures alone. This module
// implements on its own: the envelope rules and their order (ANNEX C-2), an
// adapter for each format the criteria accept (C-8, including letta's API
// view, the generic stated figures and C-16's lenient shapes; see
// ADAPTERS), entries = blocks and the entry caps, EM-1 (C-3), axis C (C-4,
// C-5), axis P with its conflicts (C-9) from the class lists in
// criteria/context-composition/class-lists.json (C-9a), the pre-check answer
// (C-6, C-10) and, on the paid route, the signed report member by member
// (C-12, C-13): header facts M01, M02, M13, factors F-1 to F-12 and the
// measurement line.
// It never calls the Go engine.
//
// A case that would need a rule neither the criteria nor the ANNEX decide
// throws `Undecided` here instead of guessing.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  jcs, sha256Hex, utf8Length, makeRng, base58, b64encode, b64decodeStrict, assert, deepEqual, commonMembers } from './lib.mjs';

export const criteriaName = 'context-composition';

const CHECK_END = '<check-end UTC>';
const PIN = '<pin>';
// A well-formed caller the generator assumes when it sizes a pre-check body
// sent as a JSON object (the harness injects a fresh base58 address).
const SIZING_CALLER = '1'.repeat(44);

const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
const isPlainObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const nonEmptyString = (v) => typeof v === 'string' && v.length > 0;

class Undecided extends Error {}
function undecided(what) { throw new Undecided('rule not decided by the criteria or the ANNEX: ' + what); }

// ANNEX C-2, in rule order: code -> status and static message. R-6 is the
// host's (message not published here), so no case uses it.
const RULES = [
  ['body_bytes_cap', 413, 'request body exceeds the published cap'],
  ['malformed_body', 400, 'request body is not a JSON object'],
  ['envelope_version_not_supported', 400, 'envelope_version is not context-composition-envelope/1'],
  ['format_not_accepted', 400, 'declared_format_id is not an accepted format'],
  ['record_required', 400, 'record is missing or ambiguous'],
  ['stated_counts_invalid', 400, 'harness_stated_counts is not an object or is over its cap'],
  ['record_does_not_parse_as_declared_format', 400, 'the record does not parse as the declared format'],
  ['caller_invalid', 400, null],
  ['too_many_entries', 422, 'the record has more entries than the published cap'],
  ['entry_too_large', 422, 'an entry\'s adapted text exceeds the published cap'],
  ['zero_entries', 422, 'the record has no entries'],
  ['nothing_assessable', 422, 'no entry carries a textual payload'],
];
const RULE = Object.fromEntries(RULES.map(([code, status, message]) => [code, { status, message }]));

// The unknown format of the corpus: a name no format will ever be given, so
// that a criteria revision accepting a real format never turns this case.
const NEVER_ACCEPTED_FORMAT = 'example-unknown-format-never-accepted';

const KNOWN_MEMBERS = new Set([
  'envelope_version', 'declared_format_id', 'declared_format_version', 'record',
  'harness_stated_counts', 'criteria_ack', 'caller',
]);

// ============================================================== strict JSON with raw spans
//
// RFC 8259 parser that keeps each value's [start, end) span in the source
// text: the stated-counts cap is measured on the member's raw text (C-2) and
// the Letta json_schema text keeps every token as submitted (C-8).

class JsonError extends Error {}

// uniqueNames: refuse an object naming a member twice (records keep the last,
// as submitted JSON may; the class lists may not).
function parseJson(text, { uniqueNames = false } = {}) {
  let i = 0;
  const n = text.length;
  const fail = () => { throw new JsonError('invalid JSON'); };
  const ws = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++; else break;
    }
  };
  const NUM = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
  function str() {
    const start = i;
    i++; // opening quote
    let out = '';
    let seg = i;
    for (;;) {
      if (i >= n) fail();
      const c = text.charCodeAt(i);
      if (c === 0x22) { out += text.slice(seg, i); i++; return { t: 'string', v: out, start, end: i }; }
      if (c < 0x20) fail();
      if (c === 0x5c) {
        out += text.slice(seg, i);
        const e = text[i + 1];
        if (e === 'u') {
          const h = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(h)) fail();
          out += String.fromCharCode(parseInt(h, 16));
          i += 6;
        } else {
          const map = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
          if (!hasOwn(map, e)) fail();
          out += map[e];
          i += 2;
        }
        seg = i;
        continue;
      }
      i++;
    }
  }
  function value() {
    ws();
    if (i >= n) fail();
    const start = i;
    const c = text[i];
    if (c === '{') {
      i++;
      const m = new Map();
      ws();
      if (text[i] === '}') { i++; return { t: 'object', m, start, end: i }; }
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        const k = str().v;
        if (uniqueNames && m.has(k)) throw new JsonError('duplicate member name ' + JSON.stringify(k));
        ws();
        if (text[i] !== ':') fail();
        i++;
        const v = value();
        m.set(k, v);
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; return { t: 'object', m, start, end: i }; }
        fail();
      }
    }
    if (c === '[') {
      i++;
      const a = [];
      ws();
      if (text[i] === ']') { i++; return { t: 'array', a, start, end: i }; }
      for (;;) {
        a.push(value());
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; return { t: 'array', a, start, end: i }; }
        fail();
      }
    }
    if (c === '"') return str();
    for (const [lit, v] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(lit, i)) { i += lit.length; return { t: 'lit', v, start, end: i }; }
    }
    NUM.lastIndex = i;
    const mm = NUM.exec(text);
    if (!mm || mm[0].length === 0) fail();
    i += mm[0].length;
    return { t: 'number', v: Number(mm[0]), raw: mm[0], start, end: i };
  }
  const root = value();
  ws();
  if (i !== n) fail();
  return root;
}

function plain(node) {
  switch (node.t) {
    case 'object': {
      const o = {};
      for (const [k, v] of node.m) {
        if (!k.isWellFormed()) undecided('lone surrogate in a member name');
        Object.defineProperty(o, k, { value: plain(v), enumerable: true, writable: true, configurable: true });
      }
      return o;
    }
    case 'array': return node.a.map(plain);
    case 'string':
      if (!node.v.isWellFormed()) undecided('lone surrogate in a string');
      return node.v;
    default: return node.v;
  }
}

// Remove insignificant whitespace from a JSON text, every token unchanged (C-8).
function compactJsonText(raw) {
  let out = '';
  let inStr = false;
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i];
    if (inStr) {
      out += ch;
      if (ch === '\\') { out += raw[i + 1]; i++; } else if (ch === '"') inStr = false;
    } else if (ch === '"') {
      inStr = true;
      out += ch;
    } else if (ch !== ' ' && ch !== '\t' && ch !== '\n' && ch !== '\r') {
      out += ch;
    }
  }
  return out;
}

function tryParse(text) {
  try { return parseJson(text); } catch (e) { if (e instanceof JsonError) return null; throw e; }
}

// ============================================================== EM-1 (C-3)

const codePoints = (s) => { let k = 0; for (const _ of s) k++; return k; }; // eslint-disable-line no-unused-vars -- counts code points, not UTF-16 units
const nfcC = (text) => codePoints(text.normalize('NFC'));
const em1 = (C) => (C === 0 ? 0 : Math.ceil(C / 4));
const est = (n) => `est:~${n}`;

// 100 × part / T, rounded half up to 2 decimals, exact integer arithmetic.
function shareText(part, T) {
  if (T === 0) return { value: 'NOT-ASSESSABLE', reason: 'zero denominator' };
  const q = (20000n * BigInt(part) + BigInt(T)) / (2n * BigInt(T));
  const s = q.toString().padStart(3, '0');
  return `est:~${s.slice(0, -2)}.${s.slice(-2)}%`;
}

// ============================================================== axis C (C-4, C-5)

const WS4 = new Set([' ', '\t', '\n', '\r']);
const trim4 = (s) => {
  let a = 0, b = s.length;
  while (a < b && WS4.has(s[a])) a++;
  while (b > a && WS4.has(s[b - 1])) b--;
  return s.slice(a, b);
};
const splitLines = (s) => s.split(/\r\n|\r|\n/);
const nonEmptyLine = (l) => [...l].some((ch) => !WS4.has(ch));

const isStdOnly = (c) => c === '+' || c === '/';
const isUrlOnly = (c) => c === '-' || c === '_';
const isAlnum = (c) => /^[A-Za-z0-9]$/.test(c);

// Base64 segments of C-5 over the (NFC) text: [{start, text, alphabet, qualifies}].
function base64Segments(t) {
  const segs = [];
  let i = 0;
  while (i < t.length) {
    const c = t[i];
    if (!(isAlnum(c) || isStdOnly(c) || isUrlOnly(c))) { i++; continue; }
    const start = i;
    let kind = null;
    while (i < t.length) {
      const d = t[i];
      if (isAlnum(d)) { i++; continue; }
      if (isStdOnly(d)) { if (kind === 'url') break; kind = 'std'; i++; continue; }
      if (isUrlOnly(d)) { if (kind === 'std') break; kind = 'url'; i++; continue; }
      break;
    }
    let pad = 0;
    while (pad < 2 && t[i] === '=') { i++; pad++; }
    const text = t.slice(start, i);
    const alphabet = kind === 'url' ? 'url-safe' : 'standard';
    let qualifies = false;
    if (text.length >= 40 && text.length % 4 === 0) {
      const std = alphabet === 'url-safe' ? text.replace(/-/g, '+').replace(/_/g, '/') : text;
      const dec = b64decodeStrict(std);
      qualifies = dec !== null && dec.length >= 30;
    }
    segs.push({ start, text, alphabet, qualifies });
  }
  return segs;
}

const LOG_LINE = /^\[?[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}/;

function rawExportTest(t, C) {
  const lines = splitLines(t).filter(nonEmptyLine);
  if (lines.length > 0) {
    const first = trim4(lines[0]);
    if (first.startsWith('BEGIN EXPORT') || first.startsWith('BEGIN RAW') || first.startsWith('BEGIN LOG')) return true;
    const matching = lines.filter((l) => LOG_LINE.test(l)).length;
    if (5 * matching >= 4 * lines.length) return true;
  }
  const node = tryParse(trim4(t));
  if (node && C >= 200) {
    if (node.t === 'object' && node.m.size >= 10) return true;
    if (node.t === 'array' && node.a.length >= 10) return true;
  }
  return false;
}

function classifyC(text) {
  if (text === null) return 'C-UNK';
  const t = text.normalize('NFC');
  const C = codePoints(t);
  if (C === 0) return 'C-EMPTY';
  const blobChars = base64Segments(t).filter((s) => s.qualifies).reduce((k, s) => k + s.text.length, 0);
  if (10 * blobChars >= 9 * C) return 'C-BLOB';
  if (rawExportTest(t, C)) return 'C-RAW';
  const node = tryParse(trim4(t));
  if (node && (node.t === 'object' || node.t === 'array')) return 'C-STRUCT';
  const tr = trim4(t);
  const tl = splitLines(tr);
  // A fenced block: first line ``` plus an optional info string, last line exactly ```.
  if (tl.length >= 2 && /^```[^`]*$/.test(tl[0]) && tl[tl.length - 1] === '```') return 'C-CODE';
  const ne = splitLines(t).filter(nonEmptyLine);
  if (ne.length > 0 && 2 * ne.filter((l) => l.startsWith('    ') || l.startsWith('\t')).length >= ne.length) return 'C-CODE';
  return 'C-TEXT';
}

// The four content tests of C-4 evaluated independently (M01's axis-C
// conflict count needs every one that holds, not only the first). The text
// is the block's text; every test runs on its NFC form (C-5).
function cTests(text) {
  const t = text.normalize('NFC');
  const C = codePoints(t);
  const segs = base64Segments(t).filter((s) => s.qualifies);
  const blobChars = segs.reduce((k, s) => k + s.text.length, 0);
  const tr = trim4(t);
  const node = tryParse(tr);
  const tl = splitLines(tr);
  const fenced = tl.length >= 2 && /^```[^`]*$/.test(tl[0]) && tl[tl.length - 1] === '```';
  const ne = splitLines(t).filter(nonEmptyLine);
  const indented = ne.length > 0 && 2 * ne.filter((l) => l.startsWith('    ') || l.startsWith('\t')).length >= ne.length;
  return {
    C, segs,
    blob: C > 0 && 10 * blobChars >= 9 * C,
    raw: rawExportTest(t, C),
    struct: node !== null && (node.t === 'object' || node.t === 'array'),
    code: fenced || indented,
  };
}

// ============================================================== M08 / M09 normalisation (C-12)

// Unicode White_Space, as C-12 lists it (not JavaScript's \s, which has
// U+FEFF and lacks U+0085).
const WHITE_SPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680,
  0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
  0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);
const isWS = (ch) => WHITE_SPACE.has(ch.codePointAt(0));

// N(s): NFC, CRLF/CR to LF, trim, internal whitespace runs to one space, case kept.
function normN(text) {
  const t = text.normalize('NFC').replace(/\r\n|\r/g, '\n');
  let out = '';
  let gap = false;
  for (const ch of t) {
    if (isWS(ch)) { gap = out.length > 0; continue; }
    if (gap) out += ' ';
    gap = false;
    out += ch;
  }
  return out;
}

// Per code point simple lowercase mapping (Go's unicode.ToLower). JavaScript's
// toLowerCase applied to one code point at a time agrees except on U+0130,
// whose full mapping is two code points (C-12); applying it to a whole string
// would also bring in the context-dependent final sigma, which a per-code-point
// mapping never applies.
function lowerSimple(s) {
  let out = '';
  for (const ch of s) {
    if (ch === '\u0130') { out += 'i'; continue; }
    const l = ch.toLowerCase();
    assert([...l].length === 1, 'simple lowercase is one code point for ' + ch.codePointAt(0).toString(16));
    out += l;
  }
  return out;
}

const STRIP = new Set([...'.,;:!?()[]{}', '"', "'", '\u2018', '\u2019', '\u201c', '\u201d', '`']);
function m09Tokens(n) {
  const toks = [];
  for (const w of lowerSimple(n).split(' ')) {
    const cps = [...w];
    let a = 0, b = cps.length;
    while (a < b && STRIP.has(cps[a])) a++;
    while (b > a && STRIP.has(cps[b - 1])) b--;
    if (b > a) toks.push(cps.slice(a, b).join(''));
  }
  return toks;
}
function shingles(toks) {
  const s = new Set();
  for (let i = 0; i + 3 <= toks.length; i++) s.add(toks[i] + ' ' + toks[i + 1] + ' ' + toks[i + 2]);
  return s;
}

// ============================================================== stated counts (C-8, C-10, C-12, C-13)

const INT64_MIN = -(2n ** 63n), INT64_MAX = 2n ** 63n - 1n;
const MAX_STATED = 999999999999999n;
// A harness_stated_counts figure is valid when its JSON number literal is a
// non-negative integer without sign, fraction or exponent, at most 15 digits.
const validHarnessFigure = (node) => node.t === 'number' && /^(0|[1-9][0-9]{0,14})$/.test(node.raw);
// A generic stated_tokens / stated_total is carried when it is a JSON integer
// (no fraction, no exponent) within int64; null when it is not (R-5).
function carriedInteger(node) {
  if (node.t !== 'number' || !/^-?(0|[1-9][0-9]*)$/.test(node.raw)) return null;
  const v = BigInt(node.raw);
  if (v < INT64_MIN || v > INT64_MAX) return null;
  if (node.raw === '-0') undecided('a generic stated integer written -0');
  return { value: v, valid: v >= 0n && v <= MAX_STATED };
}

// ============================================================== adapters (C-8)
//
// SessionRecord: {level, messages: [{role_raw, schema, blocks: [block]}]};
// block: {role_raw, kind_raw, name, has_args, source, text (string | null =
// non-serialisable), stated_tokens, schema}. Schema pseudo-message first. A
// tool result's `name` is the called tool's name when the adapter can link
// the result to its call (C-8; C-9a's result_of_call_named reads it).

const mkBlock = (o) => ({
  role_raw: undefined, kind_raw: undefined, name: undefined, has_args: false, source: undefined,
  text: null, stated_tokens: undefined, schema: false, ...o,
});

// ---------------------------------------------------------------- letta-af (L2)

const PACKED_TYPES = new Set(['user_message', 'heartbeat', 'login', 'system_alert']);

// Shape stage: R-4 (agents[] length) and the top-level R-5 tests. The record
// may be a JSON string holding the file: unwrapped exactly once.
function lettaShape(recordNode, bodyText) {
  let node = recordNode;
  let src = bodyText;
  let wasString = false;
  if (node.t === 'string') {
    const inner = tryParse(node.v);
    if (!inner) return { r5: true };
    node = inner;
    src = recordNode.v;
    wasString = true;
  }
  if (node.t !== 'object') return { r5: true };
  const agents = node.m.get('agents');
  const messages = node.m.get('messages');
  if (agents && agents.t === 'array') {
    if (messages && messages.t === 'array') undecided('letta record with both an agents array and a root messages array');
    if (agents.a.length !== 1) return { r4: true };
    return { shape: 'current', node, src, wasString };
  }
  if (messages && messages.t === 'array') return { shape: 'old', node, src, wasString };
  return { r5: true };
}

const RFC3339 = /^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$/;
function instantNs(s) {
  const m = typeof s === 'string' ? RFC3339.exec(s) : null;
  if (!m) undecided('letta message without an RFC 3339 created_at');
  const [y, mo, d, h, mi, se] = m.slice(1, 7).map(Number);
  // days from civil (proleptic Gregorian)
  const yy = mo <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  const days = era * 146097 + doe - 719468;
  let ns = (BigInt(days) * 86400n + BigInt(h * 3600 + mi * 60 + se)) * 1000000000n;
  if (m[7]) ns += BigInt((m[7].slice(1) + '000000000').slice(0, 9));
  if (m[8] !== 'Z') {
    const sign = m[8][0] === '+' ? 1n : -1n;
    const off = BigInt(Number(m[8].slice(1, 3)) * 3600 + Number(m[8].slice(4, 6)) * 60) * 1000000000n;
    ns -= sign * off;
  }
  return ns;
}

function lettaAdapt(sh) {
  const root = plain(sh.node);
  const agentNode = sh.shape === 'current' ? sh.node.m.get('agents').a[0] : sh.node;
  if (agentNode.t !== 'object') undecided('letta agent that is not an object');
  const agent = plain(agentNode);
  if (!Array.isArray(agent.messages)) undecided('letta agent without a messages array');
  const fileMessages = agent.messages;

  // Tool definitions -> one schema pseudo-message, placed first.
  const toolsNode = sh.node.m.get('tools');
  let toolNodes = [];
  if (toolsNode !== undefined) {
    if (toolsNode.t === 'lit' && toolsNode.v === null) toolNodes = [];
    else if (toolsNode.t === 'array') toolNodes = toolsNode.a;
    else undecided('letta tools that are not an array');
  }
  let selectedTools = toolNodes;
  if (hasOwn(agent, 'tool_ids') && agent.tool_ids !== null) {
    if (!Array.isArray(agent.tool_ids)) undecided('letta tool_ids that are not an array');
    const ids = agent.tool_ids;
    selectedTools = toolNodes.filter((t) => t.t === 'object' && t.m.get('id') && ids.includes(plain(t.m.get('id'))));
    for (const id of ids) {
      if (toolNodes.filter((t) => t.t === 'object' && t.m.get('id') && plain(t.m.get('id')) === id).length !== 1) undecided('tool_ids entry matching no tool, or several');
    }
  }
  const schemaBlocks = selectedTools.map((t) => {
    if (t.t !== 'object') undecided('letta tool that is not an object');
    const js = t.m.get('json_schema');
    if (!js || js.t !== 'object') undecided('letta tool without a json_schema object');
    const nameNode = t.m.get('name');
    return mkBlock({
      kind_raw: 'tool_definition', name: nameNode ? plain(nameNode) : undefined, schema: true,
      text: compactJsonText(sh.src.slice(js.start, js.end)),
    });
  });

  // In-context selection and order.
  for (const m of fileMessages) if (!isPlainObject(m)) undecided('letta message that is not an object');
  let selected; // indices into fileMessages, in adapted order
  const hasFlags = fileMessages.some((m) => hasOwn(m, 'in_context'));
  if (sh.shape === 'current') {
    if (hasOwn(agent, 'in_context_message_ids') && agent.in_context_message_ids !== null) {
      const ids = agent.in_context_message_ids;
      if (!Array.isArray(ids)) undecided('in_context_message_ids that is not an array');
      if (new Set(ids).size !== ids.length) undecided('duplicate in_context_message_ids');
      selected = ids.map((id) => {
        const hits = fileMessages.map((m, k) => (m.id === id ? k : -1)).filter((k) => k >= 0);
        if (hits.length !== 1) undecided('in_context_message_ids entry matching no message, or several');
        return hits[0];
      });
    } else {
      // C-8 orders a current-shape selection by in_context_message_ids only;
      // flags without the list have no decided order.
      if (hasFlags) undecided('current-shape in_context flags without in_context_message_ids');
      // C-14: neither the list nor flags: measured whole, in file order.
      selected = fileMessages.map((_, k) => k);
    }
  } else {
    let pool = fileMessages.map((_, k) => k);
    if (hasFlags) {
      if (!fileMessages.every((m) => typeof m.in_context === 'boolean')) undecided('in_context flags missing on some messages');
      pool = pool.filter((k) => fileMessages[k].in_context === true);
    } else if (pool.length > 1) {
      // C-8 orders "the in-context system message first, then the rest by
      // created_at"; C-14's prompt is "the first in-context message": a file
      // with no in_context flags records no in-context set, and whether its
      // messages are then ordered as the older shape's (prompt first, the
      // rest by created_at) or kept in file order (as C-14 decides for the
      // current shape) is not said.
      undecided('older-shape order without in-context flags');
    }
    // C-14: every in-context message in created_at order (ties by file
    // position); the first system-role one whose first text is not a packed
    // JSON notice is the prompt and moves first, the rest keep their places.
    const keyed = pool.map((k) => ({ k, t: instantNs(fileMessages[k].created_at) }));
    keyed.sort((a, b) => (a.t < b.t ? -1 : a.t > b.t ? 1 : a.k - b.k));
    const byTime = keyed.map((x) => x.k);
    const sysPos = byTime.find((k) => lettaRole(fileMessages[k]) === 'system' && packedTypeOf(lettaFirstText(fileMessages[k])) === null);
    selected = (sysPos === undefined ? [] : [sysPos]).concat(byTime.filter((k) => k !== sysPos));
  }

  // Result links: call id -> function name, over the whole file. A result
  // block carries its call's name as `name` (C-8 says so of the API view's
  // tool_return_message; the stored shape links the same way); which names
  // make a result P-RETR is the class lists' business (C-9a), not this one's.
  const callName = new Map();
  for (const m of fileMessages) {
    if (typeof m.message_type === 'string') {
      // API view: a tool_call_message names its call in tool_call.tool_call_id.
      if (m.message_type === 'tool_call_message' && isPlainObject(m.tool_call) && typeof m.tool_call.tool_call_id === 'string') {
        callName.set(m.tool_call.tool_call_id, m.tool_call.name);
      }
      continue;
    }
    if (Array.isArray(m.tool_calls)) {
      for (const tc of m.tool_calls) {
        if (isPlainObject(tc) && typeof tc.id === 'string' && isPlainObject(tc.function)) callName.set(tc.id, tc.function.name);
      }
    }
  }

  const messages = [];
  if (schemaBlocks.length > 0) messages.push({ role_raw: undefined, schema: true, blocks: schemaBlocks });
  for (const k of selected) {
    const m = fileMessages[k];
    if (typeof m.message_type === 'string') {
      messages.push(lettaApiMessage(m, callName));
      continue;
    }
    if (typeof m.role !== 'string') undecided('letta message role that is not a string');
    const role = m.role;
    const blocks = [];
    const content = m.content === undefined || m.content === null ? [] : m.content;
    if (!Array.isArray(content)) undecided('letta content that is not an array');
    // A tool-role message answers the call its `tool_call_id` links to
    // (ANNEX C-8; its `name` member is not read): its content parts are that
    // call's result and carry the called tool's name.
    const ownCall = typeof m.tool_call_id === 'string' ? callName.get(m.tool_call_id) : undefined;
    const answers = role !== 'tool' ? null : ownCall;
    const textParts = [];
    for (const part of content) {
      const b = lettaPart(part, role);
      if (answers !== null) b.name = answers;
      if (b.text !== null) textParts.push(b.text);
      blocks.push(b);
    }
    const calls = m.tool_calls === undefined || m.tool_calls === null ? [] : m.tool_calls;
    if (!Array.isArray(calls)) undecided('letta tool_calls that is not an array');
    for (const tc of calls) {
      if (!isPlainObject(tc) || !isPlainObject(tc.function) || typeof tc.function.arguments !== 'string') undecided('letta tool call without string arguments');
      blocks.push(mkBlock({ role_raw: role, kind_raw: 'tool_call', name: tc.function.name, has_args: true, text: tc.function.arguments }));
    }
    const returns = m.tool_returns === undefined || m.tool_returns === null ? [] : m.tool_returns;
    if (!Array.isArray(returns)) undecided('letta tool_returns that is not an array');
    for (const tr of returns) {
      if (!isPlainObject(tr) || typeof tr.func_response !== 'string') undecided('letta tool return without a string func_response');
      if (textParts.includes(tr.func_response)) continue; // counted once (C-8)
      // Each stored return names its own call, else its message's (ANNEX
      // C-8), whatever the message's role.
      const linked = typeof tr.tool_call_id === 'string' ? callName.get(tr.tool_call_id) : ownCall;
      blocks.push(mkBlock({ role_raw: role, kind_raw: 'tool_return', name: linked, text: tr.func_response }));
    }
    messages.push({ role_raw: role, schema: false, blocks });
  }
  return {
    level: 'L2', messages, record_was_json_string: sh.wasString,
    messages_left_out: fileMessages.length - selected.length, root,
  };
}

// The role a letta message is measured under: its message_type's (API view,
// C-8) or its stored role.
const API_ROLES = {
  system_message: 'system', user_message: 'user', assistant_message: 'assistant',
  reasoning_message: 'assistant', hidden_reasoning_message: 'assistant', tool_call_message: 'assistant',
  tool_return_message: 'tool',
};
function lettaRole(m) {
  if (typeof m.message_type === 'string') return hasOwn(API_ROLES, m.message_type) ? API_ROLES[m.message_type] : m.message_type;
  return m.role;
}

// The packed type of a text (C-8's packed JSON notices), or null.
function packedTypeOf(text) {
  const pk = tryParse(text);
  if (pk && pk.t === 'object' && pk.m.get('type') && pk.m.get('type').t === 'string' && PACKED_TYPES.has(pk.m.get('type').v)) return pk.m.get('type').v;
  return null;
}

// The first text of a letta message (C-14's prompt test): its string content
// (API view) or its first content part carrying a string text.
function lettaFirstText(m) {
  if (typeof m.message_type === 'string' && typeof m.content === 'string') return m.content;
  if (Array.isArray(m.content)) {
    for (const part of m.content) if (isPlainObject(part) && typeof part.text === 'string') return part.text;
  }
  // A system-role message with no text in its content: whether it can be the
  // prompt ("whose first text is not a packed JSON notice") is not said.
  return undecided('older-shape system-role message without a content text (prompt or not?)');
}

// A content[] part under the general rule: a string text is a text block whose
// kind_raw is the part's type (or the packed type); any other part is non-serialisable.
function lettaPart(part, role) {
  if (!isPlainObject(part)) undecided('letta content part that is not an object');
  if (typeof part.text !== 'string') return mkBlock({ role_raw: role, kind_raw: part.type, text: null });
  const kind = packedTypeOf(part.text) ?? part.type;
  return mkBlock({ role_raw: role, kind_raw: kind, text: part.text });
}

// One message of the API view (C-8).
function lettaApiMessage(m, callName) {
  const type = m.message_type;
  const role = lettaRole(m);
  for (const k of ['tool_calls', 'tool_returns']) {
    if (Array.isArray(m[k]) && m[k].length > 0) undecided(`an API-view message that also carries ${k}`);
  }
  let blocks;
  switch (type) {
    case 'system_message':
    case 'user_message':
    case 'assistant_message':
      if (typeof m.content === 'string') {
        // C-14: one text block; a packed text gives its type as kind_raw.
        // A string content has no part type otherwise: its kind_raw is not
        // said, and unobservable here (these roles always fire a P class and
        // no kind test of C-9 fires on an unpacked text).
        blocks = [mkBlock({ role_raw: role, kind_raw: packedTypeOf(m.content) ?? undefined, text: m.content })];
      } else if (Array.isArray(m.content)) {
        blocks = m.content.map((p) => lettaPart(p, role));
      } else {
        undecided('API-view content that is neither a string nor a list of parts');
      }
      break;
    case 'reasoning_message':
      if (typeof m.reasoning !== 'string') undecided('reasoning_message without a string reasoning');
      blocks = [mkBlock({ role_raw: role, kind_raw: 'reasoning', text: m.reasoning })];
      break;
    case 'hidden_reasoning_message':
      blocks = [mkBlock({ role_raw: role, kind_raw: 'reasoning', text: null })];
      break;
    case 'tool_call_message': {
      const tc = m.tool_call;
      if (!isPlainObject(tc) || typeof tc.arguments !== 'string') undecided('tool_call_message without string tool_call.arguments');
      blocks = [mkBlock({ role_raw: role, kind_raw: 'tool_call', name: tc.name, has_args: true, text: tc.arguments })];
      break;
    }
    case 'tool_return_message': {
      if (typeof m.tool_return !== 'string') undecided('tool_return_message without a string tool_return');
      const name = typeof m.tool_call_id === 'string' ? callName.get(m.tool_call_id) : undefined;
      blocks = [mkBlock({ role_raw: role, kind_raw: 'tool_return', name, text: m.tool_return })];
      break;
    }
    default:
      // "Any other type keeps the type as its role" (C-8). C-14: a string
      // content is one text block (a packed text gives its type as
      // kind_raw); without string or part content the message has no blocks.
      if (typeof m.content === 'string') {
        const pk = packedTypeOf(m.content);
        // An unpacked string under another type: the block's kind_raw is not
        // said, and it is printed among P-OTHER's raw values ("text", or none?).
        if (pk === null) undecided('kind_raw of an unpacked string content under an API-view message of another type');
        blocks = [mkBlock({ role_raw: role, kind_raw: pk, text: m.content })];
      } else if (Array.isArray(m.content)) {
        blocks = m.content.map((p) => lettaPart(p, role));
      } else {
        blocks = [];
      }
  }
  return { role_raw: role, schema: false, blocks };
}

// ---------------------------------------------------------------- anthropic-messages (L0)

function anthropicShape(recordNode) {
  if (recordNode.t === 'array') return { ok: true };
  if (recordNode.t === 'object' && recordNode.m.get('messages') && recordNode.m.get('messages').t === 'array') return { ok: true };
  return { r5: true };
}

// One element of a content array (a message's, the system array's, or a
// tool_result's list of parts), an object (C-16: a non-object element of a
// message's or the system's content array is R-5, checked by the caller; a
// tool_result with one is one non-serialisable block, below).
function anthropicBlock(b, role) {
  assert(isPlainObject(b), 'anthropic block elements are objects here');
  // C-16: a block without a string type is a block of an unknown type, its
  // kind_raw empty.
  const type = typeof b.type === 'string' ? b.type : null;
  const blk = (o) => mkBlock({ role_raw: role, kind_raw: type === null ? '' : type, ...o });
  const jcsText = (v) => {
    try { return jcs(v); } catch { return undecided('structured member JCS cannot serialise'); }
  };
  // C-16: a text block's text (a thinking block's thinking) that is not a
  // string is the empty text.
  const strOrEmpty = (v) => (typeof v === 'string' ? v : '');
  if (type === null) return [blk({ text: typeof b.text === 'string' ? b.text : null })];
  switch (type) {
    case 'text':
      return [blk({ text: strOrEmpty(b.text) })];
    case 'tool_use':
    case 'server_tool_use':
      if (!hasOwn(b, 'input')) undecided('tool_use without input');
      return [blk({ text: jcsText(b.input), name: b.name, has_args: true })];
    case 'tool_result': {
      if (typeof b.content === 'string') return [blk({ text: b.content })];
      // C-16: content other than a string or a non-empty list of objects
      // (absent, null, a number, an object, [], a list with a non-object
      // element) is one non-serialisable tool_result block, never R-5.
      if (!Array.isArray(b.content) || b.content.length === 0 || !b.content.every(isPlainObject)) return [blk({ text: null })];
      // One block per content part, each part adapted by the same block rules.
      return b.content.flatMap((p) => {
        if (p.type === 'tool_result') undecided('tool_result nested in a tool_result');
        return anthropicBlock(p, role);
      });
    }
    case 'thinking':
      return [blk({ text: strOrEmpty(b.thinking) })];
    case 'redacted_thinking':
    case 'image':
      return [blk({ text: null })];
    case 'document':
      // C-16: only a source object of type "text" carries text: its data, or
      // the empty text when data is not a string; any other source (base64,
      // URL, file, content, absent, not an object) is non-serialisable.
      if (isPlainObject(b.source) && b.source.type === 'text') return [blk({ text: strOrEmpty(b.source.data) })];
      return [blk({ text: null })];
    default:
      if (type === 'search_result' || (type.length > '_tool_result'.length && type.endsWith('_tool_result'))) {
        if (!hasOwn(b, 'content')) undecided(type + ' without content');
        return [blk({ text: jcsText(b.content) })];
      }
      return [blk({ text: typeof b.text === 'string' ? b.text : null })];
  }
}

function anthropicAdapt(recordValue) {
  const list = Array.isArray(recordValue) ? recordValue : recordValue.messages;
  // C-16 (and C-8): an element of a message's content array, or of the system
  // array, that is not an object is R-5; checked over the whole record first.
  const badArray = (a) => Array.isArray(a) && !a.every(isPlainObject);
  if (!Array.isArray(recordValue) && badArray(recordValue.system)) return { r5: true };
  for (const m of list) if (isPlainObject(m) && badArray(m.content)) return { r5: true };
  // C-16 (the refusals at these edges): a system that is neither a string, an
  // array nor null is R-5; null is no system message.
  if (!Array.isArray(recordValue) && hasOwn(recordValue, 'system')) {
    const s = recordValue.system;
    if (s !== null && typeof s !== 'string' && !Array.isArray(s)) return { r5: true };
  }
  const messages = [];
  if (!Array.isArray(recordValue) && hasOwn(recordValue, 'system') && recordValue.system !== null) {
    const s = recordValue.system;
    if (typeof s === 'string') {
      messages.push({ role_raw: 'system', schema: false, blocks: [mkBlock({ role_raw: 'system', kind_raw: 'text', text: s })] });
    } else if (Array.isArray(s)) {
      // C-16: read as a message's content array, every block type adapting as there.
      messages.push({ role_raw: 'system', schema: false, blocks: s.flatMap((b) => anthropicBlock(b, 'system')) });
    } else {
      assert(false, 'system shape checked above');
    }
  }
  for (const m of list) {
    if (!isPlainObject(m)) undecided('anthropic message that is not an object');
    if (typeof m.role !== 'string') undecided('anthropic message without a string role');
    let blocks;
    if (typeof m.content === 'string') blocks = [mkBlock({ role_raw: m.role, kind_raw: 'text', text: m.content })];
    else if (Array.isArray(m.content)) blocks = m.content.flatMap((b) => anthropicBlock(b, m.role));
    else undecided('anthropic content that is neither a string nor a list');
    messages.push({ role_raw: m.role, schema: false, blocks });
  }
  return { level: 'L0', messages };
}

// ---------------------------------------------------------------- generic-message-list (by content)

function genericShape(recordNode) {
  if (recordNode.t === 'object' && recordNode.m.get('messages') && recordNode.m.get('messages').t === 'array') return { ok: true };
  return { r5: true };
}

function genericAdapt(rec, recNode) {
  // `text` neither a string nor null is R-5 (C-8), checked over every message
  // first; so is a stated_tokens / stated_total that is present, not null and
  // not a JSON integer within int64.
  const msgNodes = recNode.m.get('messages').a;
  const carried = [];
  // A member present and not null (null reads as absent: C-8, C-16).
  const presentNonNull = (o, k) => hasOwn(o, k) && o[k] !== null;
  for (const [k, m] of rec.messages.entries()) {
    if (!isPlainObject(m)) undecided('generic message that is not an object');
    // C-16: a message without text stays R-5 (only a tool schema may lack it).
    if (!hasOwn(m, 'text') || (m.text !== null && typeof m.text !== 'string')) return { r5: true };
    // C-8, C-16 (the refusals at these edges): role, kind, name and source
    // present, not null and not a string, or has_args present, not null and
    // not a boolean, are R-5.
    for (const key of ['role', 'kind', 'name', 'source']) if (presentNonNull(m, key) && typeof m[key] !== 'string') return { r5: true };
    if (presentNonNull(m, 'has_args') && typeof m.has_args !== 'boolean') return { r5: true };
    const sn = msgNodes[k].m.get('stated_tokens');
    carried.push(undefined);
    if (sn !== undefined && !(sn.t === 'lit' && sn.v === null)) {
      const c = carriedInteger(sn);
      if (!c) return { r5: true };
      carried[k] = c;
    }
  }
  let statedTotal;
  const stn = recNode.m.get('stated_total');
  if (stn !== undefined && !(stn.t === 'lit' && stn.v === null)) {
    statedTotal = carriedInteger(stn);
    if (!statedTotal) return { r5: true };
  }
  // C-16 (the refusals at these edges): tool_schemas neither an array nor
  // null, an entry that is not an object, or an entry whose text is neither
  // a string, null nor absent, is R-5; null is no tool schemas. An entry is
  // read with a message's member types (C-8, C-16): its role, kind, name or
  // source present, not null and not a string, or its has_args present, not
  // null and not a boolean, is R-5 too ({"name": 5, "text": "t"}).
  let schemas = [];
  if (presentNonNull(rec, 'tool_schemas')) {
    if (!Array.isArray(rec.tool_schemas)) return { r5: true };
    for (const s of rec.tool_schemas) {
      if (!isPlainObject(s)) return { r5: true };
      if (presentNonNull(s, 'text') && typeof s.text !== 'string') return { r5: true };
      for (const key of ['role', 'kind', 'name', 'source']) if (presentNonNull(s, key) && typeof s[key] !== 'string') return { r5: true };
      if (presentNonNull(s, 'has_args') && typeof s.has_args !== 'boolean') return { r5: true };
    }
    schemas = rec.tool_schemas;
  }
  let level = 'L0';
  if (rec.messages.some((m) => nonEmptyString(m.kind)) || schemas.length > 0) level = 'L2';
  else if (rec.messages.some((m) => presentNonNull(m, 'name') || presentNonNull(m, 'has_args') || presentNonNull(m, 'source'))) level = 'L1';
  const messages = [];
  if (schemas.length > 0) {
    messages.push({
      role_raw: undefined, schema: true,
      blocks: schemas.map((s) => {
        // C-16: an entry whose text is absent or null is one non-serialisable
        // tool_definition block (C-UNK), as a message's text: null is.
        return mkBlock({ kind_raw: 'tool_definition', name: typeof s.name === 'string' ? s.name : undefined, text: typeof s.text === 'string' ? s.text : null, schema: true });
      }),
    });
  }
  for (const [k, m] of rec.messages.entries()) {
    // Checked above: role, kind, name and source are strings or absent (null
    // read as absent). A message without a role is not refused (C-8, C-16:
    // only a role present, not null and not a string is R-5): its role_raw is
    // empty, so axis P has no role to read (P-UNK unless a kind says more).
    const role = typeof m.role === 'string' ? m.role : undefined;
    messages.push({
      role_raw: role, schema: false,
      blocks: [mkBlock({
        role_raw: role, kind_raw: typeof m.kind === 'string' ? m.kind : undefined, name: typeof m.name === 'string' ? m.name : undefined,
        has_args: m.has_args === true, source: typeof m.source === 'string' ? m.source : undefined, text: m.text, stated_tokens: carried[k],
      })],
    });
  }
  return { level, messages, stated_total: statedTotal };
}

// ============================================================== axis P (C-9, C-9a)
//
// C-9's table is data (ANNEX C-9a): class-lists.json beside the criteria,
// which the engine embeds too. Nothing here holds a role, kind or tool word
// of its own: a block's column is chosen by its record's format and level,
// and its classes are the column's tests that fire, tried in the criteria's
// total order. A revision that maps a new format's words edits that file, not
// this code. The file is read and checked once per build; a member, class or
// level the file's format does not define stops the generator (C-9a: rather
// than drop a rule silently).

// Beside criteria.json, from the repository root this module sits in
// (corpus/gen/), as gen-corpus.mjs finds criteria.json.
const CLASS_LISTS_PATH = join(dirname(dirname(dirname(fileURLToPath(import.meta.url)))), 'criteria', criteriaName, 'class-lists.json');

// The vocabulary of the file's format (C-9a): its members, the classes a
// column may test (never the residual P-OTHER and P-UNK), the levels, the
// test members and the raw values `reads` may name. READS is also the order
// P-OTHER prints a block's raw values in (C-13: role_raw before kind_raw).
const CLASS_LISTS_MEMBERS = ['class_lists', 'decided_in', 'columns'];
const COLUMN_MEMBERS = ['formats', 'levels', 'reads', 'classes'];
const TESTABLE_P = ['P-TDEF', 'P-CMPT', 'P-TCALL', 'P-TRES', 'P-RETR', 'P-SYS', 'P-USER', 'P-ASST'];
const RESIDUAL_P = ['P-OTHER', 'P-UNK'];
const TEST_MEMBERS = ['role_raw', 'kind_raw', 'schema', 'text_contains', 'result_of_call_named'];
const READS = ['role_raw', 'kind_raw'];
const ANY_FORMAT = '*';

// The checked class lists of this build (set by build() before any block is
// classified): {columns: [{formats, levels, reads, tests: [[class, test]] in
// the criteria's total order, tres: the column's P-TRES test or null}]}.
let CLASS_LISTS = null;

// Read and check class-lists.json. `order` is the criteria's axis-P class
// list (its total order, the residual last).
function readClassLists(path, order) {
  const stop = (what) => {
    throw new Error(`context-composition: ${path}: ${what}. ANNEX C-9a: class lists the generator cannot read as written `
      + 'stop it rather than drop a rule silently; fix the file (or the ANNEX and this reader together).');
  };
  assert(deepEqual(order.filter((c) => !RESIDUAL_P.includes(c)), TESTABLE_P) && deepEqual(order.slice(-2), RESIDUAL_P),
    'the criteria\'s axis-P classes are the eight testable ones of C-9a in total order, then P-OTHER and P-UNK');
  let text;
  try { text = readFileSync(path, 'utf8'); } catch (e) { stop(`cannot be read (${e.code || e.message})`); }
  let root;
  // Duplicate member names are refused: JSON readers keep one of them, which
  // would drop the other's words without a word.
  try { root = parseJson(text, { uniqueNames: true }); } catch (e) { if (e instanceof JsonError) stop(`is not one JSON value without duplicate member names (${e.message})`); throw e; }
  const doc = plain(root);
  const membersOf = (o, known, at) => {
    if (!isPlainObject(o)) stop(`${at} is not an object`);
    for (const k of Object.keys(o)) if (!known.includes(k)) stop(`${at} has the unknown member ${JSON.stringify(k)} (known: ${known.join(', ')})`);
  };
  // A list of strings (words are matched exactly, case kept). An empty
  // list is read as written: a test member with no word never fires, as a
  // class the column leaves out never does.
  const strings = (v, at) => {
    if (!Array.isArray(v) || !v.every((w) => typeof w === 'string')) stop(`${at} is not a list of strings`);
    if (v.includes('')) stop(`${at} lists an empty word`);
    return v;
  };
  membersOf(doc, CLASS_LISTS_MEMBERS, 'the document');
  for (const k of ['class_lists', 'decided_in']) if (hasOwn(doc, k) && typeof doc[k] !== 'string') stop(`${k} is not a string`);
  if (!Array.isArray(doc.columns) || doc.columns.length === 0) stop('columns is not a non-empty list');
  const columns = doc.columns.map((c, i) => {
    const at = `columns[${i}]`;
    membersOf(c, COLUMN_MEMBERS, at);
    for (const k of COLUMN_MEMBERS) if (!hasOwn(c, k)) stop(`${at} has no ${k}`);
    const formats = strings(c.formats, `${at}.formats`);
    const levels = strings(c.levels, `${at}.levels`);
    for (const l of levels) if (!LEVELS.includes(l)) stop(`${at}.levels names ${JSON.stringify(l)}, not a level (${LEVELS.join(', ')})`);
    const reads = strings(c.reads, `${at}.reads`);
    for (const r of reads) if (!READS.includes(r)) stop(`${at}.reads names ${JSON.stringify(r)}; P-OTHER reports only ${READS.join(' and ')}`);
    if (new Set(reads).size !== reads.length) stop(`${at}.reads names a raw value twice`);
    if (!reads.includes('role_raw')) stop(`${at}.reads leaves out role_raw, which every column reads`);
    if (formats.length === 0 || levels.length === 0) stop(`${at} names no format or no level`);
    if (!isPlainObject(c.classes)) stop(`${at}.classes is not an object`);
    for (const cls of Object.keys(c.classes)) {
      if (RESIDUAL_P.includes(cls)) stop(`${at}.classes tests ${cls}, which is the residual (what fires nothing), never a tested class`);
      if (!TESTABLE_P.includes(cls)) stop(`${at}.classes tests ${JSON.stringify(cls)}, not a testable P class (${TESTABLE_P.join(', ')})`);
      const test = c.classes[cls];
      const tat = `${at}.classes.${cls}`;
      membersOf(test, TEST_MEMBERS, tat);
      for (const k of ['role_raw', 'kind_raw', 'text_contains', 'result_of_call_named']) if (hasOwn(test, k)) strings(test[k], `${tat}.${k}`);
      if (hasOwn(test, 'schema') && typeof test.schema !== 'boolean') stop(`${tat}.schema is not a boolean`);
      // result_of_call_named is defined by the column's P-TRES test: inside
      // that test itself it would define P-TRES by P-TRES.
      if (cls === 'P-TRES' && hasOwn(test, 'result_of_call_named')) stop(`${tat} uses result_of_call_named, which C-9a defines by the P-TRES test itself`);
    }
    // A column without a P-TRES test fires no result_of_call_named (the block
    // cannot fire a test the column does not have).
    const tres = hasOwn(c.classes, 'P-TRES') ? c.classes['P-TRES'] : null;
    return { formats, levels, reads, tests: order.filter((cls) => hasOwn(c.classes, cls)).map((cls) => [cls, c.classes[cls]]), tres };
  });
  // Every level has a "*" column, so every record has one (C-9a).
  for (const l of LEVELS) {
    if (!columns.some((c) => c.formats.includes(ANY_FORMAT) && c.levels.includes(l))) stop(`no column for every format ("${ANY_FORMAT}") at ${l}`);
  }
  return { columns };
}

// The column a record's blocks are classified by: the first whose formats
// hold the declared format (or "*") and whose levels hold the record's level.
function classListColumn(fmt, level) {
  assert(CLASS_LISTS, 'the class lists are read before a block is classified');
  const col = CLASS_LISTS.columns.find((c) => (c.formats.includes(fmt) || c.formats.includes(ANY_FORMAT)) && c.levels.includes(level));
  assert(col, `a class-lists column for ${fmt} at ${level}`);
  return col;
}

// A test fires when any of its members does (C-9a). The role tested is the
// message's: every adapter gives a block its message's role_raw.
function testFires(col, test, block) {
  if (hasOwn(test, 'role_raw') && test.role_raw.includes(block.role_raw)) return true;
  if (hasOwn(test, 'kind_raw') && test.kind_raw.includes(block.kind_raw)) return true;
  if (test.schema === true && block.schema) return true;
  if (hasOwn(test, 'text_contains') && typeof block.text === 'string' && test.text_contains.some((s) => block.text.includes(s))) return true;
  if (hasOwn(test, 'result_of_call_named') && col.tres !== null && testFires(col, col.tres, block) && test.result_of_call_named.includes(block.name)) return true;
  return false;
}

// {winner, fired: the classes that fire in total order (two or more is a
// conflict, the first the winner), raw: the non-empty raw values the column
// reads, which P-OTHER prints}.
function classifyP(block, fmt, level) {
  const col = classListColumn(fmt, level);
  const fired = col.tests.filter(([, test]) => testFires(col, test, block)).map(([cls]) => cls);
  const raw = READS.filter((r) => col.reads.includes(r)).map((r) => block[r]).filter(nonEmptyString);
  const winner = fired[0] || (raw.length > 0 ? 'P-OTHER' : 'P-UNK');
  return { winner, fired, raw };
}

// ============================================================== the formats (criteria, C-8, C-9)
//
// Which formats are accepted, and at which level, is the criteria
// document's (accepted_formats, format_levels, assessability_matrix): the
// generator reads it from there. Computing an expected answer for a record
// in a format needs that format's own rules, which only its adapter here
// knows: the shape tests (R-4, R-5) and the blocks (C-8). Its axis-P words
// are not an adapter's: they are the class lists' (C-9a, read above), so an
// entry has no axis-P member (one still written `axisP: null` is ignored).
// `level` is the level the adapter's rules are written for: a fixed level,
// or 'by-content' when the adapter decides per record.
// shape(recordNode, bodyText) -> {r4} | {r5} | shape; adapt(shape,
// recordNode) -> {r5} | SessionRecord.
const ADAPTERS = {
  'letta-af': {
    level: 'L2',
    shape: (recordNode, bodyText) => lettaShape(recordNode, bodyText),
    adapt: (shape) => lettaAdapt(shape),
  },
  'anthropic-messages': {
    level: 'L0',
    shape: (recordNode) => anthropicShape(recordNode),
    adapt: (shape, recordNode) => anthropicAdapt(plain(recordNode)),
  },
  'generic-message-list': {
    level: 'by-content',
    shape: (recordNode) => genericShape(recordNode),
    adapt: (shape, recordNode) => genericAdapt(plain(recordNode), recordNode),
  },
};
const LEVELS = ['L0', 'L1', 'L2'];
// The assessability matrix states a by-content level as its range.
const MATRIX_LEVEL = { L0: 'L0', L1: 'L1', L2: 'L2', 'by-content': 'L0/L1/L2 by content' };

// The accepted formats and their levels, from the criteria; stops with a
// message naming the format when the criteria accept one this generator
// cannot compute answers for.
function acceptedFormats(criteria) {
  const accepted = criteria.accepted_formats;
  assert(Array.isArray(accepted) && accepted.length > 0 && accepted.every(nonEmptyString)
    && new Set(accepted).size === accepted.length, 'criteria accepted_formats is a list of distinct non-empty ids');
  const levels = criteria.format_levels;
  const matrix = criteria.assessability_matrix;
  assert(isPlainObject(levels) && isPlainObject(matrix), 'criteria format_levels and assessability_matrix are objects');
  // Every accepted format has a level and a matrix row, and nothing else has.
  for (const [member, keys] of [['format_levels', Object.keys(levels)], ['assessability_matrix', Object.keys(matrix).filter((k) => k !== 'F11')]]) {
    const missing = accepted.filter((f) => !keys.includes(f));
    const extra = keys.filter((k) => !accepted.includes(k));
    assert(missing.length === 0 && extra.length === 0,
      `criteria ${member} names exactly the accepted formats (missing: ${missing.join(', ') || 'none'}; not accepted: ${extra.join(', ') || 'none'})`);
  }
  for (const fmt of accepted) {
    const level = levels[fmt];
    assert(hasOwn(MATRIX_LEVEL, level), `criteria format_levels gives ${fmt} the level ${JSON.stringify(level)}; the generator knows L0, L1, L2 and by-content`);
    const adapter = hasOwn(ADAPTERS, fmt) ? ADAPTERS[fmt] : null;
    if (!adapter) {
      throw new Error(`context-composition: the criteria accept the format "${fmt}" (level ${level}), but corpus/gen/context-composition.mjs has no adapter for it. `
        + `The expected answers for a record in that format need its adaptation rules: write them from the criteria and the ANNEX `
        + `(C-8: the record's shapes, its R-4 and R-5 refusals, its messages and blocks), `
        + `add an entry for "${fmt}" to ADAPTERS, and add cases for it; its axis-P words, if the "*" columns' are not its own, go in `
        + `criteria/${criteriaName}/class-lists.json (C-9a). The generator produces no cases for a format it cannot adapt.`);
    }
    if (adapter.level !== level) {
      throw new Error(`context-composition: the criteria give the format "${fmt}" the level ${level}, but the generator's adapter for it implements the rules for ${adapter.level}: `
        + `update its adaptation rules (ANNEX C-8) in ADAPTERS, and its class-lists.json columns (C-9a) if it needs its own, to the criteria's level.`);
    }
    // The generator computes every factor from the record and its level; the
    // matrix row must say what that computation gives (C-7, C-9: structural
    // classes are not identifiable below L2, so F-1, F-2b, F-8, F-9 are
    // partial there).
    const row = matrix[fmt];
    assert(isPlainObject(row) && row.level === MATRIX_LEVEL[level], `assessability_matrix.${fmt}.level ${JSON.stringify(row && row.level)} agrees with format_levels (${level})`);
    const starts = (prefix) => (c) => typeof c === 'string' && c.startsWith(prefix);
    const partial = level === 'by-content' ? starts('P at L0/L1, A at L2') : level === 'L2' ? (c) => c === 'A' : starts('P');
    const expectCells = {
      F1: partial, F2b: partial, F8: partial, F9: partial,
      F2: (c) => c === 'A', F3: (c) => c === 'A', F4: (c) => c === 'A', F6: (c) => c === 'A', F7: (c) => c === 'A', F12: (c) => c === 'A',
      F5: (c) => c === 'A (NOT-ASSESSABLE for a record with no P-USER message)',
      F10: (c) => c === 'submission-conditional (stated counts + coverage rule)',
    };
    assert(deepEqual(Object.keys(row).filter((k) => k !== 'level').sort(), Object.keys(expectCells).sort()), `assessability_matrix.${fmt} has the cells F1 to F12 but F11`);
    for (const [cell, ok] of Object.entries(expectCells)) {
      if (!ok(row[cell])) {
        throw new Error(`context-composition: the criteria's assessability_matrix.${fmt}.${cell} is ${JSON.stringify(row[cell])}, which the generator's rules for a ${level} record do not give: `
          + `the generator needs the rule behind that cell before it can compute ${fmt} answers.`);
      }
    }
  }
  return { accepted: [...accepted], level: (fmt) => levels[fmt], adapter: (fmt) => ADAPTERS[fmt] };
}

// ============================================================== the family

export function build({ criteria, annexText }) {
  const caps = criteria.input_contract.caps;
  const CAP = { body: caps.body_bytes, entries: caps.entries, entry: caps.entry_bytes, stated: caps.stated_counts_bytes };
  assert(CAP.body === 5242880 && CAP.entries === 10000 && CAP.entry === 1048576 && CAP.stated === 65536, 'caps differ from the criteria text');
  assert(deepEqual(criteria.ops, ['audit']), 'ops');
  const service = criteria.service;
  assert(service === 'context-audit', 'service');
  const ENVELOPE = criteria.envelope.version;
  assert(ENVELOPE === 'context-composition-envelope/1', 'envelope version');
  const FORMATS = acceptedFormats(criteria);
  const ACCEPTED = FORMATS.accepted;
  assert(!ACCEPTED.includes(NEVER_ACCEPTED_FORMAT), `the criteria accept ${NEVER_ACCEPTED_FORMAT}, the corpus's example of an unknown format: pick another name for it`);
  const PRICE_LINE = `${criteria.price.label} ${criteria.price.basis}`;
  assert(PRICE_LINE === '$0.05 per report (one submitted session/context record)', 'price line');
  assert(annexText.includes(`"price": "${PRICE_LINE}"`), 'price line as printed in ANNEX C-6');
  const NEVER = criteria.never_assessable;
  assert(Array.isArray(NEVER) && NEVER.length === 8, 'never_assessable register');
  // Axis P's words (C-9a), tried in the criteria's total order; read before
  // any block is classified, and checked whole, so a bad file stops here.
  CLASS_LISTS = readClassLists(CLASS_LISTS_PATH, criteria.taxonomy.axis_p.classes);

  selfTest({ annexText, criteria });

  // ------------------------------------------------------------ answer model

  const common = (op, kind) => commonMembers(criteria, service, 'audit', op, kind);
  function refusal(op, code, facts = {}) {
    const r = RULE[code];
    assert(r && r.status !== 422 && r.message, 'refusal ' + code);
    return { status: r.status, answer: { ...common(op, 'refusal'), error: { code, message: r.message, ...facts } } };
  }

  // Validation + adaptation of one request text: a refusal, or the adapted
  // record with its could-not-measure kind (if any) and the pre-check facts.
  function evaluate(text) {
    if (utf8Length(text) > CAP.body) return { refuse: ['body_bytes_cap', { cap: CAP.body }] };
    const root = tryParse(text);
    if (!root || root.t !== 'object') return { refuse: ['malformed_body'] };
    const env = plain(root);
    assert(deepEqual(env, JSON.parse(text)), 'own parser agrees with JSON.parse');
    if (env.envelope_version !== ENVELOPE) return { refuse: ['envelope_version_not_supported'] };
    const fmt = env.declared_format_id;
    if (typeof fmt !== 'string' || !ACCEPTED.includes(fmt)) return { refuse: ['format_not_accepted', { accepted_formats: [...ACCEPTED] }] };
    if (!hasOwn(env, 'record')) return { refuse: ['record_required'] };
    const recordNode = root.m.get('record');
    if (recordNode.t === 'lit' && recordNode.v === null) undecided('record: null (missing, or a record that does not parse?)');
    const adapter = FORMATS.adapter(fmt);
    const shape = adapter.shape(recordNode, text);
    if (shape.r4) return { refuse: ['record_required'] };
    if (hasOwn(env, 'harness_stated_counts')) {
      const hn = root.m.get('harness_stated_counts');
      if (hn.t === 'lit' && hn.v === null) undecided('harness_stated_counts: null');
      if (hn.t !== 'object' || utf8Length(text.slice(hn.start, hn.end)) > CAP.stated) {
        return { refuse: ['stated_counts_invalid', { cap: CAP.stated }] };
      }
    }
    if (shape.r5) return { refuse: ['record_does_not_parse_as_declared_format'] };
    const rec = adapter.adapt(shape, recordNode);
    if (rec.r5) return { refuse: ['record_does_not_parse_as_declared_format'] };
    const level = FORMATS.level(fmt);
    assert(level === 'by-content' ? LEVELS.includes(rec.level) : rec.level === level, `${fmt} record adapted at ${rec.level}, criteria level ${level}`);
    // R-6 (caller) is the host's; cases always carry a well-formed caller.

    // Entries = blocks, schema blocks included, in adapted order.
    const blocks = rec.messages.flatMap((m) => m.blocks);
    const sizes = blocks.map((b) => {
      if (b.text === null) return { bytes: 0, C: 0, E: 0 };
      const C = nfcC(b.text);
      return { bytes: utf8Length(b.text), C, E: em1(C) };
    });
    const T = sizes.reduce((k, s) => k + s.E, 0);
    let cnm = null;
    if (blocks.length > CAP.entries) cnm = ['too_many_entries', { cap: CAP.entries, entries: blocks.length }];
    else {
      const big = sizes.findIndex((s) => s.bytes > CAP.entry);
      if (big >= 0) cnm = ['entry_too_large', { cap: CAP.entry, entry_index: big }];
      else if (blocks.length === 0) cnm = ['zero_entries', {}];
      else if (T === 0) cnm = ['nothing_assessable', {}];
    }
    // C-11's T = 0 rule agrees with "no block carries a textual payload" read
    // as axis C: every block C-EMPTY or C-UNK.
    if (blocks.length > 0 && blocks.length <= 200) {
      const allVoid = blocks.every((b) => ['C-EMPTY', 'C-UNK'].includes(classifyC(b.text)));
      assert(allVoid === (T === 0), 'T = 0 iff every block is C-EMPTY or C-UNK');
    }
    return { env, fmt, rec, blocks, sizes, T, cnm, root, recordNode, text };
  }

  // The stated counts of a submission (C-8, C-10, C-12, C-13), over the
  // non-schema messages in adapted order.
  function statedInfo(ev) {
    const { root, rec } = ev;
    const msgs = rec.messages.filter((m) => !m.schema);
    const hn = root.m.get('harness_stated_counts'); // an object when present (validated)
    let total = null; // {valid, value} of a present, non-null harness total
    let entries = []; // per_message nodes
    if (hn !== undefined) {
      const tn = hn.m.get('total');
      if (tn !== undefined && !(tn.t === 'lit' && tn.v === null)) total = { valid: validHarnessFigure(tn), value: tn.t === 'number' ? Number(tn.raw) : null };
      const pn = hn.m.get('per_message');
      if (pn !== undefined) {
        if (pn.t !== 'array') undecided('per_message that is not an array');
        entries = pn.a;
      }
    }
    const isNull = (n) => n.t === 'lit' && n.v === null;
    const inRange = entries.slice(0, msgs.length);
    const ignored = Math.max(0, entries.length - msgs.length);
    const invalidEntries = inRange.filter((n) => !isNull(n) && !validHarnessFigure(n)).length;
    const gt = rec.stated_total; // generic stated_total, carried
    // The whole-record figure: the envelope's valid total wins over a valid
    // generic stated_total (C-12, C-13).
    // C-14: an invalid envelope total states nothing (it is still counted
    // as invalid), so a valid generic stated_total is then the total.
    let wholeTotal = null;
    if (total && total.valid) wholeTotal = { value: total.value, from: 'harness' };
    else if (gt && gt.valid) wholeTotal = { value: Number(gt.value), from: 'stated_total' };
    const perMessage = msgs.map((m, i) => {
      const n = inRange[i];
      if (n !== undefined && validHarnessFigure(n)) return { covered: true, stated: Number(n.raw), from: 'per_message' };
      if (m.blocks.length > 0 && m.blocks.every((b) => b.stated_tokens && b.stated_tokens.valid)) {
        const sum = m.blocks.reduce((k, b) => k + b.stated_tokens.value, 0n);
        assert(sum <= BigInt(Number.MAX_SAFE_INTEGER), 'stated sum is a safe integer');
        return { covered: true, stated: Number(sum), from: 'stated_tokens' };
      }
      return { covered: false };
    });
    // C-14: an entry at or beyond message_count states nothing; a generic
    // stated_tokens / stated_total outside 0 … 999999999999999 states nothing.
    const validInRange = inRange.some(validHarnessFigure);
    const anyStated = wholeTotal !== null || validInRange || ev.blocks.some((b) => b.stated_tokens && b.stated_tokens.valid);
    const allCovered = perMessage.every((x) => x.covered);
    // C-10 (as amended): F-10 is NOT-ASSESSABLE only with `no stated counts`.
    // "Partial coverage (not every non-schema message covered, and no valid
    // total) does not make F-10 NOT-ASSESSABLE: M12 computes its aggregates
    // 'only over covered units', and only its whole-record figure is
    // NOT-ASSESSABLE (`partial coverage`, C-13)."
    const status = anyStated ? null : 'no stated counts';
    const partial = anyStated && !allCovered && !wholeTotal;
    return { msgs, total, wholeTotal, perMessage, ignored, invalidEntries, allCovered, partial, status };
  }

  // C-10: the pre-check's NOT-ASSESSABLE list, register order.
  function notAssessable(ev) {
    const { fmt, rec } = ev;
    const msgs = rec.messages.filter((m) => !m.schema);
    const out = [];
    // F-3: no non-schema message has a sized block (C-10 as amended by C-13).
    if (!msgs.some((m) => m.blocks.some((b) => b.text !== null))) out.push({ factor: 'F-3', metric: 'M06', reason: 'zero denominator' });
    // C-14: a message with no blocks has no first block, so it is not P-USER.
    const anyUser = msgs.some((m) => m.blocks.length > 0 && classifyP(m.blocks[0], fmt, rec.level).winner === 'P-USER');
    if (!anyUser) out.push({ factor: 'F-5', metric: 'M07', reason: 'no P-USER message' });
    const st = statedInfo(ev);
    // C-10 / C-13: F-10 is listed only with `no stated counts`, and then
    // carries the criteria's M12 label; partial coverage lists nothing.
    if (st.status) {
      assert(st.status === NO_STATED, 'F-10 pre-check reason is no stated counts only');
      out.push({ factor: 'F-10', metric: 'M12', reason: st.status, label: NO_STATED_LABEL });
    }
    out.push({ factor: 'F-11', metric: null, reason: 'NOT-ASSESSABLE-BY-DESIGN in v1' });
    return out;
  }

  function precheckAnswer(ev) {
    const { env, fmt, rec, blocks, sizes, T, cnm } = ev;
    let unknown = 0;
    for (const k of Object.keys(env)) if (!KNOWN_MEMBERS.has(k)) unknown++;
    for (const k of ['declared_format_version', 'criteria_ack']) if (hasOwn(env, k) && typeof env[k] !== 'string') unknown++;
    const a = {
      ...common('precheck', 'precheck'),
      declared_format: { id: fmt, accepted: true, level: rec.level, version_supplied: typeof env.declared_format_version === 'string' },
      unknown_top_level_members: unknown,
    };
    // C-6 (as amended): the figures stay when a could-not-measure kind
    // applies ("every other member stays, the figures included"), computed by
    // the same rules: the criteria's free_precheck returns the entry count,
    // the total size and the headline share for every submission it accepts.
    // An oversize entry still counts its bytes and E in the totals; a zero T
    // at L2 makes the headline a zero-denominator NOT-ASSESSABLE (C-3).
    a.entry_count = blocks.length;
    a.total = { bytes: sizes.reduce((k, s) => k + s.bytes, 0), tokens: est(T) };
    if (rec.level === 'L2') {
      const tres = blocks.reduce((k, b, i) => k + (classifyP(b, fmt, rec.level).winner === 'P-TRES' ? sizes[i].E : 0), 0);
      a.headline = { tool_output_share: shareText(tres, T) };
    } else {
      a.headline = { tool_output_share: { value: 'NOT-ASSESSABLE', reason: 'not identifiable at this level' } };
    }
    a.not_assessable = notAssessable(ev);
    a.never_assessable = [...NEVER];
    a.could_not_measure = cnm ? { kind: cnm[0], ...cnm[1] } : null;
    a.price = PRICE_LINE;
    return a;
  }

  // ------------------------------------------------------------ the paid report (C-12, C-13)

  const P_CLASSES = criteria.taxonomy.axis_p.classes;
  const C_CLASSES = criteria.taxonomy.axis_c.classes;
  assert(deepEqual(P_CLASSES, ['P-TDEF', 'P-CMPT', 'P-TCALL', 'P-TRES', 'P-RETR', 'P-SYS', 'P-USER', 'P-ASST', 'P-OTHER', 'P-UNK']), 'axis P classes');
  assert(deepEqual(C_CLASSES, ['C-EMPTY', 'C-UNK', 'C-BLOB', 'C-RAW', 'C-STRUCT', 'C-CODE', 'C-TEXT']), 'axis C classes');
  const STRUCTURAL = ['P-TDEF', 'P-CMPT', 'P-TCALL', 'P-TRES', 'P-RETR'];
  const NA = (reason) => ({ value: 'NOT-ASSESSABLE', reason });
  const NON_SER = 'non-serialisable payload';
  const NOT_IDENT = 'not identifiable at this level';
  // Fixed sentences: each must occur in the ANNEX (whitespace-normalised).
  const annexFlat = annexText.replace(/\s+/g, ' ');
  const fixed = (sentence) => { assert(annexFlat.includes(sentence), 'ANNEX sentence: ' + sentence); return sentence; };
  const S = {
    f3: fixed('Nearest-rank percentiles and the 10 % largest-contributor threshold are fleet conventions.'),
    f5: fixed('The turn definition is a fleet convention.'),
    f6: fixed('Near duplication is a labelled fleet convention: word 3-gram shingles, Jaccard at least 0.80, pairs already exact under M08 excluded.'),
    f7: fixed('The census thresholds are fleet conventions; the counts are mechanical facts given the tests.'),
    f8absent: fixed('no tool definitions present in the submitted record'),
    f9cmpt: fixed('no P-CMPT block identified at this level'),
    f10conv: fixed('The ±5 % tolerance is a fleet convention.'),
    f10note: fixed('Disagreement measures the gap between the harness\'s count and EM-1 — not an error by either side.'),
    f11: fixed('NOT-ASSESSABLE-BY-DESIGN in v1'),
    notIdent: fixed(NOT_IDENT),
  };
  // C-6 (as amended): a could-not-measure pre-check keeps its figures.
  fixed('(the pre-check still answers 200); every other member stays, the figures included');
  assert(criteria.metric_register.M12.includes('not an error by either side') && criteria.assessability_matrix.F11.startsWith(S.f11), 'criteria sentences');
  // The F-10 label comes from M12's own text ("... = NOT-ASSESSABLE (no
  // stated counts), label NO-STATED-COUNT"); the ANNEX (C-10, C-13) prints it
  // as the member "label" of F-10 with reason `no stated counts` only.
  const NO_STATED = 'no stated counts';
  // C-13: the whole-record figure's reason at coverage below 100 % with no
  // valid total (M12's own words).
  const PARTIAL = 'partial coverage';
  assert(criteria.metric_register.M12.includes('a whole-record figure at coverage <100% is NOT-ASSESSABLE (partial coverage)'), 'M12 partial coverage sentence');
  fixed('or, with no valid total and a message uncovered, `NA("partial coverage")`');
  const NO_STATED_LABEL = (() => {
    const m = /NOT-ASSESSABLE \(no stated counts\), label ([A-Z][A-Z-]*[A-Z])/.exec(criteria.metric_register.M12);
    assert(m && m[1] === 'NO-STATED-COUNT', 'M12 label');
    return m[1];
  })();
  fixed('F-10 with reason `no stated counts` also carries `"label": "NO-STATED-COUNT"`');
  fixed('(F-10 with `no stated counts` adds `"label": "NO-STATED-COUNT"`, the criteria\'s M12 label)');
  const LABELLING = criteria.estimation_method.labelling;
  const SCOPE = criteria.scope_block;
  const F9_LINE = criteria.f9_line;
  assert(typeof LABELLING === 'string' && typeof SCOPE === 'string' && typeof F9_LINE === 'string', 'verbatim criteria members');
  const METRIC = {
    'F-1': 'M03', 'F-2': 'M04', 'F-2b': 'M05', 'F-3': 'M06', 'F-4': 'M08', 'F-5': 'M07', 'F-6': 'M09',
    'F-7': 'M10', 'F-8': 'M11', 'F-9': 'M14', 'F-10': 'M12', 'F-11': null, 'F-12': 'M15',
  };
  const sum = (xs) => xs.reduce((k, x) => k + x, 0);
  const rawCap = (v) => {
    const cps = [...v];
    return cps.length > 64 ? cps.slice(0, 64).join('') + '\u2026' : v;
  };

  // A comparison C of C-13's F-10.
  function comparison(s, E) {
    assert(Number.isSafeInteger(s) && s >= 0 && Number.isSafeInteger(E) && E >= 0, 'comparison operands');
    const d = Math.abs(s - E);
    let agreement;
    if (E === 0 && s === 0) agreement = 'EXACT';
    else if (E > 0 && 20 * d <= E) agreement = 'WITHIN';
    else agreement = 'DISAGREE';
    return {
      stated: s,
      measured_tokens: est(E),
      difference_tokens: est(d),
      difference_share: E === 0 ? NA('zero denominator') : shareText(d, E),
      stated_relative: s > E ? 'above' : s < E ? 'below' : 'equal',
      agreement,
    };
  }

  function reportAnswer(ev) {
    const { env, fmt, rec, T } = ev;
    const L2 = rec.level === 'L2';
    assert(T > 0, 'a report has T > 0');

    // Blocks with their indices, classes and sizes.
    const info = [];
    const msgs = [];
    let offset = 0;
    for (const m of rec.messages) {
      // C-14: a message with no blocks is a message (M01, per_message
      // indexing), unsized (M06), estimate 0 in its turn (M07).
      assert(m.blocks.length > 0 || !m.schema, 'the schema pseudo-message has blocks');
      const msgIndex = m.schema ? null : msgs.length;
      const mb = [];
      for (const b of m.blocks) {
        const sized = b.text !== null;
        const C = sized ? nfcC(b.text) : 0;
        const E = em1(C);
        const p = classifyP(b, fmt, rec.level);
        const c = classifyC(b.text);
        const tests = sized ? cTests(b.text) : null;
        if (sized) {
          const firstHolding = ['blob', 'raw', 'struct', 'code'].find((k) => tests[k]);
          const expectC = C === 0 ? 'C-EMPTY' : firstHolding ? { blob: 'C-BLOB', raw: 'C-RAW', struct: 'C-STRUCT', code: 'C-CODE' }[firstHolding] : 'C-TEXT';
          assert(expectC === c, 'axis C tests agree with the classifier');
        }
        if (!L2) assert(!STRUCTURAL.includes(p.winner), 'no structural class at L0/L1');
        const x = { index: info.length, msgIndex, schema: m.schema, block: b, sized, C, E, p, c, tests, offset };
        offset += E;
        info.push(x);
        mb.push(x);
      }
      if (!m.schema) msgs.push({ index: msgIndex, blocks: mb, est: sum(mb.filter((x) => x.sized).map((x) => x.E)), sized: mb.some((x) => x.sized) });
    }
    assert(offset === T, 'T');
    const schemaCount = rec.messages.some((m) => m.schema) ? 1 : 0;
    assert(rec.messages.filter((m) => m.schema).length === schemaCount && (!schemaCount || rec.messages[0].schema), 'schema pseudo-message first, at most one');
    const sized = info.filter((x) => x.sized);
    const Ctotal = sum(sized.map((x) => x.C));

    // ---- header facts
    const cConflict = (x) => x.sized && x.C > 0 && ['blob', 'raw', 'struct', 'code'].filter((k) => x.tests[k]).length >= 2;
    const M01 = {
      message_count: msgs.length,
      block_count: info.length,
      schema_block_count: info.filter((x) => x.schema).length,
      empty_block_count: info.filter((x) => x.c === 'C-EMPTY').length,
      axis_p_conflict_count: info.filter((x) => x.p.fired.length >= 2).length,
      axis_c_conflict_count: info.filter(cConflict).length,
    };
    const M02 = { characters: Ctotal, tokens: est(T), unsized_block_count: info.length - sized.length };
    const unkRow = (bs) => {
      const tok = sum(bs.filter((x) => x.sized).map((x) => x.E));
      return { block_count: bs.length, tokens: est(tok), share: shareText(tok, T) };
    };
    const cUnk = info.filter((x) => x.c === 'C-UNK');
    const either = info.filter((x) => x.p.winner === 'P-UNK' || x.c === 'C-UNK');
    const M13 = {
      p_unk: unkRow(info.filter((x) => x.p.winner === 'P-UNK')),
      c_unk: cUnk.length > 0 ? { block_count: cUnk.length, tokens: NA(NON_SER), share: NA(NON_SER) } : { block_count: 0, tokens: 'est:~0', share: 'est:~0.00%' },
      either: unkRow(either),
    };

    // ---- rows
    function pRow(cls, margin) {
      if (!L2 && STRUCTURAL.includes(cls)) return { class: cls, note: NOT_IDENT };
      const bs = info.filter((x) => x.p.winner === cls);
      const tok = sum(bs.filter((x) => x.sized).map((x) => x.E));
      const row = { class: cls, block_count: bs.length, tokens: est(tok) };
      if (!margin) row.share = shareText(tok, T);
      if (!margin && cls === 'P-OTHER') {
        // The raw values the block's column reads (C-9a `reads`), role first.
        const seen = [];
        for (const x of bs) for (const v of x.p.raw) if (!seen.includes(v)) seen.push(v);
        // C-14: once per distinct printed value (after the cap), in order of
        // first appearance.
        row.raw_values = [...new Set(seen.map(rawCap))];
      }
      return row;
    }
    function cRow(cls, margin) {
      const bs = info.filter((x) => x.c === cls);
      if (cls === 'C-UNK' && bs.length > 0) {
        const row = { class: cls, block_count: bs.length, tokens: NA(NON_SER) };
        if (!margin) row.share = NA(NON_SER);
        return row;
      }
      const tok = sum(bs.filter((x) => x.sized).map((x) => x.E));
      const row = { class: cls, block_count: bs.length, tokens: est(tok) };
      if (!margin) row.share = shareText(tok, T);
      return row;
    }
    const head = (id) => ({ id, metric: METRIC[id], status: 'ASSESSABLE' });
    const notAss = (id, reason) => ({ id, metric: METRIC[id], status: 'NOT-ASSESSABLE', reason });

    // ---- F-1, F-2, F-2b
    const F1 = {
      ...head('F-1'),
      rows: P_CLASSES.map((c) => pRow(c, false)),
      conflicts: info.filter((x) => x.p.fired.length >= 2).map((x) => ({ block_index: x.index, winner: x.p.fired[0], losers: x.p.fired.slice(1) })),
    };
    for (const cf of F1.conflicts) assert(cf.winner === info[cf.block_index].p.winner, 'winner first');
    const F2 = { ...head('F-2'), rows: C_CLASSES.map((c) => cRow(c, false)) };
    const cells = [];
    for (const pc of P_CLASSES) {
      for (const cc of C_CLASSES) {
        const bs = info.filter((x) => x.p.winner === pc && x.c === cc);
        if (bs.length === 0) continue;
        cells.push({ p: pc, c: cc, block_count: bs.length, tokens: cc === 'C-UNK' ? NA(NON_SER) : est(sum(bs.filter((x) => x.sized).map((x) => x.E))) });
      }
    }
    const F2b = { ...head('F-2b'), cells, margins: { axis_p: P_CLASSES.map((c) => pRow(c, true)), axis_c: C_CLASSES.map((c) => cRow(c, true)) } };

    // ---- F-3 (M06)
    let F3;
    const dist = msgs.filter((m) => m.sized);
    if (dist.length === 0) F3 = notAss('F-3', 'zero denominator');
    else {
      const n = dist.length;
      const total = sum(dist.map((m) => m.est));
      const sorted = dist.map((m) => m.est).sort((a, b) => a - b);
      const rankMedian = Math.floor((n + 1) / 2); // ceil(0.5 n)
      const rankP90 = Math.floor((9 * n + 9) / 10); // ceil(0.9 n), in integers
      const byEst = [...dist].sort((a, b) => b.est - a.est || a.index - b.index);
      const top = new Set(byEst.slice(0, 3).filter((m) => m.est > 0).map((m) => m.index));
      for (const m of dist) if (m.est > 0 && 10 * m.est >= total) top.add(m.index);
      const contributors = [...top].sort((a, b) => a - b).map((i) => {
        const m = msgs[i];
        return { message_index: i, tokens: est(m.est), share: shareText(m.est, T) };
      });
      F3 = {
        ...head('F-3'),
        excluded: { schema_pseudo_message_count: schemaCount, unsized_message_count: msgs.length - n },
        message_count: n,
        total_tokens: est(total),
        min_tokens: est(sorted[0]),
        max_tokens: est(sorted[n - 1]),
        mean_tokens: est(Math.floor((2 * total + n) / (2 * n))),
        lower_median: { rank: rankMedian, tokens: est(sorted[rankMedian - 1]) },
        p90: { rank: rankP90, tokens: est(sorted[rankP90 - 1]) },
        largest_contributors: contributors,
        convention: S.f3,
      };
    }

    // ---- F-4 (M08)
    const byN = new Map();
    for (const x of sized) {
      const nn = normN(x.block.text);
      x.N = nn;
      if (nn === '') continue;
      if (!byN.has(nn)) byN.set(nn, []);
      byN.get(nn).push(x);
    }
    const groups = [...byN.values()].filter((g) => g.length >= 2).sort((a, b) => a[0].index - b[0].index).map((g) => ({
      block_indices: g.map((x) => x.index),
      kept_block_index: g[0].index,
      excess_block_count: g.length - 1,
      excess_tokens: est(sum(g.slice(1).map((x) => x.E))),
    }));
    const dupGroups = [...byN.values()].filter((g) => g.length >= 2);
    const excessTok = sum(dupGroups.map((g) => sum(g.slice(1).map((x) => x.E))));
    const F4 = {
      ...head('F-4'),
      group_count: groups.length,
      duplicated_block_count: sum(dupGroups.map((g) => g.length)),
      excess_block_count: sum(dupGroups.map((g) => g.length - 1)),
      excess_tokens: est(excessTok),
      excess_share: shareText(excessTok, T),
      groups,
    };

    // ---- F-5 (M07)
    let F5;
    const isUserMsg = (m) => m.blocks.length > 0 && m.blocks[0].p.winner === 'P-USER';
    if (!msgs.some(isUserMsg)) F5 = notAss('F-5', 'no P-USER message');
    else {
      const turns = [];
      let cur = null;
      let k = 0;
      for (const m of msgs) {
        if (isUserMsg(m)) { k++; cur = { turn: k, first_message_index: m.index, n: 0, inc: 0 }; turns.push(cur); }
        else if (cur === null) { cur = { turn: 0, first_message_index: m.index, n: 0, inc: 0 }; turns.push(cur); }
        cur.n++;
        cur.inc += m.est;
      }
      let cum = 0;
      F5 = {
        ...head('F-5'),
        excluded: { schema_pseudo_message_count: schemaCount },
        turn_count: turns.length,
        turns: turns.map((t) => {
          cum += t.inc;
          return { turn: t.turn, first_message_index: t.first_message_index, message_count: t.n, increment_tokens: est(t.inc), cumulative_tokens: est(cum), cumulative_share: shareText(cum, T) };
        }),
        convention: S.f5,
      };
    }

    // ---- F-6 (M09)
    const eligible = [];
    for (const x of sized) {
      const toks = m09Tokens(x.N);
      if (toks.length >= 3) eligible.push({ x, sh: shingles(toks) });
    }
    const pairs = [];
    for (let a = 0; a < eligible.length; a++) {
      for (let b = a + 1; b < eligible.length; b++) {
        const A = eligible[a], B = eligible[b];
        if (A.x.N === B.x.N) continue; // exact under M08
        let inter = 0;
        for (const g of A.sh) if (B.sh.has(g)) inter++;
        const union = A.sh.size + B.sh.size - inter;
        if (5 * inter >= 4 * union) pairs.push([A.x.index, B.x.index]);
      }
    }
    pairs.sort((p1, p2) => p1[0] - p2[0] || p1[1] - p2[1]);
    const F6 = {
      ...head('F-6'),
      eligible_block_count: eligible.length,
      pair_count: pairs.length,
      listing_bound: 100,
      pairs: pairs.slice(0, 100),
      convention: S.f6,
    };

    // ---- F-7 (M10)
    const withSegs = [];
    let std = 0, url = 0, segChars = 0;
    const rawBlocks = [];
    for (const x of sized) {
      const segs = x.tests.segs;
      const s1 = segs.filter((g) => g.alphabet === 'standard').length;
      const u1 = segs.filter((g) => g.alphabet === 'url-safe').length;
      std += s1;
      url += u1;
      segChars += sum(segs.map((g) => g.text.length));
      if (segs.length > 0) withSegs.push({ block_index: x.index, standard_segment_count: s1, url_safe_segment_count: u1 });
      if (x.tests.raw) rawBlocks.push(x.index);
    }
    const F7 = {
      ...head('F-7'),
      standard_segment_count: std,
      url_safe_segment_count: url,
      segment_characters: segChars,
      blocks_with_segments: withSegs,
      raw_export_block_count: rawBlocks.length,
      raw_export_blocks: rawBlocks,
      convention: S.f7,
    };

    // ---- F-8 (M11)
    let F8;
    if (L2) {
      const td = info.filter((x) => x.p.winner === 'P-TDEF');
      const tok = sum(td.filter((x) => x.sized).map((x) => x.E));
      F8 = { ...head('F-8'), block_count: td.length, tokens: est(tok), share: shareText(tok, T) };
      if (td.length === 0) F8.absence_note = S.f8absent;
    } else {
      F8 = { ...head('F-8'), note: NOT_IDENT, absence_note: S.f8absent };
    }

    // ---- F-9 (M14)
    const F9 = {
      ...head('F-9'),
      blocks: info.filter((x) => x.p.winner === 'P-SYS' || x.p.winner === 'P-CMPT').map((x) => ({
        block_index: x.index, class: x.p.winner, offset_tokens: est(x.offset), depth: shareText(x.offset, T),
      })),
      literature_line: F9_LINE,
    };
    if (!L2) F9.cmpt_note = S.f9cmpt;

    // ---- F-10 (M12)
    const st = statedInfo(ev);
    let F10;
    // C-13 (as amended): "F-10 (M12), when assessable (C-10: whenever
    // anything is stated)"; the only NOT-ASSESSABLE F-10 is `no stated counts`.
    if (st.status) {
      assert(st.status === NO_STATED, 'F-10 NOT-ASSESSABLE only for no stated counts');
      F10 = { ...notAss('F-10', st.status), label: NO_STATED_LABEL };
    } else {
      // C-14: invalid_entry_count counts harness_stated_counts members only;
      // a carried but out-of-range generic figure states nothing.
      const units = [];
      let sS = 0, sE = 0;
      st.perMessage.forEach((u, i) => {
        if (!u.covered) return;
        units.push({ message_index: i, ...comparison(u.stated, msgs[i].est) });
        sS += u.stated;
        sE += msgs[i].est;
      });
      // C-13 whole_record: "C for the valid total against T …, or, with no
      // valid total and every message covered, Σ stated against Σ E over the
      // messages, or, with no valid total and a message uncovered,
      // NA("partial coverage") (M12: 'a whole-record figure at coverage <100%
      // is NOT-ASSESSABLE (partial coverage)'; the units and covered still print)".
      let whole;
      if (st.wholeTotal) whole = comparison(st.wholeTotal.value, T);
      else if (st.allCovered) whole = comparison(sS, sum(msgs.map((m) => m.est)));
      else {
        assert(st.partial, 'an uncovered message with no total is partial coverage');
        whole = NA(PARTIAL);
      }
      F10 = {
        ...head('F-10'),
        message_count: msgs.length,
        covered_message_count: units.length,
        ignored_entry_count: st.ignored,
        invalid_entry_count: st.invalidEntries + (st.total && !st.total.valid ? 1 : 0),
        units,
        covered: units.length === 0 ? NA('no covered message') : comparison(sS, sE),
        whole_record: whole,
        convention: S.f10conv,
        note: S.f10note,
      };
    }

    const F11 = { id: 'F-11', metric: null, status: 'NOT-ASSESSABLE', reason: S.f11 };

    // ---- F-12 (M15)
    let best = null;
    for (const x of sized) if (best === null || x.E > best.E) best = x;
    const F12 = {
      ...head('F-12'),
      block_index: best.index, message_index: best.msgIndex, p_class: best.p.winner, c_class: best.c,
      tokens: est(best.E), share: shareText(best.E, T),
    };

    const factors = [F1, F2, F2b, F3, F4, F5, F6, F7, F8, F9, F10, F11, F12];
    const limited = factors.some((f) => f.id !== 'F-11' && f.status === 'NOT-ASSESSABLE');
    // Cross-check: the report's NOT-ASSESSABLE factors are the pre-check's list.
    const naReport = factors.filter((f) => f.status === 'NOT-ASSESSABLE').map((f) => f.id + ':' + f.reason + (hasOwn(f, 'label') ? ':' + f.label : ''));
    const naPre = notAssessable(ev).map((x) => x.factor + ':' + x.reason + (hasOwn(x, 'label') ? ':' + x.label : ''));
    // C-13: a NOT-ASSESSABLE factor is exactly {id, metric, status, reason},
    // plus "label" for F-10 with `no stated counts` and nothing else.
    for (const f of factors.filter((x) => x.status === 'NOT-ASSESSABLE')) {
      const withLabel = f.id === 'F-10' && f.reason === NO_STATED;
      assert(deepEqual(Object.keys(f), withLabel ? ['id', 'metric', 'status', 'reason', 'label'] : ['id', 'metric', 'status', 'reason']) && (!withLabel || f.label === NO_STATED_LABEL), 'NOT-ASSESSABLE factor shape ' + f.id);
    }
    assert(deepEqual(naReport, naPre), 'report and pre-check agree on NOT-ASSESSABLE: ' + naReport + ' / ' + naPre);

    let unknown = 0;
    for (const k of Object.keys(env)) if (!KNOWN_MEMBERS.has(k)) unknown++;
    for (const k of ['declared_format_version', 'criteria_ack']) if (hasOwn(env, k) && typeof env[k] !== 'string') unknown++;
    const line = `CONTEXT COMPOSITION \u2014 format: ${fmt} (${rec.level}) \u00b7 messages: ${M01.message_count} \u00b7 blocks: ${M01.block_count}`
      + ` \u00b7 total: est:~${T} \u00b7 unknown blocks: ${M13.either.block_count} \u00b7 ${limited ? 'LIMITED' : 'FULL'} \u2014 ${CHECK_END}`;
    const answer = {
      ...common('audit', 'report'),
      method: { id: criteria.estimation_method.id, criteria: criteria.criteria_id },
      labelling: LABELLING,
      declared_format: { id: fmt, level: rec.level, version_supplied: typeof env.declared_format_version === 'string' },
      record_bytes: utf8Length(ev.text.slice(ev.recordNode.start, ev.recordNode.end)),
      // C-13: facts only an adapter that unwraps or selects discloses (letta-af).
      record_was_json_string: rec.record_was_json_string === true,
      messages_left_out_count: rec.messages_left_out ?? 0,
      unknown_top_level_members: unknown,
      header_facts: { M01, M02, M13 },
      factors,
      scope: SCOPE,
      never_assessable: [...NEVER],
      measurement_line: line,
    };
    tripwires(answer);
    return answer;
  }

  // The host's self-check tripwires (C-13), applied to every expected report.
  function tripwires(answer) {
    const COUNT = (k) => k === 'characters' || k === 'bytes' || k.endsWith('_count') || k.endsWith('_bytes');
    const ESTK = (k) => k === 'tokens' || k === 'share' || k === 'depth' || k.endsWith('_tokens') || k.endsWith('_share');
    const isNA = (v) => isPlainObject(v) && v.value === 'NOT-ASSESSABLE' && nonEmptyString(v.reason) && Object.keys(v).length === 2;
    const walk = (v, path) => {
      if (Array.isArray(v)) { v.forEach((y, i) => walk(y, path + '[' + i + ']')); return; }
      if (!isPlainObject(v)) return;
      for (const [k, y] of Object.entries(v)) {
        assert(!['score', 'grade', 'composite', 'verdict', 'text', 'content'].includes(k), 'forbidden member ' + path + '.' + k);
        if (COUNT(k)) assert(typeof y === 'number' && Number.isInteger(y) && y >= 0, 'count key ' + path + '.' + k);
        if (ESTK(k)) assert((typeof y === 'string' && /^est:~[0-9]+(\.[0-9]{2}%)?$/.test(y)) || isNA(y), 'estimate key ' + path + '.' + k + ' = ' + JSON.stringify(y));
        if ((k === 'share' || k === 'depth' || k.endsWith('_share')) && typeof y === 'string') assert(y.endsWith('%'), 'share typography ' + k);
        if ((k === 'tokens' || k.endsWith('_tokens')) && typeof y === 'string') assert(!y.endsWith('%'), 'token typography ' + k);
        walk(y, path + '.' + k);
      }
      if (v.status === 'NOT-ASSESSABLE' || v.value === 'NOT-ASSESSABLE') {
        assert(nonEmptyString(v.reason) && Object.values(v).every((y) => typeof y !== 'number'), 'NOT-ASSESSABLE object at ' + path);
      }
    };
    walk(answer, '');
    const limited = answer.factors.some((f) => f.id !== 'F-11' && f.status === 'NOT-ASSESSABLE');
    assert(answer.measurement_line.includes(limited ? ' \u00b7 LIMITED \u2014 ' : ' \u00b7 FULL \u2014 '), 'LIMITED line');
    const fence = ['healthy', 'rotten', 'certified', 'degraded', 'pass/fail'];
    const own = JSON.stringify({ ...answer, labelling: '', scope: '', never_assessable: [], factors: answer.factors.map((f) => ({ ...f, rows: undefined, literature_line: undefined })) });
    for (const w of fence) assert(!own.toLowerCase().includes(w), 'wording fence ' + w);
  }

  function expectedFor(path, text) {
    const prefix = `/${service}/`;
    const op = path.startsWith(prefix) ? path.slice(prefix.length) : null;
    if (op !== 'precheck' && op !== 'audit') return { status: 404, body_text: 'NOT COVERED' };
    const ev = evaluate(text);
    if (ev.refuse) return { ...refusal(op, ...ev.refuse), ev };
    if (op === 'precheck') return { status: 200, answer: precheckAnswer(ev), ev };
    if (!ev.cnm) return { status: 200, answer: reportAnswer(ev), ev };
    const [code, facts] = ev.cnm;
    return {
      status: 422,
      answer: { ...common(op, 'could_not_measure'), could_not_measure: { kind: code, message: RULE[code].message, ...facts } },
      ev,
    };
  }

  // ------------------------------------------------------------ case builders

  const cases = [];
  const names = new Set();
  const callerFor = (name) => base58(makeRng('context-composition caller ' + name).bytes(32));

  // req: {body} | {body_text}; expectCode: refusal / could-not-measure code,
  // 'precheck' or 'NOT COVERED'; check(ev, answer): extra hand-computed asserts.
  function addCase(route, name, description, req) {
    assert(/^[a-z0-9]+(-[a-z0-9]+)*$/.test(name), 'kebab-case name ' + name);
    assert(!names.has(name), 'duplicate case name ' + name);
    assert(/^[A-Z][^\n]*\.$/.test(description) && !/\. [A-Z]/.test(description), 'one-sentence description for ' + name);
    names.add(name);
    const path = route.startsWith('/') ? route : `/${service}/${route}`;
    const request = { method: 'POST', path };
    let text;
    if (hasOwn(req, 'body_text')) {
      request.body_text = req.body_text;
      text = req.body_text;
    } else {
      request.body = req.body;
      let sent = req.body;
      if (path.endsWith('/precheck') && isPlainObject(sent) && !hasOwn(sent, 'caller')) sent = { ...sent, caller: SIZING_CALLER };
      text = JSON.stringify(sent);
    }
    const exp = expectedFor(path, text);
    let got;
    if (exp.body_text !== undefined) got = exp.body_text;
    else if (exp.answer.error) got = exp.answer.error.code;
    else if (exp.answer.could_not_measure) got = exp.answer.could_not_measure.kind;
    else got = exp.answer.kind;
    assert(got === req.expectCode, `case ${name}: intended ${req.expectCode}, model gives ${got}`);
    if (req.check) req.check(exp.ev, exp.answer);
    const expect = { status: exp.status };
    if (exp.body_text !== undefined) expect.body_text = exp.body_text;
    else expect.answer = exp.answer;
    cases.push({ name, provenance: req.provenance || 'synthetic', description, request, expect });
  }
  const pre = (name, description, req) => addCase('precheck', name, description, req);
  const aud = (name, description, req) => addCase('audit', name, description, req);

  const env = (fmt, record, extra = {}) => ({ envelope_version: ENVELOPE, declared_format_id: fmt, record, ...extra });
  const letta = (record, extra) => env('letta-af', record, extra);
  const anth = (record, extra) => env('anthropic-messages', record, extra);
  const gen = (record, extra) => env('generic-message-list', record, extra);
  // An envelope as raw text: members are [name, raw JSON text]; a pre-check
  // gets its own well-formed caller (the harness only injects one into JSON bodies).
  const envText = (route, name, members) => {
    const all = route === 'precheck' ? [...members, ['caller', JSON.stringify(callerFor(name))]] : members;
    return '{' + all.map(([k, v]) => JSON.stringify(k) + ':' + v).join(',') + '}';
  };
  const head = (fmt) => [['envelope_version', JSON.stringify(ENVELOPE)], ['declared_format_id', JSON.stringify(fmt)]];

  // Each entry is exactly {factor, metric, reason}, plus label NO-STATED-COUNT
  // for F-10 with `no stated counts` (C-10); the label is checked here so the
  // expected lists below stay in the factor:reason form.
  const naOf = (ans) => (ans.not_assessable || []).map((x) => {
    const withLabel = x.factor === 'F-10' && x.reason === 'no stated counts';
    assert(deepEqual(Object.keys(x), withLabel ? ['factor', 'metric', 'reason', 'label'] : ['factor', 'metric', 'reason']) && (!withLabel || x.label === 'NO-STATED-COUNT'), 'not_assessable entry shape ' + JSON.stringify(x));
    return x.factor + (x.factor === 'F-10' ? ':' + x.reason : '');
  });
  const expectNA = (list) => (ev, ans) => assert(deepEqual(naOf(ans), list), 'not_assessable ' + JSON.stringify(naOf(ans)));
  // C-6 (as amended): the figures of a pre-check, could-not-measure or not,
  // checked against hand-computed values; headline 'L0' is the not-identifiable
  // object, 'ZERO' the zero-denominator object, else the share string.
  const HEAD_L0 = { value: 'NOT-ASSESSABLE', reason: 'not identifiable at this level' };
  const HEAD_ZERO = { value: 'NOT-ASSESSABLE', reason: 'zero denominator' };
  const expectFigures = (entryCount, bytes, tokens, headline, kind) => (ev, ans) => {
    assert(ans.entry_count === entryCount, 'entry_count ' + ans.entry_count);
    assert(deepEqual(ans.total, { bytes, tokens }), 'total ' + JSON.stringify(ans.total));
    const h = headline === 'L0' ? HEAD_L0 : headline === 'ZERO' ? HEAD_ZERO : headline;
    assert(deepEqual(ans.headline, { tool_output_share: h }), 'headline ' + JSON.stringify(ans.headline));
    assert(kind === null ? ans.could_not_measure === null : ans.could_not_measure && ans.could_not_measure.kind === kind, 'could_not_measure kind');
  };
  const both = (...checks) => (ev, ans) => { for (const c of checks) c(ev, ans); };

  // The real Letta fixtures are not embedded: they stay in shared/ (never
  // copied into the project), and the criteria's corpus is synthetic only.
  // The Go adapter tests read them in place.

  // ------------------------------------------------------------ letta-af, synthetic

  const schemaA = { name: 'lookup_order', description: 'Look up an order by id.', parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] } };
  const schemaB = { name: 'send_message', description: 'Send a message to the user.', parameters: { type: 'object', properties: { message: { type: 'string' } } } };
  const schemaC = { name: 'archival_memory_search', description: 'Search archival memory.', parameters: { type: 'object', properties: { query: { type: 'string' } } } };
  const packed = (o) => JSON.stringify(o, null, 2);
  const textPart = (text) => ({ type: 'text', text });
  const callOf = (id, name, args) => ({ id, function: { arguments: args, name }, type: 'function' });
  const cur = (agent, tools, extra = {}) => ({ agents: [{ name: 'synthetic', ...agent }], tools, metadata: {}, ...extra });
  const msg = (id, role, content, extra = {}) => ({ type: 'message', role, content, id, tool_calls: null, tool_call_id: null, tool_returns: [], ...extra });

  {
    // C-8: a result names its call by id over the whole file. The search
    // call sits in a message left out of the in-context selection; its
    // result (a tool message, and a stored return without an id of its own)
    // is still a search result; a return whose own id links to no call
    // names nothing.
    const record = cur({ in_context_message_ids: ['r-user', 'r-ret', 'r-reply'] }, []);
    record.agents[0].messages = [
      msg('r-call', 'assistant', [], { tool_calls: [callOf('call-s', 'archival_memory_search', '{"query": "refund policy"}')] }),
      msg('r-user', 'user', [textPart('What is the refund policy?')]),
      msg('r-ret', 'tool', [textPart('Refunds within 30 days.')], { tool_call_id: 'call-s', tool_returns: [
        { status: 'success', stdout: null, stderr: null, func_response: 'Policy page 2: store credit after 30 days.' },
        { tool_call_id: 'call-none', status: 'success', stdout: null, stderr: null, func_response: 'An orphan result.' }] }),
      msg('r-reply', 'assistant', [textPart('Refunds are accepted within 30 days.')]),
    ];
    aud('audit-letta-result-linked-to-a-call-outside-the-selection',
      'A tool result whose archival_memory_search call lies outside the in-context selection is still a search result (P-TRES, P-RETR recorded), as is a stored return with no id of its own; a return whose id links to no call is P-TRES alone.',
      { body: letta(record), expectCode: 'report' });
  }

  {
    const userText = packed({ type: 'user_message', message: 'Where is order 7?', time: '2026-01-02 10:00:00 AM UTC+0000' });
    const ret1 = packed({ status: 'OK', message: 'shipped', time: '2026-01-02 10:00:02 AM UTC+0000' });
    const ret2 = packed({ status: 'OK', message: 'Showing 1 results: order 7 shipped Tuesday', time: '2026-01-02 10:00:04 AM UTC+0000' });
    const record = cur({
      tool_ids: ['tool-a', 'tool-c'],
      in_context_message_ids: ['m-sys', 'm-user', 'm-call', 'm-ret1', 'm-call2', 'm-ret2', 'm-reply'],
    }, [
      { id: 'tool-a', name: 'lookup_order', tool_type: 'custom', json_schema: schemaA, source_code: 'def lookup_order(order_id):\n    return "shipped"\n' },
      { id: 'tool-b', name: 'send_message', tool_type: 'letta_core', json_schema: schemaB, source_code: null },
      { id: 'tool-c', name: 'archival_memory_search', tool_type: 'letta_core', json_schema: schemaC, source_code: null },
    ]);
    record.agents[0].messages = [
      msg('m-old', 'system', [textPart('You are an old prompt that is no longer in context.')]),
      msg('m-sys', 'system', [textPart('You are a support agent. Core memory: the customer is Ana.')]),
      msg('m-user', 'user', [textPart(userText), { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }]),
      msg('m-call', 'assistant', [textPart('Checking the order first.')], { tool_calls: [callOf('call-1', 'lookup_order', '{"order_id": "7"}')] }),
      msg('m-ret1', 'tool', [textPart(ret1)], { tool_call_id: 'call-1', tool_returns: [{ tool_call_id: 'call-1', status: 'success', stdout: null, stderr: null, func_response: ret1 }] }),
      msg('m-call2', 'assistant', [], { tool_calls: [callOf('call-2', 'archival_memory_search', '{"query": "order 7"}')] }),
      msg('m-ret2', 'tool', [textPart('search done')], { tool_call_id: 'call-2', tool_returns: [{ tool_call_id: 'call-2', status: 'success', stdout: null, stderr: null, func_response: ret2 }] }),
      msg('m-reply', 'assistant', [], { tool_calls: [callOf('call-3', 'send_message', '{"message": "Order 7 shipped on Tuesday."}')] }),
    ];
    pre('precheck-letta-current-shape-selection-and-tool-returns',
      'A synthetic current-shape agent file measures the in_context_message_ids selection, the tools named by tool_ids only, an image part as a non-serialisable entry, a tool return duplicated in its text once and a distinct tool return as its own entry.',
      {
        body: letta(record),
        expectCode: 'precheck',
        check: (ev, ans) => {
          assert(ev.rec.messages_left_out === 1, 'one left out');
          assert(ans.entry_count === 2 + 1 + 2 + 2 + 1 + 1 + 2 + 1, 'entries');
          expectNA(['F-10:no stated counts', 'F-11'])(ev, ans);
          const tres = ev.blocks.filter((b) => classifyP(b, 'letta-af', 'L2').winner === 'P-TRES');
          assert(tres.length === 3, 'three P-TRES blocks');
          assert(tres.filter((b) => classifyP(b, 'letta-af', 'L2').fired.includes('P-RETR')).length === 2, 'search results recorded as P-RETR conflicts');
        },
      });
    const left = JSON.parse(JSON.stringify(record));
    pre('precheck-letta-current-shape-stated-total-only',
      'The same agent file with only a stated total and no per-message figures has F-10 assessable, since a whole-record total covers the record.',
      { body: letta(left, { harness_stated_counts: { total: 512 } }), expectCode: 'precheck', check: expectNA(['F-11']) });
    pre('precheck-letta-current-shape-per-message-short',
      'The same agent file with per_message figures for 6 of its 7 measured messages and no total has F-10 assessable (partial coverage leaves only its whole-record figure NOT-ASSESSABLE), so the pre-check lists only F-11.',
      { body: letta(left, { harness_stated_counts: { per_message: [900, 60, 10, 22, 8, 30] } }), expectCode: 'precheck', check: expectNA(['F-11']) });
  }
  {
    // Older shape: per-message in_context flags; a packed heartbeat under role user.
    const hb = packed({ type: 'heartbeat', reason: '[This is an automated system message hidden from the user] Function called using request_heartbeat=true, returning control', time: '2025-03-23 08:12:43 PM PDT-0700' });
    const login = packed({ type: 'login', last_login: 'Never (first login)', time: '2025-03-23 07:59:06 PM PDT-0700' });
    const om = (role, text, createdAt, inContext, extra = {}) => ({
      created_at: createdAt, group_id: null, in_context: inContext, model: null, name: null, role,
      content: [textPart(text)], tool_call_id: null, tool_calls: [], tool_returns: [], updated_at: createdAt, ...extra,
    });
    const record = {
      agent_type: 'memgpt_agent', name: 'synthetic-old', system: 'You are MemGPT.', version: '0.6.43',
      messages: [
        om('assistant', 'Bootup sequence complete.', '2025-03-24T03:00:02.000000+00:00', true,
          { tool_calls: [callOf('c-1', 'send_message', '{\n  "message": "Hello!",\n  "request_heartbeat": true\n}')] }),
        om('system', 'You are MemGPT. (stale prompt)', '2025-03-24T02:59:00.000000+00:00', false),
        om('user', login, '2025-03-24T03:00:01.000000+00:00', true),
        om('tool', packed({ status: 'OK', message: 'None', time: '2025-03-23 08:00:03 PM PDT-0700' }), '2025-03-24T03:00:03.000000+00:00', true, { name: 'send_message', tool_call_id: 'c-1' }),
        om('user', hb, '2025-03-24T03:00:04.000000+00:00', true),
        om('system', 'You are MemGPT.\n<memory_blocks>persona: curious</memory_blocks>', '2025-03-24T03:05:00.000000+00:00', true),
      ],
      tools: [{ name: 'send_message', json_schema: schemaB, source_code: null, tool_type: 'letta_core' }],
    };
    pre('precheck-letta-old-shape-packed-heartbeat-under-user',
      'A synthetic older-shape file whose only user-role messages are a packed login and a packed heartbeat has no P-USER message (both are P-SYS), so F-5 is listed.',
      {
        body: letta(record),
        expectCode: 'precheck',
        check: (ev, ans) => {
          assert(ev.rec.messages_left_out === 1 && ans.entry_count === 1 + 5 + 1, 'old synthetic entries');
          const users = ev.rec.messages.filter((m) => m.role_raw === 'user');
          assert(users.length === 2 && users.every((m) => classifyP(m.blocks[0], 'letta-af', 'L2').winner === 'P-SYS'), 'packed P-SYS');
          expectNA(['F-5', 'F-10:no stated counts', 'F-11'])(ev, ans);
        },
      });
    const withUser = JSON.parse(JSON.stringify(record));
    withUser.messages.push(om('user', packed({ type: 'user_message', message: 'hi there', time: '2025-03-23 08:01:00 PM PDT-0700' }), '2025-03-24T03:01:00.000000+00:00', true));
    pre('precheck-letta-old-shape-packed-user-message',
      'Adding one packed user_message under role user to the same file gives a P-USER message, so F-5 is no longer listed.',
      { body: letta(withUser, { harness_stated_counts: { per_message: [null, null] } }), expectCode: 'precheck', check: expectNA(['F-10:no stated counts', 'F-11']) });
    const summary = JSON.parse(JSON.stringify(record));
    summary.messages[4].content[0].text = packed({ type: 'system_alert', message: 'Note: prior messages (12 of 20 total messages) have been hidden from view due to conversation memory constraints.\nThe following is a summary of the previous 12 messages:\n Ana asked about order 7.', time: '2025-03-23 08:00:04 PM PDT-0700' });
    summary.messages.push(om('user', 'plain text from the user', '2025-03-24T03:06:00.000000+00:00', false));
    pre('precheck-letta-old-shape-summary-alert-not-a-turn',
      'A packed system_alert carrying the summary marker under role user is P-CMPT, and a plain user text outside the in-context selection is not measured, so F-5 is still listed.',
      { body: letta(summary), expectCode: 'precheck', check: expectNA(['F-5', 'F-10:no stated counts', 'F-11']) });
  }
  {
    const name = 'precheck-letta-json-schema-token-preserving';
    const rec = '{ "agents" : [ { "name": "tok", "tool_ids": ["t1"], "in_context_message_ids": ["m1"],\n'
      + '   "messages": [ {"id": "m1", "role": "user", "content": [ {"type": "text", "text": "caf\\u00e9?"} ], "tool_calls": null, "tool_returns": []} ] } ],\n'
      + '  "tools": [ { "id": "t1", "name": "convert",\n    "json_schema": {\n      "name" : "convert",\n      "description" : "Convert caf\\u00e9 prices \\/ units\\tfast.",\n'
      + '      "parameters" : { "type" : "object", "properties" : { "rate" : { "type" : "number", "default" : 1.50E+0 } }, "required" : [ ] }\n    } } ] }';
    const compacted = '{"name":"convert","description":"Convert caf\\u00e9 prices \\/ units\\tfast.","parameters":{"type":"object","properties":{"rate":{"type":"number","default":1.50E+0}},"required":[]}}';
    pre(name,
      'A json_schema submitted with whitespace, \\u escapes, an escaped solidus and the number 1.50E+0 is measured with whitespace removed and every token unchanged.',
      {
        body_text: envText('precheck', name, [...head('letta-af'), ['record', rec]]),
        expectCode: 'precheck',
        check: (ev, ans) => {
          assert(ev.blocks[0].text === compacted, 'token-preserving compaction');
          assert(ans.total.bytes === compacted.length + 5 + 1, 'bytes: schema text + "café?" (6 bytes)');
          assert(ans.total.tokens === est(Math.ceil(compacted.length / 4) + 2), 'tokens');
        },
      });
  }
  {
    const onlyTools = { messages: [], tools: [{ name: 'lookup_order', json_schema: schemaA }, { name: 'send_message', json_schema: schemaB }] };
    pre('precheck-letta-tool-definitions-only',
      'An older-shape record with tool definitions and no messages has entries but no non-schema message, so F-3 is listed with zero denominator alongside F-5, F-10 and F-11.',
      { body: letta(onlyTools), expectCode: 'precheck', check: expectNA(['F-3', 'F-5', 'F-10:no stated counts', 'F-11']) });
  }
  pre('precheck-letta-agents-empty',
    'A letta-af record whose agents array is empty is refused record_required (ambiguous: one record per call).',
    { body: letta({ agents: [], tools: [] }), expectCode: 'record_required' });
  aud('audit-letta-agents-two',
    'A letta-af record with two agents is refused record_required on the paid route before payment.',
    { body: letta({ agents: [{ name: 'a', messages: [] }, { name: 'b', messages: [] }] }), expectCode: 'record_required' });
  pre('precheck-letta-json-string-agents-two',
    'A JSON-string record is unwrapped once before the agent count is read, so a string holding two agents is refused record_required.',
    { body: letta(JSON.stringify({ agents: [{ name: 'a', messages: [] }, { name: 'b', messages: [] }] })), expectCode: 'record_required' });
  pre('precheck-letta-record-number',
    'A letta-af record that is a number is refused record_does_not_parse_as_declared_format.',
    { body: letta(42), expectCode: 'record_does_not_parse_as_declared_format' });
  aud('audit-letta-record-array',
    'A letta-af record that is a bare message array is refused record_does_not_parse_as_declared_format and never retried as another format.',
    { body: letta([{ role: 'user', content: 'hi' }]), expectCode: 'record_does_not_parse_as_declared_format' });
  pre('precheck-letta-record-no-agents-no-messages',
    'A letta-af object with neither an agents array nor a root messages array is refused record_does_not_parse_as_declared_format.',
    { body: letta({ agent_type: 'memgpt_agent', tools: [], agents: { name: 'not-an-array' } }), expectCode: 'record_does_not_parse_as_declared_format' });
  pre('precheck-letta-json-string-not-json',
    'A letta-af record that is a string not holding JSON text is refused record_does_not_parse_as_declared_format.',
    { body: letta('agents: [ { name: loop } ]'), expectCode: 'record_does_not_parse_as_declared_format' });
  aud('audit-letta-json-string-double-wrapped',
    'A string holding a string holding an agent file is unwrapped once only and refused record_does_not_parse_as_declared_format.',
    { body: letta(JSON.stringify(JSON.stringify({ messages: [{ role: 'user', content: [textPart('hi')] }] }))), expectCode: 'record_does_not_parse_as_declared_format' });
  pre('precheck-letta-zero-entries',
    'An older-shape record with no messages and no tools has zero entries, disclosed on the pre-check as the zero_entries kind with entry_count 0, a zero total and, at L2, a zero-denominator headline.',
    { body: letta({ messages: [], tools: [] }), expectCode: 'zero_entries', check: both(expectNA(['F-3', 'F-5', 'F-10:no stated counts', 'F-11']), expectFigures(0, 0, 'est:~0', 'ZERO', 'zero_entries')) });
  aud('audit-letta-nothing-assessable',
    'A letta-af record whose only blocks are image parts carries no textual payload and answers 422 nothing_assessable, unpaid.',
    {
      body: letta(cur({ in_context_message_ids: ['i1'], messages: [msg('i1', 'user', [{ type: 'image', source: { type: 'url', url: 'https://example.invalid/a.png' } }, { type: 'image' }])] }, [])),
      expectCode: 'nothing_assessable',
    });
  {
    // entry_too_large on the paid route: adapted order is schema first, then
    // the in_context_message_ids order (not file order).
    const big = 'The tool printed a very long log line. '.repeat(Math.ceil((CAP.entry + 1) / 39)).slice(0, CAP.entry + 1);
    assert(utf8Length(big) === CAP.entry + 1, 'one byte over the entry cap');
    const record = cur({
      tool_ids: ['t1', 't2'],
      in_context_message_ids: ['m-sys', 'm-user', 'm-call', 'm-tool'],
      messages: [
        msg('m-user', 'user', [textPart('Fetch the log.')]),
        msg('m-call', 'assistant', [], { tool_calls: [callOf('c1', 'fetch_log', '{"lines": "all"}')] }),
        msg('m-stale', 'system', [textPart('stale prompt')]),
        msg('m-tool', 'tool', [textPart(big)], { tool_call_id: 'c1' }),
        msg('m-sys', 'system', [textPart('You are a log helper.')]),
      ],
    }, [{ id: 't1', name: 'fetch_log', json_schema: schemaA }, { id: 't2', name: 'send_message', json_schema: schemaB }]);
    aud('audit-letta-entry-too-large-index-in-adapted-order',
      'A tool result of 1,048,577 bytes answers 422 entry_too_large with entry_index 5, counting the two tool definitions first and then the in_context_message_ids order.',
      { body: letta(record), expectCode: 'entry_too_large', check: (ev, ans) => assert(ans.could_not_measure.entry_index === 5, 'entry index 5') });
  }

  // ------------------------------------------------------------ anthropic-messages

  {
    const input = { z: 1.5, a: 'caf\u00e9 <b> & \u2028 \u0001\t\u007f', m: [true, null, 1e21, 1e-7, 12345678901234567000], n: { '\u{1F600}': 2, '\uff5e': 1 } };
    const record = {
      system: 'You are a shopping assistant.',
      messages: [
        { role: 'user', content: 'Find me a kettle under 40 euros.' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'The user wants a cheap kettle; search first.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' },
            { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qyRUCMwBS3Gqv+UzG9D' },
            { type: 'text', text: 'Let me search.' },
            { type: 'server_tool_use', id: 'srvtoolu_01', name: 'web_search', input: { query: 'kettle under 40 euros' } },
            { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01', content: [{ type: 'web_search_result', url: 'https://example.invalid/k', title: 'Kettle 1.7 L', encrypted_content: 'EqgfCioIARgBIiQ3', page_age: null }] },
            { type: 'tool_use', id: 'toolu_01', name: 'price_check', input },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_01', content: '{"price": 34.99, "currency": "EUR"}' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==' } },
            { type: 'text', text: 'Is this one good?' },
          ],
        },
      ],
    };
    pre('precheck-anthropic-block-types-with-system-string',
      'An anthropic record with a top-level system string and text, thinking, redacted_thinking, server_tool_use, web_search_tool_result, tool_use (input in RFC 8785 form), tool_result and image blocks adapts to 11 entries at L0.',
      {
        body: anth(record),
        expectCode: 'precheck',
        check: (ev, ans) => {
          assert(ans.entry_count === 11 && ev.rec.messages[0].role_raw === 'system', 'entries and system first');
          const tu = ev.blocks.find((b) => b.kind_raw === 'tool_use');
          assert(tu.text === '{"a":"caf\u00e9 <b> & \u2028 \\u0001\\t\u007f","m":[true,null,1e+21,1e-7,12345678901234567000],"n":{"\u{1F600}":2,"\uff5e":1},"z":1.5}', 'JCS input');
          assert(deepEqual(ans.headline.tool_output_share, { value: 'NOT-ASSESSABLE', reason: 'not identifiable at this level' }), 'L0 headline');
          expectNA(['F-10:no stated counts', 'F-11'])(ev, ans);
        },
      });
  }
  {
    const record = {
      system: [{ type: 'text', text: 'You are a research assistant.' }, { type: 'text', text: 'Cite sources.', cache_control: { type: 'ephemeral' } }],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQKJcfsj6IKNSAwIG9iago8PC9MZW5ndGggNiAwIFI+PgpzdHJlYW0K' } },
            { type: 'document', source: { type: 'url', url: 'https://example.invalid/paper.pdf' } },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Kettles boil water.\nMost draw 2 kW.' }, title: 'Notes' },
            { type: 'search_result', source: 'https://example.invalid/wiki', title: 'Kettle', content: [{ type: 'text', text: 'A kettle is a vessel for boiling water.' }] },
            { type: 'container_upload', file_id: 'file_011' },
            { type: 'text', text: 'Summarise these.' },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'server_tool_use', id: 'srvtoolu_02', name: 'code_execution', input: { code: 'print(2*1000)' } },
            { type: 'code_execution_tool_result', tool_use_id: 'srvtoolu_02', content: { type: 'code_execution_result', stdout: '2000\n', stderr: '', return_code: 0, content: [] } },
            { type: 'tool_use', id: 'toolu_02', name: 'fetch_notes', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_02', content: [{ type: 'text', text: 'note one' }, { type: 'image', source: { type: 'url', url: 'https://example.invalid/n.png' } }, { type: 'text', text: 'note two' }] },
            { type: 'tool_result', tool_use_id: 'toolu_03' },
            { type: 'tool_result', tool_use_id: 'toolu_04', content: [], is_error: true },
          ],
        },
        { role: 'assistant', content: [{ type: 'custom_annotation', text: 'an unknown block type with a text member' }, { type: 'mid_conv_system', content: [{ type: 'text', text: 'not a text member' }] }] },
      ],
    };
    pre('precheck-anthropic-block-types-with-system-list',
      'An anthropic record with a system list and document (base64, URL, text), search_result, container_upload, code_execution_tool_result, list and empty tool_result contents and unknown block types adapts block by block.',
      {
        body: anth(record, { declared_format_version: '2023-06-01' }),
        expectCode: 'precheck',
        check: (ev, ans) => {
          assert(ans.entry_count === 2 + 6 + 3 + 5 + 2, 'entries');
          assert(ev.blocks.filter((b) => b.text === null).length === 7, 'seven non-serialisable');
          assert(ans.declared_format.version_supplied === true, 'version');
          expectNA(['F-10:no stated counts', 'F-11'])(ev, ans);
        },
      });
  }
  pre('precheck-anthropic-annex-c10-example',
    'The ANNEX C-10 example: an anthropic record with one assistant message and no stated counts lists F-5, F-10 (no stated counts) and F-11.',
    { body: anth({ messages: [{ role: 'assistant', content: 'Hello, how can I help?' }] }), expectCode: 'precheck', check: expectNA(['F-5', 'F-10:no stated counts', 'F-11']) });
  pre('precheck-anthropic-bare-array-stated-covered',
    'A bare anthropic message array with a user turn and per_message figures for both messages lists only F-11.',
    {
      body: anth([{ role: 'user', content: 'What is 2+2?' }, { role: 'assistant', content: [{ type: 'text', text: '4' }] }], { harness_stated_counts: { per_message: [12, 3] } }),
      expectCode: 'precheck',
      check: expectNA(['F-11']),
    });
  pre('precheck-anthropic-stated-partial',
    'An anthropic record with a per_message list holding a null for one of its three messages and no total states counts, so F-10 is not listed (partial coverage is not a pre-check reason) and the list holds only F-11.',
    {
      body: anth({ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }] }, { harness_stated_counts: { per_message: [5, null, 7] } }),
      expectCode: 'precheck',
      check: expectNA(['F-11']),
    });
  pre('precheck-anthropic-stated-all-null',
    'A per_message list of nulls and no total states no count, so F-10 is listed as no stated counts.',
    {
      body: anth({ messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }] }, { harness_stated_counts: { per_message: [null, null] } }),
      expectCode: 'precheck',
      check: expectNA(['F-10:no stated counts', 'F-11']),
    });
  pre('precheck-anthropic-stated-empty-object',
    'An empty harness_stated_counts object is valid and states no count.',
    { body: anth({ messages: [{ role: 'user', content: 'a' }] }, { harness_stated_counts: {} }), expectCode: 'precheck', check: expectNA(['F-10:no stated counts', 'F-11']) });
  {
    const nfd = 'he\u0301llo wo\u0308rld';
    assert(codePoints(nfd) === 13 && nfcC(nfd) === 11 && em1(nfcC(nfd)) === 3, 'ANNEX C-3 example');
    const record = {
      messages: [
        { role: 'user', content: nfd },
        { role: 'assistant', content: '\u{1F600}\u{1F600}\u{1F600}\u{1F600}\u{1F600}' },
        { role: 'user', content: '\u1100\u1161\u1102\u1161\u1103\u1161 \u212b \u0958' },
        { role: 'assistant', content: '    ' },
      ],
    };
    pre('precheck-anthropic-nfc-code-points',
      'EM-1 counts NFC code points: the ANNEX NFD example is 11, five emoji are 5 (not 10 UTF-16 units), conjoining jamo compose, the Angstrom sign is one and U+0958 decomposes to two, while bytes stay those submitted.',
      {
        body: anth(record),
        expectCode: 'precheck',
        check: (ev, ans) => {
          const Cs = ev.sizes.map((s) => s.C);
          assert(deepEqual(Cs, [11, 5, 3 + 1 + 1 + 1 + 2, 4]), 'code points ' + JSON.stringify(Cs));
          assert(ans.total.tokens === est(3 + 2 + 2 + 1), 'tokens');
          assert(ans.total.bytes === 15 + 20 + (6 * 3 + 1 + 3 + 1 + 3) + 4, 'bytes as submitted');
        },
      });
  }
  pre('precheck-anthropic-unknown-members-counted',
    'Unknown top-level members, a non-string declared_format_version and a non-string criteria_ack are ignored and counted (4), never echoed.',
    {
      body: { note: 'free text that is never echoed', envelope_version: ENVELOPE, declared_format_id: 'anthropic-messages', declared_format_version: 20230601, criteria_ack: { id: 'context-composition/v1' }, record: { messages: [{ role: 'user', content: 'hi' }] }, extra: [1, 2, 3] },
      expectCode: 'precheck',
      check: (ev, ans) => assert(ans.unknown_top_level_members === 4 && ans.declared_format.version_supplied === false, 'four unknown'),
    });
  pre('precheck-anthropic-known-members-not-counted',
    'A string criteria_ack and a string declared_format_version are known members, so the unknown count is 0 and version_supplied is true.',
    {
      body: anth({ messages: [{ role: 'user', content: 'hi' }] }, { declared_format_version: '2023-06-01', criteria_ack: 'context-composition/v1' }),
      expectCode: 'precheck',
      check: (ev, ans) => assert(ans.unknown_top_level_members === 0 && ans.declared_format.version_supplied === true, 'zero unknown'),
    });
  pre('precheck-anthropic-record-string',
    'An anthropic-messages record that is a string is refused record_does_not_parse_as_declared_format.',
    { body: anth('[{"role":"user","content":"hi"}]'), expectCode: 'record_does_not_parse_as_declared_format' });
  aud('audit-anthropic-record-without-messages',
    'An anthropic-messages object without a messages array is refused record_does_not_parse_as_declared_format on the paid route.',
    { body: anth({ system: 'You are helpful.', turns: [{ role: 'user', content: 'hi' }] }), expectCode: 'record_does_not_parse_as_declared_format' });
  pre('precheck-anthropic-messages-not-array',
    'An anthropic-messages object whose messages member is an object is refused record_does_not_parse_as_declared_format.',
    { body: anth({ messages: { role: 'user', content: 'hi' } }), expectCode: 'record_does_not_parse_as_declared_format' });
  pre('precheck-anthropic-nothing-assessable',
    'An anthropic record of only image and redacted_thinking blocks and an empty tool_result has no textual payload, disclosed as nothing_assessable on the pre-check with its 3 entries, a zero total and F-3 listed since no message has a sized block.',
    {
      body: anth({ messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://example.invalid/x.png' } }, { type: 'tool_result', tool_use_id: 't' }] }, { role: 'assistant', content: [{ type: 'redacted_thinking', data: 'EmwKAhgB' }] }] }),
      expectCode: 'nothing_assessable',
      check: both(expectNA(['F-3', 'F-10:no stated counts', 'F-11']), expectFigures(3, 0, 'est:~0', 'L0', 'nothing_assessable')),
    });
  aud('audit-anthropic-zero-entries',
    'An anthropic record with an empty messages list and no system answers 422 zero_entries, unpaid.',
    { body: anth({ messages: [] }), expectCode: 'zero_entries' });
  {
    // A tool_use whose RFC 8785 form is one byte over the entry cap: 1e20
    // serialises as 100000000000000000000 (21 bytes) from 4 submitted bytes.
    const name = 'precheck-anthropic-entry-too-large-jcs-input';
    const nums = 47000;
    const base = jcs({ pad: '', values: new Array(nums).fill(1e20) });
    const pad = 'p'.repeat(CAP.entry + 1 - utf8Length(base));
    assert(utf8Length(jcs({ pad, values: new Array(nums).fill(1e20) })) === CAP.entry + 1, 'JCS one over the cap');
    const rec = '{"messages":[{"role":"user","content":"List the values."},{"role":"assistant","content":[{"type":"text","text":"Here they are."},'
      + '{"type":"tool_use","id":"toolu_big","name":"emit","input":{"values":[' + new Array(nums).fill('1e20').join(',') + '],"pad":"' + pad + '"}}]}]}';
    pre(name,
      'A tool_use whose input is small as submitted but whose RFC 8785 serialization is 1,048,577 bytes is disclosed as entry_too_large with entry_index 2, the pre-check still counting the oversize entry in its 3 entries and its total.',
      {
        body_text: envText('precheck', name, [...head('anthropic-messages'), ['record', rec]]),
        expectCode: 'entry_too_large',
        // "List the values." 16 B / E 4, "Here they are." 14 B / E 4, the
        // ASCII JCS text 1,048,577 B / E ceil(1048577 / 4) = 262145.
        check: both((ev, ans) => assert(ans.could_not_measure.entry_index === 2, 'index 2'), expectFigures(3, 16 + 14 + CAP.entry + 1, est(4 + 4 + 262145), 'L0', 'entry_too_large')),
      });
  }
  {
    const name = 'precheck-anthropic-too-many-entries-before-nothing-assessable';
    const rec = '{"messages":[{"role":"user","content":[' + new Array(CAP.entries + 1).fill('{"type":"x"}').join(',') + ']}]}';
    pre(name,
      'A message of 10,001 blocks, none textual, is disclosed as too_many_entries (R-7 is tried before R-9) with the cap and the entry count, the pre-check still answering entry_count 10,001 and a zero total.',
      { body_text: envText('precheck', name, [...head('anthropic-messages'), ['record', rec]]), expectCode: 'too_many_entries', check: (ev, ans) => { assert(ans.could_not_measure.entries === 10001, '10001'); expectNA(['F-3', 'F-10:no stated counts', 'F-11'])(ev, ans); expectFigures(10001, 0, 'est:~0', 'L0', 'too_many_entries')(ev, ans); } });
  }

  // ------------------------------------------------------------ generic-message-list

  pre('precheck-generic-l0-role-list',
    'A generic record with role and text only is level L0, its tool-output headline is not identifiable at this level, and stated_tokens on every message cover F-10.',
    {
      body: gen({ messages: [{ role: 'system', text: 'Be brief.', stated_tokens: 4 }, { role: 'user', text: 'Hi!', stated_tokens: 2 }, { role: 'assistant', text: 'Hello.', stated_tokens: 3 }] }),
      expectCode: 'precheck',
      check: (ev, ans) => { assert(ans.declared_format.level === 'L0', 'L0'); expectNA(['F-11'])(ev, ans); },
    });
  pre('precheck-generic-l1-name-and-null-text',
    'A generic record with name, has_args and source members but no kind is level L1; a null text is a non-serialisable entry; stated_tokens on one of three messages is a stated count, so F-10 is assessable at partial coverage and not listed.',
    {
      body: gen({ messages: [{ role: 'user', text: 'Weather in Oslo?' }, { role: 'assistant', name: 'get_weather', has_args: true, source: 'harness', text: null, stated_tokens: 20 }, { role: 'tool', name: 'get_weather', text: '{"temp_c": -3}' }] }),
      expectCode: 'precheck',
      check: (ev, ans) => { assert(ans.declared_format.level === 'L1' && ans.entry_count === 3, 'L1'); expectNA(['F-11'])(ev, ans); },
    });
  pre('precheck-generic-empty-kind-and-empty-schemas-stay-l1',
    'An empty-string kind and an empty tool_schemas list do not make a generic record L2; a name member makes it L1.',
    {
      body: gen({ messages: [{ role: 'user', kind: '', text: 'hello' }, { role: 'assistant', name: 'bot', text: 'hi' }], tool_schemas: [] }),
      expectCode: 'precheck',
      check: (ev, ans) => assert(ans.declared_format.level === 'L1' && ans.entry_count === 2, 'L1 not L2'),
    });
  {
    // T = 32 with one P-TRES estimate of 1: 100 × 1 / 32 = 3.125 -> 3.13 (half up).
    const t = (n) => 'x'.repeat(n);
    pre('precheck-generic-l2-headline-rounds-half-up',
      'A generic L2 record whose tool results are 1 of 32 estimated tokens prints the headline share 3.125 rounded half up as est:~3.13%.',
      {
        body: gen({ messages: [{ role: 'user', text: t(40) }, { role: 'assistant', kind: 'tool_call', name: 'f', has_args: true, text: '{"q":1}' }, { role: 'tool', kind: 'tool_result', text: 'ok' }, { role: 'assistant', kind: 'message', text: t(74) }] }),
        expectCode: 'precheck',
        check: (ev, ans) => {
          assert(ev.T === 32 && ans.headline.tool_output_share === 'est:~3.13%', 'half up ' + ans.headline.tool_output_share);
          expectNA(['F-10:no stated counts', 'F-11'])(ev, ans);
        },
      });
  }
  pre('precheck-generic-l2-by-tool-schemas-only',
    'A non-empty tool_schemas list alone makes a generic record L2, its schemas are entries placed first, and a record with no tool result prints est:~0.00%.',
    {
      body: gen({ messages: [{ role: 'user', text: 'Book a table for two.' }, { role: 'assistant', text: 'Done.' }], tool_schemas: [{ name: 'book', text: '{"name":"book","parameters":{"type":"object"}}' }, { text: 'def cancel(booking_id): ...' }] }),
      expectCode: 'precheck',
      check: (ev, ans) => {
        assert(ans.declared_format.level === 'L2' && ans.entry_count === 4 && ans.headline.tool_output_share === 'est:~0.00%', 'L2 by schemas');
        expectNA(['F-10:no stated counts', 'F-11'])(ev, ans);
      },
    });
  pre('precheck-generic-l2-kind-outranks-user-role',
    'At L2 a user-role message of kind tool_result is P-TRES, not P-USER, so a record whose only user-role message is a tool result lists F-5, and that result is half the estimate.',
    {
      body: gen({ messages: [{ role: 'assistant', kind: 'tool_call', text: 'call' }, { role: 'user', kind: 'tool_result', text: 'result1' }, { role: 'assistant', text: 'done' }] }),
      expectCode: 'precheck',
      check: (ev, ans) => {
        assert(ans.headline.tool_output_share === 'est:~50.00%', ans.headline.tool_output_share);
        expectNA(['F-5', 'F-10:no stated counts', 'F-11'])(ev, ans);
      },
    });
  pre('precheck-generic-l2-summary-and-retrieval-kinds',
    'Generic L2 kinds summary and retrieval outrank roles, so retrieved text does not enter the tool-output headline and a user turn still opens a turn.',
    {
      body: gen({ messages: [{ role: 'system', kind: 'summary', text: 'Earlier: user asked about kettles.' }, { role: 'user', text: 'And toasters?' }, { role: 'tool', kind: 'retrieval', source: 'vector-store', text: 'Toasters: 2-slot, 4-slot.' }, { role: 'tool', kind: 'tool_result', text: 'price: 25' }] }, { harness_stated_counts: { total: 30, per_message: [9] } }),
      expectCode: 'precheck',
      check: (ev, ans) => {
        assert(ans.headline.tool_output_share === 'est:~13.04%', ans.headline.tool_output_share);
        expectNA(['F-11'])(ev, ans);
      },
    });
  pre('precheck-generic-tool-schemas-only-no-messages',
    'A generic record with tool schemas and an empty messages list has entries but no non-schema message, so F-3 is listed with zero denominator.',
    { body: gen({ messages: [], tool_schemas: [{ name: 'f', text: '{"name":"f"}' }] }), expectCode: 'precheck', check: expectNA(['F-3', 'F-5', 'F-10:no stated counts', 'F-11']) });
  pre('precheck-generic-text-number',
    'A generic message whose text is a number is refused record_does_not_parse_as_declared_format.',
    { body: gen({ messages: [{ role: 'user', text: 12 }] }), expectCode: 'record_does_not_parse_as_declared_format' });
  aud('audit-generic-text-object',
    'A generic message whose text is an object is refused record_does_not_parse_as_declared_format on the paid route.',
    { body: gen({ messages: [{ role: 'user', text: 'ok' }, { role: 'assistant', text: { parts: ['a'] } }] }), expectCode: 'record_does_not_parse_as_declared_format' });
  pre('precheck-generic-record-array',
    'A generic-message-list record that is a bare array is refused record_does_not_parse_as_declared_format.',
    { body: gen([{ role: 'user', text: 'hi' }]), expectCode: 'record_does_not_parse_as_declared_format' });
  pre('precheck-generic-messages-missing',
    'A generic-message-list object without a messages array is refused record_does_not_parse_as_declared_format.',
    { body: gen({ tool_schemas: [{ text: 'x' }] }), expectCode: 'record_does_not_parse_as_declared_format' });
  aud('audit-order-parse-beats-nothing-assessable',
    'A generic record whose first text is null and second text is a number is refused record_does_not_parse_as_declared_format rather than measured as nothing_assessable.',
    { body: gen({ messages: [{ role: 'user', text: null }, { role: 'user', text: 7 }] }), expectCode: 'record_does_not_parse_as_declared_format' });
  aud('audit-generic-nothing-assessable-null-texts',
    'A generic record whose every text is null has no textual payload and answers 422 nothing_assessable, unpaid.',
    { body: gen({ messages: [{ role: 'user', text: null }, { role: 'assistant', text: null }] }), expectCode: 'nothing_assessable' });
  pre('precheck-generic-nothing-assessable-empty-texts',
    'A generic record whose every text is the empty string has T = 0 and is disclosed as nothing_assessable (ANNEX C-11) with entry_count 2 and a zero total.',
    { body: gen({ messages: [{ role: 'user', text: '' }, { role: 'assistant', text: '' }] }), expectCode: 'nothing_assessable', check: both(expectNA(['F-10:no stated counts', 'F-11']), expectFigures(2, 0, 'est:~0', 'L0', 'nothing_assessable')) });
  pre('precheck-generic-l2-empty-texts-nothing-assessable-zero-denominator',
    'A generic L2 record whose every block, a tool result and an empty tool schema included, is empty text is disclosed as nothing_assessable with its 4 entries, a zero total and a zero-denominator headline, never 0%.',
    {
      body: gen({ messages: [{ role: 'user', text: '' }, { role: 'assistant', kind: 'tool_call', name: 'f', has_args: true, text: '' }, { role: 'tool', kind: 'tool_result', name: 'f', text: '' }], tool_schemas: [{ name: 'f', text: '' }] }),
      expectCode: 'nothing_assessable',
      check: both(
        (ev) => assert(ev.rec.level === 'L2' && ev.blocks.every((b) => b.text === ''), 'L2, every block empty text'),
        expectNA(['F-10:no stated counts', 'F-11']),
        expectFigures(4, 0, 'est:~0', 'ZERO', 'nothing_assessable')),
    });
  pre('precheck-generic-whitespace-only-is-measured',
    'A whitespace-only text is not empty, so a record of one whitespace-only message is measured with one estimated token.',
    { body: gen({ messages: [{ role: 'user', text: ' \n\t ' }] }), expectCode: 'precheck', check: (ev, ans) => assert(ans.total.tokens === 'est:~1' && ans.total.bytes === 4, 'ws') });
  pre('precheck-generic-zero-entries',
    'A generic record with an empty messages list and no tool schemas (L0) is disclosed as zero_entries on the pre-check with entry_count 0, total 0 bytes and est:~0, and the not-identifiable headline, as ANNEX C-6\'s example.',
    {
      body: gen({ messages: [] }),
      expectCode: 'zero_entries',
      check: both(expectNA(['F-3', 'F-5', 'F-10:no stated counts', 'F-11']), (ev, ans) => {
        // ANNEX C-6's example, member by member.
        assert(ans.declared_format.level === 'L0', 'L0');
        assert(deepEqual(ans.entry_count, 0) && deepEqual(ans.total, { bytes: 0, tokens: 'est:~0' }), 'figures');
        assert(deepEqual(ans.headline, { tool_output_share: { value: 'NOT-ASSESSABLE', reason: 'not identifiable at this level' } }), 'headline');
        assert(deepEqual(ans.could_not_measure, { kind: 'zero_entries' }), 'kind');
      }),
    });
  {
    const big = '\u00e9'.repeat(CAP.entry / 2);
    assert(utf8Length(big) === CAP.entry, 'exactly the entry cap');
    pre('precheck-generic-entry-exactly-at-cap',
      'A single entry of exactly 1,048,576 UTF-8 bytes (524,288 two-byte characters) is within the entry cap and measured as 524,288 code points.',
      {
        body: gen({ messages: [{ role: 'system', text: 'You are terse.' }, { role: 'user', text: big }] }),
        expectCode: 'precheck',
        check: (ev, ans) => assert(ans.total.bytes === 14 + CAP.entry && ans.total.tokens === est(4 + CAP.entry / 8), 'at cap'),
      });
  }
  {
    const name = 'precheck-generic-10000-entries-accepted';
    const rec = '{"messages":[{"role":"user","text":"hi"}],"tool_schemas":[' + new Array(CAP.entries - 1).fill('{"text":"ab"}').join(',') + ']}';
    pre(name,
      'A generic record of 9,999 tool schemas and one message has exactly 10,000 entries, the cap, and is measured.',
      { body_text: envText('precheck', name, [...head('generic-message-list'), ['record', rec]]), expectCode: 'precheck', check: (ev, ans) => assert(ans.entry_count === 10000 && ans.total.tokens === 'est:~10000', '10000') });
  }
  {
    const rec = '{"messages":[{"role":"user","text":"hi"}],"tool_schemas":[' + new Array(CAP.entries).fill('{"text":"ab"}').join(',') + ']}';
    aud('audit-generic-too-many-entries-schemas-count',
      'Tool schemas are entries, so one message plus 10,000 tool schemas answers 422 too_many_entries with entries 10,001, unpaid.',
      { body_text: envText('audit', 'x', [...head('generic-message-list'), ['record', rec]]), expectCode: 'too_many_entries' });
  }

  // ------------------------------------------------------------ envelope refusals (C-2)

  const okAnth = { messages: [{ role: 'user', content: 'hi' }] };
  pre('precheck-body-empty',
    'An empty request body is refused malformed_body.',
    { body_text: '', expectCode: 'malformed_body' });
  aud('audit-body-truncated-json',
    'A truncated JSON text is refused malformed_body on the paid route before payment.',
    { body_text: '{"envelope_version":"context-composition-envelope/1","declared_format_id":"anthropic-messages","record":{"messages":[', expectCode: 'malformed_body' });
  pre('precheck-body-array',
    'A JSON array wrapping a valid envelope is refused malformed_body.',
    { body: [anth(okAnth)], expectCode: 'malformed_body' });
  aud('audit-body-string',
    'A JSON string body is refused malformed_body.',
    { body: JSON.stringify(anth(okAnth)), expectCode: 'malformed_body' });
  pre('precheck-body-null',
    'A JSON null body is refused malformed_body.',
    { body: null, expectCode: 'malformed_body' });
  aud('audit-body-trailing-text',
    'A JSON object followed by more text is not one JSON value and is refused malformed_body.',
    { body_text: JSON.stringify(anth(okAnth)) + ' {}', expectCode: 'malformed_body' });
  pre('precheck-envelope-version-missing',
    'An object without envelope_version is refused envelope_version_not_supported.',
    { body: { declared_format_id: 'anthropic-messages', record: okAnth }, expectCode: 'envelope_version_not_supported' });
  aud('audit-envelope-version-2',
    'An envelope_version of context-composition-envelope/2 is refused envelope_version_not_supported.',
    { body: { ...anth(okAnth), envelope_version: 'context-composition-envelope/2' }, expectCode: 'envelope_version_not_supported' });
  pre('precheck-envelope-version-number',
    'A numeric envelope_version is refused envelope_version_not_supported.',
    { body: { ...anth(okAnth), envelope_version: 1 }, expectCode: 'envelope_version_not_supported' });
  pre('precheck-order-envelope-version-beats-format',
    'An empty object fails both R-2 and R-3 and is refused envelope_version_not_supported, the earlier rule.',
    { body: {}, expectCode: 'envelope_version_not_supported' });
  pre('precheck-format-missing',
    'An envelope without declared_format_id is refused format_not_accepted listing the accepted ids.',
    { body: { envelope_version: ENVELOPE, record: okAnth }, expectCode: 'format_not_accepted' });
  aud('audit-format-unknown-not-sniffed',
    `A declared_format_id of ${NEVER_ACCEPTED_FORMAT} is refused format_not_accepted with the accepted list and no closest-format suggestion, though the record would parse as anthropic-messages.`,
    { body: env(NEVER_ACCEPTED_FORMAT, okAnth), expectCode: 'format_not_accepted' });
  pre('precheck-format-case-variant',
    'A declared_format_id differing only in case (Letta-AF) is not an accepted id and is refused format_not_accepted.',
    { body: env('Letta-AF', { messages: [] }), expectCode: 'format_not_accepted' });
  pre('precheck-format-number',
    'A numeric declared_format_id is refused format_not_accepted.',
    { body: env(2, okAnth), expectCode: 'format_not_accepted' });
  aud('audit-order-format-beats-record',
    'An unaccepted format and a missing record are refused format_not_accepted, the earlier rule.',
    { body: { envelope_version: ENVELOPE, declared_format_id: 'anthropic' }, expectCode: 'format_not_accepted' });
  pre('precheck-record-missing',
    'An envelope without a record member is refused record_required.',
    { body: { envelope_version: ENVELOPE, declared_format_id: 'generic-message-list' }, expectCode: 'record_required' });
  aud('audit-record-missing',
    'An envelope without a record member is refused record_required on the paid route before payment.',
    { body: { envelope_version: ENVELOPE, declared_format_id: 'letta-af', harness_stated_counts: { total: 1 } }, expectCode: 'record_required' });
  pre('precheck-order-record-missing-beats-stated-counts',
    'A missing record and a harness_stated_counts array are refused record_required, the earlier rule.',
    { body: { envelope_version: ENVELOPE, declared_format_id: 'anthropic-messages', harness_stated_counts: [1, 2] }, expectCode: 'record_required' });
  aud('audit-order-agents-ambiguous-beats-stated-counts',
    'A letta-af record with no agent and a harness_stated_counts string are refused record_required, which precedes stated_counts_invalid.',
    { body: letta({ agents: [] }, { harness_stated_counts: 'total=5' }), expectCode: 'record_required' });
  pre('precheck-stated-counts-array',
    'A harness_stated_counts that is an array is refused stated_counts_invalid with its cap.',
    { body: anth(okAnth, { harness_stated_counts: [3] }), expectCode: 'stated_counts_invalid' });
  aud('audit-stated-counts-number',
    'A harness_stated_counts that is a number is refused stated_counts_invalid on the paid route.',
    { body: anth(okAnth, { harness_stated_counts: 3 }), expectCode: 'stated_counts_invalid' });
  pre('precheck-order-stated-counts-beats-parse',
    'A harness_stated_counts string and a record that does not parse as generic-message-list are refused stated_counts_invalid, the earlier rule.',
    { body: gen('not a record', { harness_stated_counts: '{"total":3}' }), expectCode: 'stated_counts_invalid' });
  {
    const statedAt = (n) => {
      const base = '{"total":120';
      return base + ' '.repeat(n - base.length - 1) + '}';
    };
    assert(utf8Length(statedAt(CAP.stated)) === CAP.stated, 'stated at cap');
    const name = 'precheck-stated-counts-exactly-65536-bytes';
    pre(name,
      'A harness_stated_counts member whose raw text, whitespace included, is exactly 65,536 bytes is within its cap and states a total.',
      { body_text: envText('precheck', name, [...head('anthropic-messages'), ['record', JSON.stringify(okAnth)], ['harness_stated_counts', statedAt(CAP.stated)]]), expectCode: 'precheck', check: expectNA(['F-11']) });
    aud('audit-stated-counts-65537-bytes',
      'A harness_stated_counts member whose raw text is 65,537 bytes, mostly whitespace, is refused stated_counts_invalid.',
      { body_text: envText('audit', 'x', [...head('anthropic-messages'), ['record', JSON.stringify(okAnth)], ['harness_stated_counts', statedAt(CAP.stated + 1)]]), expectCode: 'stated_counts_invalid' });
  }

  // ------------------------------------------------------------ could-not-measure on the paid route, other kinds

  aud('audit-generic-zero-entries',
    'A generic record with no messages and an empty tool_schemas list answers 422 zero_entries on the paid route.',
    { body: gen({ messages: [], tool_schemas: [] }), expectCode: 'zero_entries' });

  // ============================================================ PART 2: paid reports (C-12, C-13)
  //
  // Every case below answers 200 with the signed report on the paid route
  // (payments off in the harness), unless its name says otherwise.

  const rep = (name, description, req) => aud(name, description, { expectCode: 'report', ...req });
  const F = (ans, id) => ans.factors.find((f) => f.id === id);
  const rowOf = (f, cls) => f.rows.find((r) => r.class === cls);
  const lineEnd = (ans) => ans.measurement_line.split(' \u00b7 ').slice(-1)[0];
  const isLimited = (ans) => lineEnd(ans).startsWith('LIMITED');
  // Deterministic filler prose of exactly n code points (distinct per seed,
  // so no two fillers are exact or near duplicates).
  const VOCAB = ['amber', 'basin', 'cedar', 'delta', 'ember', 'fjord', 'grove', 'harbor', 'inlet', 'juniper', 'kelp', 'lagoon',
    'meadow', 'nectar', 'orchard', 'prairie', 'quarry', 'ridge', 'summit', 'tundra', 'upland', 'valley', 'willow', 'yarrow',
    'zephyr', 'aspen', 'bramble', 'canyon', 'dune', 'estuary', 'fern', 'glacier', 'heath', 'isle', 'jetty', 'knoll'];
  const filler = (n, seed) => {
    const rng = makeRng('filler ' + seed);
    let s = '';
    while (s.length < n + 1) s += VOCAB[rng.int(VOCAB.length)] + ' ';
    s = s.slice(0, n);
    if (s.endsWith(' ')) s = s.slice(0, -1) + 'z';
    assert(codePoints(s) === n, 'filler length');
    return s;
  };
  // A text whose EM-1 estimate is e (4e code points, e > 0).
  const ofE = (e, seed) => filler(4 * e, seed);
  const genMsgs = (specs) => specs.map(([role, text, extra]) => ({ role, text, ...(extra || {}) }));

  // ------------------------------------------------------------ axis P in every format and level

  {
    const ret1 = packed({ status: 'OK', message: 'order 7: shipped', time: '2026-02-01 09:00:02 AM UTC+0000' });
    const ret2 = packed({ status: 'OK', message: 'Showing 1 of 1 results: Ana prefers email.', time: '2026-02-01 09:00:05 AM UTC+0000' });
    const hb = packed({ type: 'heartbeat', reason: '[This is an automated system message hidden from the user] Function called using request_heartbeat=true, returning control', time: '2026-02-01 09:00:06 AM UTC+0000' });
    const record = cur({
      tool_ids: ['t1', 't2'],
      in_context_message_ids: ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7', 'p8', 'p8b', 'p9'],
      messages: [
        msg('p-stale', 'system', [textPart('A stale prompt left out of context.')]),
        msg('p0', 'system', [textPart('You are a support agent. Core memory: the customer is Ana.')]),
        msg('p1', 'user', [textPart(packed({ type: 'user_message', message: 'Where is order 7?', time: '2026-02-01 09:00:00 AM UTC+0000' }))]),
        msg('p2', 'assistant', [textPart('Checking the order.')], { tool_calls: [callOf('c-1', 'lookup_order', '{"order_id": "7"}')] }),
        msg('p3', 'tool', [textPart(ret1)], { tool_call_id: 'c-1', tool_returns: [{ tool_call_id: 'c-1', status: 'success', func_response: ret1 }] }),
        msg('p4', 'assistant', [], { tool_calls: [callOf('c-2', 'archival_memory_search', '{"query": "contact preference"}')] }),
        msg('p5', 'tool', [textPart(ret2)], { tool_call_id: 'c-2' }),
        msg('p6', 'user', [textPart(hb)]),
        msg('p7', 'approval', [textPart('Approved by the operator.')]),
        msg('p8', '', [{ text: 'A part with neither a role nor a type.' }]),
        msg('p8b', 'summary', [textPart('Summary of earlier turns: Ana asked about order 7.')]),
        msg('p9', 'user', [{ type: 'image', source: { type: 'url', url: 'https://example.invalid/receipt.png' } }, textPart('Thanks, here is my receipt.')]),
      ],
    }, [
      { id: 't1', name: 'lookup_order', json_schema: schemaA },
      { id: 't2', name: 'archival_memory_search', json_schema: schemaC },
      { id: 't3', name: 'send_message', json_schema: schemaB },
    ]);
    rep('audit-letta-l2-every-p-class-and-conflicts',
      'A letta-af L2 record reaches every P class but P-RETR (a search result is always a tool result first), records the search result as P-TRES over P-RETR, the tool calls as P-TCALL over P-ASST and the packed heartbeat as P-SYS over P-USER, and lists the approval role and its part type as P-OTHER raw values.',
      {
        body: letta(record),
        check: (ev, ans) => {
          const f1 = F(ans, 'F-1');
          assert(P_CLASSES.every((c) => (c === 'P-RETR') === (rowOf(f1, c).block_count === 0)), 'every P class but P-RETR present');
          assert(deepEqual(rowOf(f1, 'P-OTHER').raw_values, ['approval', 'text']), 'raw values');
          assert(deepEqual(f1.conflicts.map((c) => c.winner + '>' + c.losers.join('+')), ['P-TCALL>P-ASST', 'P-TCALL>P-ASST', 'P-TRES>P-RETR', 'P-SYS>P-USER']), 'conflicts');
          assert(ans.messages_left_out_count === 1 && ans.header_facts.M01.block_count === 2 + 13, 'blocks');
          assert(deepEqual(F(ans, 'F-5').turns.map((t) => t.turn), [0, 1, 2]), 'heartbeat starts no turn');
        },
      });
  }
  {
    const marker = 'Note: prior messages (8 of 12 total messages) have been hidden from view due to conversation memory constraints.\nThe following is a summary of the previous 8 messages:\n Ana asked about order 7.';
    const searchRet = packed({ status: 'OK', message: 'Result: ' + marker, time: '2026-02-01 10:00:03 AM UTC+0000' });
    const schemaM = { name: 'recall_summary', description: 'Return what was said when older messages have been hidden from view due to limits.', parameters: { type: 'object', properties: {} } };
    const record = cur({
      tool_ids: ['t1', 't2'],
      in_context_message_ids: ['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q6'],
      messages: [
        msg('q0', 'system', [textPart('You are a support agent.')]),
        msg('q1', 'user', [textPart(packed({ type: 'system_alert', message: marker, time: '2026-02-01 10:00:00 AM UTC+0000' }))]),
        msg('q2', 'summary', [textPart('Summary: Ana asked about order 7 and prefers email.')]),
        msg('q3', 'user', [textPart(packed({ type: 'user_message', message: 'What did I ask before?', time: '2026-02-01 10:00:01 AM UTC+0000' }))]),
        msg('q4', 'assistant', [], { tool_calls: [callOf('c-9', 'conversation_search', '{"query": "order"}')] }),
        msg('q5', 'tool', [textPart(searchRet)], { tool_call_id: 'c-9' }),
        msg('q6', 'assistant', [textPart('You asked about order 7.')], { tool_returns: [{ tool_call_id: 'c-x', status: 'success', func_response: 'a stray return kept on an assistant message' }] }),
      ],
    }, [{ id: 't1', name: 'conversation_search', json_schema: schemaC }, { id: 't2', name: 'recall_summary', json_schema: schemaM }]);
    rep('audit-letta-compaction-marker-conflicts',
      'A tool definition whose description carries the compaction marker stays P-TDEF (P-CMPT recorded), while the marker makes P-CMPT win over P-SYS and P-USER in a packed system_alert and over P-TRES and P-RETR in a search result, a summary role is P-CMPT, and a tool return on an assistant message is P-TRES over P-ASST.',
      {
        body: letta(record),
        check: (ev, ans) => {
          const cf = F(ans, 'F-1').conflicts.map((c) => c.block_index + ':' + c.winner + '>' + c.losers.join('+'));
          assert(deepEqual(cf, ['1:P-TDEF>P-CMPT', '3:P-CMPT>P-SYS+P-USER', '6:P-TCALL>P-ASST', '7:P-CMPT>P-TRES+P-RETR', '9:P-TRES>P-ASST']), 'conflicts ' + cf);
          assert(deepEqual(F(ans, 'F-9').blocks.map((b) => b.class), ['P-SYS', 'P-CMPT', 'P-CMPT', 'P-CMPT']), 'F-9 classes');
        },
      });
  }
  {
    const record = cur({
      in_context_message_ids: ['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8'],
      messages: [
        { id: 'a0', message_type: 'system_message', content: 'You are a note-taking assistant.' },
        { id: 'a1', message_type: 'user_message', content: 'Find my notes on kettles.' },
        { id: 'a2', message_type: 'reasoning_message', reasoning: 'The user wants earlier notes; search the conversation first.' },
        { id: 'a3', message_type: 'hidden_reasoning_message', state: 'redacted', hidden_reasoning: null },
        { id: 'a4', message_type: 'tool_call_message', tool_call: { name: 'conversation_search', arguments: '{"query": "kettle"}', tool_call_id: 'tc-1' } },
        { id: 'a5', message_type: 'tool_return_message', tool_return: 'Showing 2 results: kettle 1.7 L; kettle descaling.', status: 'success', tool_call_id: 'tc-1' },
        { id: 'a6', message_type: 'assistant_message', content: [textPart('You have two kettle notes.')] },
        { id: 'a7', message_type: 'event_message', content: [textPart('Context window 61% full.')] },
        { id: 'a8', message_type: 'user_message', content: [textPart('Thanks.')] },
      ],
    }, []);
    rep('audit-letta-api-view-message-types',
      'A letta-af record in the API view adapts system, user, assistant, reasoning, hidden reasoning (non-serialisable), tool call and tool return messages, the search result is P-TRES over P-RETR, an unknown event_message is P-OTHER, and with no tools F-8 prints 0 and the absence note.',
      {
        body: letta(record),
        check: (ev, ans) => {
          const f1 = F(ans, 'F-1');
          assert(deepEqual(rowOf(f1, 'P-OTHER').raw_values, ['event_message', 'text']), 'raw');
          assert(rowOf(f1, 'P-ASST').block_count === 3 && rowOf(f1, 'P-TCALL').block_count === 1 && rowOf(f1, 'P-TRES').block_count === 1, 'classes');
          assert(deepEqual(f1.conflicts.map((c) => c.winner + '>' + c.losers.join('+')), ['P-TCALL>P-ASST', 'P-TRES>P-RETR']), 'conflicts');
          assert(F(ans, 'F-8').block_count === 0 && F(ans, 'F-8').share === 'est:~0.00%' && F(ans, 'F-8').absence_note, 'F-8 absent');
          assert(ans.header_facts.M13.c_unk.block_count === 1, 'hidden reasoning C-UNK');
        },
      });
  }
  {
    const longType = 'approval_request_message_with_an_unusually_long_vendor_specific_suffix_v2';
    assert(codePoints(longType) > 64, 'long type');
    const record = cur({
      tool_ids: ['t1'],
      in_context_message_ids: ['b0', 'b1', 'b2', 'b3', 'b4', 'b5'],
      messages: [
        { id: 'b0', message_type: 'user_message', content: 'Look up order 12, please.' },
        { id: 'b1', message_type: 'tool_call_message', tool_call: { name: 'lookup_order', arguments: '{"order_id": "12"}', tool_call_id: 'tc-7' } },
        { id: 'b2', message_type: 'tool_return_message', tool_return: '{"status": "delivered"}', status: 'success', tool_call_id: 'tc-7' },
        { id: 'b3', message_type: 'tool_return_message', tool_return: 'orphan return text', status: 'error', tool_call_id: 'tc-none' },
        { id: 'b4', message_type: longType, content: [textPart('Approve the refund?')] },
        { id: 'b5', message_type: 'assistant_message', content: 'Order 12 was delivered.' },
      ],
    }, [{ id: 't1', name: 'lookup_order', json_schema: schemaA }]);
    rep('audit-letta-api-view-plain-tool-return-and-long-type',
      'In the API view a tool return of a non-search call and an orphan tool return are P-TRES with no conflict, and an unknown message_type longer than 64 code points prints its first 64 code points followed by an ellipsis.',
      {
        body: letta(record),
        check: (ev, ans) => {
          const raw = rowOf(F(ans, 'F-1'), 'P-OTHER').raw_values;
          assert(raw.length === 2 && raw[0] === [...longType].slice(0, 64).join('') + '\u2026' && raw[1] === 'text', 'capped');
          assert(F(ans, 'F-1').conflicts.length === 1, 'only the tool call conflicts');
        },
      });
  }
  {
    const inner = cur({
      tool_ids: ['t1'],
      in_context_message_ids: ['s0', 's1', 's2'],
      messages: [
        msg('s0', 'system', [textPart('You are a concise helper.')]),
        msg('s1', 'user', [textPart(packed({ type: 'user_message', message: 'Cancel order 4.', time: '2026-03-01 08:00:00 AM UTC+0000' }))]),
        msg('s2', 'assistant', [], { tool_calls: [callOf('c-4', 'cancel_order', '{"order_id": "4"}')] }),
      ],
    }, [{ id: 't1', name: 'cancel_order', json_schema: { name: 'cancel_order', description: 'Cancel an order.', parameters: { type: 'object', properties: { order_id: { type: 'string' } } } } }]);
    const recordText = JSON.stringify(JSON.stringify(inner));
    rep('audit-letta-json-string-record',
      'A letta-af record stored as a JSON string is unwrapped once and reported with record_was_json_string true and record_bytes the length of the string literal as submitted.',
      {
        body: letta(JSON.stringify(inner), { declared_format_version: '0.1.0' }),
        check: (ev, ans) => {
          assert(ans.record_was_json_string === true && ans.record_bytes === utf8Length(recordText) && ans.declared_format.version_supplied === true, 'json string');
        },
      });
  }
  {
    const om = (role, text, createdAt, inContext, extra = {}) => ({
      created_at: createdAt, in_context: inContext, role, name: null,
      content: [textPart(text)], tool_call_id: null, tool_calls: [], tool_returns: [], ...extra,
    });
    const record = {
      agent_type: 'memgpt_agent', name: 'synthetic-order', version: '0.6.43',
      messages: [
        om('tool', packed({ status: 'OK', message: 'None', time: 'x' }), '2025-04-01T10:00:05Z', true, { name: 'send_message', tool_call_id: 'k-1' }),
        om('user', packed({ type: 'user_message', message: 'tied instant, earlier in the file', time: 'x' }), '2025-04-01T10:00:06Z', true),
        om('system', 'You are MemGPT (stale).', '2025-04-01T09:00:00Z', false),
        om('assistant', 'Greeting the user.', '2025-04-01T10:00:04Z', true, { tool_calls: [callOf('k-1', 'send_message', '{\n  "message": "Hello!"\n}')] }),
        om('system', 'You are MemGPT.\n<memory_blocks>persona: calm</memory_blocks>', '2025-04-01T11:00:00Z', true),
        om('user', packed({ type: 'login', last_login: 'Never (first login)', time: 'x' }), '2025-04-01T10:00:01+00:00', true),
        om('user', packed({ type: 'user_message', message: 'tied instant, later in the file', time: 'x' }), '2025-04-01T12:00:06+02:00', true),
      ],
      tools: [{ name: 'send_message', json_schema: schemaB }, { name: 'conversation_search', json_schema: schemaC }],
    };
    rep('audit-letta-old-shape-order-and-system-depth',
      'An older-shape letta record places the in-context system message first after the two tool definitions (so its depth is their share), orders the rest by created_at with a tie broken by file position, and leaves the stale prompt out.',
      {
        body: letta(record),
        check: (ev, ans) => {
          const order = ev.rec.messages.filter((m) => !m.schema).map((m) => m.role_raw);
          assert(deepEqual(order, ['system', 'user', 'assistant', 'tool', 'user', 'user']), 'order ' + order);
          const f9 = F(ans, 'F-9').blocks;
          assert(f9[0].block_index === 2 && f9[0].offset_tokens !== 'est:~0', 'system after schema');
          assert(ans.messages_left_out_count === 1, 'left out');
        },
      });
  }
  rep('audit-anthropic-annex-c13-example',
    'The ANNEX C-13 example: one user message "Hello there" and one assistant message "Hi" with no stated counts give T = 4 and a LIMITED line.',
    {
      body: anth({ messages: [{ role: 'user', content: 'Hello there' }, { role: 'assistant', content: 'Hi' }] }),
      check: (ev, ans) => {
        assert(ans.measurement_line === 'CONTEXT COMPOSITION \u2014 format: anthropic-messages (L0) \u00b7 messages: 2 \u00b7 blocks: 2 \u00b7 total: est:~4 \u00b7 unknown blocks: 0 \u00b7 LIMITED \u2014 <check-end UTC>', 'ANNEX line');
        assert(deepEqual(F(ans, 'F-10'), { id: 'F-10', metric: 'M12', status: 'NOT-ASSESSABLE', reason: 'no stated counts', label: 'NO-STATED-COUNT' }), 'F-10 label');
      },
    });
  {
    const record = {
      system: 'You are a shopping assistant.',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Find a kettle under 40 euros.' }, { type: 'image', source: { type: 'url', url: 'https://example.invalid/k.png' } }] },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'Search the catalogue first.', signature: 'sig' }, { type: 'tool_use', id: 'toolu_1', name: 'search', input: { q: 'kettle', max: 40 } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Kettle A 34.99; Kettle B 39.50' }] },
        { role: 'developer', content: 'Prefer in-stock items.' },
        { role: '', content: 'A message with an empty role.' },
        { role: 'assistant', content: 'Kettle A costs 34.99 euros.' },
      ],
    };
    rep('audit-anthropic-l0-roles-full-line',
      'An anthropic-messages record at L0 prints the five structural classes as not identifiable, classes a developer role as P-OTHER and an empty role as P-UNK, and with every message stated and a user turn its line is FULL.',
      {
        body: anth(record, { harness_stated_counts: { per_message: [8, 12, 20, 9, 6, 8, 7] } }),
        check: (ev, ans) => {
          const f1 = F(ans, 'F-1');
          assert(STRUCTURAL.every((c) => deepEqual(rowOf(f1, c), { class: c, note: 'not identifiable at this level' })), 'structural notes');
          assert(deepEqual(rowOf(f1, 'P-OTHER').raw_values, ['developer']) && rowOf(f1, 'P-UNK').block_count === 1, 'other/unk');
          assert(!isLimited(ans) && F(ans, 'F-9').cmpt_note && F(ans, 'F-8').note, 'FULL and L0 notes');
        },
      });
  }
  {
    const long = 'reviewer-\u{1F600}'.padEnd(80, 'q');
    rep('audit-generic-l0-roles',
      'A generic record at L0 classes system, user and assistant by role, a tool role and a role longer than 64 code points as P-OTHER (capped with an ellipsis), an empty role as P-UNK, and a null text as C-UNK.',
      {
        body: gen({ messages: genMsgs([['system', 'Be brief.'], ['user', 'What is the weather in Oslo?'], ['assistant', 'Checking.'], ['tool', '{"temp_c": -3}'], ['', 'No role at all.'], [long, 'A reviewer note.'], ['assistant', null]]) }),
        check: (ev, ans) => {
          assert(ans.declared_format.level === 'L0', 'L0');
          const raw = rowOf(F(ans, 'F-1'), 'P-OTHER').raw_values;
          assert(raw.length === 2 && raw[0] === 'tool' && raw[1] === [...long].slice(0, 64).join('') + '\u2026', 'raw ' + raw);
          assert(ans.header_facts.M13.either.block_count === 2, 'P-UNK and C-UNK blocks');
        },
      });
  }
  rep('audit-generic-l1-roles',
    'A generic record with name, has_args and source members is L1, classes by role only (system, user, assistant, a tool role as P-OTHER, an empty role as P-UNK) and still prints the structural classes as not identifiable.',
    {
      body: gen({ messages: genMsgs([['system', 'Use metric units.'], ['user', 'Weather in Bergen?'], ['assistant', '{"city":"Bergen"}', { name: 'get_weather', has_args: true }], ['tool', '{"temp_c": 4}', { name: 'get_weather', source: 'weather-api' }], ['', 'An unlabelled line.'], ['assistant', 'It is 4 degrees.']]) }),
      check: (ev, ans) => {
        assert(ans.declared_format.level === 'L1' && rowOf(F(ans, 'F-1'), 'P-TCALL').note, 'L1');
        assert(['P-SYS', 'P-USER', 'P-ASST', 'P-OTHER', 'P-UNK'].every((c) => rowOf(F(ans, 'F-1'), c).block_count > 0), 'role classes');
        assert(deepEqual(rowOf(F(ans, 'F-1'), 'P-OTHER').raw_values, ['tool']), 'tool is other');
      },
    });
  rep('audit-generic-l2-kind-role-conflicts',
    'A generic L2 record reaches every P class, records every kind-against-role conflict its kinds allow (tool_definition, summary, tool_call, tool_result and retrieval over system, user or assistant) and classes a tool role with no kind as P-OTHER.',
    {
      body: gen({
        messages: genMsgs([
          ['system', 'Summary: the user compared two kettles.', { kind: 'summary' }],
          ['user', 'Which one boils faster?'],
          ['assistant', '{"name":"compare","parameters":{}}', { kind: 'tool_definition' }],
          ['assistant', '{"a":"k1","b":"k2"}', { kind: 'tool_call', name: 'compare', has_args: true }],
          ['user', 'k1: 3 min; k2: 4 min', { kind: 'tool_result' }],
          ['tool', 'Kettle k1 has a 3 kW element.', { kind: 'retrieval', source: 'catalogue' }],
          ['user', 'Earlier you said k1 is quieter.', { kind: 'retrieval' }],
          ['tool', 'raw tool chatter'],
          ['critic', 'Answer with numbers.', { kind: 'note' }],
          ['', 'no role, no kind'],
          ['assistant', 'Kettle k1 boils faster.'],
          ['system', 'Answer in metric units.'],
        ]),
        tool_schemas: [{ name: 'compare', text: '{"name":"compare","description":"Compare two kettles."}' }],
      }),
      check: (ev, ans) => {
        const cf = F(ans, 'F-1').conflicts.map((c) => c.winner + '>' + c.losers.join('+'));
        assert(deepEqual(cf, ['P-CMPT>P-SYS', 'P-TDEF>P-ASST', 'P-TCALL>P-ASST', 'P-TRES>P-USER', 'P-RETR>P-USER']), 'conflicts ' + cf);
        assert(deepEqual(rowOf(F(ans, 'F-1'), 'P-OTHER').raw_values, ['tool', 'critic', 'note']), 'raw');
        assert(rowOf(F(ans, 'F-1'), 'P-TDEF').block_count === 2 && F(ans, 'F-8').block_count === 2, 'TDEF incl. schema');
        assert(deepEqual(F(ans, 'F-5').turns.map((t) => t.turn), [0, 1]), 'kind outranks user for turns');
        assert(P_CLASSES.every((c) => rowOf(F(ans, 'F-1'), c).block_count > 0), 'every P class at generic L2');
      },
    });
  {
    const v64 = 'x'.repeat(60) + '\u{1F600}\u{1F601}\u{1F602}\u{1F603}';
    const v65 = 'y'.repeat(65);
    assert(codePoints(v64) === 64 && v64.length === 68 && codePoints(v65) === 65, 'raw lengths');
    rep('audit-generic-p-other-raw-values-order-and-cap',
      'P-OTHER raw values are listed once each in block order with a role before its kind, a value of exactly 64 code points (68 UTF-16 units) is printed whole and one of 65 is capped with an ellipsis.',
      {
        body: gen({
          messages: genMsgs([
            ['critic', 'First remark.', { kind: 'note' }],
            ['note', 'Second remark.', { kind: 'critic' }],
            [v64, 'Third remark.', { kind: 'note' }],
            ['user', 'A user line.', { kind: v65 }],
            ['observer', 'Fourth remark.', { kind: v65 }],
            ['critic', 'Fifth remark.'],
          ]),
        }),
        check: (ev, ans) => {
          const raw = rowOf(F(ans, 'F-1'), 'P-OTHER').raw_values;
          assert(deepEqual(raw, ['critic', 'note', v64, 'observer', 'y'.repeat(64) + '\u2026']), 'raw ' + JSON.stringify(raw));
        },
      });
  }
  // ------------------------------------------------------------ axis C (C-4) and its conflicts

  const b64of = (n, seed) => b64encode(makeRng('b64 ' + seed).bytes(n));
  {
    const blob = b64of(33, 'c-classes'); // 44 characters, no padding
    rep('audit-generic-c-every-class',
      'A generic record with one block of each content class (empty, null, base64, BEGIN LOG export, JSON object, fenced code, prose) prints every C row, the C-UNK row not assessable and no axis-C conflict.',
      {
        body: gen({
          messages: genMsgs([
            ['user', ''], ['user', null], ['user', blob], ['user', 'BEGIN LOG job 12\nstep one\nstep two'],
            ['user', ' {"order": 7, "items": ["kettle"]}\n'], ['user', '```python\nprint("hi")\n```'], ['user', 'Plain prose about kettles.'],
          ]),
        }),
        check: (ev, ans) => {
          const f2 = F(ans, 'F-2');
          assert(C_CLASSES.every((c) => rowOf(f2, c).block_count === 1), 'one block per class');
          assert(ans.header_facts.M01.axis_c_conflict_count === 0 && ans.header_facts.M01.empty_block_count === 1, 'no conflict');
        },
      });
  }
  {
    const wideArr = JSON.stringify(Array.from({ length: 10 }, (_, i) => 'element number ' + i + ' of a wide array'));
    const prettySmall = '[\n    1,\n    2\n]';
    const rawBlob = 'BEGIN RAW\n' + b64of(300, 'raw-blob');
    const widePretty = '{\n' + Array.from({ length: 10 }, (_, i) => `    "field_${i}": "value number ${i}"`).join(',\n') + '\n}';
    const fencedBlob = '```\n' + b64of(300, 'fenced-blob') + '\n```';
    const jsonBlob = '["' + b64of(300, 'json-blob') + '"]';
    assert(codePoints(wideArr) >= 200 && codePoints(widePretty) >= 200, 'wide texts');
    rep('audit-generic-c-conflicts',
      'Blocks for which several content tests hold are counted as axis-C conflicts and classed by precedence: a wide JSON array is C-RAW (also C-STRUCT), an indented JSON array C-STRUCT (also C-CODE), and base64 under a BEGIN RAW line, in a fence or in a JSON array C-BLOB.',
      {
        body: gen({ messages: genMsgs([['user', wideArr], ['assistant', prettySmall], ['tool', rawBlob], ['tool', widePretty], ['tool', fencedBlob], ['tool', jsonBlob], ['assistant', 'Done.']]) }),
        check: (ev, ans) => {
          assert(ans.header_facts.M01.axis_c_conflict_count === 6, 'six conflicts');
          const cs = F(ans, 'F-2b').cells.map((c) => c.c);
          assert(deepEqual(ev.blocks.map((b) => classifyC(b.text)), ['C-RAW', 'C-STRUCT', 'C-BLOB', 'C-RAW', 'C-BLOB', 'C-BLOB', 'C-TEXT']), 'classes ' + cs);
          assert(deepEqual(F(ans, 'F-7').raw_export_blocks, [0, 2, 3]), 'raw export blocks');
        },
      });
  }
  rep('audit-generic-c-code-indentation-edges',
    'The C-CODE indentation test holds at exactly half the non-empty lines (blank lines not counted, tab or four spaces) and fails just under half, and a first line of three backticks needs a closing fence line.',
    {
      body: gen({
        messages: genMsgs([
          ['user', 'def f(x):\n    return x\n\n\nf(2)\n\treturn 3'],
          ['user', 'one\n    two\nthree'],
          ['user', 'steps:\n   three spaces only\n    four spaces'],
          ['user', '```sh\nls -la\nnot closed'],
          ['user', '```\nhello\n```\n\n'],
        ]),
      }),
      check: (ev) => {
        assert(deepEqual(ev.blocks.map((b) => classifyC(b.text)), ['C-CODE', 'C-TEXT', 'C-TEXT', 'C-TEXT', 'C-CODE']), 'code edges');
      },
    });

  // ------------------------------------------------------------ M06 (F-3)

  const estMsgs = (es, seed, roles) => es.map((e, i) => ({ role: roles ? roles[i % roles.length] : (i % 2 ? 'assistant' : 'user'), text: e === 0 ? '' : ofE(e, seed + ' ' + i) }));
  rep('audit-m06-annex-example-40-30-30-30',
    'The ANNEX C-12 example: message estimates 40, 30, 30 and 30 give the top three as messages 0, 1 and 2, and message 3 joins through the 10 % rule.',
    {
      body: gen({ messages: estMsgs([40, 30, 30, 30], 'annex-m06') }),
      check: (ev, ans) => assert(deepEqual(F(ans, 'F-3').largest_contributors.map((c) => c.message_index), [0, 1, 2, 3]), 'all four'),
    });
  rep('audit-m06-tie-at-third-place',
    'Estimates 5, 50, 5 and 40 tie at third place, which goes to the lower message index 0, and message 2 stays out because 10 × 5 is under the total of 100.',
    {
      body: gen({ messages: estMsgs([5, 50, 5, 40], 'tie-third') }),
      check: (ev, ans) => assert(deepEqual(F(ans, 'F-3').largest_contributors.map((c) => c.message_index), [0, 1, 3]), 'tie'),
    });
  for (const [n, es, med, p90] of [
    [1, [7], 1, 1],
    [2, [1, 2], 1, 2],
    [9, [9, 1, 8, 2, 7, 3, 6, 4, 5], 5, 9],
    [10, [10, 1, 9, 2, 8, 3, 7, 4, 6, 5], 5, 9],
    [11, [11, 1, 10, 2, 9, 3, 8, 4, 7, 5, 6], 6, 10],
    [30, Array.from({ length: 30 }, (_, i) => ((i * 7) % 30) + 1), 15, 27],
  ]) {
    const total = sum(es);
    rep(`audit-m06-ranks-n${n}`,
      `With ${n} message${n > 1 ? 's' : ''} the lower median is rank ${med} = ceil(0.5 × ${n}) and p90 rank ${p90} = ceil(0.9 × ${n}) over the ascending estimates, and the mean ${total}/${n} is rounded half up.`,
      {
        body: gen({ messages: estMsgs(es, 'ranks ' + n) }),
        check: (ev, ans) => {
          const f3 = F(ans, 'F-3');
          const sorted = [...es].sort((a, b) => a - b);
          assert(f3.lower_median.rank === med && f3.p90.rank === p90 && f3.lower_median.tokens === est(sorted[med - 1]) && f3.p90.tokens === est(sorted[p90 - 1]), 'ranks');
          assert(f3.mean_tokens === est(Math.round(total / n)), 'mean');
        },
      });
  }
  rep('audit-m06-ten-percent-exactly',
    'Estimates 30, 30, 20, 10 and 10 total 100, so both 10-token messages are at exactly 10 % (10 × 10 = 100) and join the largest contributors.',
    {
      body: gen({ messages: estMsgs([30, 30, 20, 10, 10], 'ten-exact') }),
      check: (ev, ans) => assert(deepEqual(F(ans, 'F-3').largest_contributors.map((c) => c.message_index), [0, 1, 2, 3, 4]), 'all five'),
    });
  rep('audit-m06-ten-percent-just-under',
    'Estimates 30, 30, 20, 10 and 11 total 101, so the 11-token message joins (110 ≥ 101) and the 10-token message stays out (100 < 101).',
    {
      body: gen({ messages: estMsgs([30, 30, 20, 10, 11], 'ten-under') }),
      check: (ev, ans) => assert(deepEqual(F(ans, 'F-3').largest_contributors.map((c) => c.message_index), [0, 1, 2, 4]), 'not 3'),
    });
  rep('audit-m06-unsized-excluded-zero-estimate-kept',
    'A null-text message is left out of the distribution and counted as unsized, while an empty-text message is in it with estimate 0 (the minimum) and is never a largest contributor.',
    {
      body: gen({ messages: genMsgs([['user', ofE(4, 'uz0')], ['assistant', null], ['user', ''], ['assistant', ofE(10, 'uz3')]]) }),
      check: (ev, ans) => {
        const f3 = F(ans, 'F-3');
        assert(f3.excluded.unsized_message_count === 1 && f3.message_count === 3 && f3.min_tokens === 'est:~0' && f3.mean_tokens === 'est:~5', 'unsized');
        assert(deepEqual(f3.largest_contributors.map((c) => c.message_index), [0, 3]), 'contributors');
      },
    });
  rep('audit-m06-mean-rounds-down-below-half',
    'Estimates 1, 1 and 2 have the mean 4/3, which rounds to 1, and all three are largest contributors.',
    {
      body: gen({ messages: estMsgs([1, 1, 2], 'mean-down') }),
      check: (ev, ans) => assert(F(ans, 'F-3').mean_tokens === 'est:~1' && F(ans, 'F-3').largest_contributors.length === 3, 'mean 1'),
    });
  rep('audit-m06-zero-total-with-schemas',
    'A generic L2 record whose messages are all empty texts but whose tool schema is sized has a distribution of zero estimates with no largest contributor, and the schema pseudo-message is counted as excluded.',
    {
      body: gen({ messages: genMsgs([['user', ''], ['assistant', '']]), tool_schemas: [{ name: 'f', text: '{"name":"f","description":"does f"}' }] }),
      check: (ev, ans) => {
        const f3 = F(ans, 'F-3');
        assert(f3.status === 'ASSESSABLE' && f3.total_tokens === 'est:~0' && f3.largest_contributors.length === 0 && f3.excluded.schema_pseudo_message_count === 1, 'zero total');
        assert(F(ans, 'F-5').turns[0].cumulative_share === 'est:~0.00%', 'turn share');
      },
    });
  rep('audit-m06-no-sized-message-limited',
    'A generic L2 record whose every message text is null but whose tool schema is sized is measured, and F-3 prints NOT-ASSESSABLE (zero denominator), so the line is LIMITED.',
    {
      body: gen({ messages: genMsgs([['user', null], ['assistant', null]]), tool_schemas: [{ name: 'g', text: '{"name":"g"}' }] }, { harness_stated_counts: { total: 3 } }),
      check: (ev, ans) => {
        assert(deepEqual(F(ans, 'F-3'), { id: 'F-3', metric: 'M06', status: 'NOT-ASSESSABLE', reason: 'zero denominator' }), 'F-3 NA');
        assert(isLimited(ans) && F(ans, 'F-5').status === 'ASSESSABLE' && F(ans, 'F-10').status === 'ASSESSABLE', 'only F-3');
      },
    });
  pre('precheck-generic-f3-no-sized-message',
    'The pre-check of a record whose messages all have null text, with a sized tool schema, lists F-3 as zero denominator although T is above zero.',
    { body: gen({ messages: genMsgs([['user', null], ['assistant', null]]), tool_schemas: [{ name: 'g', text: '{"name":"g"}' }] }), expectCode: 'precheck', check: expectNA(['F-3', 'F-10:no stated counts', 'F-11']) });

  // ------------------------------------------------------------ M07 (F-5)

  rep('audit-m07-turn-zero-present',
    'Messages before the first P-USER message form turn 0, each P-USER message starts the next turn, and cumulative shares reach 100 % without a schema pseudo-message.',
    {
      body: gen({ messages: genMsgs([['system', ofE(5, 't0a')], ['assistant', ofE(3, 't0b')], ['user', ofE(2, 't0c')], ['assistant', ofE(4, 't0d')], ['user', ofE(1, 't0e')]]) }),
      check: (ev, ans) => {
        const t = F(ans, 'F-5').turns;
        assert(deepEqual(t.map((x) => [x.turn, x.first_message_index, x.message_count]), [[0, 0, 2], [1, 2, 2], [2, 4, 1]]) && t[2].cumulative_share === 'est:~100.00%', 'turns');
      },
    });
  rep('audit-m07-turn-zero-absent',
    'A record whose first message is P-USER lists no turn 0, and a user message whose first block is an image still starts a turn.',
    {
      body: anth({ messages: [{ role: 'user', content: 'Describe this.' }, { role: 'assistant', content: 'Send it.' }, { role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://example.invalid/p.png' } }, { type: 'text', text: 'Here.' }] }, { role: 'assistant', content: 'A kettle.' }] }),
      check: (ev, ans) => assert(deepEqual(F(ans, 'F-5').turns.map((x) => x.turn), [1, 2]) && F(ans, 'F-5').turn_count === 2, 'no turn 0'),
    });
  rep('audit-m07-schema-excluded',
    'The schema pseudo-message belongs to no turn and its exclusion is printed, so the last cumulative share stays below 100 %.',
    {
      body: gen({ messages: genMsgs([['user', ofE(6, 'sx0')], ['assistant', ofE(6, 'sx1')]]), tool_schemas: [{ name: 'h', text: ofE(3, 'sx-schema') }] }),
      check: (ev, ans) => {
        const f5 = F(ans, 'F-5');
        assert(f5.excluded.schema_pseudo_message_count === 1 && f5.turns[0].cumulative_share === 'est:~80.00%', 'below 100');
      },
    });
  rep('audit-m07-no-user-message-limited',
    'A record with no P-USER message prints F-5 NOT-ASSESSABLE (no P-USER message) and a LIMITED line although every message is stated.',
    {
      body: anth({ system: 'You are terse.', messages: [{ role: 'assistant', content: 'Ready.' }] }, { harness_stated_counts: { per_message: [4, 2] } }),
      check: (ev, ans) => {
        assert(deepEqual(F(ans, 'F-5'), { id: 'F-5', metric: 'M07', status: 'NOT-ASSESSABLE', reason: 'no P-USER message' }) && isLimited(ans), 'F-5 NA');
        assert(F(ans, 'F-10').status === 'ASSESSABLE', 'F-10 ok');
      },
    });
  // ------------------------------------------------------------ M08 (F-4)

  rep('audit-m08-whitespace-and-line-ending-groups',
    'Texts differing only in CRLF, CR, spacing and trimming form one exact group kept at its lowest block index, whitespace-only and empty texts are excluded, and a case variant is no exact duplicate.',
    {
      body: gen({
        messages: genMsgs([
          ['user', 'Order 7 shipped.\r\nThanks for waiting'], ['assistant', '  Order 7   shipped.\nThanks for waiting  '],
          ['user', 'Order 7 shipped. Thanks for waiting'], ['assistant', 'order 7 shipped. thanks for waiting'],
          ['user', '   '], ['assistant', '\n\t'], ['user', ''], ['assistant', ''],
          ['user', 'Order 7 shipped.\rThanks for waiting'], ['assistant', 'Fine.'], ['user', 'Fine.'],
        ]),
      }),
      check: (ev, ans) => {
        const f4 = F(ans, 'F-4');
        assert(deepEqual(f4.groups.map((g) => g.block_indices), [[0, 1, 2, 8], [9, 10]]) && f4.excess_block_count === 4 && f4.duplicated_block_count === 6, 'groups');
        assert(f4.groups[0].excess_tokens === est(11 + 9 + 9), 'own estimates of the others');
        assert(deepEqual(F(ans, 'F-6').pairs, [[0, 3], [1, 3], [2, 3], [3, 8]]), 'case variant is near');
      },
    });
  rep('audit-m08-unicode-whitespace-edges',
    'U+00A0, U+0085, U+2000, U+2003, U+2029 and U+3000 are whitespace for N(s), while U+200B and U+FEFF are not, so only the former join the exact group.',
    {
      body: gen({
        messages: genMsgs([
          ['user', 'alpha beta gamma delta'], ['user', 'alpha\u00a0beta gamma delta'], ['user', 'alpha\u0085beta gamma delta'],
          ['user', 'alpha\u200bbeta gamma delta'], ['user', '\ufeffalpha beta gamma delta'], ['user', '\u3000alpha beta\u2003gamma delta\u2029'],
          ['user', 'alpha\u200bbeta gamma delta'], ['user', '\u2000alpha beta gamma delta'],
        ]),
      }),
      check: (ev, ans) => {
        assert(deepEqual(F(ans, 'F-4').groups.map((g) => g.block_indices), [[0, 1, 2, 5, 7], [3, 6]]), 'ws groups');
        assert(F(ans, 'F-6').pair_count === 0, 'no near pair');
      },
    });
  rep('audit-m08-schema-block-in-group-and-largest',
    'A tool schema whose text equals a message text after normalisation is the kept member of their group (lowest block index), and as the largest block F-12 names no message index.',
    {
      body: gen({
        messages: genMsgs([['user', 'Use the tool.'], ['assistant', ' {"name":"lookup","description":"Look up one order by its id."} ']]),
        tool_schemas: [{ name: 'lookup', text: '{"name":"lookup","description":"Look up one order by its id."}' }],
      }),
      check: (ev, ans) => {
        assert(deepEqual(F(ans, 'F-4').groups, [{ block_indices: [0, 2], kept_block_index: 0, excess_block_count: 1, excess_tokens: 'est:~16' }]), 'schema kept');
        assert(F(ans, 'F-12').block_index === 0 && F(ans, 'F-12').message_index === null && F(ans, 'F-12').p_class === 'P-TDEF', 'F-12 schema');
      },
    });

  // ------------------------------------------------------------ M09 (F-6)

  const words = (prefix, n) => Array.from({ length: n }, (_, i) => prefix + (i + 1)).join(' ');
  rep('audit-m09-jaccard-edges',
    'Near duplication is decided in integers: shingle sets with 4 shared of 5 (Jaccard 0.80) and 9 of 11 (0.818) are listed, and 15 of 19 (0.789) is not.',
    {
      body: gen({ messages: genMsgs([['user', words('ant', 7)], ['assistant', words('ant', 6)], ['user', words('bee', 21)], ['assistant', words('bee', 17)], ['user', words('cat', 13)], ['assistant', words('cat', 11)]]) }),
      check: (ev, ans) => assert(deepEqual(F(ans, 'F-6').pairs, [[0, 1], [4, 5]]) && F(ans, 'F-6').eligible_block_count === 6, 'edges'),
    });
  rep('audit-m09-short-blocks-and-exact-pairs',
    'Blocks with fewer than 3 tokens after stripping are not eligible, pairs whose N(s) are equal are left to M08, and a case variant or a punctuation variant is listed.',
    {
      body: gen({
        messages: genMsgs([
          ['user', 'Hello, world!'], ['user', 'a , b'], ['user', '... --- !!!'], ['user', 'the kettle is hot'], ['user', 'the kettle is hot'],
          ['user', 'The kettle is hot'], ['user', 'the  kettle\nis hot'], ['user', 'one two three'], ['user', 'One, two; three.'],
        ]),
      }),
      check: (ev, ans) => {
        assert(F(ans, 'F-6').eligible_block_count === 6 && deepEqual(F(ans, 'F-6').pairs, [[3, 5], [4, 5], [5, 6], [7, 8]]), 'pairs ' + JSON.stringify(F(ans, 'F-6').pairs));
        assert(deepEqual(F(ans, 'F-4').groups.map((g) => g.block_indices), [[3, 4, 6]]), 'exact group');
      },
    });
  rep('audit-m09-punctuation-and-quotes-stripped',
    'Leading and trailing straight and curly quotes, backticks, brackets and .,;:!? are stripped from tokens, while a guillemet or an inner hyphen is kept.',
    {
      body: gen({
        messages: genMsgs([
          ['user', '\u201cHello,\u201d she said (twice).'], ['assistant', '\'hello\' she said twice'], ['user', '`hello` [she] {said} twice!?'],
          ['assistant', 'hello she said twice'], ['user', 'hello-she said twice'], ['assistant', '\u00abhello\u00bb she said twice'], ['user', '\u2018hello\u2019 she said twice'],
        ]),
      }),
      check: (ev, ans) => assert(F(ans, 'F-6').pair_count === 10, 'pairs ' + F(ans, 'F-6').pair_count),
    });
  rep('audit-m09-lowercase-per-code-point',
    'M09 lowercases per code point: U+0130 maps to i so the dotted-capital text pairs with its lowercase form, and a capital final sigma maps to σ, not ς.',
    {
      body: gen({
        messages: genMsgs([
          ['user', '\u0130STANBUL \u0130S GREAT TODAY'], ['assistant', 'istanbul is great today'],
          ['user', '\u039f\u0394\u039f\u03a3 \u039a\u0391\u0399 \u03a3\u03a0\u0399\u03a4\u0399 \u0395\u0394\u03a9'],
          ['assistant', '\u03bf\u03b4\u03bf\u03c2 \u03ba\u03b1\u03b9 \u03c3\u03c0\u03b9\u03c4\u03b9 \u03b5\u03b4\u03c9'],
          ['user', '\u03bf\u03b4\u03bf\u03c3 \u03ba\u03b1\u03b9 \u03c3\u03c0\u03b9\u03c4\u03b9 \u03b5\u03b4\u03c9'],
        ]),
      }),
      check: (ev, ans) => assert(deepEqual(F(ans, 'F-6').pairs, [[0, 1], [2, 4]]), 'lower ' + JSON.stringify(F(ans, 'F-6').pairs)),
    });
  {
    const base = words('step', 20);
    rep('audit-m09-listing-bound',
      'Sixteen blocks that share 18 of 20 shingles pairwise give 120 near-duplicate pairs: the exact count is printed and the first 100 pairs by (lower, higher) block index are listed.',
      {
        body: gen({ messages: Array.from({ length: 16 }, (_, k) => ({ role: k % 2 ? 'assistant' : 'user', text: base + ' tail' + k })) }),
        check: (ev, ans) => {
          const f6 = F(ans, 'F-6');
          assert(f6.pair_count === 120 && f6.pairs.length === 100 && deepEqual(f6.pairs[99], [9, 10]) && deepEqual(f6.pairs[0], [0, 1]), 'bound');
        },
      });
  }

  // ------------------------------------------------------------ M10 (F-7)

  {
    const withChar = (seed, n, test) => {
      for (let k = 0; ; k++) {
        const s = b64of(n, seed + ' ' + k);
        if (test(s)) return s;
      }
    };
    const toUrl = (s) => s.replace(/\+/g, '-').replace(/\//g, '_');
    const s40 = withChar('s40', 30, (s) => /[+/]/.test(s));
    const s44 = withChar('s44', 33, () => true);
    const p44 = withChar('p44', 31, (s) => /[+/]/.test(s) && s.endsWith('=='));
    const p40 = b64of(28, 'p40');
    const u40 = toUrl(withChar('u40', 30, (s) => /[+/]/.test(s)));
    const u44 = toUrl(withChar('u44', 31, (s) => /[+/]/.test(s)));
    const n40 = b64encode(new TextEncoder().encode('abcdefghijklmnopqrstuvwxyz0123'));
    assert(s40.length === 40 && p44.length === 44 && p40.length === 40 && p40.endsWith('==') && /^[A-Za-z0-9]{40}$/.test(n40) && /[-_]/.test(u40) && u44.endsWith('=='), 'segments');
    const lead = (u) => (u[0] === '-' || u[0] === '_' ? u : '-' + u.slice(1));
    // The last data symbol of a "XX==" group must leave 4 zero bits; 'B' leaves 1.
    const nonCanonical = p44.slice(0, 41) + 'B==';
    assert(b64decodeStrict(nonCanonical) === null && b64decodeStrict(p44).length === 31, 'strictness');
    rep('audit-m10-base64-segment-edges',
      'The census counts base64 segments of length 40 (standard, URL-safe, and neither kind counted as standard) and 44 with padding, never 39 or 41 to 43 characters, a 40-character segment decoding to 28 bytes, or a non-canonical final symbol.',
      {
        body: gen({
          messages: genMsgs([
            ['user', `ref ${s40} end`], ['user', `ref ${s40.slice(0, 39)} end`], ['user', `ref ${s44.slice(0, 41)} ${s44.slice(0, 42)} ${s44.slice(0, 43)} end`],
            ['user', `ref ${p44} end`], ['user', `ref ${p40} end`], ['user', `ref ${u40} and ${n40} end`], ['user', `ref ${nonCanonical} end`],
            ['user', `ref ${u44} end`],
          ]),
        }),
        check: (ev, ans) => {
          const f7 = F(ans, 'F-7');
          assert(f7.standard_segment_count === 3 && f7.url_safe_segment_count === 2 && f7.segment_characters === 40 + 44 + 40 + 40 + 44, 'census');
          assert(deepEqual(f7.blocks_with_segments.map((b) => [b.block_index, b.standard_segment_count, b.url_safe_segment_count]), [[0, 1, 0], [3, 1, 0], [5, 1, 1], [7, 0, 1]]), 'per block');
        },
      });
    const both = s40 + lead(u40);
    const third = p44 + '=';
    const shortBoth = s40.slice(0, 20).replace(/^./, '+') + '_' + 'Q'.repeat(22);
    rep('audit-m10-base64-runs-split-and-padding',
      'A run holding both alphabets splits at the first character of the other alphabet into two qualifying segments, a third = ends a padded segment before it, and the census counts segments inside a mostly-prose block that is not C-BLOB.',
      {
        body: gen({ messages: genMsgs([['user', both], ['assistant', `tail ${third} tail`], ['user', shortBoth], ['assistant', `Some prose around a blob: ${s40} and more prose after it to stay under ninety percent.`]]) }),
        check: (ev, ans) => {
          const f7 = F(ans, 'F-7');
          assert(deepEqual(f7.blocks_with_segments.map((b) => [b.block_index, b.standard_segment_count, b.url_safe_segment_count]), [[0, 1, 1], [1, 1, 0], [3, 1, 0]]), 'split ' + JSON.stringify(f7.blocks_with_segments));
          assert(classifyC(both) === 'C-BLOB' && classifyC(ev.blocks[3].text) === 'C-TEXT', 'blob vs census');
        },
      });
  }
  {
    const objC = (n, C) => {
      const head = '{' + Array.from({ length: n - 1 }, (_, i) => `"key_${i}":"v${i}",`).join('') + `"key_${n - 1}":"`;
      const t = head + 'p'.repeat(C - head.length - 2) + '"}';
      assert(codePoints(t) === C && JSON.parse(t) && Object.keys(JSON.parse(t)).length === n, 'objC');
      return t;
    };
    const arrC = (n, C) => {
      const head = '[' + Array.from({ length: n - 1 }, (_, i) => `"e${i}",`).join('') + '"';
      const t = head + 'p'.repeat(C - head.length - 2) + '"]';
      assert(codePoints(t) === C && JSON.parse(t).length === n, 'arrC');
      return t;
    };
    const dupNames = '{' + Array.from({ length: 9 }, (_, i) => `"key_${i}":"value ${i} padded out to length",`).join('') + '"key_0":"again, a duplicate member name"}';
    assert(codePoints(dupNames) >= 200, 'dup length');
    const ts = (k, ok) => (ok ? `2026-01-0${1 + (k % 9)}${k % 2 ? 'T' : ' '}10:00:0${k % 10} event ${k}` : `note ${k} without a timestamp`);
    const lines80 = [ts(0, 1), '[' + ts(1, 1), '', ts(2, 1), ts(3, 1), 'free text'].join('\n');
    const lines78 = [0, 1, 2, 3, 4, 5, 6].map((k) => ts(k, 1)).concat(['free text a', 'free text b']).join('\r\n');
    rep('audit-m10-raw-export-edges',
      'Test R-1 holds for a BEGIN EXPORT or BEGIN LOGGING first line, exactly 80 % timestamped lines, and JSON with 10 distinct members or elements and C ≥ 200, and fails for a lowercase or later marker, 7 of 9 lines, C = 199, 9 members or 9 distinct names.',
      {
        body: gen({
          messages: genMsgs([
            ['user', '\n\n   BEGIN EXPORT v2\nrow 1\nrow 2'], ['user', 'begin raw\nrow'], ['user', 'BEGIN LOGGING started\nrow'], ['user', 'Header line\nBEGIN RAW\nrow'],
            ['tool', lines80], ['tool', lines78], ['tool', objC(10, 200)], ['tool', objC(10, 199)], ['tool', objC(9, 240)],
            ['tool', arrC(10, 200)], ['tool', arrC(9, 240)], ['tool', arrC(10, 199)], ['tool', dupNames],
          ]),
        }),
        check: (ev, ans) => {
          assert(deepEqual(F(ans, 'F-7').raw_export_blocks, [0, 2, 4, 6, 9]), 'raw ' + JSON.stringify(F(ans, 'F-7').raw_export_blocks));
          assert(ans.header_facts.M01.axis_c_conflict_count === 2, 'two JSON raw blocks are also C-STRUCT');
        },
      });
  }
  // ------------------------------------------------------------ M12 (F-10)

  const unitsOf = (ans) => F(ans, 'F-10').units.map((u) => [u.message_index, u.stated, u.measured_tokens, u.difference_share, u.stated_relative, u.agreement]);
  rep('audit-m12-partial-coverage-full',
    'Per-message figures for two of three messages and no total leave F-10 ASSESSABLE with two units and a covered figure, only its whole-record figure NOT-ASSESSABLE (partial coverage), and a FULL line.',
    {
      body: anth({ messages: [{ role: 'user', content: 'first' }, { role: 'assistant', content: 'second' }, { role: 'user', content: 'third' }] }, { harness_stated_counts: { per_message: [5, null, 7] } }),
      check: (ev, ans) => {
        const f10 = F(ans, 'F-10');
        assert(f10.status === 'ASSESSABLE' && f10.covered_message_count === 2 && deepEqual(f10.units.map((u) => [u.message_index, u.stated]), [[0, 5], [2, 7]]), 'units');
        assert(f10.covered.stated === 12 && deepEqual(f10.whole_record, { value: 'NOT-ASSESSABLE', reason: 'partial coverage' }) && !isLimited(ans), 'partial');
      },
    });
  {
    // The ANNEX C-13 worked example: three messages of E 4, 2, 5 with
    // per_message [4, null, 5] and no total.
    fixed('Example: three messages of E 4, 2, 5 with `per_message: [4, null, 5]` and no total:');
    const body = gen({ messages: genMsgs([['user', ofE(4, 'pcx0')], ['assistant', ofE(2, 'pcx1')], ['user', ofE(5, 'pcx2')]]) }, { harness_stated_counts: { per_message: [4, null, 5] } });
    const naPartial = { value: 'NOT-ASSESSABLE', reason: 'partial coverage' };
    rep('audit-m12-annex-partial-coverage-example',
      'The ANNEX C-13 example, three messages of E 4, 2 and 5 with per_message [4, null, 5] and no total, prints F-10 ASSESSABLE with two WITHIN units at 0 %, covered 9 against 9, the whole-record figure NOT-ASSESSABLE (partial coverage) and a FULL line.',
      {
        body,
        check: (ev, ans) => {
          const f10 = F(ans, 'F-10');
          assert(f10.status === 'ASSESSABLE' && f10.message_count === 3 && f10.covered_message_count === 2 && f10.ignored_entry_count === 0 && f10.invalid_entry_count === 0, 'counts');
          assert(deepEqual(unitsOf(ans), [[0, 4, 'est:~4', 'est:~0.00%', 'equal', 'WITHIN'], [2, 5, 'est:~5', 'est:~0.00%', 'equal', 'WITHIN']]), 'units ' + JSON.stringify(unitsOf(ans)));
          assert(f10.covered.stated === 9 && f10.covered.measured_tokens === 'est:~9' && f10.covered.agreement === 'WITHIN', 'covered');
          assert(deepEqual(f10.whole_record, naPartial) && !isLimited(ans) && ans.factors.every((f) => f.id === 'F-11' || f.status === 'ASSESSABLE'), 'whole NA, FULL');
        },
      });
    pre('precheck-m12-annex-partial-coverage-example',
      'The pre-check of the ANNEX C-13 partial-coverage example does not list F-10 (only no stated counts is a pre-check reason for it), so the list holds only F-11.',
      { body, expectCode: 'precheck', check: expectNA(['F-11']) });
  }
  {
    // Partial coverage through generic stated_tokens (one message is one
    // block, so a message carrying a valid stated_tokens is covered).
    const body = gen({ messages: [
      { role: 'user', text: ofE(7, 'pst0'), stated_tokens: 7 },
      { role: 'assistant', text: ofE(10, 'pst1') },
      { role: 'user', text: ofE(3, 'pst2'), stated_tokens: 5 },
      { role: 'assistant', text: ofE(6, 'pst3'), stated_tokens: -2 },
    ] });
    rep('audit-m12-generic-stated-tokens-partial-coverage',
      'A generic record with valid stated_tokens on two of its four messages (one without, one of -2) and no stated_total prints F-10 ASSESSABLE with those two units and a covered figure over them, the whole-record figure NOT-ASSESSABLE (partial coverage) and a FULL line.',
      {
        body,
        check: (ev, ans) => {
          const f10 = F(ans, 'F-10');
          assert(f10.status === 'ASSESSABLE' && f10.message_count === 4 && f10.covered_message_count === 2 && f10.invalid_entry_count === 0, 'counts');
          assert(deepEqual(unitsOf(ans).map((u) => [u[0], u[1], u[2], u[5]]), [[0, 7, 'est:~7', 'WITHIN'], [2, 5, 'est:~3', 'DISAGREE']]), 'units ' + JSON.stringify(unitsOf(ans)));
          assert(f10.covered.stated === 12 && f10.covered.measured_tokens === 'est:~10' && f10.covered.agreement === 'DISAGREE', 'covered');
          assert(deepEqual(f10.whole_record, { value: 'NOT-ASSESSABLE', reason: 'partial coverage' }) && !isLimited(ans), 'whole NA, FULL');
        },
      });
    pre('precheck-m12-generic-stated-tokens-partial-coverage',
      'The pre-check of a generic record with valid stated_tokens on two of four messages and no stated_total lists only F-11.',
      { body, expectCode: 'precheck', check: expectNA(['F-11']) });
  }
  rep('audit-m12-total-with-partial-per-message',
    'A valid total with per_message figures for two of three messages prints the two units and their covered figure, and the whole-record figure still compares the total with T, schema block included, under a FULL line.',
    {
      body: gen({ messages: genMsgs([['user', ofE(6, 'tpp0')], ['assistant', ofE(3, 'tpp1')], ['user', ofE(8, 'tpp2')]]), tool_schemas: [{ name: 'q', text: ofE(5, 'tpp-s') }] }, { harness_stated_counts: { per_message: [6, null, 9], total: 22 } }),
      check: (ev, ans) => {
        const f10 = F(ans, 'F-10');
        assert(f10.status === 'ASSESSABLE' && f10.covered_message_count === 2 && deepEqual(f10.units.map((u) => [u.message_index, u.stated, u.agreement]), [[0, 6, 'WITHIN'], [2, 9, 'DISAGREE']]), 'units');
        assert(f10.covered.stated === 15 && f10.covered.measured_tokens === 'est:~14', 'covered');
        assert(ans.header_facts.M02.tokens === 'est:~22' && f10.whole_record.stated === 22 && f10.whole_record.measured_tokens === 'est:~22' && f10.whole_record.agreement === 'WITHIN' && f10.whole_record.stated_relative === 'equal' && !isLimited(ans), 'whole compares the total');
      },
    });
  rep('audit-m12-total-only',
    'A stated total alone makes F-10 assessable with no unit, the covered aggregate NOT-ASSESSABLE (no covered message) and the whole-record figure compared with T.',
    {
      body: gen({ messages: genMsgs([['user', ofE(10, 'tot0')], ['assistant', ofE(10, 'tot1')]]) }, { harness_stated_counts: { total: 21 } }),
      check: (ev, ans) => {
        const f10 = F(ans, 'F-10');
        assert(f10.units.length === 0 && deepEqual(f10.covered, { value: 'NOT-ASSESSABLE', reason: 'no covered message' }), 'no unit');
        assert(f10.whole_record.agreement === 'WITHIN' && f10.whole_record.difference_share === 'est:~5.00%' && !isLimited(ans), 'whole');
      },
    });
  rep('audit-m12-per-message-full-coverage-no-total',
    'With every message covered and no total, the whole-record figure compares the sum of stated figures with the sum of the messages\' estimates, which leaves out the schema pseudo-message.',
    {
      body: gen({ messages: genMsgs([['user', ofE(8, 'pm0')], ['assistant', ofE(12, 'pm1')]]), tool_schemas: [{ name: 'k', text: ofE(30, 'pm-schema') }] }, { harness_stated_counts: { per_message: [8, 12] } }),
      check: (ev, ans) => {
        const w = F(ans, 'F-10').whole_record;
        assert(w.stated === 20 && w.measured_tokens === 'est:~20' && w.agreement === 'WITHIN' && w.stated_relative === 'equal', 'sum vs sum');
      },
    });
  {
    const specs = [
      ['user', ofE(20, 'f0'), 21], ['assistant', ofE(20, 'f1'), 19], ['user', ofE(41, 'f2'), 43], ['assistant', ofE(39, 'f3'), 41],
      ['user', ofE(20, 'f4'), 20], ['assistant', '', 0], ['user', '', 3], ['assistant', null, 0], ['user', null, 2],
      ['assistant', ofE(10, 'f9'), 100], ['user', ofE(4, 'f10'), 3],
    ];
    const T0 = sum(specs.map(([, t]) => (t ? Math.ceil(t.length / 4) : 0)));
    rep('audit-m12-agreement-edges',
      'Stated figures at exactly +5 % and -5 % are WITHIN, 4.88 % is WITHIN and 5.13 % DISAGREE, stated equal to a non-zero estimate is WITHIN at 0 %, E = 0 with 0 stated is EXACT, E = 0 with a positive figure DISAGREE with no share, and a null-text message is covered with E = 0.',
      {
        body: gen({ messages: specs.map(([role, text]) => ({ role, text })) }, { harness_stated_counts: { per_message: specs.map((x) => x[2]), total: T0 } }),
        check: (ev, ans) => {
          const u = unitsOf(ans);
          const naz = { value: 'NOT-ASSESSABLE', reason: 'zero denominator' };
          assert(deepEqual(u.map((x) => x[5]), ['WITHIN', 'WITHIN', 'WITHIN', 'DISAGREE', 'WITHIN', 'EXACT', 'DISAGREE', 'EXACT', 'DISAGREE', 'DISAGREE', 'DISAGREE']), 'agreements');
          assert(deepEqual(u.map((x) => x[3]).slice(0, 5), ['est:~5.00%', 'est:~5.00%', 'est:~4.88%', 'est:~5.13%', 'est:~0.00%']) && deepEqual(u[6][3], naz) && u[9][3] === 'est:~900.00%', 'shares');
          assert(deepEqual(u.map((x) => x[4]), ['above', 'below', 'above', 'above', 'equal', 'equal', 'above', 'equal', 'above', 'above', 'below']), 'relative');
          assert(F(ans, 'F-10').whole_record.agreement === 'WITHIN' && F(ans, 'F-10').whole_record.stated === T0, 'whole exact total');
        },
      });
  }
  rep('audit-m12-entries-beyond-message-count-ignored',
    'Entries of per_message beyond the record\'s messages are ignored and counted whatever their value, and are not counted as invalid.',
    {
      body: anth({ messages: [{ role: 'user', content: 'How warm is it?' }, { role: 'assistant', content: 'Four degrees.' }] }, { harness_stated_counts: { per_message: [4, 4, 9, 'x', -1] } }),
      check: (ev, ans) => {
        const f10 = F(ans, 'F-10');
        assert(f10.ignored_entry_count === 3 && f10.invalid_entry_count === 0 && f10.covered_message_count === 2, 'ignored');
      },
    });
  {
    const name = 'audit-m12-invalid-entries-counted';
    const record = { messages: [1, 2, 3, 4, 5, 6, 7].map((k) => ({ role: k % 2 ? 'user' : 'assistant', content: 'message number ' + k })) };
    rep(name,
      'Per-message entries -1, 1.0, 1e2, "3" and a 16-digit integer are invalid: they leave their messages uncovered and are counted, while 7 covers its message and a valid total gives the whole-record figure.',
      {
        body_text: envText('audit', name, [...head('anthropic-messages'), ['record', JSON.stringify(record)], ['harness_stated_counts', '{"per_message": [-1, 1.0, 1e2, "3", 1234567890123456, 7, null], "total": 50}']]),
        check: (ev, ans) => {
          const f10 = F(ans, 'F-10');
          assert(f10.invalid_entry_count === 5 && f10.covered_message_count === 1 && f10.units[0].message_index === 5 && f10.whole_record.stated === 50, 'invalid');
        },
      });
  }
  {
    const name = 'audit-m12-invalid-total-full-coverage';
    const record = { messages: [{ role: 'user', content: 'abc' }, { role: 'assistant', content: '' }, { role: 'user', content: 'Twenty characters!!!' }] };
    rep(name,
      'A present total of -5 is invalid and counted once, the 15-digit figure 999999999999999 is valid, and with every message covered the whole-record figure sums the stated figures.',
      {
        body_text: envText('audit', name, [...head('anthropic-messages'), ['record', JSON.stringify(record)], ['harness_stated_counts', '{"total": -5, "per_message": [999999999999999, 0, 5]}']]),
        check: (ev, ans) => {
          const f10 = F(ans, 'F-10');
          assert(f10.invalid_entry_count === 1 && f10.whole_record.stated === 1000000000000004 && f10.units[0].difference_share === 'est:~99999999999999800.00%', 'huge ' + f10.units[0].difference_share);
        },
      });
  }
  rep('audit-m12-generic-stated-tokens-full',
    'Valid stated_tokens on every message of a generic record are stated counts: each message is a unit and the whole-record figure sums them.',
    {
      body: gen({ messages: [{ role: 'user', text: ofE(6, 'st0'), stated_tokens: 6 }, { role: 'assistant', text: ofE(9, 'st1'), stated_tokens: 12 }, { role: 'user', text: null, stated_tokens: 0 }] }),
      check: (ev, ans) => {
        const u = unitsOf(ans);
        assert(deepEqual(u.map((x) => x[5]), ['WITHIN', 'DISAGREE', 'EXACT']) && F(ans, 'F-10').whole_record.stated === 18 && F(ans, 'F-10').whole_record.agreement === 'DISAGREE', 'stated_tokens');
      },
    });
  rep('audit-m12-generic-stated-total-only',
    'A generic stated_total alone is a stated count compared with T, with no covered message.',
    {
      body: gen({ messages: genMsgs([['user', ofE(3, 'gt0')], ['assistant', ofE(5, 'gt1')]]), tool_schemas: [{ text: ofE(2, 'gt-s') }], stated_total: 10 }),
      check: (ev, ans) => assert(F(ans, 'F-10').whole_record.stated === 10 && F(ans, 'F-10').whole_record.measured_tokens === 'est:~10' && F(ans, 'F-10').units.length === 0, 'stated_total'),
    });
  rep('audit-m12-envelope-figures-win',
    'The envelope\'s total wins over a generic stated_total and a valid per_message entry wins over stated_tokens, while an invalid entry falls back to the message\'s stated_tokens.',
    {
      body: gen({ messages: [{ role: 'user', text: ofE(5, 'ew0'), stated_tokens: 7 }, { role: 'assistant', text: ofE(8, 'ew1'), stated_tokens: 8 }], stated_total: 999 }, { harness_stated_counts: { per_message: [3, -1], total: 13 } }),
      check: (ev, ans) => {
        const f10 = F(ans, 'F-10');
        assert(deepEqual(f10.units.map((x) => x.stated), [3, 8]) && f10.invalid_entry_count === 1 && f10.whole_record.stated === 13 && f10.whole_record.agreement === 'WITHIN', 'precedence');
      },
    });
  rep('audit-m12-generic-stated-tokens-carried-invalid',
    'Generic stated_tokens of -1 and of a 16-digit integer are carried (JSON integers) but not valid, so their messages are uncovered, while a valid stated_total keeps F-10 assessable.',
    {
      body: gen({ messages: [{ role: 'user', text: ofE(2, 'ci0'), stated_tokens: -1 }, { role: 'assistant', text: ofE(3, 'ci1'), stated_tokens: 1234567890123456 }, { role: 'user', text: ofE(1, 'ci2'), stated_tokens: 1 }], stated_total: 6 }),
      check: (ev, ans) => {
        const f10 = F(ans, 'F-10');
        assert(f10.covered_message_count === 1 && f10.invalid_entry_count === 0 && f10.whole_record.agreement === 'WITHIN' && f10.whole_record.stated_relative === 'equal', 'carried');
      },
    });
  for (const [name, route, member, raw, what] of [
    ['audit-generic-stated-tokens-fraction-refused', 'audit', 'stated_tokens', '1.0', 'a stated_tokens written 1.0'],
    ['precheck-generic-stated-tokens-exponent-refused', 'precheck', 'stated_tokens', '1e2', 'a stated_tokens written 1e2'],
    ['audit-generic-stated-total-string-refused', 'audit', 'stated_total', '"12"', 'a stated_total that is the string "12"'],
    ['audit-generic-stated-total-beyond-int64-refused', 'audit', 'stated_total', '9223372036854775808', 'a stated_total one above the int64 maximum'],
  ]) {
    const rec = member === 'stated_tokens'
      ? `{"messages":[{"role":"user","text":"hello there","stated_tokens":${raw}}]}`
      : `{"messages":[{"role":"user","text":"hello there"}],"stated_total":${raw}}`;
    addCase(route, name, `A generic record with ${what} is refused record_does_not_parse_as_declared_format (a carried integer has no fraction, no exponent and fits int64).`,
      { body_text: envText(route, name, [...head('generic-message-list'), ['record', rec]]), expectCode: 'record_does_not_parse_as_declared_format' });
  }
  {
    const name = 'precheck-generic-stated-total-int64-max-not-valid';
    pre(name,
      'A generic stated_total of 9223372036854775807 is carried (it fits int64) but is not a valid figure (over 15 digits), so F-10 is listed as no stated counts.',
      { body_text: envText('precheck', name, [...head('generic-message-list'), ['record', '{"messages":[{"role":"user","text":"hello there"}],"stated_total":9223372036854775807}']]), expectCode: 'precheck', check: expectNA(['F-10:no stated counts', 'F-11']) });
  }
  {
    const name = 'precheck-stated-invalid-entries-only';
    pre(name,
      'Per-message entries -1, 1.0 and "3" and a total written 1e2 are numbers or values but no valid figure, so the pre-check lists F-10 as no stated counts.',
      {
        body_text: envText('precheck', name, [...head('anthropic-messages'), ['record', '{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}'], ['harness_stated_counts', '{"per_message":[-1,1.0,"3"],"total":1e2}']]),
        expectCode: 'precheck',
        check: expectNA(['F-10:no stated counts', 'F-11']),
      });
  }
  pre('precheck-generic-stated-total-covers',
    'A generic stated_total alone is a valid total, so the pre-check lists only F-11.',
    { body: gen({ messages: genMsgs([['user', 'a'], ['assistant', 'b']]), stated_total: 2 }), expectCode: 'precheck', check: expectNA(['F-11']) });
  pre('precheck-generic-stated-tokens-negative-partial',
    'A generic record whose second message carries stated_tokens -1 has one covered message of two and no total, so F-10 is assessable at partial coverage and the pre-check lists only F-11.',
    { body: gen({ messages: [{ role: 'user', text: 'a', stated_tokens: 1 }, { role: 'assistant', text: 'b', stated_tokens: -1 }] }), expectCode: 'precheck', check: expectNA(['F-11']) });

  // ------------------------------------------------------------ M14 (F-9), M15 (F-12)

  rep('audit-m14-offsets-include-schema-blocks',
    'Offsets of P-SYS and P-CMPT blocks sum the estimates of every earlier block including the schema blocks placed first, and depths are those offsets over T.',
    {
      body: gen({
        messages: genMsgs([['system', ofE(10, 'of2')], ['user', ofE(3, 'of3')], ['system', ofE(4, 'of4'), { kind: 'summary' }], ['assistant', ofE(2, 'of5')], ['system', ofE(6, 'of6')]]),
        tool_schemas: [{ name: 'a', text: ofE(5, 'of0') }, { name: 'b', text: ofE(7, 'of1') }],
      }),
      check: (ev, ans) => {
        const b = F(ans, 'F-9').blocks.map((x) => [x.block_index, x.class, x.offset_tokens, x.depth]);
        assert(deepEqual(b, [[2, 'P-SYS', 'est:~12', 'est:~32.43%'], [4, 'P-CMPT', 'est:~25', 'est:~67.57%'], [6, 'P-SYS', 'est:~31', 'est:~83.78%']]), 'offsets ' + JSON.stringify(b));
        assert(F(ans, 'F-9').cmpt_note === undefined, 'no L0 note at L2');
      },
    });
  rep('audit-m15-tie-lowest-block-index',
    'Two blocks share the largest estimate and F-12 names the lower block index with its message index and both classes.',
    {
      body: anth({ messages: [{ role: 'user', content: ofE(5, 'm15a') }, { role: 'assistant', content: [{ type: 'text', text: ofE(2, 'm15b') }, { type: 'text', text: '{"k": "' + 'v'.repeat(27) + '"}' }] }, { role: 'user', content: ofE(9, 'm15c') }] }),
      check: (ev, ans) => {
        const f = F(ans, 'F-12');
        assert(f.block_index === 2 && f.message_index === 1 && f.c_class === 'C-STRUCT' && f.p_class === 'P-ASST' && f.tokens === 'est:~9', 'tie');
      },
    });

  // ------------------------------------------------------------ top-level members, lines

  rep('audit-report-unknown-members-and-version',
    'A report counts unknown top-level members (two extra members and a non-string criteria_ack) and reports version_supplied for a string declared_format_version.',
    {
      body: { envelope_version: ENVELOPE, declared_format_id: 'anthropic-messages', declared_format_version: '2023-06-01', criteria_ack: 5, record: { messages: [{ role: 'user', content: 'hi' }] }, note: 'never echoed', extra: [1] },
      check: (ev, ans) => assert(ans.unknown_top_level_members === 3 && ans.declared_format.version_supplied === true, 'unknown'),
    });
  {
    const record = cur({
      tool_ids: ['t1'],
      in_context_message_ids: ['f0', 'f1', 'f2', 'f3'],
      messages: [
        msg('f0', 'system', [textPart('You are a courteous order assistant.')]),
        msg('f1', 'user', [textPart(packed({ type: 'user_message', message: 'Status of order 9?', time: '2026-04-01 08:00:00 AM UTC+0000' }))]),
        msg('f2', 'assistant', [textPart('Looking it up.')], { tool_calls: [callOf('c-f', 'lookup_order', '{"order_id": "9"}')] }),
        msg('f3', 'tool', [textPart('{"status": "packed"}')], { tool_call_id: 'c-f', tool_returns: [{ tool_call_id: 'c-f', status: 'success', func_response: '{"status": "packed"}' }] }),
      ],
    }, [{ id: 't1', name: 'lookup_order', json_schema: schemaA }]);
    rep('audit-letta-full-line-with-stated-counts',
      'A letta-af record with a user turn, a tool return counted once and per-message figures for every measured message has every factor but F-11 assessable and a FULL line.',
      {
        body: letta(record, { harness_stated_counts: { per_message: [9, 20, 10, 5] } }),
        check: (ev, ans) => {
          assert(!isLimited(ans) && ans.header_facts.M01.block_count === 6 && F(ans, 'F-10').covered_message_count === 4, 'FULL');
        },
      });
  }
  rep('audit-generic-l2-full-line',
    'A generic L2 record with a tool schema, a user turn and stated_tokens on every message has a FULL line and P-TRES as its tool-result class.',
    {
      body: gen({
        messages: [{ role: 'user', text: 'Convert 5 km to miles.', stated_tokens: 6 }, { role: 'assistant', kind: 'tool_call', text: '{"km":5}', stated_tokens: 2 }, { role: 'tool', kind: 'tool_result', text: '3.11', stated_tokens: 1 }, { role: 'assistant', text: 'About 3.11 miles.', stated_tokens: 5 }],
        tool_schemas: [{ name: 'convert', text: '{"name":"convert","parameters":{"km":"number"}}' }],
      }),
      check: (ev, ans) => assert(!isLimited(ans) && rowOf(F(ans, 'F-1'), 'P-TRES').block_count === 1, 'FULL L2'),
    });
  aud('audit-generic-nothing-assessable-empty-texts',
    'On the paid route a generic record whose every text is empty has T = 0 and still answers 422 nothing_assessable, unpaid.',
    { body: gen({ messages: genMsgs([['user', ''], ['assistant', '']]) }), expectCode: 'nothing_assessable' });
  aud('audit-letta-api-view-nothing-assessable',
    'A letta-af record whose only message is hidden reasoning in the API view has no textual payload and answers 422 nothing_assessable.',
    { body: letta(cur({ in_context_message_ids: ['h0'], messages: [{ id: 'h0', message_type: 'hidden_reasoning_message', state: 'omitted' }] }, [])), expectCode: 'nothing_assessable' });
  // ------------------------------------------------------------ M13, adapters in a report

  rep('audit-m13-unknown-census-overlap',
    'A block that is both P-UNK and C-UNK is counted once among the blocks unknown on either axis, whose tokens sum only the sized ones, and the line prints that count.',
    {
      body: gen({ messages: genMsgs([['user', 'Start.'], ['', ofE(3, 'unk0')], ['', null], ['assistant', null], ['assistant', 'Done.']]) }),
      check: (ev, ans) => {
        const m13 = ans.header_facts.M13;
        assert(m13.p_unk.block_count === 2 && m13.c_unk.block_count === 2 && m13.either.block_count === 3 && m13.either.tokens === 'est:~3', 'overlap');
        assert(ans.measurement_line.includes(' \u00b7 unknown blocks: 3 \u00b7 '), 'line');
      },
    });
  {
    const record = {
      system: [{ type: 'text', text: 'You are a research assistant.' }],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Kettles boil water.\nMost draw 2 kW.' } },
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQK' } },
            { type: 'search_result', source: 'https://example.invalid/wiki', title: 'Kettle', content: [{ type: 'text', text: 'A kettle boils water.' }] },
            { type: 'text', text: 'Summarise these.' },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Two sources; one is a PDF I cannot read.', signature: 's' },
            { type: 'redacted_thinking', data: 'EmwKAhgB' },
            { type: 'server_tool_use', id: 'srv_1', name: 'web_search', input: { query: 'kettle power', max_uses: 1 } },
            { type: 'web_search_tool_result', tool_use_id: 'srv_1', content: [{ type: 'web_search_result', url: 'https://example.invalid/p', title: 'Power', encrypted_content: 'Eq', page_age: null }] },
            { type: 'tool_use', id: 'tu_1', name: 'calc', input: { z: [1, 2.5], a: 'caf\u00e9' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: [{ type: 'text', text: '3.5' }, { type: 'image', source: { type: 'url', url: 'https://example.invalid/c.png' } }] }, { type: 'tool_result', tool_use_id: 'tu_2' }] },
        { role: 'assistant', content: 'Kettles draw about 2 kW.' },
      ],
    };
    rep('audit-anthropic-block-types',
      'An anthropic record with a system list, text and base64 documents, a search_result, thinking and redacted thinking, server and client tool use (RFC 8785 inputs), a web search result and list and empty tool_result contents is measured block by block at L0.',
      {
        body: anth(record),
        check: (ev, ans) => {
          assert(ans.header_facts.M01.block_count === 1 + 4 + 5 + 3 + 1 && ans.header_facts.M02.unsized_block_count === 4, 'blocks');
          assert(ev.blocks.find((b) => b.kind_raw === 'tool_use').text === '{"a":"caf\u00e9","z":[1,2.5]}', 'JCS');
        },
      });
  }
  // ============================================================ ANNEX C-14 decisions
  //
  // One or more cases per C-14 bullet, on the paid route and on the pre-check
  // where the pre-check shows the rule.

  // ---- the old shape's system prompt (C-14, C-8)
  {
    const om = (role, content, createdAt, inContext, extra = {}) => ({
      created_at: createdAt, in_context: inContext, role, name: null,
      content, tool_call_id: null, tool_calls: [], tool_returns: [], ...extra,
    });
    const alert = packed({ type: 'system_alert', message: 'Memory pressure: three older messages were trimmed from the buffer.', time: '2025-05-01 03:09:30 AM UTC+0000' });
    const prompt = 'You are MemGPT.\n<memory_blocks>persona: patient and precise</memory_blocks>';
    const record = {
      agent_type: 'memgpt_agent', name: 'synthetic-two-systems', version: '0.6.43',
      messages: [
        om('system', [textPart('Plain system note added after the prompt.')], '2025-05-01T03:20:00Z', true),
        om('system', [textPart(alert)], '2025-05-01T03:09:30Z', true),
        om('user', [textPart(packed({ type: 'user_message', message: 'Hello again.', time: '2025-05-01 03:10:00 AM UTC+0000' }))], '2025-05-01T03:10:00Z', true),
        om('system', [textPart('You are MemGPT (a stale prompt).')], '2025-05-01T02:00:00Z', false),
        om('system', [textPart(prompt)], '2025-05-01T03:13:44.000000+00:00', true),
        om('assistant', [textPart('Replying to the user.')], '2025-05-01T03:14:00Z', true, { tool_calls: [callOf('k-7', 'send_message', '{\n  "message": "Hello!"\n}')] }),
        om('tool', [textPart(packed({ status: 'OK', message: 'None', time: '2025-05-01 03:14:01 AM UTC+0000' }))], '2025-05-01T03:14:01Z', true, { name: 'send_message', tool_call_id: 'k-7' }),
        om('system', [textPart('A second system text created at the same instant as the prompt.')], '2025-05-01T05:13:44+02:00', true),
      ],
      tools: [{ name: 'send_message', json_schema: schemaB, source_code: null, tool_type: 'letta_core' }],
    };
    rep('audit-letta-old-shape-two-system-messages-prompt-first',
      'In an older-shape file the prompt is the first in-context system-role message in created_at order whose first text is not packed (ties by file position): it moves first, while a packed system_alert created earlier, a same-instant system text later in the file and a later plain system note keep their created_at places.',
      {
        body: letta(record, { declared_format_version: '0.6.43' }),
        check: (ev, ans) => {
          const texts = ev.rec.messages.filter((m) => !m.schema).map((m) => m.blocks[0].text);
          const want = [4, 1, 2, 7, 5, 6, 0].map((k) => record.messages[k].content[0].text);
          assert(deepEqual(texts, want), 'order');
          assert(ans.messages_left_out_count === 1 && deepEqual(ans.declared_format, { id: 'letta-af', level: 'L2', version_supplied: true }), 'left out, declared format');
          const f9 = F(ans, 'F-9').blocks;
          assert(deepEqual(f9.map((b) => b.block_index), [1, 2, 4, 8]) && f9[0].offset_tokens === est(ev.sizes[0].E), 'P-SYS blocks, the prompt after the schema block');
          assert(deepEqual(F(ans, 'F-1').conflicts.map((c) => c.winner + '>' + c.losers.join('+')), ['P-TCALL>P-ASST']), 'only the tool call conflicts');
        },
      });
  }

  // ---- a current-shape agent with no selection (C-14)
  {
    const record = cur({
      tool_ids: ['t1'],
      messages: [
        msg('n-user', 'user', [textPart(packed({ type: 'user_message', message: 'What is the status of order 12?', time: '2026-05-01 10:00:05 AM UTC+0000' }))], { created_at: '2026-05-01T10:00:05Z' }),
        msg('n-sys', 'system', [textPart('You are a support agent for a kettle shop.')], { created_at: '2026-05-01T10:00:00Z' }),
        msg('n-call', 'assistant', [textPart('Let me check.')], { created_at: '2026-05-01T10:00:06Z', tool_calls: [callOf('c-12', 'lookup_order', '{"order_id": "12"}')] }),
        msg('n-stale', 'system', [textPart('An older prompt, still measured since nothing selects.')], { created_at: '2026-04-01T09:00:00Z' }),
        msg('n-ret', 'tool', [textPart('{"status": "shipped"}')], { created_at: '2026-05-01T10:00:07Z', tool_call_id: 'c-12', tool_returns: [{ tool_call_id: 'c-12', status: 'success', func_response: '{"status": "shipped"}' }] }),
      ],
    }, [{ id: 't1', name: 'lookup_order', json_schema: schemaA }]);
    rep('audit-letta-current-shape-no-selection-file-order',
      'A current-shape agent with neither in_context_message_ids nor in_context flags is measured whole in file order, its system messages staying where the file puts them, with no message left out.',
      {
        body: letta(record),
        check: (ev, ans) => {
          assert(deepEqual(ev.rec.messages.filter((m) => !m.schema).map((m) => m.role_raw), ['user', 'system', 'assistant', 'system', 'tool']), 'file order');
          assert(ans.messages_left_out_count === 0 && ans.header_facts.M01.message_count === 5 && ans.header_facts.M01.block_count === 1 + 6, 'whole');
          assert(deepEqual(F(ans, 'F-9').blocks.map((b) => b.block_index), [2, 5]) && deepEqual(F(ans, 'F-5').turns.map((t) => t.turn), [1]), 'positions, no turn 0');
        },
      });
  }

  // ---- API view: string content, packed texts, unknown types without content (C-14)
  {
    const record = cur({
      in_context_message_ids: ['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6'],
      messages: [
        { id: 'a0', message_type: 'system_message', content: 'You are a reminders assistant.' },
        { id: 'a1', message_type: 'user_message', content: packed({ type: 'user_message', message: 'Remind me at 5 pm.', time: '2026-06-01 09:00:00 AM UTC+0000' }) },
        { id: 'a2', message_type: 'user_message', content: packed({ type: 'heartbeat', reason: '[This is an automated system message hidden from the user] Function called using request_heartbeat=true, returning control', time: '2026-06-01 09:00:02 AM UTC+0000' }) },
        { id: 'a3', message_type: 'assistant_message', content: 'Reminder set for 5 pm.' },
        { id: 'a4', message_type: 'notice_message', content: packed({ type: 'system_alert', message: 'The reminder service restarted.', time: '2026-06-01 09:00:03 AM UTC+0000' }) },
        { id: 'a5', message_type: 'relay_message', content: packed({ type: 'user_message', message: 'Relayed: also remind me at 6 pm.', time: '2026-06-01 09:00:04 AM UTC+0000' }) },
        { id: 'a6', message_type: 'user_message', content: packed({ type: 'login', last_login: '2026-05-31 08:00:00 PM UTC+0000', time: '2026-06-01 09:00:05 AM UTC+0000' }) },
      ],
    }, []);
    rep('audit-letta-api-view-string-content-packed',
      'In the API view a string content is one text block whose packed type becomes its kind_raw: a packed user_message under user_message is P-USER, packed heartbeat and login texts are P-SYS over P-USER, a packed system_alert under an unknown type is P-SYS, and a packed user_message under an unknown type is P-OTHER with both raw values.',
      {
        body: letta(record),
        check: (ev, ans) => {
          assert(deepEqual(ev.blocks.map((b) => b.kind_raw), [undefined, 'user_message', 'heartbeat', undefined, 'system_alert', 'user_message', 'login']), 'kinds');
          const f1 = F(ans, 'F-1');
          assert(deepEqual(f1.conflicts.map((c) => c.block_index + ':' + c.winner + '>' + c.losers.join('+')), ['2:P-SYS>P-USER', '6:P-SYS>P-USER']), 'conflicts');
          assert(deepEqual(rowOf(f1, 'P-OTHER').raw_values, ['relay_message', 'user_message']) && rowOf(f1, 'P-SYS').block_count === 4 && rowOf(f1, 'P-USER').block_count === 1, 'classes');
          assert(deepEqual(F(ans, 'F-5').turns.map((t) => [t.turn, t.first_message_index, t.message_count]), [[0, 0, 1], [1, 1, 6]]) && F(ans, 'F-5').turn_count === 2, 'turns');
        },
      });
  }
  {
    const record = cur({
      in_context_message_ids: ['u0', 'u1', 'u2', 'u3', 'u4', 'u5'],
      messages: [
        { id: 'u0', message_type: 'system_message', content: 'You are a day planner.' },
        { id: 'u1', message_type: 'stop_reason', stop_reason: 'end_turn' },
        { id: 'u2', message_type: 'user_message', content: 'Plan my Saturday, please.' },
        { id: 'u3', message_type: 'usage_statistics', content: null, total_tokens: 812 },
        { id: 'u4', message_type: 'assistant_message', content: [textPart('Morning: market. Afternoon: hike. Evening: rest.')] },
        { id: 'u5', message_type: 'ping_message', content: [] },
      ],
    }, []);
    rep('audit-letta-api-view-unknown-type-no-content',
      'API-view messages of unknown types without string or part content (absent, null or an empty list) are messages with no blocks: counted in message_count and per_message indexing, unsized in F-3, in their turns with estimate 0, and covered by per_message entries with E = 0.',
      {
        body: letta(record, { harness_stated_counts: { per_message: [6, 0, 7, 2, 12, 0] } }),
        check: (ev, ans) => {
          const m01 = ans.header_facts.M01;
          assert(m01.message_count === 6 && m01.block_count === 3 && ans.header_facts.M02.unsized_block_count === 0, 'blockless messages counted');
          assert(F(ans, 'F-3').excluded.unsized_message_count === 3 && F(ans, 'F-3').message_count === 3, 'unsized');
          assert(deepEqual(F(ans, 'F-5').turns.map((t) => [t.turn, t.first_message_index, t.message_count]), [[0, 0, 2], [1, 2, 4]]), 'turns');
          const u = F(ans, 'F-10').units;
          assert(u.length === 6 && u[1].agreement === 'EXACT' && u[3].agreement === 'DISAGREE' && deepEqual(u[3].difference_share, { value: 'NOT-ASSESSABLE', reason: 'zero denominator' }) && u[5].agreement === 'EXACT', 'coverage');
          assert(!isLimited(ans), 'FULL');
        },
      });
    const only = cur({ in_context_message_ids: ['z0', 'z1'], messages: [{ id: 'z0', message_type: 'stop_reason', stop_reason: 'end_turn' }, { id: 'z1', message_type: 'ping_message', content: [] }] }, []);
    pre('precheck-letta-api-view-blockless-only-zero-entries',
      'A letta-af record whose only messages are unknown API-view types without content has two messages but no block, disclosed as zero_entries with F-3 and F-5 listed, entry_count 0, a zero total and a zero-denominator headline.',
      { body: letta(only), expectCode: 'zero_entries', check: both(expectNA(['F-3', 'F-5', 'F-10:no stated counts', 'F-11']), expectFigures(0, 0, 'est:~0', 'ZERO', 'zero_entries')) });
    aud('audit-letta-api-view-blockless-only-zero-entries',
      'On the paid route a letta-af record of blockless API-view messages answers 422 zero_entries, unpaid.',
      { body: letta(only), expectCode: 'zero_entries' });
  }

  // ---- messages with no blocks (C-14)
  rep('audit-anthropic-empty-content-message',
    'Anthropic messages with content [] have no blocks: a first user-role one is not P-USER and forms turn 0, a later one joins its turn with estimate 0, both are unsized in F-3 and both are covered by their per_message entries with E = 0.',
    {
      body: anth({
        messages: [
          { role: 'user', content: [] },
          { role: 'assistant', content: 'Ready when you are.' },
          { role: 'user', content: 'Summarise the quarterly report.' },
          { role: 'assistant', content: [] },
          { role: 'user', content: [{ type: 'text', text: 'Shorter, please.' }] },
          { role: 'assistant', content: 'Revenue rose.' },
        ],
      }, { harness_stated_counts: { per_message: [0, 5, 8, 3, 4, 4] } }),
      check: (ev, ans) => {
        assert(ans.header_facts.M01.message_count === 6 && ans.header_facts.M01.block_count === 4, 'M01');
        assert(F(ans, 'F-3').excluded.unsized_message_count === 2 && F(ans, 'F-3').message_count === 4, 'F-3');
        const f5 = F(ans, 'F-5');
        assert(f5.turn_count === 3 && deepEqual(f5.turns.map((t) => [t.turn, t.first_message_index, t.message_count]), [[0, 0, 2], [1, 2, 2], [2, 4, 2]]), 'turns');
        const u = F(ans, 'F-10').units;
        assert(u.length === 6 && u[0].agreement === 'EXACT' && u[3].agreement === 'DISAGREE' && u[3].measured_tokens === 'est:~0', 'units');
        assert(F(ans, 'F-7').blocks_with_segments.length === 0 && F(ans, 'F-7').standard_segment_count === 0, 'word runs are no qualifying segments');
      },
    });
  pre('precheck-anthropic-blockless-user-message-not-p-user',
    'A user message with content [] has no first block and so is not P-USER, so a record whose only user message is empty lists F-5.',
    {
      body: anth({ system: 'Be brief.', messages: [{ role: 'user', content: [] }, { role: 'assistant', content: 'Hello.' }] }),
      expectCode: 'precheck',
      check: (ev, ans) => { assert(ans.entry_count === 2, 'two entries'); expectNA(['F-5', 'F-10:no stated counts', 'F-11'])(ev, ans); },
    });

  // ---- P-OTHER raw values distinct as printed (C-14)
  {
    const base = 'critic-'.padEnd(64, 'q');
    const v65 = base + 'A';
    const v66 = base + 'BB';
    const vEll = base + '\u2026';
    assert(codePoints(base) === 64 && codePoints(v65) === 65 && codePoints(vEll) === 65, 'raw lengths');
    rep('audit-generic-p-other-capped-duplicates',
      'P-OTHER raw values are listed once per distinct printed value: values of 65 and 66 code points sharing their first 64, and one ending in the ellipsis itself, print once as the capped form, while the 64-code-point prefix alone prints whole as a separate value.',
      {
        body: gen({
          messages: genMsgs([
            ['user', 'Question one.'],
            [v65, 'First remark.', { kind: 'note' }],
            [v66, 'Second remark.', { kind: base }],
            [vEll, 'Third remark.', { kind: 'note' }],
            ['observer', 'Fourth remark.', { kind: v65 }],
          ]),
        }),
        check: (ev, ans) => {
          const raw = rowOf(F(ans, 'F-1'), 'P-OTHER').raw_values;
          assert(deepEqual(raw, [base + '\u2026', 'note', base, 'observer']), 'raw ' + JSON.stringify(raw));
        },
      });
  }

  // ---- C-CODE's indentation test on the untrimmed text (C-14)
  rep('audit-generic-c-code-untrimmed-indent',
    'The C-CODE indentation test reads the lines as submitted, so a leading four-space indent counts even where trimming would remove it, and an indented JSON object is C-STRUCT with an axis-C conflict.',
    {
      body: gen({
        messages: genMsgs([
          ['user', '    x = 1\ny = 2'],
          ['user', '\n\n    total = a + b\nprint(total)\n'],
          ['user', '\tstep one\nstep two\nstep three'],
          ['user', '    only line'],
          ['assistant', '    {"a": 1}'],
          ['assistant', 'Plain reply.'],
        ]),
      }),
      check: (ev, ans) => {
        assert(deepEqual(ev.blocks.map((b) => classifyC(b.text)), ['C-CODE', 'C-CODE', 'C-TEXT', 'C-CODE', 'C-STRUCT', 'C-TEXT']), 'classes');
        assert(ans.header_facts.M01.axis_c_conflict_count === 1 && rowOf(F(ans, 'F-2'), 'C-CODE').block_count === 3, 'conflict');
      },
    });

  // ---- M09 per-code-point lowercasing, final sigma (C-14)
  {
    const caps = '\u039f \u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3 \u0393\u03a5\u03a1\u0399\u03a3\u0395 \u03a3\u03a4\u039f \u03a3\u03a0\u0399\u03a4\u0399 \u03a4\u039f\u03a5';
    const perCp = lowerSimple(caps);
    const whole = caps.toLowerCase();
    assert(perCp !== whole && perCp.includes('\u03c3 ') && whole.includes('\u03c2 '), 'final sigma differs');
    rep('audit-m09-final-sigma',
      'M09 lowercases code point by code point, so a capital Σ ending a word becomes σ: the capitals pair with the σ spelling and not with the ς spelling a whole-string lowercase would give.',
      {
        body: gen({ messages: genMsgs([['user', caps], ['assistant', perCp], ['user', whole], ['assistant', 'Welcome home.']]) }),
        check: (ev, ans) => assert(deepEqual(F(ans, 'F-6').pairs, [[0, 1]]) && F(ans, 'F-4').group_count === 0, 'pairs ' + JSON.stringify(F(ans, 'F-6').pairs)),
      });
  }

  // ---- stated figures that state nothing (C-14)
  {
    const two = { messages: [{ role: 'user', content: 'How warm is it?' }, { role: 'assistant', content: 'Four degrees.' }] };
    pre('precheck-stated-only-beyond-range',
      'Valid per_message entries that all lie at or beyond the message count state nothing, so the pre-check lists F-10 as no stated counts.',
      { body: anth(two, { harness_stated_counts: { per_message: [null, null, 5, 7] } }), expectCode: 'precheck', check: expectNA(['F-10:no stated counts', 'F-11']) });
    rep('audit-m12-only-beyond-range-no-stated-counts',
      'A report whose only valid per_message entries lie beyond its messages prints F-10 NOT-ASSESSABLE (no stated counts) and a LIMITED line.',
      {
        body: anth(two, { harness_stated_counts: { per_message: [null, null, 5, 7] } }),
        check: (ev, ans) => assert(deepEqual(F(ans, 'F-10'), { id: 'F-10', metric: 'M12', status: 'NOT-ASSESSABLE', reason: 'no stated counts', label: 'NO-STATED-COUNT' }) && isLimited(ans), 'no stated counts'),
      });
  }
  {
    const name = 'audit-m12-generic-stated-total-out-of-range-not-invalid';
    const rec = JSON.stringify({
      messages: [
        { role: 'user', text: ofE(6, 'oor0'), stated_tokens: 6 },
        { role: 'assistant', text: ofE(3, 'oor1'), stated_tokens: 999999999999999 },
        { role: 'user', text: ofE(2, 'oor2'), stated_tokens: 2 },
        { role: 'assistant', text: ofE(5, 'oor3'), stated_tokens: -4 },
      ],
    }).slice(0, -1) + ',"stated_total":1000000000000000}';
    rep(name,
      'A generic stated_total of 16 digits and a stated_tokens of -4 state nothing and are not counted as invalid, so with every message covered the whole record sums the stated figures, and a 15-digit figure against E = 3 prints its share exactly.',
      {
        body_text: envText('audit', name, [...head('generic-message-list'), ['record', rec], ['harness_stated_counts', '{"per_message":[null,null,null,5]}']]),
        check: (ev, ans) => {
          const f10 = F(ans, 'F-10');
          assert(f10.invalid_entry_count === 0 && f10.ignored_entry_count === 0 && f10.covered_message_count === 4, 'counts');
          assert(deepEqual(f10.units.map((u) => u.stated), [6, 999999999999999, 2, 5]) && f10.units[1].difference_share === 'est:~33333333333333200.00%', 'units ' + f10.units[1].difference_share);
          assert(f10.whole_record.stated === 1000000000000012 && f10.whole_record.measured_tokens === 'est:~16', 'whole sums');
        },
      });
  }
  {
    const body = gen({ messages: genMsgs([['user', ofE(4, 'iet0')], ['assistant', ofE(6, 'iet1')]]), stated_total: 10 }, { harness_stated_counts: { total: -10, per_message: [4] } });
    pre('precheck-stated-invalid-envelope-total-generic-total',
      'An invalid envelope total states nothing, so a valid generic stated_total is the total and a per_message list covering one of two messages is not partial coverage.',
      { body, expectCode: 'precheck', check: expectNA(['F-11']) });
    rep('audit-m12-invalid-envelope-total-generic-total-used',
      'An invalid envelope total is counted as invalid and states nothing, so the valid generic stated_total is the whole-record figure compared with T.',
      {
        body,
        check: (ev, ans) => {
          const f10 = F(ans, 'F-10');
          assert(f10.invalid_entry_count === 1 && f10.covered_message_count === 1 && f10.whole_record.stated === 10 && f10.whole_record.agreement === 'WITHIN' && f10.whole_record.stated_relative === 'equal', 'generic total');
          assert(!isLimited(ans), 'FULL');
        },
      });
  }
  pre('precheck-generic-stated-tokens-out-of-range-no-stated-counts',
    'Generic stated_tokens of -1 and of 16 digits are carried JSON integers outside 0 to 999999999999999, so they state nothing and F-10 is listed as no stated counts.',
    { body: gen({ messages: [{ role: 'user', text: 'a', stated_tokens: -1 }, { role: 'assistant', text: 'b', stated_tokens: 1000000000000000 }] }), expectCode: 'precheck', check: expectNA(['F-10:no stated counts', 'F-11']) });

  // ============================================================ ANNEX C-16 lenient shapes
  //
  // At least one case per C-16 bullet (the ANNEX's example where it gives
  // one), on the paid route where the report shows the blocks' effects and on
  // the pre-check where that is enough.

  // ---- generic-message-list: a tool_schemas entry without text (C-16)
  pre('precheck-generic-tool-schema-without-text-annex-example',
    'The ANNEX C-16 example: a generic tool_schemas entry without text is one non-serialisable tool_definition entry, so the record measures 2 entries at level L2 instead of being refused.',
    {
      body: gen({ messages: [{ role: 'user', text: 'hi' }], tool_schemas: [{ name: 't' }] }),
      expectCode: 'precheck',
      check: both(
        (ev, ans) => {
          assert(ans.declared_format.level === 'L2', 'L2 by tool_schemas');
          const b = ev.blocks[0];
          assert(b.schema && b.kind_raw === 'tool_definition' && b.name === 't' && b.text === null && classifyC(b.text) === 'C-UNK', 'schema block non-serialisable');
        },
        // "hi": 2 bytes, E 1; the schema block adds nothing; no tool result: 0 of 1.
        expectFigures(2, 2, 'est:~1', 'est:~0.00%', null),
        expectNA(['F-10:no stated counts', 'F-11'])),
    });
  {
    const schemaText = '{"name":"book","parameters":{"type":"object"}}';
    assert(codePoints(schemaText) === 46, 'schema text 46 code points, E 12');
    rep('audit-generic-tool-schemas-text-absent-or-null',
      'Generic tool_schemas entries whose text is absent or null are schema entries with no size: the report counts 3 schema blocks, 2 of them unsized and C-UNK, and F-8 counts 3 tool definitions whose tokens are the one sized schema\'s.',
      {
        body: gen({
          messages: [
            { role: 'user', text: 'Book a table for two at eight.' },
            { role: 'assistant', kind: 'tool_call', name: 'book', has_args: true, text: '{"party":2,"time":"20:00"}' },
            { role: 'tool', kind: 'tool_result', name: 'book', text: 'confirmed' },
          ],
          tool_schemas: [{ name: 'book', text: schemaText }, { name: 'cancel' }, { name: 'lookup', text: null }],
        }),
        check: (ev, ans) => {
          // E: schema 12, user 30 cp -> 8, call 26 cp -> 7, result 9 cp -> 3; T = 30.
          const M = ans.header_facts;
          assert(M.M01.block_count === 6 && M.M01.schema_block_count === 3 && M.M01.message_count === 3, 'M01');
          assert(M.M02.unsized_block_count === 2 && M.M02.tokens === 'est:~30' && M.M13.c_unk.block_count === 2, 'unsized, C-UNK');
          const f8 = F(ans, 'F-8');
          assert(f8.block_count === 3 && f8.tokens === 'est:~12' && f8.share === 'est:~40.00%' && !f8.absence_note, 'F-8 ' + JSON.stringify(f8));
        },
      });
  }
  pre('precheck-generic-message-without-text-refused',
    'A generic message without a text member stays record_does_not_parse_as_declared_format, even beside a tool schema without text, which is tolerated.',
    { body: gen({ messages: [{ role: 'user', text: 'hi' }, { role: 'assistant' }], tool_schemas: [{ name: 't' }] }), expectCode: 'record_does_not_parse_as_declared_format' });

  // ---- anthropic-messages: system as an array (C-16)
  rep('audit-anthropic-system-array-annex-example',
    'The ANNEX C-16 example: a system array of a text block and an image block is a first system message of 2 blocks, the image non-serialisable, measured in the report as 3 blocks with 1 unsized and C-UNK.',
    {
      body: anth({ system: [{ type: 'text', text: 's' }, { type: 'image' }], messages: [{ role: 'user', content: 'hi' }] }),
      check: (ev, ans) => {
        const sys = ev.rec.messages[0];
        assert(sys.role_raw === 'system' && sys.blocks.length === 2 && sys.blocks[1].kind_raw === 'image' && sys.blocks[1].text === null, 'system message');
        const M = ans.header_facts;
        assert(M.M01.message_count === 2 && M.M01.block_count === 3 && M.M02.unsized_block_count === 1 && M.M13.c_unk.block_count === 1, 'M01, M02, M13');
        assert(rowOf(F(ans, 'F-1'), 'P-SYS').block_count === 2, 'both system blocks P-SYS');
      },
    });
  rep('audit-anthropic-system-array-every-block-type',
    'Every block type adapts in a system array as in a message: a tool_use there is a tool_use block of the system message (RFC 8785 input), and a tool_result, a thinking block and a text document are its blocks too, all five P-SYS at L0.',
    {
      body: anth({
        system: [
          { type: 'text', text: 'You are a calculator.' },
          { type: 'tool_use', id: 'toolu_s', name: 'calc', input: { expr: '2+2' } },
          { type: 'tool_result', tool_use_id: 'toolu_s', content: '4' },
          { type: 'thinking', thinking: 'Keep answers short.', signature: 'sig' },
          { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Units: SI.' } },
        ],
        messages: [{ role: 'user', content: 'What is 3+3?' }, { role: 'assistant', content: '6' }],
      }),
      check: (ev, ans) => {
        const sys = ev.rec.messages[0];
        assert(deepEqual(sys.blocks.map((b) => b.kind_raw), ['text', 'tool_use', 'tool_result', 'thinking', 'document']) && sys.blocks.every((b) => b.role_raw === 'system'), 'system blocks');
        const tu = sys.blocks[1];
        assert(tu.text === '{"expr":"2+2"}' && tu.name === 'calc' && tu.has_args === true, 'tool_use in system');
        assert(ans.header_facts.M01.block_count === 7 && ans.header_facts.M02.unsized_block_count === 0, 'M01, M02');
        assert(rowOf(F(ans, 'F-1'), 'P-SYS').block_count === 5 && deepEqual(F(ans, 'F-9').blocks.map((b) => b.block_index), [0, 1, 2, 3, 4]), 'P-SYS blocks first');
      },
    });
  pre('precheck-anthropic-system-array-non-object-element-refused',
    'A system array holding an element that is not an object (a string) is refused record_does_not_parse_as_declared_format, as in a message\'s content.',
    { body: anth({ system: [{ type: 'text', text: 's' }, 'also a system text'], messages: [{ role: 'user', content: 'hi' }] }), expectCode: 'record_does_not_parse_as_declared_format' });
  pre('precheck-anthropic-content-non-object-element-refused',
    'A message content array holding an element that is not an object (a number) is refused record_does_not_parse_as_declared_format, unlike the same element inside a tool_result.',
    { body: anth({ messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }, 7] }] }), expectCode: 'record_does_not_parse_as_declared_format' });

  // ---- anthropic-messages: a tool_result's content (C-16)
  rep('audit-anthropic-tool-result-lenient-contents',
    'A tool_result whose content is [1, 2] (the ANNEX C-16 example), null, a number, an object or [] is one non-serialisable tool_result block each, never a refusal, so the report counts 5 unsized C-UNK blocks beside the string result.',
    {
      body: anth({
        messages: [
          { role: 'user', content: 'Run the six checks.' },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'x', content: [1, 2] },
              { type: 'tool_result', tool_use_id: 'n', content: null },
              { type: 'tool_result', tool_use_id: 'k', content: 42 },
              { type: 'tool_result', tool_use_id: 'o', content: { type: 'text', text: 'an object, not a list' } },
              { type: 'tool_result', tool_use_id: 'e', content: [] },
              { type: 'tool_result', tool_use_id: 's', content: 'all passed' },
            ],
          },
        ],
      }),
      check: (ev, ans) => {
        const bs = ev.rec.messages[1].blocks;
        assert(bs.length === 6 && bs.every((b) => b.kind_raw === 'tool_result') && deepEqual(bs.map((b) => b.text), [null, null, null, null, null, 'all passed']), 'one block per tool_result');
        const M = ans.header_facts;
        assert(M.M01.block_count === 7 && M.M02.unsized_block_count === 5 && M.M13.c_unk.block_count === 5 && M.M02.tokens === 'est:~8', 'M01, M02, M13');
      },
    });
  rep('audit-anthropic-tool-result-list-with-non-object-one-block',
    'A tool_result list holding a text block and a number is one non-serialisable tool_result block (an array with an element that is not an object), while a list of objects only is one block per part, a part without a type included.',
    {
      body: anth({
        messages: [
          { role: 'user', content: 'Fetch the notes.' },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'm', content: [{ type: 'text', text: 'note one' }, 2] },
              { type: 'tool_result', tool_use_id: 'p', content: [{ type: 'text', text: 'note two' }, { text: 'note three' }] },
            ],
          },
        ],
      }),
      check: (ev, ans) => {
        const bs = ev.rec.messages[1].blocks;
        assert(deepEqual(bs.map((b) => [b.kind_raw, b.text]), [['tool_result', null], ['text', 'note two'], ['', 'note three']]), 'blocks ' + JSON.stringify(bs.map((b) => [b.kind_raw, b.text])));
        assert(ans.header_facts.M01.block_count === 4 && ans.header_facts.M02.unsized_block_count === 1, 'M01, M02');
      },
    });

  // ---- anthropic-messages: text and thinking that are not strings (C-16)
  pre('precheck-anthropic-text-not-string-annex-example',
    'The ANNEX C-16 example: a text block whose text is the number 7 is one empty text entry, not a refusal, so a record of only that block is disclosed as nothing_assessable with entry_count 1.',
    {
      body: anth({ messages: [{ role: 'user', content: [{ type: 'text', text: 7 }] }] }),
      expectCode: 'nothing_assessable',
      check: both(
        (ev) => assert(ev.blocks.length === 1 && ev.blocks[0].kind_raw === 'text' && ev.blocks[0].text === '' && classifyC(ev.blocks[0].text) === 'C-EMPTY', 'one empty text block'),
        expectFigures(1, 0, 'est:~0', 'L0', 'nothing_assessable')),
    });
  rep('audit-anthropic-text-and-thinking-not-string-empty',
    'Text blocks whose text is a number, absent or null, and thinking blocks whose thinking is absent, null or a number, are empty blocks of their own kind: the report counts 6 empty C-EMPTY blocks, none unsized.',
    {
      body: anth({
        messages: [
          { role: 'user', content: [{ type: 'text', text: 7 }, { type: 'text' }, { type: 'text', text: null }, { type: 'text', text: 'What is the boiling point of water?' }] },
          { role: 'assistant', content: [{ type: 'thinking', signature: 'sig' }, { type: 'thinking', thinking: null, signature: 'sig' }, { type: 'thinking', thinking: 3, signature: 'sig' }, { type: 'text', text: '100 degrees Celsius at sea level.' }] },
        ],
      }),
      check: (ev, ans) => {
        const empties = ev.blocks.filter((b) => b.text === '');
        assert(deepEqual(empties.map((b) => b.kind_raw), ['text', 'text', 'text', 'thinking', 'thinking', 'thinking']), 'empty kinds');
        const M = ans.header_facts;
        assert(M.M01.block_count === 8 && M.M01.empty_block_count === 6 && M.M02.unsized_block_count === 0 && M.M13.c_unk.block_count === 0, 'M01, M02, M13');
        assert(rowOf(F(ans, 'F-2'), 'C-EMPTY').block_count === 6, 'F-2 C-EMPTY');
      },
    });

  // ---- anthropic-messages: document sources (C-16)
  rep('audit-anthropic-document-sources',
    'A document whose source is base64, URL, file, content, absent or not an object is non-serialisable, and one with a text source is its data, the empty text when data is absent or a number: 6 unsized and 2 empty blocks.',
    {
      body: anth({
        messages: [{
          role: 'user',
          content: [
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQK' } },
            { type: 'document', source: { type: 'url', url: 'https://example.invalid/a.pdf' } },
            { type: 'document', source: { type: 'file', file_id: 'file_011' } },
            { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'inline content source' }] } },
            { type: 'document', title: 'No source' },
            { type: 'document', source: 'https://example.invalid/b.pdf' },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Kettles boil water.' } },
            { type: 'document', source: { type: 'text', media_type: 'text/plain' } },
            { type: 'document', source: { type: 'text', data: 42 } },
            { type: 'text', text: 'Summarise the readable ones.' },
          ],
        }],
      }),
      check: (ev, ans) => {
        assert(deepEqual(ev.blocks.map((b) => b.text), [null, null, null, null, null, null, 'Kettles boil water.', '', '', 'Summarise the readable ones.']), 'document texts');
        const M = ans.header_facts;
        assert(M.M01.block_count === 10 && M.M02.unsized_block_count === 6 && M.M01.empty_block_count === 2 && M.M13.c_unk.block_count === 6, 'M01, M02, M13');
        // E: 19 cp -> 5, 28 cp -> 7.
        assert(M.M02.tokens === 'est:~12' && M.M02.characters === 47, 'M02 tokens');
      },
    });

  // ---- anthropic-messages: a block without a string type (C-16)
  rep('audit-anthropic-block-without-string-type',
    'A block without a string type (type absent, a number or null) is a block of an unknown type with an empty kind: its string text when it has one, else non-serialisable, so the report counts 2 sized and 2 unsized such blocks.',
    {
      body: anth({
        messages: [
          { role: 'user', content: [{ text: 'A block with no type.' }, { type: 7, text: 'A numeric type.' }, { type: null }, {}] },
          { role: 'assistant', content: [{ type: 'text', text: 'Noted.' }] },
        ],
      }),
      check: (ev, ans) => {
        assert(deepEqual(ev.blocks.map((b) => [b.kind_raw, b.text]), [['', 'A block with no type.'], ['', 'A numeric type.'], ['', null], ['', null], ['text', 'Noted.']]), 'blocks');
        const M = ans.header_facts;
        assert(M.M01.block_count === 5 && M.M02.unsized_block_count === 2 && M.M13.c_unk.block_count === 2, 'M01, M02, M13');
        // E: 21 cp -> 6, 15 cp -> 4, 6 cp -> 2.
        assert(M.M02.tokens === 'est:~12' && rowOf(F(ans, 'F-1'), 'P-USER').block_count === 4, 'tokens, P-USER by role at L0');
      },
    });

  // ---- the refusals at these edges (C-16's last bullet, C-8): the ANNEX's
  // four R-5 examples and its "system": null, then has_args and nulls.
  const R5 = 'record_does_not_parse_as_declared_format';
  pre('precheck-generic-tool-schema-text-number-refused-annex-example',
    'The ANNEX C-16 example: a generic tool_schemas entry whose text is the number 5 (neither a string, null nor absent) is refused record_does_not_parse_as_declared_format.',
    { body: gen({ messages: [{ role: 'user', text: 'hi' }], tool_schemas: [{ text: 5 }] }), expectCode: R5 });
  pre('precheck-generic-tool-schema-string-entry-refused-annex-example',
    'The ANNEX C-16 example: a generic tool_schemas entry that is the string "t" rather than an object is refused record_does_not_parse_as_declared_format.',
    { body: gen({ messages: [{ role: 'user', text: 'hi' }], tool_schemas: ['t'] }), expectCode: R5 });
  pre('precheck-generic-tool-schemas-object-refused',
    'A generic tool_schemas that is an object rather than an array or null is refused record_does_not_parse_as_declared_format.',
    { body: gen({ messages: [{ role: 'user', text: 'hi' }], tool_schemas: { name: 't', text: '{"name":"t"}' } }), expectCode: R5 });
  pre('precheck-generic-tool-schemas-null-no-schemas',
    'A generic tool_schemas of null is no tool schemas, so a user and an assistant message measure 2 entries at level L0.',
    {
      body: gen({ messages: [{ role: 'user', text: 'hi' }, { role: 'assistant', text: 'hello' }], tool_schemas: null }),
      expectCode: 'precheck',
      check: both(
        (ev, ans) => assert(ans.declared_format.level === 'L0' && ev.blocks.every((b) => !b.schema), 'L0, no schema block'),
        // "hi" 2 bytes E 1, "hello" 5 bytes E 2.
        expectFigures(2, 7, 'est:~3', 'L0', null),
        expectNA(['F-10:no stated counts', 'F-11'])),
    });
  pre('precheck-generic-role-number-refused-annex-example',
    'The ANNEX C-16 example: a generic message whose role is the number 5 is refused record_does_not_parse_as_declared_format.',
    { body: gen({ messages: [{ role: 5, text: 'x' }] }), expectCode: R5 });
  pre('precheck-generic-has-args-string-refused',
    'A generic message whose has_args is the string "yes" rather than a boolean is refused record_does_not_parse_as_declared_format.',
    { body: gen({ messages: [{ role: 'user', text: 'Find the order.' }, { role: 'assistant', kind: 'tool_call', name: 'find', has_args: 'yes', text: '{"id":7}' }] }), expectCode: R5 });
  pre('precheck-generic-kind-and-has-args-null-accepted',
    'A generic message whose kind and has_args are null is accepted with both read as absent, so the record stays at level L0 and measures its 2 entries.',
    {
      body: gen({ messages: [{ role: 'user', kind: null, has_args: null, text: 'hi' }, { role: 'assistant', text: 'hello' }] }),
      expectCode: 'precheck',
      check: both(
        (ev, ans) => {
          assert(ans.declared_format.level === 'L0', 'L0: a null kind or has_args is no content');
          assert(ev.blocks[0].kind_raw === undefined && ev.blocks[0].has_args === false && ev.blocks[0].role_raw === 'user', 'first block');
        },
        expectFigures(2, 7, 'est:~3', 'L0', null),
        expectNA(['F-10:no stated counts', 'F-11'])),
    });
  pre('precheck-anthropic-system-object-refused-annex-example',
    'The ANNEX C-16 example: an anthropic system that is an object (a lone text block) rather than a string, an array or null is refused record_does_not_parse_as_declared_format.',
    { body: anth({ system: { type: 'text' }, messages: [{ role: 'user', content: 'hi' }] }), expectCode: R5 });
  pre('precheck-anthropic-system-null-messages-alone-annex-example',
    'The ANNEX C-16 example: an anthropic system of null is no system message, so the record measures its user and assistant messages alone as 2 entries.',
    {
      body: anth({ system: null, messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }] }),
      expectCode: 'precheck',
      check: both(
        (ev, ans) => assert(deepEqual(ev.rec.messages.map((m) => m.role_raw), ['user', 'assistant']) && ans.declared_format.level === 'L0', 'no system message'),
        expectFigures(2, 7, 'est:~3', 'L0', null),
        expectNA(['F-10:no stated counts', 'F-11'])),
    });

  // ---- the refined bullet (C-16): a tool schema entry read with a message's
  // member types, a message with no role (absent or null) not refused.
  pre('precheck-generic-tool-schema-name-number-refused-annex-example',
    'The ANNEX C-16 example: a generic tool_schemas entry {"name": 5, "text": "t"}, read with a message\'s member types, has a name that is neither a string nor null and is refused record_does_not_parse_as_declared_format.',
    { body: gen({ messages: [{ role: 'user', text: 'hi' }], tool_schemas: [{ name: 5, text: 't' }] }), expectCode: R5 });
  pre('precheck-generic-message-without-role-one-entry-annex-example',
    'The ANNEX C-16 example: the generic record {"messages": [{"text": "x"}]}, whose one message has no role, is not refused and measures one entry at level L0.',
    {
      body: gen({ messages: [{ text: 'x' }] }),
      expectCode: 'precheck',
      check: both(
        (ev, ans) => assert(ans.declared_format.level === 'L0' && ev.blocks.length === 1 && ev.blocks[0].role_raw === undefined, 'one block, no role, L0'),
        // "x" 1 byte E 1; no role is no P-USER message.
        expectFigures(1, 1, 'est:~1', 'L0', null),
        expectNA(['F-5', 'F-10:no stated counts', 'F-11'])),
    });
  rep('audit-generic-role-absent-and-null-p-unk',
    'A generic record of one message without a role and one whose role is null is measured, not refused, and the report classes both blocks P-UNK at level L0.',
    {
      body: gen({ messages: [{ text: 'A line with no role member.' }, { role: null, text: 'A line whose role is null.' }] }),
      check: (ev, ans) => {
        assert(ans.declared_format.level === 'L0' && ev.blocks.every((b) => b.role_raw === undefined), 'L0, no role');
        // 27 and 26 code points: E 7 each.
        const f1 = F(ans, 'F-1');
        assert(rowOf(f1, 'P-UNK').block_count === 2 && rowOf(f1, 'P-UNK').tokens === 'est:~14' && rowOf(f1, 'P-OTHER').block_count === 0 && deepEqual(rowOf(f1, 'P-OTHER').raw_values, []), 'both P-UNK, no raw value');
        assert(ans.header_facts.M13.p_unk.block_count === 2 && isLimited(ans) && F(ans, 'F-5').status === 'NOT-ASSESSABLE', 'M13, LIMITED by F-5');
      },
    });

  // ------------------------------------------------------------ uncovered path

  addCase(`/${service}/verify`, 'post-verify-not-covered',
    'A POST to a path the service does not offer answers 404 with the static body NOT COVERED.',
    { body: anth(okAnth), expectCode: 'NOT COVERED' });

  return { cases };
}

// ============================================================== self-tests

function selfTest({ annexText }) {
  // C-2 table: every code, status and message as the ANNEX prints them, in order.
  const rows = [...annexText.matchAll(/^\| [^|]+ \| `([a-z_]+)` \| (\d{3}) \| (?:`([^`]+)`|\(host\)) \|/gm)];
  assert(rows.length === RULES.length, 'ANNEX C-2 row count ' + rows.length);
  rows.forEach((m, i) => {
    const [code, status, message] = RULES[i];
    assert(m[1] === code && Number(m[2]) === status && (m[3] === undefined ? message === null : m[3] === message), 'ANNEX C-2 row ' + code);
  });
  // C-3 example.
  const nfd = 'he\u0301llo wo\u0308rld';
  assert(codePoints(nfd) === 13 && nfcC(nfd) === 11 && em1(11) === 3, 'C-3 example');
  assert(em1(0) === 0 && em1(1) === 1 && em1(4) === 1 && em1(5) === 2, 'EM-1');
  // Shares: half up on exact integers.
  assert(shareText(1, 32) === 'est:~3.13%' && shareText(1, 3) === 'est:~33.33%' && shareText(2, 3) === 'est:~66.67%', 'shares');
  assert(shareText(0, 7) === 'est:~0.00%' && shareText(7, 7) === 'est:~100.00%' && shareText(1, 64) === 'est:~1.56%', 'shares 2');
  assert(deepEqual(shareText(0, 0), { value: 'NOT-ASSESSABLE', reason: 'zero denominator' }), 'zero denominator');
  // JSON parser vs JSON.parse.
  for (const t of ['{}', '[]', ' {"a":[1,2.5e3,-0,"\\u00e9\\n"],"b":{"c":null,"d":true}} ', '"x"', '0', '-1.5E+2']) {
    assert(deepEqual(plain(parseJson(t)), JSON.parse(t)), 'parser ' + t);
  }
  for (const t of ['', '{', '[1,]', '{"a":1,}', '01', '1.', '.5', '"\t"', 'nul', '{"a" 1}', '[1] [2]', '\u00a0{}', "{'a':1}"]) {
    let threw = false;
    try { parseJson(t); } catch (e) { threw = e instanceof JsonError; }
    assert(threw, 'parser rejects ' + JSON.stringify(t));
  }
  assert(compactJsonText('{ "a" : [ 1 , "b c\\" d" ] ,\n\t"e":1.50E+0 }') === '{"a":[1,"b c\\" d"],"e":1.50E+0}', 'compaction');
  // Axis C (C-4, C-5).
  const b64 = b64encode(Uint8Array.from({ length: 30 }, (_, i) => i * 7));
  assert(b64.length === 40, 'b64 40');
  assert(classifyC('') === 'C-EMPTY' && classifyC(null) === 'C-UNK' && classifyC('  \n') === 'C-TEXT', 'C empty/unk/ws');
  assert(classifyC(b64) === 'C-BLOB' && classifyC('see ' + b64) === 'C-BLOB' && classifyC('look at this: ' + b64) === 'C-TEXT', 'C blob 90%');
  assert(base64Segments('x ' + b64 + ' y').filter((s) => s.qualifies).length === 1, 'segment found');
  assert(base64Segments('ab+cd-ef').map((s) => s.text).join('|') === 'ab+cd|-ef', 'split at the breaking character');
  assert(base64Segments('QQ===').map((s) => s.text).join('|') === 'QQ==', 'third = ends the run');
  const plus = b64encode(new Uint8Array(30).fill(0).map((_, i) => [0xfb, 0xef, 0xbe][i % 3]));
  assert(plus === '+'.repeat(40), 'all-plus base64');
  const dashes = '-'.repeat(40);
  const sd = base64Segments(dashes);
  assert(sd.length === 1 && sd[0].alphabet === 'url-safe' && sd[0].qualifies && classifyC(dashes) === 'C-BLOB', 'url-safe segment');
  const mixed = base64Segments(plus + dashes);
  assert(mixed.length === 2 && mixed[0].alphabet === 'standard' && mixed[1].alphabet === 'url-safe' && mixed.every((x) => x.qualifies), 'mixed run splits');
  assert(!base64Segments('A'.repeat(40))[0].qualifies || b64decodeStrict('A'.repeat(40)).length === 30, 'neither kind is standard');
  assert(base64Segments('A'.repeat(39))[0].qualifies === false && base64Segments('A'.repeat(36) + '====')[0].text.length === 38, 'length and padding rules');
  assert(classifyC('BEGIN LOG 2026\nanything') === 'C-RAW', 'C raw marker');
  assert(classifyC('2026-01-01 10:00:00 a\n[2026-01-01T10:00:01 b\n2026-01-01 10:00:02 c\n2026-01-01 10:00:03 d\nfree text') === 'C-RAW', 'C raw 80%');
  assert(classifyC('2026-01-01 10:00:00 a\nfree\n2026-01-01 10:00:02 c\nfree') === 'C-TEXT', 'C raw 50% is not raw');
  const obj10 = JSON.stringify(Object.fromEntries(Array.from({ length: 10 }, (_, i) => ['key' + i, 'v'.repeat(15)])));
  assert(obj10.length >= 200 && classifyC(obj10) === 'C-RAW', 'C raw json');
  assert(classifyC('{"a": 1}') === 'C-STRUCT' && classifyC(' [1,2] \n') === 'C-STRUCT' && classifyC('"str"') === 'C-TEXT', 'C struct');
  assert(classifyC('```js\nlet a = 1;\n```') === 'C-CODE' && classifyC('    a\nb') === 'C-CODE' && classifyC('a\nb\n\tc') === 'C-TEXT', 'C code');
  assert(classifyC('Plain words.') === 'C-TEXT', 'C text');
  // M08 / M09 normalisation (C-12).
  assert(normN('  a\r\n\u00a0b\u200bc \u0085') === 'a b\u200bc' && normN('\ufeffx') === '\ufeffx' && normN(' \u3000\u2029') === '', 'N(s)');
  assert(normN('Caf\u0065\u0301  x') === 'Caf\u00e9 x', 'N(s) is NFC and keeps case');
  assert(lowerSimple('\u0130\u03a3A\u00c9') === 'i\u03c3a\u00e9', 'simple lowercase');
  assert(deepEqual(m09Tokens('\u201cHello,\u201d (world) ... don\'t `x` \u00abq\u00bb'), ['hello', 'world', "don't", 'x', '\u00abq\u00bb']), 'M09 tokens');
  assert(shingles(['a', 'b', 'c', 'd']).size === 2 && shingles(['a', 'b']).size === 0, 'shingles');
  // Stated figures (C-10, C-8).
  const num = (raw) => ({ t: 'number', raw });
  assert(validHarnessFigure(num('0')) && validHarnessFigure(num('999999999999999')) && !validHarnessFigure(num('1000000000000000')), 'harness 15 digits');
  assert(!validHarnessFigure(num('-1')) && !validHarnessFigure(num('1.0')) && !validHarnessFigure(num('1e2')) && !validHarnessFigure({ t: 'string', raw: undefined }), 'harness invalid');
  assert(carriedInteger(num('-1')).valid === false && carriedInteger(num('9223372036854775807')).valid === false && carriedInteger(num('12')).valid === true, 'carried');
  assert(carriedInteger(num('9223372036854775808')) === null && carriedInteger(num('1.0')) === null && carriedInteger(num('1e2')) === null, 'not carried');
  // Axis C tests held together.
  const wide = JSON.stringify(Array.from({ length: 10 }, (_, i) => 'item ' + i + ' '.repeat(14)));
  const ct = cTests(wide);
  assert(ct.raw && ct.struct && !ct.code && !ct.blob && classifyC(wide) === 'C-RAW', 'raw and struct');
}

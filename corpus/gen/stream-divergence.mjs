// stream-divergence/v1 corpus cases and their expected answers.
//
// Written from criteria/stream-divergence/criteria.json and
// criteria/stream-divergence/ANNEX.md alone: this module implements the
// validation rules (ANNEX A-2..A-4, in the ANNEX's rule order), the comparison
// rules (criteria comparison_rule, ANNEX A-5), the report / pre-check /
// refusal answer shapes (ANNEX A-1) and the verdict line (criteria
// verdict_grammar, ANNEX A-7) on its own. It never calls the Go engine.

import {
  b64encode, b64decodeStrict, base58, utf8, utf8Length, makeRng, concatBytes, ascii, assert, deepEqual, commonMembers } from './lib.mjs';

export const criteriaName = 'stream-divergence';

const CHECK_END = '<check-end UTC>';
const PIN = '<pin>';
const ARTEFACTS = ['streamed_capture', 'reference_output'];

// ANNEX A-3, codes / statuses / static messages (exact strings). Cross-checked
// against the ANNEX table text at generation time (see checkAgainstAnnex).
const REFUSALS = {
  body_bytes_cap: { status: 413, message: 'request body exceeds the published cap' },
  body_not_object: { status: 400, message: 'request body is not a JSON object' },
  streamed_capture_required: { status: 400, message: 'streamed_capture is missing or not an object' },
  reference_output_required: { status: 400, message: 'reference_output is missing or not an object' },
  chunks_required: { status: 400, message: 'chunks is missing or not an array' },
  chunk_not_string: { status: 400, message: 'a chunk is not a string' },
  chunk_not_base64: { status: 400, message: 'a chunk is not valid base64 (RFC 4648 standard alphabet, padded, no whitespace)' },
  chunk_count_cap: { status: 400, message: 'an artefact has more chunks than the published cap' },
  chunk_bytes_cap: { status: 400, message: 'a chunk decodes to more bytes than the published cap' },
  artefact_bytes_cap: { status: 400, message: 'an artefact decodes to more bytes than the published cap' },
};

// A well-formed caller the generator assumes when it sizes a pre-check body:
// the harness injects a fresh base58 address (32 bytes -> at most 44 chars).
const SIZING_CALLER = '1'.repeat(44);

const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
const isPlainObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

export function build({ criteria, annexText }) {
  const caps = criteria.input_contract.caps;
  const CAP = {
    body: caps.body_bytes,
    chunks: caps.chunks_per_artefact,
    chunk: caps.chunk_bytes,
    artefact: caps.artefact_bytes,
  };
  // The caps in the structured block must be the ones the criteria text states.
  assert(CAP.body === 262144 && CAP.chunks === 1024 && CAP.chunk === 65536 && CAP.artefact === 65536,
    'caps differ from the criteria text');
  assert(criteria.ops.length === 1 && criteria.ops[0] === 'compare', 'ops');
  const service = criteria.service;

  // ------------------------------------------------------------ answer model

  const common = (op, kind) => commonMembers(criteria, service, 'compare', op, kind);

  function refusal(op, code, facts = {}) {
    const r = REFUSALS[code];
    assert(r, 'unknown refusal ' + code);
    return { status: r.status, answer: { ...common(op, 'refusal'), error: { code, message: r.message, ...facts } } };
  }

  // Validation of a parsed body, ANNEX A-3 order: each rule in the table's
  // order, each rule on streamed_capture before reference_output, chunks by
  // ascending index. Returns {error:{code, facts}} or {artefacts:{name:{count, bytes}}}.
  function validate(body) {
    if (!isPlainObject(body)) return { error: { code: 'body_not_object' } };
    const arts = {};
    for (const name of ARTEFACTS) {
      const v = hasOwn(body, name) ? body[name] : undefined;
      if (!isPlainObject(v)) return { error: { code: `${name}_required` } };
      arts[name] = v;
    }
    const chunkLists = {};
    for (const name of ARTEFACTS) {
      const c = hasOwn(arts[name], 'chunks') ? arts[name].chunks : undefined;
      if (!Array.isArray(c)) return { error: { code: 'chunks_required', facts: { artefact: name } } };
      chunkLists[name] = c;
    }
    for (const name of ARTEFACTS) {
      const c = chunkLists[name];
      for (let i = 0; i < c.length; i++) {
        if (typeof c[i] !== 'string') return { error: { code: 'chunk_not_string', facts: { artefact: name, chunk_index: i } } };
      }
    }
    const decoded = {};
    for (const name of ARTEFACTS) {
      const c = chunkLists[name];
      decoded[name] = [];
      for (let i = 0; i < c.length; i++) {
        const d = b64decodeStrict(c[i]);
        if (d === null) return { error: { code: 'chunk_not_base64', facts: { artefact: name, chunk_index: i } } };
        decoded[name].push(d);
      }
    }
    for (const name of ARTEFACTS) {
      const n = chunkLists[name].length;
      if (n > CAP.chunks) return { error: { code: 'chunk_count_cap', facts: { artefact: name, cap: CAP.chunks, chunk_count: n } } };
    }
    for (const name of ARTEFACTS) {
      const d = decoded[name];
      for (let i = 0; i < d.length; i++) {
        if (d[i].length > CAP.chunk) {
          return { error: { code: 'chunk_bytes_cap', facts: { artefact: name, chunk_index: i, cap: CAP.chunk, byte_length: d[i].length } } };
        }
      }
    }
    const result = {};
    for (const name of ARTEFACTS) {
      const bytes = concatBytes(decoded[name]);
      if (bytes.length > CAP.artefact) {
        return { error: { code: 'artefact_bytes_cap', facts: { artefact: name, cap: CAP.artefact, byte_length: bytes.length } } };
      }
      result[name] = { count: chunkLists[name].length, bytes };
    }
    return { artefacts: result };
  }

  // criteria comparison_rule (1)-(3), ANNEX A-5.
  function compare(S, R) {
    const n = Math.max(S.length, R.length);
    const differs = (i) => i >= S.length || i >= R.length || S[i] !== R[i];
    const spans = [];
    let i = 0;
    while (i < n) {
      if (!differs(i)) { i++; continue; }
      const start = i;
      while (i < n && differs(i)) i++;
      spans.push({ start, length: i - start });
    }
    const byteEqual = S.length === R.length && spans.length === 0;
    const first = byteEqual ? { state: 'NONE' } : { state: 'OFFSET', offset: spans[0].start };
    return { byteEqual, first, spans };
  }

  // criteria verdict_grammar.line, filled in order; the instant stays a placeholder.
  function verdictLine(byteEqual, scCount, roCount, first, spanCount) {
    let line = criteria.verdict_grammar.line;
    const fill = (ph, val) => {
      const at = line.indexOf(ph);
      assert(at >= 0, 'verdict grammar placeholder ' + ph);
      line = line.slice(0, at) + val + line.slice(at + ph.length);
    };
    fill('<YES|NO>', byteEqual ? 'YES' : 'NO');
    fill('<n>', String(scCount));
    fill('<n>', String(roCount));
    fill('<offset|NONE>', first.state === 'NONE' ? 'NONE' : String(first.offset));
    fill('<k>', String(spanCount));
    assert(line.endsWith(' — ' + CHECK_END), 'verdict line must end with the check-end placeholder');
    assert(!/<(?!check-end UTC>)[^>]*>/.test(line), 'unfilled verdict placeholder');
    return line;
  }

  // The whole route: raw request bytes in, {status, answer|body_text} out.
  function expectedFor(path, bodyBytes) {
    const prefix = `/${service}/`;
    const op = path.startsWith(prefix) ? path.slice(prefix.length) : null;
    if (op !== 'precheck' && !criteria.ops.includes(op)) return { status: 404, body_text: 'NOT COVERED' };
    if (bodyBytes.length > CAP.body) return refusal(op, 'body_bytes_cap', { cap: CAP.body });
    let body;
    try {
      body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bodyBytes));
    } catch {
      return refusal(op, 'body_not_object');
    }
    const v = validate(body);
    if (v.error) return refusal(op, v.error.code, v.error.facts);
    const sc = v.artefacts.streamed_capture, ro = v.artefacts.reference_output;
    const counts = {
      streamed_capture: { chunk_count: sc.count, byte_length: sc.bytes.length },
      reference_output: { chunk_count: ro.count, byte_length: ro.bytes.length },
    };
    if (op === 'precheck') {
      return { status: 200, answer: { ...common(op, 'precheck'), assessable: true, ...counts } };
    }
    const c = compare(sc.bytes, ro.bytes);
    return {
      status: 200,
      answer: {
        ...common(op, 'report'),
        byte_equal: c.byteEqual,
        ...counts,
        first_divergence: c.first,
        differing_spans: c.spans,
        scope_text: criteria.scope_text,
        no_live_line: criteria.no_live_line,
        honesty_line: criteria.honesty_line,
        verdict_line: verdictLine(c.byteEqual, sc.count, ro.count, c.first, c.spans.length),
      },
    };
  }

  selfTest({ validate, compare, verdictLine, annexText });

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
      // The harness sets `caller` on a pre-check whose body is a JSON object.
      if (path.endsWith('/precheck') && isPlainObject(sent) && !hasOwn(sent, 'caller')) {
        sent = { ...sent, caller: SIZING_CALLER };
      }
      bytes = utf8(JSON.stringify(sent));
    }
    const exp = expectedFor(path, bytes);
    if (req.expectCode !== undefined) {
      const got = exp.answer && exp.answer.error ? exp.answer.error.code : (exp.answer ? exp.answer.kind : exp.body_text);
      assert(got === req.expectCode, `case ${name}: intended ${req.expectCode}, model gives ${got}`);
    }
    const expect = { status: exp.status };
    if (exp.body_text !== undefined) expect.body_text = exp.body_text;
    else expect.answer = exp.answer;
    cases.push({ name, provenance: 'synthetic', description, request, expect });
  }
  const pre = (name, description, req) => addCase('precheck', name, description, req);
  const cmp = (name, description, req) => addCase('compare', name, description, req);

  // Artefact from byte chunks (Uint8Array) and/or literal chunk values.
  const art = (...chunks) => ({ chunks: chunks.map((c) => (c instanceof Uint8Array ? b64encode(c) : c)) });
  const A = (s) => ascii(s);
  const pair = (sc, ro, extra = {}) => ({ streamed_capture: sc, reference_output: ro, ...extra });
  const splitAt = (bytes, cuts) => {
    const out = [];
    let prev = 0;
    for (const c of [...cuts, bytes.length]) { out.push(bytes.slice(prev, c)); prev = c; }
    return out;
  };
  const splitEvery = (bytes, size) => {
    const out = [];
    for (let i = 0; i < bytes.length; i += size) out.push(bytes.slice(i, i + size));
    return out;
  };
  const flip = (bytes, offsets) => {
    const out = bytes.slice();
    for (const o of offsets) out[o] ^= 0xff;
    return out;
  };
  const rng = makeRng('stream-divergence-corpus/v1');

  // ------------------------------------------------------------ equal artefacts, chunking

  const hello = A('hello world');
  const equalBody = pair(art(A('hel'), A('lo w'), A('orld')), art(hello));
  pre('precheck-equal-artefacts',
    'A valid pair of equal artefacts is assessable and the pre-check reports only chunk counts and byte lengths, with no comparison fact.',
    { body: equalBody, expectCode: 'precheck' });
  cmp('compare-equal-artefacts-different-chunking',
    'The same bytes under different chunking (3 chunks vs 1) are byte_equal true with differing chunk counts reported as submitted.',
    { body: equalBody, expectCode: 'report' });
  cmp('compare-equal-artefacts-same-chunking',
    'Identical chunk lists compare byte-equal with first divergence NONE and no spans.',
    { body: pair(art(A('abc'), A('def')), art(A('abc'), A('def'))), expectCode: 'report' });
  {
    const bytes = A('chunk boundaries are the submitter\'s representation');
    const sc = art(...[...bytes].map((b) => Uint8Array.of(b)), '');
    const ro = art('', bytes, '', '');
    cmp('compare-equal-one-byte-chunks-vs-single-chunk',
      'One-byte chunks plus empty chunks against a single chunk framed by empty chunks are byte-equal; both chunk counts count empty chunks.',
      { body: pair(sc, ro), expectCode: 'report' });
  }
  pre('precheck-different-lengths-no-divergence-fact',
    'A pre-check of artefacts of different lengths still returns assessability, counts and lengths only, never byte_equal, an offset or a span.',
    { body: pair(art(A('abcdef'), A('gh')), art(A('abc'))), expectCode: 'precheck' });

  // ------------------------------------------------------------ strict prefixes

  cmp('compare-strict-prefix-streamed-shorter',
    'When the streamed capture is a strict prefix of the reference the first divergence is the shorter length and one span covers the absent tail.',
    { body: pair(art(A('stream'), A('ed')), art(A('streamed output'))), expectCode: 'report' });
  cmp('compare-strict-prefix-reference-shorter',
    'When the reference output is a strict prefix of the streamed capture the first divergence is the shorter length and one span covers the absent tail.',
    { body: pair(art(A('abcdefgh'), A('ijkl')), art(A('abcde'))), expectCode: 'report' });

  // ------------------------------------------------------------ empty artefacts

  cmp('compare-empty-both-chunk-lists',
    'Two empty chunk lists are valid, comparable and byte-equal with zero chunks and zero bytes on both sides.',
    { body: pair(art(), art()), expectCode: 'report' });
  pre('precheck-empty-both-chunk-lists',
    'Two empty chunk lists are assessable on the pre-check with zero chunks and zero bytes.',
    { body: pair(art(), art()), expectCode: 'precheck' });
  cmp('compare-empty-list-vs-empty-string-chunk',
    'An empty chunk list and a single empty-string chunk are both zero bytes and byte-equal with chunk counts 0 and 1.',
    { body: pair(art(), art('')), expectCode: 'report' });
  cmp('compare-empty-string-chunks-both-sides',
    'Chunks decoding to zero bytes (two vs one empty string) are byte-equal with chunk counts 2 and 1.',
    { body: pair(art('', ''), art('')), expectCode: 'report' });
  cmp('compare-empty-streamed-vs-nonempty-reference',
    'An empty streamed capture against a non-empty reference diverges at offset 0 with one span covering the whole reference.',
    { body: pair(art(), art(A('reference'))), expectCode: 'report' });
  cmp('compare-nonempty-streamed-vs-empty-reference',
    'A non-empty streamed capture against a reference of empty-string chunks diverges at offset 0 with one span covering the whole capture.',
    { body: pair(art(A('str'), A('eamed')), art('', '')), expectCode: 'report' });
  cmp('compare-empty-chunks-around-data',
    'Empty-string chunks before, between and after data change the chunk count but not the bytes, so the pair is byte-equal.',
    { body: pair(art('', A('ABC'), '', A('DEF'), ''), art(A('ABCDEF'))), expectCode: 'report' });

  // ------------------------------------------------------------ spans

  cmp('compare-span-at-start',
    'Equal-length artefacts differing only in their first three bytes give first divergence 0 and one span at the start.',
    { body: pair(art(A('XYZdefghij')), art(A('abc'), A('defghij'))), expectCode: 'report' });
  cmp('compare-span-at-end',
    'Equal-length artefacts differing only in their last two bytes give one span ending at the last offset.',
    { body: pair(art(A('abcdefgh'), A('XY')), art(A('abcdefghij'))), expectCode: 'report' });
  cmp('compare-spans-at-both-ends',
    'Artefacts differing in the first byte and the last two bytes give two spans, one at each end.',
    { body: pair(art(A('Xbcdefghij')), art(A('abcde'), A('fghYZ'))), expectCode: 'report' });
  {
    const base = rng.bytes(200);
    const odd = [];
    for (let i = 1; i < 200; i += 2) odd.push(i);
    cmp('compare-many-alternating-spans',
      'Artefacts of 200 bytes differing at every odd offset give 100 one-byte spans in ascending order.',
      { body: pair(art(...splitEvery(base, 64)), art(...splitEvery(flip(base, odd), 50))), expectCode: 'report' });
  }
  {
    const base = A('the quick brown fox jumps over the lazy dog');
    const changed = base.slice();
    changed[21] = 0x21;
    cmp('compare-single-byte-middle',
      'A single differing byte in the middle gives that offset as the first divergence and one span of length 1.',
      { body: pair(art(...splitAt(base, [10, 30])), art(changed)), expectCode: 'report' });
  }
  cmp('compare-divergence-offset-0-different-lengths',
    'Artefacts whose first bytes differ and whose lengths differ diverge at offset 0 with a span merging the difference and the absent tail.',
    { body: pair(art(A('Zbc')), art(A('abcdef'))), expectCode: 'report' });
  cmp('compare-annex-a5-example',
    'The ANNEX A-5 example "abcd" vs "aXcdef" gives first divergence 1 and spans {1,1} and {4,2}, offsets 4 and 5 differing by absence.',
    { body: pair(art(A('abcd')), art(A('aXcdef'))), expectCode: 'report' });
  cmp('compare-annex-a1-example',
    'The ANNEX A-1 report example (2 chunks of 6 bytes vs 1 chunk of 8) gives first divergence 2 and spans {2,1} and {6,2}.',
    { body: pair(art(A('abc'), A('def')), art(A('abXdefgh'))), expectCode: 'report' });
  cmp('compare-span-merges-into-absence',
    'Differing bytes at the end of the shorter side and the offsets it lacks form one maximal span.',
    { body: pair(art(A('abcd')), art(A('abXYef'))), expectCode: 'report' });
  cmp('compare-all-bytes-differ',
    'Equal-length artefacts differing at every offset give first divergence 0 and one span covering everything.',
    { body: pair(art(A('aaaa'), A('aaaa')), art(A('bbbbbbbb'))), expectCode: 'report' });
  {
    const base = rng.bytes(3000);
    const offs = new Set();
    while (offs.size < 40) offs.add(rng.int(3000));
    // Clustered runs as well as isolated bytes.
    for (let i = 1200; i < 1230; i++) offs.add(i);
    const other = concatBytes([flip(base, [...offs]), rng.bytes(17)]);
    const cutsA = [], cutsB = [];
    for (let p = rng.int(300); p < 3000; p += 1 + rng.int(400)) cutsA.push(p);
    for (let p = rng.int(500); p < 3017; p += 1 + rng.int(700)) cutsB.push(p);
    cmp('compare-random-binary-mutations',
      'Pseudo-random binary artefacts (seeded) with scattered and clustered byte changes, a longer reference and arbitrary chunking give every maximal span.',
      { body: pair(art(...splitAt(base, cutsA)), art(...splitAt(other, cutsB))), expectCode: 'report' });
  }

  // ------------------------------------------------------------ binary bytes

  {
    const bin = Uint8Array.from([0x00, 0xff, 0xc0, 0x80, 0xed, 0xa0, 0x80, 0xf8, 0x88, 0x80, 0x80, 0x80, 0x80, 0xfe, 0x00, 0x00, 0xef, 0xbb, 0xbf, 0xc3]);
    cmp('compare-binary-equal-nul-ff-invalid-utf8',
      'Chunks carrying NUL, 0xFF and invalid UTF-8 sequences are compared as raw bytes and are byte-equal under different chunking.',
      { body: pair(art(...splitAt(bin, [1, 2, 4, 7, 13])), art(bin)), expectCode: 'report' });
    const bin2 = bin.slice();
    bin2[3] = 0x81; // still invalid UTF-8, different byte
    bin2[14] = 0xff;
    cmp('compare-binary-differ-in-invalid-utf8',
      'Artefacts that differ only inside invalid UTF-8 sequences and NUL bytes diverge at the exact byte offsets.',
      { body: pair(art(bin), art(...splitAt(bin2, [5, 15]))), expectCode: 'report' });
    pre('precheck-binary-bytes',
      'A pre-check of binary chunks reports decoded byte lengths, not base64 string lengths.',
      { body: pair(art(bin, Uint8Array.of(0, 0, 0)), art(bin2)), expectCode: 'precheck' });
  }

  // ------------------------------------------------------------ ignored members

  const small = pair(art(A('ab'), A('cd')), art(A('abce')));
  cmp('compare-caller-ignored',
    'A well-formed caller member on compare is ignored and the report is computed from the two artefacts alone.',
    { body: { caller: base58(makeRng('compare-caller').bytes(32)), ...small }, expectCode: 'report' });
  cmp('compare-caller-ignored-not-a-string',
    'A caller member that is not a string is ignored on compare rather than refused.',
    { body: { ...small, caller: { wallet: 12345 } }, expectCode: 'report' });
  cmp('compare-unknown-members-ignored',
    'Unknown top-level members and unknown members of an artefact object are ignored.',
    {
      body: {
        note: 'ignored — ✓',
        streamed_capture: { chunks: [b64encode(A('abc'))], encoding: 'hex', sha256: 'not-used' },
        extra: [1, 2, 3],
        reference_output: { label: null, chunks: [b64encode(A('abd'))] },
      },
      expectCode: 'report',
    });
  pre('precheck-unknown-members-ignored',
    'Unknown top-level and artefact members are ignored on the pre-check too.',
    {
      body: { streamed_capture: { chunks: [], meta: { x: 1 } }, reference_output: { chunks: [b64encode(A('x'))] }, unused: true },
      expectCode: 'precheck',
    });
  cmp('compare-duplicate-member-last-wins',
    'A member name that appears twice takes its last occurrence, so an invalid first streamed_capture is overridden by a valid second one.',
    {
      body_text: '{"streamed_capture":5,"reference_output":{"chunks":["YWJj"]},"streamed_capture":{"chunks":["YWI=","Yw=="]}}',
      expectCode: 'report',
    });

  // ------------------------------------------------------------ body_not_object

  cmp('compare-body-not-json-truncated',
    'A truncated JSON text is refused body_not_object.',
    { body_text: '{"streamed_capture":{"chunks":["QQ=="]},"reference_output":', expectCode: 'body_not_object' });
  pre('precheck-body-not-json-text',
    'A body that is plain text, not JSON, is refused body_not_object on the pre-check.',
    { body_text: 'streamed_capture=QQ%3D%3D&reference_output=QQ%3D%3D', expectCode: 'body_not_object' });
  cmp('compare-body-empty',
    'An empty request body does not parse as JSON and is refused body_not_object.',
    { body_text: '', expectCode: 'body_not_object' });
  cmp('compare-body-trailing-garbage',
    'A JSON object followed by extra non-whitespace text is not one JSON value and is refused body_not_object.',
    { body_text: '{"streamed_capture":{"chunks":[]},"reference_output":{"chunks":[]}} x', expectCode: 'body_not_object' });
  cmp('compare-body-array',
    'A JSON array body is refused body_not_object.',
    { body: [], expectCode: 'body_not_object' });
  pre('precheck-body-array-of-object',
    'An array wrapping a valid submission object is refused body_not_object on the pre-check.',
    { body: [pair(art(), art())], expectCode: 'body_not_object' });
  cmp('compare-body-null',
    'A JSON null body is refused body_not_object.',
    { body: null, expectCode: 'body_not_object' });
  cmp('compare-body-string',
    'A JSON string body is refused body_not_object.',
    { body: '{"streamed_capture":{"chunks":[]},"reference_output":{"chunks":[]}}', expectCode: 'body_not_object' });
  cmp('compare-body-number',
    'A JSON number body is refused body_not_object.',
    { body: 42, expectCode: 'body_not_object' });
  pre('precheck-body-true',
    'A JSON true body is refused body_not_object on the pre-check.',
    { body: true, expectCode: 'body_not_object' });

  // ------------------------------------------------------------ streamed_capture_required / reference_output_required

  const okArt = art(A('ok'));
  cmp('compare-body-empty-object',
    'An empty object body is refused streamed_capture_required, the first artefact rule.',
    { body: {}, expectCode: 'streamed_capture_required' });
  cmp('compare-streamed-missing',
    'A body without streamed_capture is refused streamed_capture_required.',
    { body: { reference_output: okArt }, expectCode: 'streamed_capture_required' });
  cmp('compare-streamed-null',
    'A null streamed_capture is refused streamed_capture_required.',
    { body: pair(null, okArt), expectCode: 'streamed_capture_required' });
  pre('precheck-streamed-array',
    'A streamed_capture given as an array of chunks instead of an object is refused streamed_capture_required on the pre-check.',
    { body: pair([b64encode(A('ok'))], okArt), expectCode: 'streamed_capture_required' });
  cmp('compare-streamed-string',
    'A streamed_capture given as a base64 string is refused streamed_capture_required.',
    { body: pair(b64encode(A('ok')), okArt), expectCode: 'streamed_capture_required' });
  cmp('compare-reference-missing',
    'A body without reference_output is refused reference_output_required.',
    { body: { streamed_capture: okArt }, expectCode: 'reference_output_required' });
  pre('precheck-reference-null',
    'A null reference_output is refused reference_output_required on the pre-check.',
    { body: pair(okArt, null), expectCode: 'reference_output_required' });
  cmp('compare-reference-array',
    'A reference_output given as an array is refused reference_output_required.',
    { body: pair(okArt, []), expectCode: 'reference_output_required' });
  cmp('compare-reference-string',
    'A reference_output given as a string is refused reference_output_required.',
    { body: pair(okArt, 'reference'), expectCode: 'reference_output_required' });
  cmp('compare-order-reference-required-beats-streamed-base64',
    'A streamed_capture with a non-base64 chunk and a missing reference_output is refused reference_output_required, the earlier rule (ANNEX A-3).',
    { body: { streamed_capture: art('QQ==', 'QQ', '***') }, expectCode: 'reference_output_required' });
  pre('precheck-order-reference-required-beats-streamed-chunks',
    'A streamed_capture without chunks and a numeric reference_output are refused reference_output_required before chunks_required.',
    { body: pair({}, 7), expectCode: 'reference_output_required' });

  // ------------------------------------------------------------ chunks_required

  cmp('compare-chunks-missing-streamed',
    'A streamed_capture object without chunks is refused chunks_required naming streamed_capture.',
    { body: pair({ chunk: ['QQ=='] }, okArt), expectCode: 'chunks_required' });
  cmp('compare-chunks-object-reference',
    'A reference_output whose chunks is an object is refused chunks_required naming reference_output.',
    { body: pair(okArt, { chunks: { 0: 'QQ==' } }), expectCode: 'chunks_required' });
  pre('precheck-chunks-string-streamed',
    'A streamed_capture whose chunks is a single base64 string rather than an array is refused chunks_required on the pre-check.',
    { body: pair({ chunks: 'QQ==' }, okArt), expectCode: 'chunks_required' });
  cmp('compare-chunks-null-reference',
    'A reference_output whose chunks is null is refused chunks_required naming reference_output.',
    { body: pair(okArt, { chunks: null }), expectCode: 'chunks_required' });
  cmp('compare-order-chunks-required-beats-streamed-chunk-not-string',
    'A non-string streamed chunk and a reference_output without chunks are refused chunks_required naming reference_output, the earlier rule.',
    { body: pair({ chunks: [1] }, { chunks: 1 }), expectCode: 'chunks_required' });

  // ------------------------------------------------------------ chunk_not_string

  cmp('compare-chunk-number-streamed-index-0',
    'A number as the first streamed chunk is refused chunk_not_string with chunk_index 0.',
    { body: pair({ chunks: [65, 'QQ=='] }, okArt), expectCode: 'chunk_not_string' });
  cmp('compare-chunk-null-reference-index-2',
    'A null third reference chunk is refused chunk_not_string naming reference_output and chunk_index 2.',
    { body: pair(okArt, { chunks: ['QQ==', '', null, 'QQ=='] }), expectCode: 'chunk_not_string' });
  pre('precheck-chunk-object-streamed-index-5',
    'An object as the sixth streamed chunk is refused chunk_not_string with chunk_index 5 on the pre-check.',
    { body: pair({ chunks: ['', 'QQ==', 'QkI=', 'Q0ND', '', { b64: 'QQ==' }] }, okArt), expectCode: 'chunk_not_string' });
  cmp('compare-chunk-boolean-and-array-lowest-index',
    'With a boolean at index 1 and an array at index 3 of reference_output the lowest index is named.',
    { body: pair(okArt, { chunks: ['QQ==', true, 'QQ==', ['QQ==']] }), expectCode: 'chunk_not_string' });
  cmp('compare-order-annex-a3-example',
    'The ANNEX A-3 example is refused chunk_not_string on reference_output chunk 0, since chunk_not_string precedes chunk_not_base64 on streamed_capture.',
    { body_text: '{"streamed_capture":{"chunks":["QQ==","QQ"]},"reference_output":{"chunks":[1]}}', expectCode: 'chunk_not_string' });
  cmp('compare-order-chunk-not-string-beats-earlier-index-base64',
    'A non-base64 streamed chunk at index 0 and a non-string streamed chunk at index 3 are refused chunk_not_string at index 3, rule before index.',
    { body: pair({ chunks: ['QQ', 'QQ==', 'QQ==', 5] }, okArt), expectCode: 'chunk_not_string' });
  {
    const chunks = new Array(1025).fill('');
    chunks[1000] = 7;
    cmp('compare-order-1025-chunks-one-number',
      'An artefact of 1,025 chunks one of which is a number is refused chunk_not_string, which precedes chunk_count_cap (ANNEX A-3).',
      { body: pair({ chunks }, okArt), expectCode: 'chunk_not_string' });
  }

  // ------------------------------------------------------------ chunk_not_base64

  const b64case = (name, description, chunk, route = 'compare', where = 'streamed_capture') => {
    const bad = { chunks: ['QUJD', chunk] };
    const body = where === 'streamed_capture' ? pair(bad, okArt) : pair(okArt, bad);
    addCase(route, name, description, { body, expectCode: 'chunk_not_base64' });
  };
  b64case('compare-base64-bad-character', 'A chunk containing "*" is not base64 and is refused chunk_not_base64.', 'QU*D');
  b64case('compare-base64-url-safe-dash', 'A chunk using the URL-safe "-" symbol is refused chunk_not_base64 (standard alphabet only).', 'ab-c');
  b64case('compare-base64-url-safe-underscore', 'A chunk using the URL-safe "_" symbol is refused chunk_not_base64 (standard alphabet only).', 'ab_c', 'compare', 'reference_output');
  b64case('compare-base64-missing-padding', 'The unpadded chunk "QQ" is refused chunk_not_base64 (padding is required).', 'QQ');
  b64case('compare-base64-newline-inside', 'A chunk with a line feed between two quanta is refused chunk_not_base64 (no line breaks).', 'QUJD\nRUZH');
  b64case('precheck-base64-crlf-inside', 'A chunk with CR LF between two quanta is refused chunk_not_base64 on the pre-check (no line breaks).', 'QUJD\r\nRUZH', 'precheck');
  b64case('compare-base64-trailing-newline', 'A chunk ending in a line feed is refused chunk_not_base64 (no whitespace).', 'QUJD\n');
  b64case('compare-base64-space-inside', 'A chunk with a space between two quanta is refused chunk_not_base64 (no whitespace).', 'QUJD RUZH');
  b64case('compare-base64-nonzero-trailing-bits-double-pad', 'The chunk "QR==" has non-zero unused bits and is refused chunk_not_base64 (strict decoding).', 'QR==');
  b64case('compare-base64-nonzero-trailing-bits-single-pad', 'The chunk "QUJ=" has non-zero unused bits and is refused chunk_not_base64 (strict decoding).', 'QUJ=', 'compare', 'reference_output');
  b64case('compare-base64-padding-in-middle', 'The chunk "QQ==QQ==" has padding before the end and is refused chunk_not_base64.', 'QQ==QQ==');
  b64case('compare-base64-misplaced-padding', 'The chunk "Q===" has padding beyond the last two characters and is refused chunk_not_base64.', 'Q===');
  b64case('compare-base64-lone-equals', 'A chunk that is "=" alone is refused chunk_not_base64.', '=');
  b64case('compare-base64-length-not-multiple-of-4', 'A chunk whose length is not a multiple of 4 is refused chunk_not_base64.', 'QUJDR');
  b64case('precheck-base64-reference-non-ascii', 'A reference chunk containing a non-ASCII letter is refused chunk_not_base64 on the pre-check.', 'QUJé', 'precheck', 'reference_output');
  {
    const chunks = new Array(1025).fill('QQ==');
    chunks[512] = 'QQ=';
    cmp('compare-order-base64-beats-chunk-count-cap',
      'An artefact of 1,025 chunks one of which is not base64 is refused chunk_not_base64, which precedes chunk_count_cap.',
      { body: pair(okArt, { chunks }), expectCode: 'chunk_not_base64' });
  }
  {
    const big = rng.bytes(CAP.chunk + 1);
    cmp('compare-order-reference-base64-beats-streamed-chunk-bytes-cap',
      'A streamed chunk over the chunk cap and a non-base64 reference chunk are refused chunk_not_base64 on reference_output, the earlier rule.',
      { body: pair(art(big), art('QQ')), expectCode: 'chunk_not_base64' });
  }

  // ------------------------------------------------------------ chunk_count_cap

  {
    const chunks1024 = new Array(CAP.chunks).fill('QQ==');
    cmp('compare-chunk-count-1024-accepted',
      'Exactly 1,024 chunks (the cap) are accepted; 1,024 one-byte chunks equal a single 1,024-byte chunk.',
      { body: pair({ chunks: chunks1024 }, art(new Uint8Array(1024).fill(0x41))), expectCode: 'report' });
    pre('precheck-chunk-count-1024-accepted',
      'Exactly 1,024 reference chunks (the cap) are assessable on the pre-check.',
      { body: pair(okArt, { chunks: new Array(CAP.chunks).fill('') }), expectCode: 'precheck' });
    cmp('compare-chunk-count-1025-streamed-refused',
      'A streamed_capture of 1,025 chunks (one over the cap) is refused chunk_count_cap with the cap and the count.',
      { body: pair({ chunks: new Array(CAP.chunks + 1).fill('QQ==') }, okArt), expectCode: 'chunk_count_cap' });
    pre('precheck-chunk-count-1025-reference-refused',
      'A reference_output of 1,025 empty chunks is refused chunk_count_cap on the pre-check.',
      { body: pair(okArt, { chunks: new Array(CAP.chunks + 1).fill('') }), expectCode: 'chunk_count_cap' });
    cmp('compare-order-reference-chunk-count-beats-streamed-chunk-bytes',
      'A streamed chunk over the chunk cap and a reference_output over the chunk-count cap are refused chunk_count_cap on reference_output, the earlier rule.',
      { body: pair(art(rng.bytes(CAP.chunk + 1)), { chunks: new Array(CAP.chunks + 1).fill('') }), expectCode: 'chunk_count_cap' });
  }

  // ------------------------------------------------------------ chunk_bytes_cap

  {
    const full = rng.bytes(CAP.chunk);
    const other = full.slice();
    other[40000] ^= 0x01;
    cmp('compare-chunk-bytes-65536-accepted',
      'A single chunk of exactly 65,536 decoded bytes (the cap) is accepted and compared against the same bytes in four chunks with one byte changed.',
      { body: pair(art(full), art(...splitEvery(other, 16384))), expectCode: 'report' });
    cmp('compare-chunk-bytes-65537-streamed-refused',
      'A streamed chunk of 65,537 decoded bytes (one over the cap) is refused chunk_bytes_cap with its index and decoded length.',
      { body: pair(art(rng.bytes(CAP.chunk + 1)), okArt), expectCode: 'chunk_bytes_cap' });
    pre('precheck-chunk-bytes-65537-reference-index-2-refused',
      'A reference chunk at index 2 decoding to 65,537 bytes is refused chunk_bytes_cap on the pre-check.',
      { body: pair(okArt, art('', A('x'), rng.bytes(CAP.chunk + 1))), expectCode: 'chunk_bytes_cap' });
    cmp('compare-order-reference-chunk-bytes-beats-streamed-artefact-bytes',
      'A streamed artefact over the artefact cap (in small chunks) and a reference chunk over the chunk cap are refused chunk_bytes_cap on reference_output, the earlier rule.',
      { body: pair(art(...splitEvery(rng.bytes(CAP.artefact + 1), 8192)), art(rng.bytes(CAP.chunk + 1))), expectCode: 'chunk_bytes_cap' });
  }

  // ------------------------------------------------------------ artefact_bytes_cap

  {
    const full = rng.bytes(CAP.artefact);
    cmp('compare-artefact-bytes-65536-accepted',
      'An artefact of exactly 65,536 decoded bytes (the cap) over several chunks is accepted and compared against a shorter prefix of itself.',
      { body: pair(art(...splitAt(full, [1, 30000, 30001, 65535])), art(full.slice(0, 100))), expectCode: 'report' });
    cmp('compare-artefact-bytes-65537-streamed-refused',
      'A streamed artefact of 65,537 decoded bytes over several chunks, none over the chunk cap, is refused artefact_bytes_cap with its decoded length.',
      { body: pair(art(...splitAt(concatBytes([full, Uint8Array.of(7)]), [20000, 40000, 60000])), okArt), expectCode: 'artefact_bytes_cap' });
    pre('precheck-artefact-bytes-65537-reference-refused',
      'A reference artefact of 65,537 decoded bytes over two chunks is refused artefact_bytes_cap on the pre-check.',
      { body: pair(okArt, art(full, Uint8Array.of(0xff))), expectCode: 'artefact_bytes_cap' });
  }

  // ------------------------------------------------------------ body_bytes_cap (host pre-gate)

  {
    const s = rng.bytes(CAP.artefact);
    const r = flip(s, [0, 1, 2, 65535]);
    const compact = JSON.stringify(pair(art(s), art(...splitEvery(r, 8192))));
    const n = utf8Length(compact);
    assert(n < CAP.body, 'body-cap base fits');
    const exact = compact + ' '.repeat(CAP.body - n);
    const over = exact + ' ';
    assert(utf8Length(exact) === CAP.body && utf8Length(over) === CAP.body + 1, 'body-cap sizes');
    cmp('compare-body-262144-bytes-accepted',
      'A request body of exactly 262,144 bytes (a compact object padded with spaces) passes the body cap and is compared.',
      { body_text: exact, expectCode: 'report' });
    cmp('compare-body-262145-bytes-refused',
      'A request body of 262,145 bytes (one over the cap) is refused 413 body_bytes_cap before parsing.',
      { body_text: over, expectCode: 'body_bytes_cap' });
    pre('precheck-body-262145-bytes-refused',
      'A pre-check body of 262,145 bytes is refused 413 body_bytes_cap by the host pre-gate.',
      { body_text: over, expectCode: 'body_bytes_cap' });
  }

  // ------------------------------------------------------------ uncovered op

  addCase(`/${service}/verify`, 'post-verify-not-covered',
    'A POST to an op the service does not offer answers 404 with the static body NOT COVERED.',
    { body: pair(okArt, okArt), expectCode: 'NOT COVERED' });

  return { cases };
}

// ---------------------------------------------------------------- self-tests

// The ANNEX's own examples, checked against this implementation before any
// case is written, and the refusal table checked against the ANNEX text.
function selfTest({ validate, compare, verdictLine, annexText }) {
  // A-4 strict base64.
  const dec = (s) => { const d = b64decodeStrict(s); return d === null ? null : [...d]; };
  assert(deepEqual(dec('QQ=='), [0x41]), 'QQ== valid');
  assert(dec('QR==') === null, 'QR== invalid');
  assert(deepEqual(dec(''), []), 'empty valid');
  for (const bad of ['QQ', '=', 'Q===', '====', 'QQ==QQ==', 'QUJD\n', 'ab-c', 'ab_c', 'QUJ=', 'QU JD', 'QUJD=']) {
    assert(dec(bad) === null, 'invalid base64 ' + JSON.stringify(bad));
  }
  for (let n = 0; n < 40; n++) {
    const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 37 + n) & 255);
    const enc = b64encode(bytes);
    assert(enc === Buffer.from(bytes).toString('base64'), 'encoder vs Buffer');
    assert(deepEqual(dec(enc), [...bytes]), 'round trip');
  }

  // A-3 example.
  const v = validate(JSON.parse('{"streamed_capture":{"chunks":["QQ==","QQ"]},"reference_output":{"chunks":[1]}}'));
  assert(v.error && v.error.code === 'chunk_not_string' && deepEqual(v.error.facts, { artefact: 'reference_output', chunk_index: 0 }), 'A-3 example');

  // A-5 example and the A-1 report example.
  const a5 = compare(ascii('abcd'), ascii('aXcdef'));
  assert(!a5.byteEqual && a5.first.offset === 1 && deepEqual(a5.spans, [{ start: 1, length: 1 }, { start: 4, length: 2 }]), 'A-5 example');
  const a1 = compare(ascii('abcdef'), ascii('abXdefgh'));
  assert(deepEqual(a1.spans, [{ start: 2, length: 1 }, { start: 6, length: 2 }]) && a1.first.offset === 2, 'A-1 example');
  const e = compare(new Uint8Array(0), ascii('xyz'));
  assert(e.first.offset === 0 && deepEqual(e.spans, [{ start: 0, length: 3 }]), 'A-5 empty vs non-empty');
  assert(compare(new Uint8Array(0), new Uint8Array(0)).byteEqual, 'A-5 two empty');

  // verdict line examples.
  const inst = '2026-11-29T15:47:22Z';
  const fill = (l) => l.replace('<check-end UTC>', inst);
  assert(fill(verdictLine(false, 2, 1, { state: 'OFFSET', offset: 2 }, 2)) ===
    'STREAM-CAPTURE DIVERGENCE — byte-equal: NO · streamed chunks: 2 · reference chunks: 1 · first divergence: 2 · differing spans: 2 — 2026-11-29T15:47:22Z', 'A-1 verdict');
  const a7 = fill(verdictLine(true, 3, 1, { state: 'NONE' }, 0));
  assert(a7 === 'STREAM-CAPTURE DIVERGENCE — byte-equal: YES · streamed chunks: 3 · reference chunks: 1 · first divergence: NONE · differing spans: 0 — 2026-11-29T15:47:22Z', 'A-7 verdict');
  assert(annexText.includes('`' + a7 + '`'), 'A-7 verdict line as printed in the ANNEX');

  // A-3 table: every code, status and message as the ANNEX prints them.
  const rows = [...annexText.matchAll(/^\| `([a-z_0-9]+)` \| (\d{3}) \| `([^`]+)` \|/gm)];
  assert(rows.length === Object.keys(REFUSALS).length, 'ANNEX refusal table row count');
  rows.forEach((m, i) => {
    const code = m[1];
    assert(Object.keys(REFUSALS)[i] === code, 'ANNEX refusal order ' + code);
    assert(REFUSALS[code].status === Number(m[2]) && REFUSALS[code].message === m[3], 'ANNEX refusal text ' + code);
  });
}

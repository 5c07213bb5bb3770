// Drives Debian's headless Chromium over a running host's GET /view and
// checks what a person would see. Input (stdin, JSON):
//   {"base": "http://127.0.0.1:PORT", "chromium": "/usr/bin/chromium",
//    "reports": [{"name": "...", "text": "<signed answer as served>"}],
//    "jwks": "<the host's /keys body>", "screenshots": "<dir or empty>"}
// Prints one line per check and exits 1 on the first failed report.
import { chromium } from 'playwright-core';
import { readFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

const input = JSON.parse(readFileSync(0, 'utf8'));
const failures = [];
const fail = (name, msg) => { failures.push(`${name}: ${msg}`); };

// Every family's fence, as their criteria word it (the page's own words
// must steer clear of all of them; the report's own text is exempt: it is
// the criteria's).
const FORBIDDEN = ['score', 'grade', 'quality', 'better', 'worse', 'good', 'bad', 'healthy', 'rotten', 'certified', 'degraded',
  'improved', 'pass', 'fail', 'band', 'because', 'likely', 'probably', 'abandoned', 'intended', 'estimated', 'verified', 'verify',
  'legitimate', 'leak detected', 'proves', 'no leak', 'integrity', 'reliable', 'correct', 'authoritative', 'winner'];

function pointer(doc, path) {
  if (path === '') return { ok: true, v: doc };
  let v = doc;
  for (const raw of path.slice(1).split('/')) {
    const k = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (v === null || typeof v !== 'object' || !(k in v)) return { ok: false };
    v = v[k];
  }
  return { ok: true, v };
}
function display(v) {
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && v.length === 0) return '[]';
  if (v !== null && typeof v === 'object' && Object.keys(v).length === 0) return '{}';
  return JSON.stringify(v);
}
function leaves(v, path, out) {
  const empty = (Array.isArray(v) && v.length === 0) || (v !== null && typeof v === 'object' && Object.keys(v).length === 0);
  if (v === null || typeof v !== 'object' || empty) { out.push(path); return out; }
  for (const k of Object.keys(v)) leaves(v[k], path + '/' + String(k).replace(/~/g, '~0').replace(/\//g, '~1'), out);
  return out;
}

const browser = await chromium.launch({
  executablePath: input.chromium,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
const viewURL = input.base + '/view';
const keysURL = input.base + '/keys';

// open loads the page in a fresh context and records every request it
// makes and every error it logs (a CSP violation is one).
async function open(name) {
  const ctx = await browser.newContext({ viewport: { width: 1200, height: 1000 }, deviceScaleFactor: 1 });
  const page = await ctx.newPage();
  const requests = [];
  const errors = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  const resp = await page.goto(viewURL);
  if (!resp || resp.status() !== 200) fail(name, `GET /view answered ${resp && resp.status()}`);
  return { ctx, page, requests, errors };
}
async function show(page, text, jwks) {
  if (jwks !== undefined) {
    await page.check('input[name="keys"][value="pasted"]');
    await page.fill('#jwks', jwks);
  }
  await page.fill('#answer', text);
  await page.click('#show');
  await ready(page);
  return verdict(page);
}
const ready = (page) => page.waitForFunction(() => document.body.dataset.ready && document.body.dataset.ready !== '');
async function verdict(page) {
  return {
    verdict: await page.textContent('#verdict'),
    kid: await page.textContent('#kid'),
    why: await page.textContent('#why'),
  };
}
// drop drops the answer on the page as a file, as a person dragging it
// from their file manager would.
async function drop(page, text) {
  const dt = await page.evaluateHandle((t) => {
    const d = new DataTransfer();
    d.items.add(new File([t], 'report.json', { type: 'application/json' }));
    return d;
  }, text);
  await page.evaluate(() => { document.body.dataset.ready = ''; });
  await page.dispatchEvent('body', 'drop', { dataTransfer: dt });
  await ready(page);
  return verdict(page);
}
// choose picks the answer's file with the page's file input.
async function choose(page, text) {
  await page.evaluate(() => { document.body.dataset.ready = ''; });
  await page.setInputFiles('#file', { name: 'report.json', mimeType: 'application/json', buffer: Buffer.from(text) });
  await ready(page);
  return verdict(page);
}
function checkRequests(name, requests, allowKeys) {
  for (const u of requests) {
    if (u === viewURL) continue;
    if (allowKeys && u === keysURL) continue;
    fail(name, `the page requested ${u}`);
  }
}

for (const rep of input.reports) {
  const name = rep.name;
  const answer = JSON.parse(rep.text);
  const { ctx, page, requests, errors } = await open(name);
  const got = await drop(page, rep.text);
  if ((await page.inputValue('#answer')) !== rep.text) fail(name, 'the dropped file is not what the text box shows');
  if (got.verdict !== 'VALID') fail(name, `verdict ${got.verdict} (${got.why}), want VALID`);
  if (got.kid !== answer.signature.key_id) fail(name, `key id ${got.kid}, want ${answer.signature.key_id}`);
  if (input.screenshots && rep.shot) {
    mkdirSync(input.screenshots, { recursive: true });
    // the context record's page from its top; the others from their
    // signature box down to their first tables
    await page.setViewportSize({ width: 1100, height: 800 });
    await page.evaluate((top) => (top ? window.scrollTo(0, 0) : document.getElementById('signature').scrollIntoView()), answer.service === 'context-audit');
    await page.screenshot({ path: join(input.screenshots, `view-${answer.service}.png`) });
    if (answer.service === 'context-audit') {
      for (const [id, file] of [['F-1', 'composition'], ['F-3', 'distribution']]) {
        const ok = await page.evaluate((id) => {
          const e = [...document.querySelectorAll('h3 .v')].find((x) => x.textContent === id);
          if (e) e.scrollIntoView();
          return !!e;
        }, id);
        if (ok) await page.screenshot({ path: join(input.screenshots, `view-${answer.service}-${file}.png`) });
      }
    }
  }
  // open every truncated list, then read every figure the page drew
  while (await page.locator('button.more').count()) await page.locator('button.more').first().click();
  const drawn = await page.$$eval('[data-path]', (es) => es.map((e) => [e.dataset.path, e.textContent]));
  const seen = new Set();
  for (const [path, shown] of drawn) {
    const r = pointer(answer, path);
    if (!r.ok) { fail(name, `the page drew ${path}, which the answer does not have`); continue; }
    if (shown !== display(r.v)) fail(name, `${path} drawn as ${JSON.stringify(shown)}, the answer says ${JSON.stringify(display(r.v))}`);
    seen.add(path);
  }
  const all = leaves(answer, '', []);
  const missing = all.filter((p) => !seen.has(p));
  if (missing.length) fail(name, `${missing.length} of ${all.length} members not drawn, first ${missing.slice(0, 5).join(' ')}`);
  const chrome = await page.evaluate(() => {
    const c = document.body.cloneNode(true);
    for (const e of c.querySelectorAll('[data-path], .k, textarea, script, style')) e.remove();
    return c.textContent.toLowerCase();
  });
  for (const w of FORBIDDEN) if (chrome.includes(w)) fail(name, `the page's own words include "${w}"`);
  if (await page.isVisible('#report p.status')) fail(name, 'a VALID answer carries the unchecked-figures notice');
  checkRequests(name, requests, true);
  if (!requests.includes(keysURL)) fail(name, 'the page did not read /keys');
  if (errors.length) fail(name, `the page logged errors: ${errors.join(' | ')}`);
  console.log(`${name}: ${got.verdict} ${got.kid}; ${drawn.length} figures drawn, ${all.length} members, requests ${requests.length}`);

  // one changed member: INVALID, and the page says so above the figures
  const tampered = JSON.parse(rep.text);
  tampered.issued_at = '2001-01-01T00:00:00Z';
  const t = await choose(page, JSON.stringify(tampered));
  if (t.verdict !== 'INVALID') fail(name, `tampered answer: verdict ${t.verdict}, want INVALID`);
  if (t.kid !== answer.signature.key_id) fail(name, `tampered answer: key id ${t.kid}`);
  if (!(await page.isVisible('#report p.status'))) fail(name, 'a tampered answer is drawn without the unchecked-figures notice');
  console.log(`${name} tampered: ${t.verdict} (${t.why})`);
  await ctx.close();

  // a pasted key set: the same verdict and no request but the page itself
  const p = await open(name + ' pasted keys');
  const pk = await show(p.page, rep.text, input.jwks);
  if (pk.verdict !== 'VALID') fail(name, `pasted key set: verdict ${pk.verdict} (${pk.why})`);
  checkRequests(name + ' pasted keys', p.requests, false);
  const other = await show(p.page, rep.text, JSON.stringify({ keys: [] }));
  if (other.verdict !== 'INVALID') fail(name, `a key set without its key: verdict ${other.verdict}`);
  if (p.errors.length) fail(name, `the page logged errors: ${p.errors.join(' | ')}`);
  console.log(`${name} pasted keys: ${pk.verdict}; empty key set: ${other.verdict}; requests ${p.requests.length}`);
  await p.ctx.close();
}
await browser.close();
if (failures.length) {
  for (const f of failures) console.log('FAIL ' + f);
  process.exit(1);
}
console.log('ok');

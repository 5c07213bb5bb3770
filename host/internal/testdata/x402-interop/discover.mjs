// discover.mjs: reads a route's 402 as an x402 discovery service would,
// with the official @x402/extensions package (nobody's code here): decode
// PAYMENT-REQUIRED, check the bazaar extension with
// validateDiscoveryExtension and validateDiscoveryExtensionSpec, and
// extract the listing with extractDiscoveryInfo from the payload a client
// would echo (resource and extensions copied, as @x402/core's client does).
// Prints one JSON object; exit 1 on a transport failure.
import { validateDiscoveryExtension, validateDiscoveryExtensionSpec, extractDiscoveryInfo } from '@x402/extensions/bazaar';

const url = process.argv[2];
const body = process.argv[3];
const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
const header = res.headers.get('PAYMENT-REQUIRED');
if (res.status !== 402 || !header) {
  console.log(JSON.stringify({ status: res.status, header: !!header }));
  process.exit(1);
}
const pr = JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
const ext = pr.extensions && pr.extensions.bazaar;
const payload = { x402Version: 2, resource: pr.resource, accepted: pr.accepts[0], payload: {}, extensions: pr.extensions };
let discovered = null;
let error = null;
try {
  discovered = extractDiscoveryInfo(payload, pr.accepts[0], true);
} catch (e) {
  error = String(e && e.message || e);
}
console.log(JSON.stringify({
  status: res.status,
  resource: pr.resource,
  hasBazaar: !!ext,
  valid: ext ? validateDiscoveryExtension(ext) : null,
  spec: ext ? validateDiscoveryExtensionSpec(ext) : null,
  discovered,
  error,
}));

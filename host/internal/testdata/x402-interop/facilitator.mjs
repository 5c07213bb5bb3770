#!/usr/bin/env node
// The official x402 facilitator (@x402/core x402Facilitator with
// @x402/svm's exact scheme, 2.27.0) behind HTTP on 127.0.0.1, so the
// host's tests can use it as the remote facilitator a seller would run:
// the host's Go client talks to it over the wire, and it settles on
// whatever Solana JSON-RPC node --rpc names (the tests' LiteSVM).
//
// Usage:
//   node facilitator.mjs --fee-payer <keypair file> --rpc <JSON-RPC url> [--port N]
//
// --port 0 (the default) takes any free port; a test restarting the
// facilitator passes the port it had, so a running host keeps its URL.
// Prints `listening <port>` once ready; runs until its standard input
// closes (its test ends) or SIGTERM/SIGINT.
//
// HTTP, as the official example facilitator answers (and as
// @x402/core's HTTPFacilitatorClient expects): GET /supported, POST
// /verify and POST /settle with {x402Version, paymentPayload,
// paymentRequirements}. A verdict, valid or not, is 200 with the
// facilitator's own answer ({isValid, invalidReason?, payer?} or
// {success, errorReason?, transaction, network, payer?}); a request
// missing paymentPayload or paymentRequirements is 400 {error}; anything
// the facilitator throws is 500 {error}.

import http from "node:http";
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";

import { createKeyPairSignerFromBytes } from "@solana/kit";
import { x402Facilitator } from "@x402/core/facilitator";
import { toFacilitatorSvmSigner } from "@x402/svm";
import { registerExactSvmScheme } from "@x402/svm/exact/facilitator";

const DEVNET = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";

function fail(msg) {
  process.stderr.write(`facilitator.mjs: ${msg}\n`);
  process.exit(2);
}

let args;
try {
  ({ values: args } = parseArgs({
    options: { "fee-payer": { type: "string" }, rpc: { type: "string" }, port: { type: "string", default: "0" } },
    strict: true,
  }));
} catch (err) {
  fail(err.message);
}
if (!args["fee-payer"] || !args.rpc) fail("usage: --fee-payer <keypair file> --rpc <url> [--port N]");
const port = Number(args.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port ${args.port}: expected 0..65535`);

let signer;
try {
  // a Solana CLI keypair file, as the host's wallet files are
  signer = await createKeyPairSignerFromBytes(Uint8Array.from(JSON.parse(await readFile(args["fee-payer"], "utf8"))));
} catch (err) {
  fail(`${args["fee-payer"]}: ${err.message}`);
}

// defaultRpcUrl: the scheme builds its own client for the network, on
// this node instead of the public devnet one
const official = toFacilitatorSvmSigner(signer, { defaultRpcUrl: args.rpc });
const facilitator = new x402Facilitator();
registerExactSvmScheme(facilitator, { signer: official, networks: DEVNET });

// bigint never reaches the answers today; a JSON.stringify that throws on
// one would turn a verdict into a dropped connection
const json = (v) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? x.toString() : x));

function answer(res, status, body) {
  const text = json(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

async function readJSON(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

const server = http.createServer(async (req, res) => {
  const path = new URL(req.url, "http://127.0.0.1").pathname;
  try {
    if (req.method === "GET" && path === "/supported") return answer(res, 200, facilitator.getSupported());
    if (req.method !== "POST" || (path !== "/verify" && path !== "/settle")) {
      return answer(res, 404, { error: `no route ${req.method} ${path}` });
    }
    let body;
    try {
      body = await readJSON(req);
    } catch {
      return answer(res, 400, { error: "the body is not JSON" });
    }
    const { paymentPayload, paymentRequirements } = body ?? {};
    if (!paymentPayload || !paymentRequirements) {
      return answer(res, 400, { error: "Missing paymentPayload or paymentRequirements" });
    }
    const verdict =
      path === "/verify"
        ? await facilitator.verify(paymentPayload, paymentRequirements)
        : await facilitator.settle(paymentPayload, paymentRequirements);
    return answer(res, 200, verdict);
  } catch (err) {
    // the test reads the facilitator's stderr when something is off
    process.stderr.write(`facilitator.mjs: ${req.method} ${path}: ${err?.stack ?? err}\n`);
    return answer(res, 500, { error: err instanceof Error ? err.message : String(err) });
  }
});

function stop() {
  // an in-flight settle is abandoned: a test kills the facilitator only
  // between requests, and a killed one must not linger on its port
  server.closeAllConnections();
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();

server.listen(port, "127.0.0.1", () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
server.on("error", (err) => fail(`listen on 127.0.0.1:${port}: ${err.message}`));

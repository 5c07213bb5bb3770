#!/usr/bin/env node
// Interop client: calls an Assay service as MCP tools using ONLY the
// official packages: the MCP TypeScript SDK (@modelcontextprotocol/sdk)
// for the protocol, and the official x402 client (@x402/core's x402Client
// with @x402/svm's ExactSvmScheme) to pay, following x402's MCP transport
// (coinbase/x402 specs/transports-v2/mcp.md).
//
// Setup (Node >= 20.18): cd host/internal/testdata/x402-interop && npm ci
//
// Usage, a host's /mcp (Streamable HTTP), paying with the official client:
//   node mcp.mjs --url <host>/mcp --service <name> --op <op> --body <json file> \
//                --wallet <keypair file> --rpc <JSON-RPC http url>
// Usage, a local stdio server that pays by itself (`assay mcp`):
//   node mcp.mjs --command <program> --service <name> --op <op> --body <json file> \
//                --args <the program's arguments...>
// Everything after --args is the program's arguments, as they are.
//
// The flow: tools/list; the free tool <service>_precheck with the body;
// then the paid tool <service>_<op> with the body. Over --url the first
// paid call carries no payment: its result must be x402's payment-required
// result, whose PaymentRequired is looked for as the spec's client
// requirements order it (structuredContent, structuredContent["x402/error"]
// .data, then content[0].text: a PaymentRequired or the x402/error
// wrapper); the official client builds the PaymentPayload for it and the
// call is made again with it in _meta["x402/payment"]. Over --command the
// paid tool is called once (the server pays).
//
// The MCP SDK checks each tool's outputSchema (compiled at tools/list) and
// every structuredContent against it (tools/call), and throws when one
// fails. Here the checks are the SDK's own validator's
// (AjvJsonSchemaValidator, given through the Client's jsonSchemaValidator
// option) but a failure is recorded in schemaErrors instead of thrown, so
// that one run shows every check the official client would have stopped
// at, and what the calls after it gave. A non-empty schemaErrors is a
// client that stopped; a schema that does not compile is not checked
// further.
//
// Tool names are the service's and op's with "-" and "/" as "_".
// --wallet is a Solana CLI keypair file (a JSON array of 64 numbers);
// --rpc is given to ExactSvmScheme as rpcUrl. The client's spend controls
// stay at their defaults (USDC on mainnet and devnet, at most $1 a payment).
//
// stdout: exactly one line of JSON
//   {"tools": [names], "precheck": <result>, "unpaid": <result or null>,
//    "paymentRequired": <PaymentRequired or null>,
//    "paymentRequiredFrom": "structuredContent" | "structuredContent.x402/error"
//                           | "content[0].text" | "content[0].text.x402/error" | null,
//    "wrapped": <content[0].text of the unpaid result, parsed, or null>,
//    "paid": <result>, "paymentResponse": <paid._meta["x402/payment-response"] or null>,
//    "schemaErrors": [{"at": <the step and tool>, "error": <the SDK validator's words>}]}
// where a <result> is {"isError", "structuredContent", "text" (content[0].text),
// "meta" (_meta)}.
// Exit 0 when every call was answered (whatever the answers said); exit 1
// with a short message on stderr when the client threw, including when the
// unpaid call's result carries no PaymentRequired; exit 2 on bad
// command-line arguments or unreadable input files.

import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";

import { createKeyPairSignerFromBytes } from "@solana/kit";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { x402Client } from "@x402/core/client";
import { ExactSvmScheme } from "@x402/svm/exact/client";

const META_PAYMENT = "x402/payment";
const META_PAYMENT_RESPONSE = "x402/payment-response";
const ERROR_WRAPPER = "x402/error";

function fail(code, msg) {
  process.stderr.write(`mcp.mjs: ${msg}\n`);
  process.exit(code);
}

// everything after --args is the program's own
const argv = process.argv.slice(2);
const cut = argv.indexOf("--args");
const own = cut < 0 ? argv : argv.slice(0, cut);
const programArgs = cut < 0 ? [] : argv.slice(cut + 1);

let args;
try {
  ({ values: args } = parseArgs({
    args: own,
    options: {
      url: { type: "string" },
      command: { type: "string" },
      service: { type: "string" },
      op: { type: "string" },
      body: { type: "string" },
      wallet: { type: "string" },
      rpc: { type: "string" },
    },
    strict: true,
  }));
} catch (err) {
  fail(2, err.message);
}
if (!args.url === !args.command) fail(2, "give one of --url and --command");
for (const k of ["service", "op", "body", ...(args.url ? ["wallet", "rpc"] : [])]) {
  if (!args[k]) fail(2, `missing --${k}`);
}
if (args.command && (args.wallet || args.rpc)) fail(2, "--wallet and --rpc are for --url: the --command server pays by itself");
if (args.url && cut >= 0) fail(2, "--args is for --command");

const toolName = (service, op) => `${service}_${op}`.replace(/[-/]/g, "_");
const precheckTool = toolName(args.service, "precheck");
const paidTool = toolName(args.service, args.op);

let body;
let secret;
try {
  body = JSON.parse(await readFile(args.body, "utf8"));
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new Error(`${args.body}: a tool's arguments are a JSON object`);
  }
  if (args.wallet) {
    const arr = JSON.parse(await readFile(args.wallet, "utf8"));
    if (!Array.isArray(arr) || arr.length !== 64 || !arr.every((n) => Number.isInteger(n) && n >= 0 && n <= 255)) {
      throw new Error(`${args.wallet}: expected a JSON array of 64 byte values`);
    }
    secret = Uint8Array.from(arr);
  }
} catch (err) {
  fail(2, err.message);
}

// a tool result as the test reads it
function summary(result) {
  const first = result.content?.[0];
  return {
    isError: result.isError === true,
    structuredContent: result.structuredContent ?? null,
    text: first?.type === "text" ? first.text : null,
    meta: result._meta ?? null,
  };
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const isPaymentRequired = (v) => isObject(v) && typeof v.x402Version === "number" && Array.isArray(v.accepts);

// The PaymentRequired in a tool result, in the order the spec's client
// requirements give, and where it was found.
function paymentRequiredOf(result) {
  const sc = result.structuredContent;
  if (isPaymentRequired(sc)) return { from: "structuredContent", pr: sc };
  if (isObject(sc) && isPaymentRequired(sc[ERROR_WRAPPER]?.data)) {
    return { from: `structuredContent.${ERROR_WRAPPER}`, pr: sc[ERROR_WRAPPER].data };
  }
  const first = result.content?.[0];
  if (first?.type === "text") {
    let parsed;
    try {
      parsed = JSON.parse(first.text);
    } catch {
      return null;
    }
    if (isPaymentRequired(parsed)) return { from: "content[0].text", pr: parsed };
    if (isObject(parsed) && isPaymentRequired(parsed[ERROR_WRAPPER]?.data)) {
      return { from: `content[0].text.${ERROR_WRAPPER}`, pr: parsed[ERROR_WRAPPER].data };
    }
  }
  return null;
}

function parsedText(result) {
  const first = result.content?.[0];
  if (first?.type !== "text") return null;
  try {
    return JSON.parse(first.text);
  } catch {
    return null;
  }
}

// the step under way, for the schema errors' "at"
let step = "connect";
const schemaErrors = [];
// output schemas that did not compile, named by their tool after tools/list
const uncompiled = [];

// The SDK's own validator, its failures recorded rather than thrown.
class RecordingValidator {
  constructor() {
    this.sdk = new AjvJsonSchemaValidator();
  }
  getValidator(schema) {
    let check;
    try {
      check = this.sdk.getValidator(schema);
    } catch (err) {
      uncompiled.push({ schema, error: err?.message ?? String(err) });
      return (input) => ({ valid: true, data: input, errorMessage: undefined });
    }
    return (input) => {
      const r = check(input);
      if (!r.valid) schemaErrors.push({ at: step, error: `the structuredContent does not match the tool's outputSchema: ${r.errorMessage}` });
      return { valid: true, data: input, errorMessage: undefined };
    };
  }
}

const client = new Client({ name: "assay-interop-mcp", version: "0.0.0" }, { jsonSchemaValidator: new RecordingValidator() });
const transport = args.url
  ? new StreamableHTTPClientTransport(new URL(args.url))
  : new StdioClientTransport({ command: args.command, args: programArgs, stderr: "inherit" });

let out;
try {
  await client.connect(transport);

  step = "tools/list";
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...page.tools.map((t) => t.name));
    for (const { schema, error } of uncompiled.splice(0)) {
      const tool = page.tools.find((t) => t.outputSchema === schema);
      schemaErrors.push({ at: `tools/list ${tool?.name ?? "(a tool)"}`, error: `the outputSchema does not compile: ${error}` });
    }
    cursor = page.nextCursor;
  } while (cursor);

  step = `tools/call ${precheckTool}`;
  const precheck = await client.callTool({ name: precheckTool, arguments: body });

  out = { tools, precheck: summary(precheck), unpaid: null, paymentRequired: null, paymentRequiredFrom: null, wrapped: null, schemaErrors };
  let meta;
  if (args.url) {
    step = `tools/call ${paidTool} without a payment`;
    const unpaid = await client.callTool({ name: paidTool, arguments: body });
    out.unpaid = summary(unpaid);
    out.wrapped = parsedText(unpaid);
    const found = paymentRequiredOf(unpaid);
    if (!unpaid.isError || found === null) {
      throw new Error(`the unpaid call's result is not x402's payment-required result: ${JSON.stringify(out.unpaid)}`);
    }
    out.paymentRequired = found.pr;
    out.paymentRequiredFrom = found.from;

    step = "the official x402 client's payment";
    // Rejects a keypair whose last 32 bytes are not the seed's public key.
    const signer = await createKeyPairSignerFromBytes(secret);
    const payer = new x402Client();
    // as pay.mjs: registered directly so that rpcUrl is used; "solana:*"
    // covers mainnet, devnet and testnet
    payer.register("solana:*", new ExactSvmScheme(signer, { rpcUrl: args.rpc }));
    meta = { [META_PAYMENT]: await payer.createPaymentPayload(found.pr) };
  }

  step = `tools/call ${paidTool}${meta ? " with the payment" : ""}`;
  const paid = await client.callTool({ name: paidTool, arguments: body, ...(meta ? { _meta: meta } : {}) });
  out.paid = summary(paid);
  out.paymentResponse = paid._meta?.[META_PAYMENT_RESPONSE] ?? null;
} catch (err) {
  const cause = err?.cause ? ` (cause: ${err.cause.message ?? err.cause})` : "";
  try {
    await client.close();
  } catch {
    // the failure above is the one to tell
  }
  const seen = schemaErrors.length ? `; before that, the SDK's schema checks failed: ${JSON.stringify(schemaErrors)}` : "";
  fail(1, `${step}: ${err?.message ?? err}${cause}${seen}`);
}

await client.close();
process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(0));

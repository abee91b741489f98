// Time the OpenClaw plugin's hooks in-process, against a real `memoryclaw serve --stdio`.
//
//   node bench/openclaw_hooks.mjs --python PYTHON --vault VAULT [--calls 200]
//
// Registers plugins/openclaw/index.js against a minimal stand-in for OpenClaw's plugin api,
// then times what OpenClaw awaits on each agent turn: `before_prompt_build` (recall) and
// `agent_end` (capture of one user + assistant exchange).  The first pair of calls starts the
// Python server, as the first turn of every `openclaw agent --local` process does; then
// `--calls` more turns run against the warm server.  Prints one JSON object (times in ms).
// Run by bench/bench_openclaw.py.
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";

import plugin from "../plugins/openclaw/index.js";

const QUERIES = [
  "What is my dentist's phone number?",
  "when is the projectX deadline",
  "flight to Lisbon",
  "what did I email John about",
  "that budget conversation with marketing",
];
const REPLY = "Your dentist, Brightsmile Dental, is on 020 7946 0321.";

const { values } = parseArgs({
  options: {
    python: { type: "string" },
    vault: { type: "string" },
    calls: { type: "string", default: "200" },
    session: { type: "string", default: "agent:main:explicit:bench-hooks" },
  },
});
if (!values.python || !values.vault) {
  console.error("usage: node bench/openclaw_hooks.mjs --python PYTHON --vault VAULT [--calls N]");
  process.exit(2);
}
const calls = Number.parseInt(values.calls, 10);

const warnings = [];
const hooks = {};
const api = {
  id: "memoryclaw",
  pluginConfig: { vaultPath: values.vault, pythonCommand: values.python },
  logger: { warn: (m) => warnings.push(m), info() {}, debug() {}, error: (m) => warnings.push(m) },
  on(name, handler) {
    hooks[name] = handler;
  },
  registerTool() {},
};
const registerStarted = performance.now();
plugin.register(api);
const registerMs = performance.now() - registerStarted;

const ctx = { sessionKey: values.session, sessionId: values.session, agentId: "main" };

async function recall(i) {
  const prompt = QUERIES[i % QUERIES.length];
  const started = performance.now();
  const out = await hooks.before_prompt_build({ prompt, messages: [] }, ctx);
  const ms = performance.now() - started;
  return { ms, block: typeof out?.prependContext === "string" && out.prependContext.startsWith("<memoryclaw>") };
}

async function capture(i) {
  const now = Date.now();
  const messages = [
    { role: "user", content: [{ type: "text", text: QUERIES[i % QUERIES.length] }], timestamp: now },
    { role: "assistant", content: [{ type: "text", text: REPLY }], timestamp: now + 1 },
  ];
  const started = performance.now();
  await hooks.agent_end({ messages, success: true }, ctx);
  return performance.now() - started;
}

const first = await recall(0);
const firstCapture = await capture(0);
const recallMs = [];
const captureMs = [];
const turnMs = [];
let blocks = 0;
for (let i = 1; i <= calls; i++) {
  const r = await recall(i);
  const c = await capture(i);
  recallMs.push(r.ms);
  captureMs.push(c);
  turnMs.push(r.ms + c);
  if (r.block) blocks += 1;
}

console.log(
  JSON.stringify({
    node: process.version,
    registerMs,
    firstRecallMs: first.ms,
    firstRecallBlock: first.block,
    firstCaptureMs: firstCapture,
    recallMs,
    captureMs,
    turnMs,
    blocks,
    warnings,
  }),
);
process.exit(0); // the plugin's exit handler stops the server

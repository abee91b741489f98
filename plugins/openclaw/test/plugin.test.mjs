// Tests of the plugin against a real `memoryclaw serve --stdio`, with a recording stand-in
// for OpenClaw's plugin api.  Run by tests/test_openclaw_plugin.py:
//   MEMORYCLAW_PYTHON=... MEMORYCLAW_TEST_VAULT=... node --test plugins/openclaw/test/
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import plugin, { bridgeFor, markLogged, resolveOptions, searchResult, serverArgs, turnsOf, unloggedTurns, workspaceOrigin } from "../index.js";
import { MemoryclawBridge } from "../bridge.js";

const python = process.env.MEMORYCLAW_PYTHON;
const vault = process.env.MEMORYCLAW_TEST_VAULT;

const MAIN = { agentId: "main", sessionKey: "agent:main:main" };
const GROUP = { agentId: "main", sessionKey: "agent:main:telegram:group:-1001", channel: "telegram" };

function fakeApi(pluginConfig) {
  const api = {
    pluginConfig,
    hooks: {},
    factories: {},
    capabilities: [],
    warnings: [],
    logger: { warn: (m) => api.warnings.push(m), info() {}, debug() {}, error() {} },
    on(name, handler) {
      api.hooks[name] = handler;
    },
    // OpenClaw calls each factory with the run's context, as in the main agent's session here
    registerTool(factory, opts) {
      for (const name of opts.names) api.factories[name] = factory;
    },
    registerMemoryCapability(capability) {
      api.capabilities.push(capability);
    },
    toolsFor(ctx) {
      return Object.fromEntries(Object.entries(api.factories).map(([n, f]) => [n, f(ctx)]));
    },
    get tools() {
      return api.toolsFor(MAIN);
    },
  };
  plugin.register(api);
  return api;
}

function logTexts(session) {
  const folder = join(vault, "logs");
  return readdirSync(folder)
    .filter((name) => name.endsWith(".md"))
    .map((name) => readFileSync(join(folder, name), "utf8"))
    .filter((text) => text.includes(`session: ${session}`) || text.includes(`session: '${session}'`));
}

test("recall prepends the memoryclaw block with the matching fact", async () => {
  const api = fakeApi({ vaultPath: vault, pythonCommand: python });
  const out = await api.hooks.before_prompt_build(
    { prompt: "What is my dentist's phone number?", messages: [] },
    { sessionKey: "agent:main:main" },
  );
  assert.match(out.prependContext, /^<memoryclaw>/);
  assert.match(out.prependContext, /020 7946 0321/);
  assert.deepEqual(api.warnings, []);
});

test("agent_end logs the last exchange, tool calls included, under the session key", async () => {
  const api = fakeApi({ vaultPath: vault, pythonCommand: python });
  const messages = [
    { role: "user", content: [{ type: "text", text: "old question" }], timestamp: 1 },
    { role: "assistant", content: [{ type: "text", text: "old answer" }], timestamp: 2 },
    { role: "user", content: [{ type: "text", text: "Where is the Falcon brief?" }], timestamp: 1795328326510 },
    {
      role: "assistant",
      content: [{ type: "toolCall", id: "c1", name: "memory_search", arguments: { query: "Falcon brief" } }],
      timestamp: 1795328326520,
    },
    { role: "toolResult", toolCallId: "c1", toolName: "memory_search", content: [{ type: "text", text: "{\"results\": []}" }] },
    { role: "assistant", content: [{ type: "text", text: "In the shared drive." }], timestamp: 1795328326558 },
  ];
  await api.hooks.agent_end({ messages, success: true }, { sessionKey: "agent:main:plugin-test", agentId: "main", channel: "telegram" });
  const [log] = logTexts("agent:main:plugin-test");
  assert.ok(log, "a raw log for the session exists");
  assert.match(log, /Where is the Falcon brief\?/);
  assert.match(log, /In the shared drive\./);
  assert.match(log, /memory_search/);
  assert.doesNotMatch(log, /old question/);
  assert.match(log, /channel: telegram/);
  assert.deepEqual(api.warnings, []);
});

test("memory_search and memory_get answer in OpenClaw's shapes", async () => {
  const api = fakeApi({ vaultPath: vault, pythonCommand: python });
  const found = await api.tools.memory_search.execute("t1", { query: "dentist phone", maxResults: 3 });
  const { results, provider } = found.details;
  assert.equal(provider, "memoryclaw");
  assert.ok(results.length > 0 && results.length <= 3);
  for (const hit of results) {
    assert.equal(typeof hit.path, "string");
    assert.ok(Number.isInteger(hit.startLine) && Number.isInteger(hit.endLine));
    assert.equal(typeof hit.score, "number");
    assert.equal(typeof hit.snippet, "string");
    assert.equal(hit.source, "memory");
  }
  assert.deepEqual(JSON.parse(found.content[0].text), found.details);
  const read = await api.tools.memory_get.execute("t2", { path: results[0].path, from: 1, lines: 2 });
  assert.equal(read.details.status, "ok");
  assert.equal(read.details.text.split("\n").length, 2);
  const missing = await api.tools.memory_get.execute("t3", { path: "episodes/nope.md" });
  assert.equal(missing.details.status, "not_found");
  // the episode ids that recalled notes name open the episode's file
  const byId = await api.tools.memory_get.execute("t4", { path: "ep-20250408-143210-email-john" });
  assert.equal(byId.details.status, "ok");
  assert.equal(byId.details.path, "episodes/2025-04-08_14-32-10_email-john.md");
  assert.match(byId.details.text, /Recipient: John/);
  const noId = await api.tools.memory_get.execute("t5", { path: "ep-nope" });
  assert.equal(noId.details.status, "not_found");
});

test("a wrong python command fails open with a warning", async () => {
  const api = fakeApi({ vaultPath: vault, pythonCommand: "/nonexistent/python" });
  const out = await api.hooks.before_prompt_build({ prompt: "dentist" }, { sessionKey: "s" });
  assert.deepEqual(out, { prependContext: "(memoryclaw: recall unavailable this turn: not running)" });
  assert.match(api.warnings[0], /recall failed.*cannot start memoryclaw/);
  const found = await api.tools.memory_search.execute("t", { query: "dentist" });
  assert.equal(found.details.unavailable, true);
});

test("the bridge restarts a server that died", async () => {
  const bridge = new MemoryclawBridge({
    command: python,
    args: ["-m", "memoryclaw", "--vault", vault, "serve", "--stdio"],
    restartDelayMs: 0,
  });
  const first = await bridge.request("status", {}, 10000);
  const pid = bridge.pid;
  process.kill(pid, "SIGKILL");
  await new Promise((resolve) => setTimeout(resolve, 200));
  const second = await bridge.request("status", {}, 10000);
  assert.equal(second.episodes, first.episodes);
  assert.notEqual(bridge.pid, pid);
  assert.equal(bridge.starts, 2);
  bridge.close();
});

test("a turn holding half an emoji is logged, not refused", async () => {
  const bridge = bridgeFor(resolveOptions({ vaultPath: vault, pythonCommand: python }));
  const logged = await bridge.request(
    "log_turn",
    { session: "plugin-surrogate", role: "user", content: "pelican \ud83d" },
    10000,
  );
  assert.equal(logged.turn, 1);
  assert.ok(logTexts("plugin-surrogate").some((text) => text.includes("pelican \ufffd")));
});

test("an error response rejects only its own request", async () => {
  const bridge = bridgeFor(resolveOptions({ vaultPath: vault, pythonCommand: python }));
  await assert.rejects(bridge.request("no_such_method", {}, 10000), /unknown method/);
  const status = await bridge.request("status", {}, 10000);
  assert.ok(status.episodes > 0);
});

test("a run's later attempt logs only the turns its earlier attempts did not", () => {
  const user = { role: "user", content: "the engineer comes Thursday" };
  const reply = { role: "assistant", content: "Noted." };
  assert.deepEqual(unloggedTurns("run-a", [user]), [user]);
  markLogged("run-a", user);
  assert.deepEqual(unloggedTurns("run-a", [user]), []); // a failed attempt again
  assert.deepEqual(unloggedTurns("run-a", [user, reply]), [reply]);
  assert.deepEqual(unloggedTurns("run-b", [user]), [user]); // another run says it again
  assert.deepEqual(unloggedTurns(undefined, [user]), [user]);
});

test("turnsOf keeps only the last exchange and clips huge tool output", () => {
  const turns = turnsOf([
    { role: "user", content: "hi" },
    { role: "assistant", content: [{ type: "thinking", thinking: "x" }, { type: "text", text: "hello" }] },
    { role: "toolResult", toolName: "read", content: [{ type: "text", text: "y".repeat(10000) }] },
    { role: "user", content: [{ type: "image", data: "..." }, { type: "text", text: "look" }] },
  ]);
  assert.deepEqual(turns.map((t) => [t.role, t.content]), [["user", "[image]\nlook"]]);
  const clipped = turnsOf([
    { role: "user", content: "read it" },
    { role: "toolResult", toolName: "read", content: [{ type: "text", text: "y".repeat(10000) }] },
  ])[1];
  assert.ok(clipped.content.length < 4100 && clipped.content.endsWith("more chars]"));
});

test("turnsOf logs the tool OpenClaw's tool_call wrapper runs, with its own arguments", () => {
  const wrapped = { tool: { id: "openclaw:memoryclaw:memory_search", name: "memory_search" }, result: {} };
  const turns = turnsOf([
    { role: "user", content: "Search memory for my dentist." },
    {
      role: "assistant",
      content: [{ type: "toolCall", id: "c1", name: "tool_call", arguments: { id: "memory_search", args: { query: "dentist" } } }],
    },
    { role: "toolResult", toolCallId: "c1", toolName: "tool_call", content: [{ type: "text", text: JSON.stringify(wrapped, null, 2) }] },
    { role: "toolResult", toolCallId: "c2", toolName: "tool_call", content: [{ type: "text", text: "not JSON" }] },
  ]);
  assert.deepEqual(
    turns.slice(1).map((t) => [t.role, t.tool]),
    [["tool_call", "memory_search"], ["tool_result", "memory_search"], ["tool_result", "tool_call"]],
  );
  assert.deepEqual(JSON.parse(turns[1].content), { query: "dentist" });
});

test("searchResult honours maxResults and minScore on memoryclaw's 0-1 relevance", () => {
  const found = {
    facts: [
      { id: "f1", entity: "A", field: "b", value: "c", path: "semantic/x.md", line: 3, relevance: 1 },
      { id: "f2", entity: "A", field: "d", value: "e", path: "semantic/x.md", line: 4, relevance: 0.2 },
    ],
    results: [
      { id: "e1", path: "episodes/1.md", summary: "one", score: 9, relevance: 1 },
      { id: "e2", path: "episodes/2.md", summary: "two", score: 8, relevance: 0.4 },
    ],
  };
  assert.deepEqual(searchResult(found, { minScore: 0.5 }).results.map((r) => r.id), ["f1", "e1"]);
  assert.deepEqual(searchResult(found, { maxResults: 1 }).results.map((r) => r.id), ["f1"]);
});

test("searchResult keeps the turns of logs not yet consolidated, by relevance among episodes", () => {
  const found = {
    results: [
      { id: "e1", path: "episodes/1.md", summary: "one", score: 9, relevance: 1 },
      { id: "e2", path: "episodes/2.md", summary: "two", score: 3, relevance: 0.3 },
    ],
    recent: [
      { path: "logs/a_raw.md", turn: 2, speaker: "User", text: "the key is under the planter",
        score: 5, relevance: 0.8, origin: "owner", session: "agent:main:main", via: "log" },
    ],
  };
  const hits = searchResult(found).results;
  assert.deepEqual(hits.map((r) => r.id ?? r.path), ["e1", "logs/a_raw.md", "e2"]);
  assert.equal(hits[1].kind, "turn");
  assert.equal(hits[1].snippet, "User: the key is under the planter");
  assert.equal(hits[1].provenance.sessionKind, "interactive");
  assert.deepEqual(searchResult(found, { minScore: 0.9 }).results.map((r) => r.id), ["e1"]);
});

test("a trivial message gets no recall: thanks carries no memoryclaw block", async () => {
  const api = fakeApi({ vaultPath: vault, pythonCommand: python });
  const asked = await api.hooks.before_prompt_build({ prompt: "What is John's email?" }, MAIN);
  assert.match(asked.prependContext, /<memoryclaw>/);
  for (const prompt of ["thanks", "ok thanks, sounds great 👍", "lol"]) {
    assert.equal(await api.hooks.before_prompt_build({ prompt }, MAIN), undefined, prompt);
  }
});

test("loading the module again shares its servers and adds no exit listener", async () => {
  const listeners = process.listenerCount("exit");
  const again = await import("../index.js?instance=2");
  assert.equal(process.listenerCount("exit"), listeners);
  const options = resolveOptions({ vaultPath: vault, pythonCommand: python });
  assert.equal(again.bridgeFor(options), bridgeFor(options));
});

const DENTIST = "What is my dentist's phone number?";
const DENTIST_EPISODE = "episodes/2025-01-15_19-40-02_dentist-appointment.md";

test("a group session gets no owner-level memory from recall, tools or the host's search", async () => {
  const api = fakeApi({ vaultPath: vault, pythonCommand: python });
  const direct = await api.hooks.before_prompt_build({ prompt: DENTIST, messages: [] }, MAIN);
  assert.match(direct.prependContext, /020 7946 0321/);
  const group = await api.hooks.before_prompt_build({ prompt: DENTIST, messages: [] }, GROUP);
  assert.doesNotMatch(group?.prependContext ?? "", /020 7946 0321/);

  const tools = api.toolsFor(GROUP);
  const found = await tools.memory_search.execute("t1", { query: "dentist phone" });
  assert.equal(found.details.provider, "memoryclaw");
  assert.deepEqual(found.details.results, []);
  const mainFound = await api.tools.memory_search.execute("t2", { query: "dentist phone" });
  const hit = mainFound.details.results.find((r) => r.kind === "episode");
  assert.ok(hit, "the main session finds the dentist episode");
  const read = await tools.memory_get.execute("t3", { path: hit.path });
  assert.equal(read.details.status, "not_found");
  assert.equal((await api.tools.memory_get.execute("t4", { path: hit.path })).details.status, "ok");

  const [{ runtime }] = api.capabilities;
  const { manager } = await runtime.getMemorySearchManager({ agentId: "main" });
  const hits = await manager.search("dentist phone", { sessionKey: MAIN.sessionKey });
  assert.ok(hits.some((h) => /020 7946 0321/.test(h.snippet)));
  assert.deepEqual(await manager.search("dentist phone", { sessionKey: GROUP.sessionKey }), []);
  const authorize = (agentId, requesterSessionKey, list = hits) =>
    runtime.authorizeSearchHits({ cfg: {}, agentId, requesterSessionKey, sandboxed: false, hits: list });
  assert.deepEqual(await authorize("main", MAIN.sessionKey), hits);
  assert.deepEqual(await authorize("main", GROUP.sessionKey), []);
  // a hit without an id is judged by its file; a file that is not there is withheld
  const byPath = [{ path: DENTIST_EPISODE, startLine: 1, endLine: 1, score: 1, snippet: "", source: "memory" }];
  assert.deepEqual(await authorize("main", MAIN.sessionKey, byPath), byPath);
  assert.deepEqual(await authorize("main", GROUP.sessionKey, byPath), []);
  const nowhere = [{ ...byPath[0], path: "episodes/nope.md" }];
  assert.deepEqual(await authorize("main", MAIN.sessionKey, nowhere), []);
  assert.deepEqual(api.warnings, []);
});

test("agent_end logs the agent, the group and who wrote the user turn", async () => {
  const api = fakeApi({ vaultPath: vault, pythonCommand: python });
  const messages = [
    { role: "user", content: [{ type: "text", text: "My locker code is 4417." }], timestamp: 1795328326510 },
    { role: "assistant", content: [{ type: "text", text: "Noted." }], timestamp: 1795328326558 },
  ];
  const ctx = { ...GROUP, agentId: "ops", sessionKey: "agent:ops:telegram:group:-1001", senderId: "tg:555" };
  await api.hooks.agent_end({ messages, success: true }, ctx);
  const [log] = logTexts(ctx.sessionKey);
  assert.ok(log, "a raw log for the group session exists");
  assert.match(log, /agent: ops/);
  assert.match(log, /kind: group/);
  assert.match(log, /scope: ['"]?group:telegram:group:-1001/);
  assert.match(log, /### participant \[tg:555\][^\n]*\nMy locker code is 4417\./);
  assert.deepEqual(api.warnings, []);
});

test("the server's working memory holds the previous turn's tool result of the session", async () => {
  const api = fakeApi({ vaultPath: vault, pythonCommand: python });
  const ctx = { sessionKey: "agent:main:wm-test", agentId: "main" };
  const messages = [
    { role: "user", content: [{ type: "text", text: "Draft the projectX update for John" }], timestamp: 1795328326510 },
    {
      role: "assistant",
      content: [{ type: "toolCall", id: "c1", name: "draft_email", arguments: { to: "John" } }],
      timestamp: 1795328326520,
    },
    { role: "toolResult", toolCallId: "c1", toolName: "draft_email", content: [{ type: "text", text: "draft d-17 created" }] },
    { role: "assistant", content: [{ type: "text", text: "Drafted.\nNext I will send it" }], timestamp: 1795328326558 },
  ];
  await api.hooks.agent_end({ messages, success: true }, ctx);
  await api.hooks.before_prompt_build({ prompt: "send it", messages: [] }, ctx);
  // the same server the plugin uses: its working memory for the session the plugin logged
  const bridge = bridgeFor(resolveOptions({ vaultPath: vault, pythonCommand: python }));
  const memory = await bridge.request("working_memory", { session: "agent:main:wm-test" });
  assert.equal(memory.goal, "send it");
  assert.deepEqual(memory.plan, ["send it"]);
  assert.ok(memory.recent_observations.includes("draft_email: draft d-17 created"), memory.recent_observations);
  assert.deepEqual(api.warnings, []);
});

test("the memory capability's promptBuilder says memories come on their own and names the tools", () => {
  const api = fakeApi({ vaultPath: vault, pythonCommand: python });
  assert.equal(api.capabilities.length, 1);
  const [capability] = api.capabilities;
  assert.equal(capability.deterministicRecallToolName, "memory_search");
  assert.equal(typeof capability.runtime.authorizeSearchHits, "function");
  const both = capability.promptBuilder({ availableTools: new Set(["memory_search", "memory_get"]) });
  const text = both.join("\n");
  assert.match(text, /recalled automatically/);
  assert.match(text, /memoryclaw block/);
  // the tag itself stays out: it marks the recalled block alone
  assert.doesNotMatch(text, /<\/?memoryclaw>/);
  assert.match(text, /memory_search/);
  assert.match(text, /memory_get/);
  assert.match(text, /Source: <path#line>/);
  assert.deepEqual(capability.promptBuilder({ availableTools: new Set(["read"]) }), []);
  const quiet = capability.promptBuilder({
    availableTools: new Set(["memory_get"]),
    citationsMode: "off",
  });
  assert.doesNotMatch(quiet.join("\n"), /memory_search/);
  assert.match(quiet.join("\n"), /Citations are disabled/);
  const manual = fakeApi({ vaultPath: vault, pythonCommand: python, autoRecall: false });
  const lines = manual.capabilities[0].promptBuilder({ availableTools: new Set(["memory_search"]) });
  assert.doesNotMatch(lines.join("\n"), /recalled automatically/);
});

test("the server starts from a working directory holding a memoryclaw/ folder", async () => {
  // as `python -m memoryclaw` there would import the folder instead of the installed package
  const folder = mkdtempSync(join(tmpdir(), "mc-cwd-"));
  mkdirSync(join(folder, "memoryclaw"));
  const here = process.cwd();
  process.chdir(folder);
  const bridge = new MemoryclawBridge({
    command: python,
    args: serverArgs({ vaultPath: vault }),
    startTimeoutMs: 30000,
  });
  try {
    const payload = await bridge.request("retrieve", { query: DENTIST, agent: "main" }, 2000);
    assert.match(payload.context, /020 7946 0321/);
  } finally {
    process.chdir(here);
    bridge.close();
  }
});

test("a first call waits for a cold start; a recall that times out says so and is counted", async () => {
  const folder = mkdtempSync(join(tmpdir(), "mc-slow-"));
  const slow = join(folder, "slow-python");
  writeFileSync(slow, `#!/bin/sh\nsleep 1.5\nexec "${python}" "$@"\n`, { mode: 0o755 });
  // the first request to a fresh server gets startTimeoutMs, not its own short timeout
  const cold = new MemoryclawBridge({ command: slow, args: serverArgs({ vaultPath: vault }), startTimeoutMs: 30000 });
  const payload = await cold.request("retrieve", { query: DENTIST, agent: "main" }, 100);
  assert.match(payload.context, /020 7946 0321/);
  cold.close();

  const starts = [];
  const api = fakeApi({ vaultPath: vault, pythonCommand: slow, recallTimeoutMs: 100, startTimeoutMs: 300 });
  api.logger.error = (m) => starts.push(m);
  const before = (await bridgeFor(resolveOptions({ vaultPath: vault, pythonCommand: python })).request("stats", {}, 10000)).metrics;
  const out = await api.hooks.before_prompt_build({ prompt: DENTIST, messages: [] }, MAIN);
  assert.deepEqual(out, { prependContext: "(memoryclaw: recall unavailable this turn: timeout)" });
  assert.match(api.warnings[0], /recall failed.*timed out after 300 ms/);
  assert.match(starts[0], /did not answer its start check.*slow-python/);
  // the slow server, once up, answers the recall and then counts its failure: asked after
  // both, it shows the count
  const slowBridge = bridgeFor(resolveOptions({ vaultPath: vault, pythonCommand: slow, recallTimeoutMs: 100, startTimeoutMs: 300 }));
  const after = (await slowBridge.request("stats", {}, 30000)).metrics;
  assert.equal(after.recall_failures, before.recall_failures + 1);
  slowBridge.close();
});

test("search hits carry OpenClaw's provenance: a hand-written fact is the owner's, a consolidated one the agent's", async () => {
  const api = fakeApi({ vaultPath: vault, pythonCommand: python });
  const [{ runtime }] = api.capabilities;
  const { manager } = await runtime.getMemorySearchManager({ agentId: "main" });
  const fromTool = (await api.tools.memory_search.execute("t1", { query: "dentist phone" })).details.results;
  const fromHost = await manager.search("dentist phone", { sessionKey: MAIN.sessionKey });
  for (const hits of [fromTool, fromHost]) {
    assert.ok(hits.length > 0);
    for (const hit of hits) {
      assert.ok(["owner", "agent", "untrusted", "system"].includes(hit.provenance.originClass), hit.snippet);
      assert.ok(Number.isFinite(hit.provenance.observedAt) && hit.provenance.observedAt > 0);
    }
    const phone = hits.find((h) => h.snippet === "Brightsmile Dental phone: 020 7946 0321");
    assert.deepEqual(phone?.provenance.originClass, "owner"); // semantic/contacts.md, by hand
    const episode = hits.find((h) => h.path === DENTIST_EPISODE);
    assert.deepEqual(episode.provenance, {
      originClass: "agent", // memoryclaw's summary of a WhatsApp chat
      sessionKind: "interactive",
      observedAt: Date.parse("2025-01-15T19:40:02Z"),
    });
  }
});

test("the runtime classifies OpenClaw's workspace memory files as OpenClaw does files it has no record of", async () => {
  const api = fakeApi({ vaultPath: vault, pythonCommand: python });
  const [{ runtime }] = api.capabilities;
  assert.equal(runtime.supportsWorkspaceMemoryReadSources, true);
  const workspace = mkdtempSync(join(tmpdir(), "mc-workspace-"));
  const outside = mkdtempSync(join(tmpdir(), "mc-outside-"));
  writeFileSync(join(workspace, "USER.md"), "- Prefer metric units.\n");
  writeFileSync(join(outside, "secret.md"), "elsewhere\n");
  symlinkSync(join(outside, "secret.md"), join(workspace, "MEMORY.md"));
  const classify = (params) => runtime.classifyWorkspaceMemoryPaths({ cfg: {}, agentId: "main", workspaceDir: workspace, ...params });
  assert.deepEqual(await classify({ relativePaths: ["USER.md", "MEMORY.md", "DREAMS.md"] }), [
    { relativePath: "USER.md", originClass: "agent" },
    { relativePath: "MEMORY.md", originClass: "untrusted" }, // a link out of the workspace
    { relativePath: "DREAMS.md", originClass: "untrusted" }, // not there
  ]);
  // pinned reads: the file each read names, none is untrusted
  const readSources = [
    { relativePath: "MEMORY.md", canonicalRelativePath: "MEMORY.md" },
    { relativePath: "USER.md" },
  ];
  assert.deepEqual(await classify({ relativePaths: ["MEMORY.md", "USER.md"], readSources }), [
    { relativePath: "MEMORY.md", originClass: "agent" },
    { relativePath: "USER.md", originClass: "untrusted" },
  ]);
  const cases = {
    "memory/2026-01-02.md": "agent",
    "users/alex/USER.md": "agent",
    "DREAMS.md": "system",
    "memory/.dreams/corpus.md": "system",
    "notes.md": "untrusted",
    "../MEMORY.md": "untrusted",
    "/etc/MEMORY.md": "untrusted",
    "memory/../MEMORY.md": "untrusted",
  };
  for (const [path, origin] of Object.entries(cases)) assert.equal(workspaceOrigin(path), origin, path);
});

test("the host's memory status is the vault's", async () => {
  const api = fakeApi({ vaultPath: vault, pythonCommand: python });
  const [{ runtime }] = api.capabilities;
  const { manager } = await runtime.getMemorySearchManager({ agentId: "main", purpose: "status" });
  const status = manager.status();
  assert.equal(status.provider, "memoryclaw");
  assert.equal(status.workspaceDir, vault);
  assert.ok(status.files > 0 && status.chunks > status.custom.episodes);
  assert.deepEqual(status.fts, { enabled: true, available: true });
  const broken = fakeApi({ vaultPath: join(vault, "no-such-vault"), pythonCommand: python });
  const down = await broken.capabilities[0].runtime.getMemorySearchManager({ agentId: "main", purpose: "status" });
  assert.match(down.manager.status().lastSyncError, /no-such-vault/);
  // a manager made for searching does not wait for the vault's numbers
  const searching = await runtime.getMemorySearchManager({ agentId: "main" });
  assert.deepEqual(searching.manager.status(), { backend: "builtin", provider: "memoryclaw", custom: { searchMode: "fts-only" } });
});

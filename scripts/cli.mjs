// `npm run cli -- <command>`: the console's admin actions from a terminal, against a running console
// (local dev by default), through the same HTTP routes, admin client and audit log as the browser.
//
//   npm run cli -- agents [--class SessionAgent]
//   npm run cli -- runs <AgentClass> <name>
//   npm run cli -- <action> <AgentClass> <name> [its fields] --reason "why"
//                                      (every admin action of ADMIN_ACTIONS, by its slug: force-idle, trigger-alarm,
//                                       pause-recovery, resume-recovery, resolve-op …; `--help` lists each with its fields)
//   npm run cli -- verify [--age 10]   (does the console tell the truth? see verify() below)
//   npm run cli -- reconcile           (one reconciliation pass now, as the cron runs it)
//   npm run cli -- bulk <action> [--class C] [--incident-reason R [--open-only]] [--status S] [--stuck-rule R] --reason "why" [--dry-run]
//                                      (previews the agents the filter selects, then acts on each and follows the batch to the end;
//                                       the actions ADMIN_ACTIONS marks `bulk`)
//   npm run cli -- export <list> [--format csv|json] [--out FILE] [filter=value ...]
//                                      (a list as its page filters it, e.g. `export runs outcome=running agentClass=SessionAgent`,
//                                       and with the columns its page shows, e.g. `cols=name,status`;
//                                       streamed to stdout or FILE, at most the console's EXPORT_ROW_CAP rows)
//
// Options: --url http://127.0.0.1:8787 (or CONSOLE_URL), --json (raw output).
// Against a deployed console, pass an Access token in CF_ACCESS_TOKEN (sent as Cf-Access-Jwt-Assertion).

import { createWriteStream } from "node:fs";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parseArgs } from "node:util";
import { batchHref, exportHref, listHref, runHref } from "../console/links.ts";
import { ACTION_OPTIONS, actionUsage, BULK_VERBS, CLI_ACTIONS, cliAction } from "./cli-actions.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    url: { type: "string" },
    reason: { type: "string" },
    // Each admin action's own fields (--resolution, --result-ref, --hours, …), from ADMIN_ACTIONS.
    ...ACTION_OPTIONS,
    age: { type: "string" },
    class: { type: "string" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
    "incident-reason": { type: "string" },
    "open-only": { type: "boolean", default: false },
    status: { type: "string" },
    "stuck-rule": { type: "string" },
    "dry-run": { type: "boolean", default: false },
    format: { type: "string" },
    out: { type: "string" },
  },
});
const base = (values.url ?? process.env.CONSOLE_URL ?? "http://127.0.0.1:8787").replace(/\/$/, "");
const [command, agentClass, agentName] = positionals;
const headers = { Accept: "application/json", ...(process.env.CF_ACCESS_TOKEN ? { "Cf-Access-Jwt-Assertion": process.env.CF_ACCESS_TOKEN } : {}) };

function fail(message, code = 1) {
  console.error(`✖ ${message}`);
  process.exit(code);
}

/** One line, at most `max` characters, of some text. */
const oneLine = (text, max = 200) => {
  const line = String(text).replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
};

/**
 * A readable line for an answer that is not the console's JSON: a redirect (Cloudflare Access sends one to its
 * sign-in page when a request carries no valid token), an HTML page (a sign-in page, a proxy's 502), text, or nothing.
 */
function describeNonJson(res, path, text) {
  const head = `HTTP ${res.status} from ${path}`;
  const location = res.headers.get("location");
  const signIn = "is CF_ACCESS_TOKEN set to a current Access token for this console?";
  if (res.status >= 300 && res.status < 400)
    return `${head}: a redirect to ${location ? oneLine(location, 120) : "(nowhere)"}, not the console's answer; ${signIn}`;
  const type = (res.headers.get("content-type") ?? "").split(";")[0].trim();
  const title = /<title[^>]*>([^<]*)<\/title>/i.exec(text)?.[1];
  const what =
    /html/i.test(type) || /^\s*</.test(text)
      ? `an HTML page${title?.trim() ? ` titled "${oneLine(title, 100)}"` : ""}`
      : text.trim()
        ? `${type || "text"}: ${oneLine(text)}`
        : "an empty body";
  const hint = res.status === 401 || res.status === 403 ? `; ${signIn}` : res.status >= 500 ? "; the console or a proxy in front of it failed" : "";
  return `${head}: ${what}, not the console's JSON${hint}`;
}

/** The code and sentence of a refusal in the console's one error body ({ ok: false, error: { code, message } }), or what came instead. */
function refusalOf(status, body) {
  const e = body?.error;
  if (body?.ok === false && typeof e?.code === "string") return `${e.code}: ${typeof e.message === "string" && e.message ? e.message : "(no sentence)"}`;
  return `HTTP ${status}, not a refusal the console knows: ${oneLine(JSON.stringify(body))}`;
}

/** Fails with "<what> refused: <code>: <sentence>" (exit 1). */
const refused = (what, status, body) => fail(`${what} refused: ${refusalOf(status, body)}`);

/** Sends a request to the console; a console the CLI cannot reach ends it with one line. */
async function send(path, init = {}, timeoutMs = 20_000) {
  try {
    return await fetch(`${base}${path}`, { ...init, redirect: "manual", headers: { ...headers, ...init.headers }, signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    fail(`cannot reach the console at ${base} (${e.cause?.code ?? e.message}). Is \`npm start\` running?`);
  }
}

/** The console's JSON answer; anything else (a sign-in redirect or page, a proxy's error page) ends the CLI with one readable line. */
async function jsonOf(res, path) {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    fail(describeNonJson(res, path, text));
  }
}

/**
 * Calls the console and parses its JSON (see jsonOf). A refusal (status ≥ 400 or `ok: false`) ends the CLI too,
 * unless `allowRefusal`.
 */
async function call(path, init = {}, { allowRefusal = false } = {}) {
  const res = await send(path, init);
  const body = await jsonOf(res, path);
  if (!allowRefusal && (res.status >= 400 || body?.ok === false)) refused(path, res.status, body);
  return { status: res.status, body };
}

const print = (v) => console.log(values.json ? JSON.stringify(v, null, 2) : v);

/**
 * An admin action (a verb of ADMIN_ACTIONS): its fields from the command line as its input schema names them, the
 * console's answer in the console's words (`describe`: the title and detail its page shows). A partial result exits 1.
 */
async function act(spec) {
  const positional = spec.fields.filter((f) => f.positional);
  const given = positionals.slice(3);
  if (!agentClass || !agentName || given.length < positional.length) fail(`usage: npm run cli -- ${actionUsage(spec)}`, 2);
  if (!values.reason?.trim()) fail('a reason is required (--reason "…"); it goes to the audit log', 2);
  const form = new URLSearchParams({ agentClass, agentName, reason: values.reason });
  // The console validates these (the route reads exactly the action's own fields) and answers in words.
  for (const [i, f] of positional.entries()) form.set(f.field, given[i]);
  for (const f of spec.fields.filter((f) => !f.positional)) {
    const v = values[f.flag];
    if (v !== undefined) form.set(f.field, v);
    else if (f.required) form.set(f.field, "");
  }
  const { body: csrf } = await call("/api/csrf");
  const { status, body } = await call(
    `/actions/${spec.verb}`,
    { method: "POST", body: form, headers: { Origin: base, "X-CSRF-Token": csrf.token, "Content-Type": "application/x-www-form-urlencoded" } },
    { allowRefusal: true },
  );
  if (values.json) {
    print(body);
    if (!body.ok) process.exitCode = 1;
    return;
  }
  if (!body.ok) refused(spec.verb, status, body);
  const v = body.value;
  const said = body.describe ?? {};
  // Actions that change what runs are verified: the console read the agent back, and `clean` is false when that
  // showed a partial result (work still runs, the alarm did not run to its end).
  const clean = said.clean !== false && v?.result !== "partial";
  console.log(`${clean ? "✓" : "!"} ${agentClass} ${agentName}: ${[said.title, said.detail].filter(Boolean).join(" ") || `${spec.label} done.`}`);
  // Force idle's runs, each with what the agent, read back, says of it now.
  const now = new Map((v?.after?.checks ?? []).map((c) => [c.id, c]));
  for (const r of v?.ended ?? []) {
    const c = now.get(r.ref ?? r.runId);
    const state = c ? (c.now === "stopped" ? "stopped" : `NOT STOPPED (${c.now})`) : r.stopped ? "stopped" : "NOT STOPPED";
    // The words are the console's (body.describe, the same the page shows); an older console sent them in `detail`.
    const words = said.runs?.[r.runId] ?? r.detail ?? "";
    console.log(`  ${state}\t${r.kind}\t${r.runId}${r.name ? ` (${r.name})` : ""}: ${words}${c ? `; now: ${c.source} says ${c.sdkState}` : ""}`);
  }
  for (const i of v?.incidents ?? []) console.log(`  cleared incident ${i.incidentId}`);
  const notice = said.afterNotice ?? said.notice ?? legacyNotice(v?.after?.notice) ?? legacyNotice(v?.notice);
  if (notice) console.log(`! ${notice}`);
  if (!clean) process.exitCode = 1;
}

/** A notice an older console sent as a sentence; facts without words (never from this console) are not printed. */
const legacyNotice = (n) => (typeof n === "string" ? n : null);

/** Every item of a console list, following its cursor (at most `max`). */
async function all(path, max = 5000) {
  const items = [];
  let next = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const { body } = await call(`${path}${sep}limit=200${next ? `&cursor=${encodeURIComponent(next)}` : ""}`);
    items.push(...body.items);
    next = body.next;
  } while (next && items.length < max);
  return items;
}

/**
 * Does the console tell the truth? Compares what it shows running (runs of every kind, sessions) and open
 * (incidents) with what each of those agents reports live through admin RPC, and counts incidents open
 * without an event for longer than --age minutes (default 10, the reconcile age). Exit 1 on a mismatch.
 */
async function verify() {
  const ageMs = Number(values.age ?? 10) * 60_000;
  const now = Date.now();
  const { body: overview } = await call("/");
  const [running, incidents, sessions] = await Promise.all([
    all(listHref("runs", { outcome: "running" })),
    all(listHref("incidents", { status: "open" })),
    all(listHref("sessions", { status: "running" })),
  ]);
  const agents = new Map();
  for (const x of [...running, ...incidents, ...sessions])
    agents.set(`${x.agentClass}\u0000${x.agentName}`, { agentClass: x.agentClass, agentName: x.agentName });
  const live = new Map();
  for (const [k, a] of agents) {
    const { status, body } = await call(`/api/agents/${encodeURIComponent(a.agentClass)}/${encodeURIComponent(a.agentName)}`, {}, { allowRefusal: true });
    if (status !== 200 || !body.ok) {
      live.set(k, { error: refusalOf(status, body) });
      continue;
    }
    const { status: st, runs } = body.value;
    // A managed fiber keeps its cf_agents_runs row while its callback runs, so live rows and unsettled Tasks runs are all the live work.
    const ids = new Set([
      ...runs.runs.map((r) => r.id),
      ...runs.runs.map((r) => r.requestId).filter(Boolean),
      ...runs.tasks.flatMap((t) => [t.runId, t.requestId].filter(Boolean)),
    ]);
    live.set(k, { status: st.status, ids, count: runs.runs.length + runs.tasks.length, managedFibers: runs.managedFibers });
  }
  // Managed fibers keep a record in every status (listFibers): the console's status for each must be the SDK's,
  // through the one mapping (an interrupted fiber the SDK keeps until resolveFiber is not "recovered").
  const disagree = [];
  // The one mapping (src/telemetry/sdk-states.ts), from the built package: `npm start` / `npm test` build it.
  const mapping = await import("@agent-oncall/telemetry/contract").catch(() => null);
  if (!mapping) console.error("(managed fibers not compared: run `npm run build:packages` first)");
  const runStateOf = mapping?.runStateOf ?? (() => null);
  for (const [k, l] of live) {
    if (l.error) continue;
    const a = agents.get(k);
    for (const f of l.managedFibers) {
      const sdk = runStateOf("managed_fiber", f.status);
      if (!sdk) continue;
      const { status, body } = await call(runHref(f.fiberId, a), {}, { allowRefusal: true });
      const shown = status === 200 ? body.run.status : "(not shown)";
      const expected = sdk.outcome ?? "running";
      // A fiber that settled under a minute ago may have its events in flight.
      if (shown !== expected && !(f.completedAt && now - f.completedAt < 60_000))
        disagree.push({ fiberId: f.fiberId, agent: `${a.agentClass}/${a.agentName}`, sdk: f.status, expected, shown });
    }
  }
  const key = (x) => `${x.agentClass}\u0000${x.agentName}`;
  // A run whose last event is under a minute old may have its end in flight: counted apart, not as a lie.
  const phantom = [],
    inFlight = [],
    unreachable = [],
    matched = [];
  for (const r of running) {
    const l = live.get(key(r));
    if (l.error) unreachable.push(r);
    else if (l.ids.has(r.runId)) matched.push(r);
    else (now - r.lastSeen < 60_000 ? inFlight : phantom).push(r);
  }
  // Open and quiet past the age, and not confirmed by its agent since its last event.
  const staleIncidents = incidents.filter((i) => now - i.lastSeen > ageMs && !(i.confirmedAt && i.confirmedAt >= i.lastSeen));
  const busySessions = sessions.filter((s) => live.get(key(s))?.status === "idle" && now - s.lastSeen > ageMs);
  const liveTotal = [...live.values()].reduce((n, l) => n + (l.count ?? 0), 0);
  const report = {
    overview: { running: overview.counts.running.n, runningByKind: overview.counts.runningByKind, openIncidents: overview.counts.openIncidents.n },
    console: { runningRuns: running.length, openIncidents: incidents.length, runningSessions: sessions.length, agentsAsked: agents.size },
    agents: { liveRunsOfThoseAgents: liveTotal, unreachable: [...live.values()].filter((l) => l.error).length },
    runs: { matched: matched.length, notLive: phantom.length, endMaybeInFlight: inFlight.length, agentUnreachable: unreachable.length },
    incidentsOpenWithoutEventPastAge: staleIncidents.length,
    sessionsRunningButAgentIdlePastAge: busySessions.length,
    managedFibersShownOtherwise: disagree.length,
    managedFibers: disagree.slice(0, 20),
    notLive: phantom
      .slice(0, 20)
      .map((r) => ({ kind: r.kind, runId: r.runId, agent: `${r.agentClass}/${r.agentName}`, lastSeen: new Date(r.lastSeen).toISOString() })),
    staleIncidents: staleIncidents
      .slice(0, 20)
      .map((i) => ({ incidentId: i.incidentId, agent: `${i.agentClass}/${i.agentName}`, lastSeen: new Date(i.lastSeen).toISOString() })),
  };
  if (values.json) print(report);
  else {
    console.log(
      `overview: ${report.overview.running} running (${Object.entries(report.overview.runningByKind)
        .map(([k, v]) => `${k} ${v.n}, ${v.confirmed} confirmed`)
        .join("; ")}), ${report.overview.openIncidents} open incidents`,
    );
    console.log(
      `running runs in the console: ${running.length}; live in their ${agents.size} agents: ${matched.length}; not live: ${phantom.length}; not live but last event under a minute ago: ${inFlight.length}; agent could not answer: ${unreachable.length}`,
    );
    console.log(
      `open incidents: ${incidents.length}, of which without an event or a confirmation for more than ${ageMs / 60_000} min: ${staleIncidents.length}`,
    );
    console.log(`running sessions: ${sessions.length}, of which the agent is idle and no event for ${ageMs / 60_000} min: ${busySessions.length}`);
    for (const r of report.notLive) console.log(`  not live: ${r.kind} ${r.runId} of ${r.agent} (last event ${r.lastSeen})`);
    for (const i of report.staleIncidents) console.log(`  stale incident: ${i.incidentId} of ${i.agent} (last event ${i.lastSeen})`);
    console.log(`managed fibers of those agents whose console status is not the SDK's: ${disagree.length}`);
    for (const f of report.managedFibers)
      console.log(`  managed fiber ${f.fiberId} of ${f.agent}: the SDK says ${f.sdk} (console: ${f.expected}), the console shows ${f.shown}`);
  }
  if (phantom.length || staleIncidents.length || busySessions.length || disagree.length) process.exitCode = 1;
}

const BULK_USAGE = `bulk <${BULK_VERBS.join("|")}> [--class C] [--incident-reason R [--open-only]] [--status S] [--stuck-rule R] --reason R [--dry-run]`;

/**
 * A bulk action: the preview of the agents the filter selects (GET /bulk), then — unless --dry-run — the batch
 * (POST /bulk) and its progress (GET /bulk/batches/:id) until every target finished. Exit 1 when any target failed.
 */
async function bulk(verb) {
  if (!BULK_VERBS.includes(verb)) fail(`usage: npm run cli -- ${BULK_USAGE}`, 2);
  const filter = Object.fromEntries(
    [
      ["agentClass", values.class],
      ["incidentReason", values["incident-reason"]],
      ["openOnly", values["open-only"] ? "true" : undefined],
      ["status", values.status],
      ["stuckRule", values["stuck-rule"]],
    ].filter(([, v]) => v !== undefined && v !== ""),
  );
  const query = new URLSearchParams(filter).toString();
  const { body } = await call(`${listHref("bulk")}?${query}`);
  const p = body.value;
  if (values.json && values["dry-run"]) return print(body);
  if (!values.json) {
    console.log(`${p.targets.length} agent(s) match ${p.describe}${p.capped ? ` (${p.total} match; a batch takes the first ${p.targets.length})` : ""}:`);
    for (const t of p.targets) console.log(`  ${t.agentClass}\t${t.agentName}\t${t.why}`);
  }
  if (values["dry-run"]) return console.log("(dry run: nothing was done)");
  if (p.targets.length === 0) fail("no agent matches this filter; nothing to do");
  if (!values.reason?.trim()) fail('a reason is required (--reason "…"); it goes to the audit log for the batch and every agent', 2);
  const { body: csrf } = await call("/api/csrf");
  const form = new URLSearchParams({ ...filter, action: verb, reason: values.reason, expected: String(p.targets.length) });
  const started = await call(
    listHref("bulk"),
    { method: "POST", body: form, headers: { Origin: base, "X-CSRF-Token": csrf.token, "Content-Type": "application/x-www-form-urlencoded" } },
    { allowRefusal: true },
  );
  if (!started.body.ok) refused(`bulk ${verb}`, started.status, started.body);
  const { batchId, total } = started.body.value;
  if (!values.json) console.log(`batch ${batchId} started on ${total} agent(s): ${base}${batchHref(batchId)}`);
  let last = "";
  for (;;) {
    const { body: prog } = await call(batchHref(batchId));
    const v = prog.value;
    const line = `${v.done} done, ${v.failed} failed, ${v.running} running, ${v.queued} queued, of ${v.total}`;
    if (line !== last && !values.json) console.log(`  ${line}`);
    last = line;
    if (v.complete && v.result !== "pending") {
      if (values.json) print(prog);
      else {
        for (const t of v.targets.filter((t) => t.result === "partial"))
          console.log(`  ! ${t.agentClass}\t${t.agentName}\tpartial: work still runs (see its audit row)`);
        for (const t of v.targets.filter((t) => t.result !== "ok" && t.result !== "noop" && t.result !== "partial"))
          console.log(`  ✖ ${t.agentClass}\t${t.agentName}\t${t.result}: ${t.error ?? ""}`);
        console.log(v.failed ? `✖ finished: ${v.failed} of ${v.total} failed` : `✓ finished: ${v.done} of ${v.total} done`);
      }
      if (v.failed) process.exitCode = 1;
      return;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/**
 * Downloads a list (GET /export/:list) with filters given as `key=value` words (and --class for agentClass), to
 * stdout or --out. A refusal (unknown list, format or filter) ends the CLI with the console's sentence.
 */
async function exportList(list, words) {
  if (!list) fail("usage: npm run cli -- export <list> [--format csv|json] [--out FILE] [filter=value ...]", 2);
  const format = values.format ?? "csv";
  const filters = {};
  for (const w of words) {
    const eq = w.indexOf("=");
    if (eq < 1) fail(`a filter is key=value (got "${w}")`, 2);
    filters[w.slice(0, eq)] = w.slice(eq + 1);
  }
  if (values.class) filters.agentClass = values.class;
  const path = exportHref(list, format, filters);
  const res = await send(path, {}, 300_000);
  if (res.status !== 200) refused(path, res.status, await jsonOf(res, path));
  await pipeline(Readable.fromWeb(res.body), values.out ? createWriteStream(values.out) : process.stdout);
  console.error(`✓ ${list} as ${format}${values.out ? ` in ${values.out}` : ""} (at most ${res.headers.get("x-export-cap")} rows: EXPORT_ROW_CAP)`);
}

/** The help: the CLI's own commands, then every admin action of ADMIN_ACTIONS with its fields and label. */
function help() {
  return [
    "usage: npm run cli -- <command> [--url U] [--json]",
    "",
    "  agents [--class C]",
    "  runs <Class> <name>",
    "  verify [--age MIN]",
    "  reconcile",
    "  export <list> [--format csv|json] [--out FILE] [key=value ...]",
    `  ${BULK_USAGE}`,
    "",
    "admin actions (each audited with its reason):",
    ...CLI_ACTIONS.map((a) => `  ${actionUsage(a)}   (${a.label}${a.scope === "op" ? ": one op of the agent's ledger" : ""})`),
  ].join("\n");
}

if (values.help || !command) {
  // Asked for (--help) it is the answer, a success; a missing command is a usage error.
  console.log(help());
  process.exit(values.help ? 0 : 2);
} else if (command === "agents") {
  const q = values.class ? `?agentClass=${encodeURIComponent(values.class)}` : "";
  const { body } = await call(`/api/agents${q}`);
  if (values.json) print(body);
  else for (const a of body.items) console.log(`${a.agentClass}\t${a.agentName}\tlast seen ${new Date(a.lastSeen).toISOString()}`);
} else if (command === "runs") {
  if (!agentClass || !agentName) fail("usage: npm run cli -- runs <AgentClass> <name>", 2);
  const { body } = await call(`/api/agents/${encodeURIComponent(agentClass)}/${encodeURIComponent(agentName)}`);
  if (values.json) print(body);
  else {
    const { status: st, runs } = body.value;
    console.log(`${agentClass} ${agentName}: ${st.status}, next alarm ${st.nextAlarm ? new Date(st.nextAlarm).toISOString() : "none"}`);
    for (const r of runs?.runs ?? [])
      console.log(`  ${r.kind ?? "fiber"} ${r.id}\t${r.name}\tage ${Math.round(r.ageMs / 1000)}s\tsnapshot ${r.snapshotBytes} B`);
    for (const t of runs?.tasks ?? []) console.log(`  ${t.kind} ${t.runId}\t${t.definition}\t${t.state}\tstep ${t.currentStep ?? t.statusMessage ?? "-"}`);
    for (const f of runs?.managedFibers ?? []) console.log(`  managed_fiber ${f.fiberId}\t${f.name}\t${f.status}`);
  }
} else if (command === "verify") {
  await verify();
} else if (command === "reconcile") {
  const { body: csrf } = await call("/api/csrf");
  const { body } = await call("/api/reconcile", { method: "POST", headers: { Origin: base, "X-CSRF-Token": csrf.token } });
  if (values.json) print(body);
  else {
    const v = body.value;
    console.log(`✓ asked ${v.asked} agents with stale work: ${v.findings.length} findings, ${v.unanswered.length} could not answer`);
    for (const f of v.findings) console.log(`  ${f.agent}\t${f.type}\t${f.finding}`);
    for (const u of v.unanswered) console.log(`  ${u.agent}\tno answer: ${u.error}`);
  }
} else if (command === "bulk") {
  await bulk(agentClass);
} else if (command === "export") {
  await exportList(agentClass, positionals.slice(2));
} else if (cliAction(command)) {
  await act(cliAction(command));
} else {
  fail(`unknown command "${command}"; try --help`, 2);
}

// `npm run cli -- <command>`: the console's admin actions from a terminal, against a running console
// (local dev by default), through the same HTTP routes, admin client and audit log as the browser.
//
//   npm run cli -- agents [--class SessionAgent]
//   npm run cli -- runs <AgentClass> <name>
//   npm run cli -- force-idle <AgentClass> <name> --reason "why"
//   npm run cli -- trigger-alarm <AgentClass> <name> --reason "why"
//
// Options: --url http://127.0.0.1:8787 (or CONSOLE_URL), --json (raw output).
// Against a deployed console, pass an Access token in CF_ACCESS_TOKEN (sent as Cf-Access-Jwt-Assertion).
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { url: { type: "string" }, reason: { type: "string" }, class: { type: "string" }, json: { type: "boolean", default: false }, help: { type: "boolean", default: false } },
});
const base = (values.url ?? process.env.CONSOLE_URL ?? "http://127.0.0.1:8787").replace(/\/$/, "");
const [command, agentClass, agentName] = positionals;
const headers = { Accept: "application/json", ...(process.env.CF_ACCESS_TOKEN ? { "Cf-Access-Jwt-Assertion": process.env.CF_ACCESS_TOKEN } : {}) };

function fail(message, code = 1) {
  console.error(`✖ ${message}`);
  process.exit(code);
}

async function call(path, init = {}) {
  let res;
  try {
    res = await fetch(`${base}${path}`, { ...init, headers: { ...headers, ...init.headers }, signal: AbortSignal.timeout(20_000) });
  } catch (e) {
    fail(`cannot reach the console at ${base} (${e.cause?.code ?? e.message}). Is \`npm start\` running?`);
  }
  const text = await res.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    fail(`${res.status} from ${path}: ${text.slice(0, 300)}`);
  }
  return { status: res.status, body };
}

const print = (v) => console.log(values.json ? JSON.stringify(v, null, 2) : v);

async function act(action) {
  if (!agentClass || !agentName) fail(`usage: npm run cli -- ${action} <AgentClass> <name> --reason "why"`, 2);
  if (!values.reason?.trim()) fail("a reason is required (--reason \"…\"); it goes to the audit log", 2);
  const { body: csrf } = await call("/api/csrf");
  const form = new URLSearchParams({ agentClass, agentName, reason: values.reason });
  const { body } = await call(`/actions/${action}`, { method: "POST", body: form, headers: { Origin: base, "X-CSRF-Token": csrf.token, "Content-Type": "application/x-www-form-urlencoded" } });
  if (values.json) return print(body);
  if (!body.ok) fail(`${action} refused: ${body.error.code}: ${body.error.message}`);
  const v = body.value;
  if (action === "force-idle") {
    if (v.noop) return console.log("✓ nothing to do: already idle (audited as a no-op)");
    console.log(`✓ ${agentClass} ${agentName}: ${v.before.status} → ${v.after.status}`);
    for (const r of v.ended ?? []) console.log(`  ${r.stopped ? "stopped" : "NOT STOPPED"}\t${r.kind}\t${r.runId}${r.name ? ` (${r.name})` : ""}: ${r.detail}`);
    for (const i of v.incidents ?? []) console.log(`  cleared incident ${i.incidentId}`);
    if (v.notice) console.log(`! ${v.notice}`);
  } else console.log(`✓ alarm ran; recovered: ${v.recoveredRuns.join(", ") || "nothing"}; events: ${v.recoveryEvents.map((e) => e.type).join(", ") || "none"}`);
}

if (values.help || !command) {
  console.log("usage: npm run cli -- agents [--class C] | runs <Class> <name> | force-idle <Class> <name> --reason R | trigger-alarm <Class> <name> --reason R  [--url U] [--json]");
  process.exit(command ? 0 : 2);
} else if (command === "agents") {
  const q = values.class ? `?agentClass=${encodeURIComponent(values.class)}` : "";
  const { status, body } = await call(`/api/agents${q}`);
  if (status !== 200) fail(body.error?.message ?? `HTTP ${status}`);
  if (values.json) print(body);
  else for (const a of body.items) console.log(`${a.agentClass}\t${a.agentName}\tlast seen ${new Date(a.lastSeen).toISOString()}`);
} else if (command === "runs") {
  if (!agentClass || !agentName) fail("usage: npm run cli -- runs <AgentClass> <name>", 2);
  const { status, body } = await call(`/api/agents/${encodeURIComponent(agentClass)}/${encodeURIComponent(agentName)}`);
  if (status !== 200) fail(body.error?.message ?? `HTTP ${status}`);
  if (values.json) print(body);
  else {
    const { status: st, runs } = body.value;
    console.log(`${agentClass} ${agentName}: ${st.status}, next alarm ${st.nextAlarm ? new Date(st.nextAlarm).toISOString() : "none"}`);
    for (const r of runs?.runs ?? []) console.log(`  ${r.kind ?? "fiber"} ${r.id}\t${r.name}\tage ${Math.round(r.ageMs / 1000)}s\tsnapshot ${r.snapshotBytes} B`);
    for (const t of runs?.tasks ?? []) console.log(`  ${t.kind} ${t.runId}\t${t.definition}\t${t.state}\tstep ${t.currentStep ?? t.statusMessage ?? "-"}`);
    for (const f of runs?.managedFibers ?? []) console.log(`  managed_fiber ${f.fiberId}\t${f.name}\t${f.status}`);
  }
} else if (command === "force-idle" || command === "trigger-alarm") {
  await act(command);
} else {
  fail(`unknown command "${command}"; try --help`, 2);
}

import { ADMIN_ACTIONS, type AdminActionName } from "../src/admin-rpc/actions";
import {
  type AdminError,
  type AdminErrorFacts,
  type AfterNotice,
  afterNotice,
  type BusyWork,
  busyWork,
  type EndedRun,
  type EndedWhy,
  type ForceIdleOutput,
  type RunCheck,
  runCheck,
  type UNSTOPPED_CAUSES,
  type VerifiedAfter,
} from "../src/admin-rpc/contract";
import { FORCE_IDLE_CLOSED_CONTRACT } from "../src/admin-rpc/inputs";
import { count } from "./format";

/**
 * Admin results in words: the agent package answers facts (codes and the data they need: src/admin-rpc/contract.ts),
 * the console says them. Used by the action result fragments, the audit page, and the routes' JSON answer (the CLI
 * prints what it carries). An older mixin's sentence (before admin contract 6), or an audit row written before the
 * facts, is shown as it is.
 */

const plural = (n: number, one: string, many: string) => (n === 1 ? one : many);
const secondsSince = (t: number | null, now: number) => (t === null ? "" : ` for ${Math.max(0, Math.round((now - t) / 1000))} s`);

/**
 * What force idle did to recovery incidents, as true after it: the open ones it closed, and apart, the records of
 * incidents the SDK had already closed (removed, but not stopped by the action), by the SDK's status. An agent whose
 * mixin is older than contract 9 does not tell them apart: its count is said as records removed, not incidents closed.
 * Empty when it touched none.
 */
export function forceIdleIncidentsWords(v: Pick<ForceIdleOutput, "incidents" | "alreadyClosed">, contract: number | null | undefined): string {
  if ((contract ?? 0) < FORCE_IDLE_CLOSED_CONTRACT) {
    const n = v.incidents.length;
    return n
      ? `Removed ${count(n)} chat-recovery ${plural(n, "record", "records")} (this agent's admin mixin is older than contract ${FORCE_IDLE_CLOSED_CONTRACT}: it does not say which were still open).`
      : "";
  }
  const closed = v.incidents.length ? `Closed ${count(v.incidents.length)} open recovery ${plural(v.incidents.length, "incident", "incidents")}.` : "";
  const by = new Map<string, number>();
  for (const r of v.alreadyClosed) by.set(r.status, (by.get(r.status) ?? 0) + 1);
  const m = v.alreadyClosed.length;
  const already = m
    ? `Removed the records of ${count(m)} ${plural(m, "incident", "incidents")} the SDK had already closed (${[...by]
        .map(([status, k]) => `${count(k)} ${status}`)
        .join(", ")}): this action did not close ${plural(m, "it", "them")}.`
    : "";
  return [closed, already].filter(Boolean).join(" ");
}

/** One piece of running work, in words ("a chat turn is running (request r-1)"). */
export function busyWords(b: BusyWork, now: number): string {
  switch (b.kind) {
    case "chat_turn":
      return `a chat turn is running (request ${b.requestId ?? b.id})`;
    case "task":
      return `a Tasks run '${b.name ?? "?"}' is running (run ${b.id}${b.step ? `, at step ${b.step}` : ""})`;
    case "fiber":
      return b.name ? `a runFiber callback '${b.name}' is running` : `a runFiber callback (${b.id}) is running in memory with its row removed`;
    case "managed_fiber":
      return `a managed fiber '${b.name ?? b.id}' is running`;
    case "queued_callback":
      return `a queued callback '${b.name ?? b.id}' is running${secondsSince(b.since, now)}`;
    case "scheduled_callback":
      return `a scheduled callback '${b.name ?? b.id}' is running${secondsSince(b.since, now)}`;
  }
}

/** One run still at work after an action, as the SDK records it now, in words. */
export function checkWords(c: RunCheck): string {
  const what = c.kind === "task" ? "Tasks run" : c.kind === "chat_turn" ? "chat turn" : c.kind === "managed_fiber" ? "managed fiber" : "runFiber callback";
  const called = c.name ? `'${c.name}' ` : "";
  const how =
    c.source === "tasks.get"
      ? `tasks.get says ${c.sdkState}`
      : c.source === "inspectFiber"
        ? `inspectFiber says ${c.sdkState}`
        : c.source === "in_memory"
          ? c.kind === "managed_fiber"
            ? `its callback still runs in memory (inspectFiber says ${c.sdkState})`
            : "it still runs in memory (its row is removed, so it is not recovered)"
          : c.sdkState === "interrupted"
            ? "its row is left for recovery on the next wake"
            : "it still runs";
  return `${c.now === "running" ? "a" : "an open"} ${what} ${called}(${c.id}): ${how}`;
}

const submissionReads = (r: EndedRun) => `the submission reads ${r.sdkStatus ?? "(gone)"}`;

/** What force idle did to one run, per ENDED_WHYS (exhaustive: a new code fails the typecheck until it is worded). */
export const ENDED_WHY_WORDS: Record<EndedWhy, (r: EndedRun) => string> = {
  evicted: () => "still running after every other way was tried; stopped by evicting the agent (its row is gone, so it is not recovered)",
  unstoppable: () =>
    "still running in memory: nothing could stop it; its row is removed, so it is not recovered, but it runs until it returns or the agent is evicted",
  idle_row_removed: () => "nothing was running for it in this instance (left by an eviction, or waiting); its row is removed, so it never resumes",
  idle_cancelled: () => "nothing was running for it in this instance (left by an eviction, or waiting); it is cancelled, so it never resumes",
  hook: () => "stopped by the agent's onAdminForceIdle hook",
  ended_itself: () => "it ended on its own while force idle ran",
  tasks_cancelled: () => "cancelled through the Tasks API and settled",
  fiber_cancelled: () => "cancelled through cancelFiber and settled",
  chat_not_ended: (r) =>
    `its request was aborted, but its turn had not ended ${r.settleMs ?? "?"} ms later: its model stream may still be running${r.sdkStatus ? ` (the submission reads ${r.sdkStatus})` : ""}; its Tasks run is cancelled, so it is not replayed`,
  submission_ended: (r) => `it had already ended; ${submissionReads(r)}`,
  submission_cancelled: (r) => `cancelled through Think's cancelSubmission, its stream stopped; ${submissionReads(r)}`,
  submission_dropped: (r) => `queued, never started: cancelled through Think's cancelSubmission; ${submissionReads(r)}`,
  chat_aborted: () => "its request was aborted (the SDK's cancelChat / abortRequest) and the turn ended: its stream stopped",
};

/** What force idle did to one run, in words; an older mixin's own sentence (`detail`) as it is. */
export function endedRunWords(r: EndedRun): string {
  if (!r.why) return r.detail ?? "";
  // A chat turn the eviction stopped keeps its chat verdict: the eviction is said after it.
  const evicted = r.how === "evicted" && r.why !== "evicted" ? "; stopped by evicting the agent (nothing replays it)" : "";
  return `${ENDED_WHY_WORDS[r.why](r)}${evicted}`;
}

/** Why work kept running after force idle (UNSTOPPED_CAUSES). */
export const UNSTOPPED_CAUSE_WORDS: Record<(typeof UNSTOPPED_CAUSES)[number], string> = {
  chat_not_ended: "the SDK aborted the chat turn but it had not ended when force idle looked again",
  hook_did_not_stop: "the agent's onAdminForceIdle hook did not stop it and the SDK has no way to cancel a runFiber callback from outside",
  no_hook: "the SDK has no way to cancel a runFiber callback from outside and this agent has no onAdminForceIdle hook",
};

/**
 * Force idle's own notice, in words: which runs kept running (those of `ended` left running or evicted), why, and
 * what the eviction does about them. An older mixin's sentence as it is; null when there is none.
 */
export function forceIdleNoticeWords(f: Pick<ForceIdleOutput, "notice" | "ended" | "evicted">): string | null {
  const notice = f.notice;
  if (notice === null || typeof notice === "string") return notice;
  const left = f.ended.filter((r) => r.how === "still_running" || r.how === "evicted");
  const n = left.length;
  const names = [...new Set(left.map((r) => (r.why === "chat_not_ended" ? `chat turn ${r.runId}` : (r.name ?? r.runId))))].join(", ");
  const cause = UNSTOPPED_CAUSE_WORDS[notice.cause];
  const runs = `${n} ${plural(n, "run", "runs")} (${names})`;
  return f.evicted
    ? `${runs} kept running: ${cause}. The agent is being evicted to stop ${plural(n, "it", "them")}; ${plural(n, "its row is", "their rows are")} gone, so nothing is recovered when it wakes.`
    : `${runs} still ${plural(n, "runs", "run")} in memory: ${cause}. ${plural(n, "Its row is", "Their rows are")} removed, so ${plural(n, "it is", "they are")} not recovered, but ${plural(n, "it runs", "they run")} until ${plural(n, "it returns", "they return")} or the agent is evicted.`;
}

/** The after-state's parts the notice's words read: what still runs, when it was read, and the agent's status. */
export type AfterFacts = Pick<VerifiedAfter, "checks" | "busy" | "readAt" | "status">;

/** What the read-back found, per AfterNotice code (exhaustive). */
const AFTER_NOTICE_WORDS: { [K in AfterNotice["code"]]: (n: Extract<AfterNotice, { code: K }>, a: AfterFacts) => string } = {
  still_runs: (_n, a) => {
    const still = a.checks.filter((c) => c.now !== "stopped");
    const touched = new Set(a.checks.map((c) => c.id));
    const parts = [...still.map(checkWords), ...a.busy.filter((b) => !touched.has(b.id)).map((b) => busyWords(b, a.readAt))];
    return `Force idle did not stop everything: ${parts.length} ${plural(parts.length, "piece of work", "pieces of work")} still ${plural(parts.length, "runs", "run")}: ${parts.join("; ")}.`;
  },
  not_idle: (n, a) =>
    `Force idle did not leave the agent idle: it reports itself ${a.status}${n.oldMixin ? " (its admin mixin is too old to say which work runs)" : ""}.`,
  alarm_busy: (n, a) => {
    const k = n.holders.length;
    return `The alarm did not run: ${n.holders.map((b) => busyWords(b, a.readAt)).join("; ")}, and the SDK's alarm loop would wait for ${plural(k, "it", "them")} (and run ${plural(k, "it", "them")} a second time meanwhile); try again once ${plural(k, "it ends", "they end")}.`;
  },
  alarm_unfinished: (n, a) =>
    `The alarm started but had not finished after ${n.budgetMs ?? "?"} ms${n.busy.length ? ` (${n.busy.map((b) => busyWords(b, a.readAt)).join("; ")})` : ""}; it goes on in the background.`,
  not_read_back: (n, a) => {
    const error = n.error ?? "the agent had not been evicted yet";
    if (n.action === "force_idle")
      return `The console could not read the agent again after force idle (${error}), so what it did is not verified; check the agent's page.`;
    const alarm = n.alarm ? `${afterNoticeWords(n.alarm, a)} ` : "";
    return `${alarm}The console could not read the agent again after the alarm (${error}).`;
  },
};

/** What the read-back after an action found, in words; null when it found nothing wrong. */
export function afterNoticeWords(notice: AfterNotice | null, after: AfterFacts): string | null {
  if (!notice) return null;
  const words = AFTER_NOTICE_WORDS[notice.code] as (n: AfterNotice, a: AfterFacts) => string;
  return words(notice, after);
}

/**
 * An audit row's notice, from its stored `after`: its facts in words, or, in a row written before the facts (or
 * by an older console), the sentence it stored, as it is. History is never rewritten; an unreadable one is null.
 */
export function auditNoticeWords(after: unknown): string | null {
  if (!after || typeof after !== "object") return null;
  const a = after as Record<string, unknown>;
  if (typeof a.notice === "string") return a.notice;
  const n = afterNotice.safeParse(a.notice);
  if (!n.success) return null;
  // Stored lists read leniently: a row from another version whose lists do not parse is worded without them.
  const checks = runCheck.array().safeParse(a.checks);
  const busy = busyWork.array().safeParse(a.busy);
  return afterNoticeWords(n.data, {
    checks: checks.success ? checks.data : [],
    busy: busy.success ? busy.data : [],
    readAt: typeof a.readAt === "number" ? a.readAt : 0,
    status: (typeof a.status === "string" ? a.status : "unknown") as VerifiedAfter["status"],
  });
}

/** An admin refusal's facts in words (exhaustive over AdminErrorFacts kinds). */
const ERROR_FACT_WORDS: { [K in AdminErrorFacts["kind"]]: (f: Extract<AdminErrorFacts, { kind: K }>) => string } = {
  no_mixin: (f) =>
    `${f.agentClass} does not have the admin mixin (withAdminRpc from @agent-oncall/admin-rpc), so the console can neither read its live state nor act on it`,
  upgrade: (f) => {
    const label = (ADMIN_ACTIONS[f.action as AdminActionName]?.label ?? f.action).toLowerCase();
    return `${f.agentClass} "${f.agentName}" cannot take ${label}: it does not answer ${f.rpc}, which came with admin contract ${f.since}. Upgrade @agent-oncall/admin-rpc (withAdminRpc) in the Worker that runs ${f.agentClass} and redeploy it.`;
  },
  not_addressable: (f) => `${f.agentClass} is not an agent class this Worker may address (it may address: ${f.allowed.join(", ") || "none"})`,
  not_registered: (f) => `no agent ${f.agentClass} "${f.agentName}" in the registry`,
  no_binding: (f) => `this Worker has no Durable Object binding named ${f.agentClass}`,
  nested_sub_agent: (f) =>
    `this ${f.agentClass} is a sub-agent ${f.depth} levels down: the agents SDK lets the console reach only a top-level agent's own sub-agents, so it cannot be asked or acted on`,
  other_worker: (f) =>
    f.worker
      ? `this console's binding for ${f.agentClass} points at another Worker than "${f.worker}", where this agent's events come from (its Durable Object id is not the one that binding gives its name, nor a sub-agent's of an agent the console knows), so the console can neither ask it nor act on it`
      : `this console's binding for ${f.agentClass} does not address this agent: its Durable Object id is not the one that binding gives its name, nor a sub-agent's of an agent the console knows (another Worker's agent, or a sub-agent whose parent is unknown: locally the trace item names no Worker), so the console can neither ask it nor act on it`,
  timeout: (f) => `the agent did not answer within ${f.limitMs} ms (an action may still complete: check its status and the audit log)`,
  unreachable: (f) => `the agent could not be reached: ${f.cause}`,
  bad_answer: (f) =>
    f.detail === null
      ? "the agent answered with something that is not an admin result (is it running an older version without withAdminRpc?)"
      : `the agent's answer did not match the admin contract: ${f.detail}`,
  lookup_failed: (f) => `the console could not look the agent up: ${f.cause}`,
  audit_failed: (f) => `the audit log could not be written, so the action was not attempted: ${f.cause}`,
  no_outcome: () => "the action ended before reporting an outcome",
  console_failed: (f) => `the action failed in the console: ${f.cause}`,
  role: (f) => `refused: ${f.email} has the ${f.role} role; this action needs ${f.needs}`,
  agent_failed: (f) => `the agent could not complete the request: ${f.cause}`,
  no_live_run: (f) => `no live run with id "${f.id}" (it may have finished; its last-known snapshot is in the run history)`,
  terminated: (f) =>
    f.action === "force_idle" ? "the agent is terminated; there is nothing to force idle" : "the agent is terminated; its alarm will not run recovery",
  no_resolve_hook: (f) =>
    `${f.agentClass} does not implement onAdminResolveOp, so it cannot record how an op of its ledger was resolved; resolve it in the agent's own ledger instead`,
  hook_bad_answer: (f) => `the agent's onAdminResolveOp answered something the contract does not allow: ${f.detail}`,
  no_op: (f) => `the agent's ledger has no op "${f.opId}"`,
  op_not_ambiguous: (f) =>
    `op "${f.opId}" is not ambiguous (the ledger says ${f.status}${f.resolution ? `, resolved as ${f.resolution}` : ""}): there is nothing to resolve`,
};

/** An admin refusal as operators read it: its facts in words where it has them, else its own message. */
export function adminErrorWords(e: AdminError): string {
  if (!e.facts) return e.message;
  const words = ERROR_FACT_WORDS[e.facts.kind] as (f: AdminErrorFacts) => string;
  return words(e.facts);
}

import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import { consoleAdminClient } from "../../worker/admin-client";
import type { RecoveryChoice, TruthTaskInput, TruthWork } from "../fixtures/truth-agents";
import { pollRows } from "../helpers";
import type { Fault, Primitive, Row } from "./matrix";

/**
 * Drivers: how each primitive is made to meet each fault, on a fresh fixture agent. A driver returns the
 * subject (which agent, which runs) and what the console's actions answered; it asserts nothing itself.
 */

/** The truth agents' classes: both packages (the outbox path), or the admin package alone (the tail path). */
export type TruthClass = "TruthFiberAgent" | "TruthTaskAgent" | "AdminTruthFiberAgent" | "AdminTruthTaskAgent";

export type Subject = {
  agentClass: TruthClass;
  agentName: string;
  kind: "fiber" | "managed_fiber" | "task";
  runIds: string[];
  /** The row evicted the agent mid-work: a recovery (and for fibers, an incident) follows. */
  evicted: boolean;
  /** What an action the row took answered (force idle / trigger alarm), for the report. */
  action: { name: string; result: unknown } | null;
};

/** The fixtures' methods the drivers call, as plain promises (RPC stub types are too deep to infer here). */
export type TruthStub = {
  loseInTransport(types: string[]): Promise<void>;
  settleTelemetry(): Promise<void>;
  evict(): Promise<void>;
  retire(): Promise<void>;
  startRunFiber(work: TruthWork): Promise<string>;
  startManaged(work: TruthWork, recovery?: RecoveryChoice): Promise<string>;
  cancelManaged(id: string, reason: string): Promise<boolean>;
  resolveManaged(id: string, result: { status: "completed" }): Promise<boolean>;
  startTask(mode: TruthTaskInput["mode"]): Promise<string>;
  cancelTask(id: string, reason: string): Promise<boolean>;
  sdkTasks(): Promise<{ runId: string; state: string }[]>;
};

/** A fixture agent's stub by class and name. */
export async function truthStub(agentClass: Subject["agentClass"], agentName: string): Promise<TruthStub> {
  return (await getAgentByName(env[agentClass] as never, agentName)) as unknown as TruthStub;
}

/** A point where what the agent did so far has left it: its own work, an eviction, an alarm run, a console action. */
export type Step = "work" | "evict" | "alarm" | "action";

/**
 * How the truth agents' events reach the console, so one set of drivers runs on either path: which classes, how an
 * event is lost on the way, and what happens at the end of each step (one invocation of the agent).
 */
export type Form = {
  fiberClass: TruthClass;
  taskClass: TruthClass;
  /** The next event of each of these contract types (e.g. "task.completed") never reaches the console. */
  lose(agentClass: TruthClass, agentName: string, types: string[]): Promise<void>;
  /** The step is over: what it published is on its way to the console. */
  stepDone(agentClass: TruthClass, agentName: string, step: Step): Promise<void>;
};

/**
 * Both packages: the telemetry mixin's outbox carries the events, through a transport the test can make lose them.
 * Its outbox sends on its own after evictions and alarms; after the agent's own work the drivers wait for it.
 */
export const OUTBOX_FORM: Form = {
  fiberClass: "TruthFiberAgent",
  taskClass: "TruthTaskAgent",
  lose: async (agentClass, agentName, types) => (await truthStub(agentClass, agentName)).loseInTransport(types),
  stepDone: async (agentClass, agentName, step) => {
    if (step === "work") await (await truthStub(agentClass, agentName)).settleTelemetry();
  },
};

const OPERATOR = { email: "truth@example.com", role: "operator" } as const;
const uid = () => crypto.randomUUID().slice(0, 8);

/** Evicts the agent and wakes it again through its alarm, where the SDK runs recovery and replays. */
async function evictAndWake(form: Form, agentClass: Subject["agentClass"], name: string): Promise<void> {
  await (await truthStub(agentClass, name)).evict().catch(() => {});
  await form.stepDone(agentClass, name, "evict");
  await runDurableObjectAlarm((await truthStub(agentClass, name)) as never);
  await form.stepDone(agentClass, name, "alarm");
}

/** What a row's fault means for the work it starts. */
const workFor = (fault: Fault): TruthWork =>
  fault === "failure"
    ? "fail"
    : ["abort", "evictions", "force-idle", "trigger-alarm", "cancel", "resolved", "resolved-lost"].includes(fault)
      ? "hang"
      : "complete";

/** Faults that evict the agent mid-work (a recovery, and for fibers an incident, follow). */
const EVICTING: readonly Fault[] = ["abort", "evictions", "resolved", "resolved-lost"];

/** Runs one row of the matrix, on the outbox path unless told otherwise. */
export async function drive(row: Row, form: Form = OUTBOX_FORM): Promise<Subject> {
  return row.primitive === "task" ? driveTask(form, row.fault) : driveFiber(form, row.primitive, row.fault);
}

async function act(agentClass: Subject["agentClass"], agentName: string, fault: Fault): Promise<Subject["action"]> {
  if (fault !== "force-idle" && fault !== "trigger-alarm") return null;
  // The console acts only on agents it knows: wait until this one's first events registered it, as an operator would see it.
  await pollRows("SELECT 1 FROM agents WHERE agent_class = ? AND agent_name = ?", [agentClass, agentName], (r) => r.length === 1);
  const admin = consoleAdminClient(env, OPERATOR);
  const target = { agentClass, agentName };
  if (fault === "force-idle") return { name: "force idle", result: await admin.forceIdle(target, { reason: "truth matrix: force idle mid-work" }) };
  if (fault === "trigger-alarm") return { name: "trigger alarm", result: await admin.triggerAlarm(target, { reason: "truth matrix: trigger alarm mid-work" }) };
  return null;
}

async function driveFiber(form: Form, primitive: Exclude<Primitive, "task">, fault: Fault): Promise<Subject> {
  const K = form.fiberClass;
  const agentName = `truth-${primitive.replace(":", "-")}-${fault}-${uid()}`;
  const stub = await truthStub(K, agentName);
  const managed = primitive !== "runFiber";
  const recovery = managed ? (primitive.split(":")[1] as "undefined") : undefined;
  if (fault === "lost-end") await form.lose(K, agentName, ["fiber.completed"]);
  const work = workFor(fault);
  const runId = managed ? await stub.startManaged(work, recovery) : await stub.startRunFiber(work);
  await form.stepDone(K, agentName, "work");
  let action: Subject["action"] = null;
  if (fault === "abort" || fault === "resolved" || fault === "resolved-lost") await evictAndWake(form, K, agentName);
  if (fault === "evictions") for (let i = 0; i < 3; i++) await evictAndWake(form, K, agentName);
  if (fault === "cancel") {
    await stub.cancelManaged(runId, "truth matrix: cancelled by its caller");
    await form.stepDone(K, agentName, "work");
  }
  if (fault === "resolved" || fault === "resolved-lost") {
    const later = await truthStub(K, agentName);
    await form.stepDone(K, agentName, "work");
    if (fault === "resolved-lost") await form.lose(K, agentName, ["fiber.resolved"]);
    await later.resolveManaged(runId, { status: "completed" });
  }
  if (fault === "force-idle" || fault === "trigger-alarm") {
    action = await act(K, agentName, fault);
    await form.stepDone(K, agentName, "action");
  }
  // Force idle evicts the agent 20 ms after answering when nothing else could stop a callback: a call in
  // between would be cut off with it. Let the eviction happen first; the next call wakes a fresh instance.
  if ((action?.result as { ok?: boolean; value?: { evicted?: boolean } } | undefined)?.value?.evicted) await scheduler.wait(100);
  const unseen =
    fault === "unseen"
      ? [await unseenRun(form, K, agentName, ["fiber.started", "fiber.stashed", "fiber.completed"], () => stub.startManaged("complete", recovery))]
      : [];
  await form.stepDone(K, agentName, "work");
  return {
    agentClass: K,
    agentName,
    kind: managed ? "managed_fiber" : "fiber",
    runIds: [runId, ...unseen],
    evicted: EVICTING.includes(fault),
    action,
  };
}

async function driveTask(form: Form, fault: Fault): Promise<Subject> {
  const K = form.taskClass;
  const agentName = `truth-task-${fault}-${uid()}`;
  const stub = await truthStub(K, agentName);
  if (fault === "lost-end") await form.lose(K, agentName, ["task.completed"]);
  const mode =
    fault === "failure"
      ? "fail"
      : fault === "retry-fail"
        ? "retry-fail"
        : fault === "sleep"
          ? "nap"
          : fault === "abort"
            ? "hang-once"
            : ["evictions", "force-idle", "trigger-alarm", "cancel"].includes(fault)
              ? "hang"
              : "complete";
  const runId = await stub.startTask(mode);
  await form.stepDone(K, agentName, "work");
  let action: Subject["action"] = null;
  if (fault === "abort") await evictAndWake(form, K, agentName);
  if (fault === "evictions") for (let i = 0; i < 3; i++) await evictAndWake(form, K, agentName);
  if (fault === "cancel") {
    await stub.cancelTask(runId, "truth matrix: cancelled by its caller");
    await form.stepDone(K, agentName, "work");
  }
  if (fault === "force-idle" || fault === "trigger-alarm") {
    action = await act(K, agentName, fault);
    await form.stepDone(K, agentName, "action");
  }
  if (fault === "retry-fail") await settleRetries(form, K, agentName);
  const unseen =
    fault === "unseen"
      ? [await unseenRun(form, K, agentName, ["task.accepted", "task.attempt.started", "task.completed"], () => stub.startTask("complete"))]
      : [];
  await form.stepDone(K, agentName, "work");
  return { agentClass: K, agentName, kind: "task", runIds: [runId, ...unseen], evicted: fault === "abort" || fault === "evictions", action };
}

/** Once the console knows the agent, one more run whose every event is lost in transport; returns its id. */
async function unseenRun(form: Form, agentClass: Subject["agentClass"], agentName: string, types: string[], start: () => Promise<string>): Promise<string> {
  // The console knows the agent (on the outbox path, by its numbered events) before the run it will not see.
  const known = form === OUTBOX_FORM ? "AND seq_max IS NOT NULL" : "";
  await pollRows(`SELECT 1 FROM agents WHERE agent_class = ? AND agent_name = ? ${known}`, [agentClass, agentName], (r) => r.length === 1);
  await form.lose(agentClass, agentName, types);
  return start();
}

/** A retried step parks the run until its retry is due; the alarm runs each retry. */
async function settleRetries(form: Form, agentClass: Subject["agentClass"], agentName: string): Promise<void> {
  for (let i = 0; i < 10; i++) {
    const stub = await truthStub(agentClass, agentName);
    const [t] = await stub.sdkTasks();
    if (!t || ["completed", "failed", "cancelled"].includes(t.state)) return;
    await scheduler.wait(20);
    await runDurableObjectAlarm(stub as never);
    await form.stepDone(agentClass, agentName, "alarm");
  }
}

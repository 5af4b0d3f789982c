import {
  AGENT_STATUSES,
  agentStatusOf,
  CHAT_RECOVERY_EVENT_STATUS,
  CHAT_RECOVERY_EXHAUSTION_REASONS,
  CHAT_RECOVERY_STATUS,
  CHAT_TURN_STATUS,
  chatRecoveryRecordStatus,
  chatTurnState,
  FIBER_AWAITS_RESOLUTION,
  FIBER_RECOVERY_INCIDENT,
  FIBER_STATUS,
  fiberIncidentStatusOf,
  INCIDENT_OVERLAYS,
  INCIDENT_STATUS_RANK,
  INCIDENT_STATUSES,
  mapSdkState,
  RUN_OUTCOMES,
  RUN_PHASES,
  RUN_STATE_TABLES,
  runStateOf,
  SDK_INCIDENT_STATUSES,
  TASK_STATE,
} from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";

/**
 * src/telemetry/sdk-states.ts, entry by entry, against fixed values written here: the one mapping from the SDK's
 * words to the console's. Ingest, reconciliation and force idle all read through it, so one wrong entry would show
 * the wrong word everywhere; the truth matrices check the same words end to end from their own tables
 * (test/truth/expected-states.ts). A word the SDK adds later is not known: the mapping says so (null), never a guess.
 */

const ended = (outcome: string) => ({ outcome, phase: null });
const live = (phase: string) => ({ outcome: null, phase });

/** Words no SDK table holds, including ones an object's prototype has. */
const UNKNOWN_WORDS = ["paused", "Completed", "", "constructor", "__proto__", "toString", "hasOwnProperty"];

describe("sdk-states: the console's words", () => {
  it("lists every run outcome, phase, incident status and agent status the console shows", () => {
    expect(RUN_OUTCOMES).toStrictEqual([
      "completed",
      "failed",
      "cancelled",
      "interrupted",
      "recovering",
      "recovered",
      "recovery_skipped",
      "recovery_failed",
      "exhausted",
      "force_idled",
      "ended_unreported",
      "unknown",
    ]);
    expect(RUN_PHASES).toStrictEqual(["pending", "running", "waiting", "interrupted"]);
    expect(SDK_INCIDENT_STATUSES).toStrictEqual(["open", "recovered", "exhausted", "failed", "skipped"]);
    expect(INCIDENT_OVERLAYS).toStrictEqual(["force_idled", "ended_unreported"]);
    expect(INCIDENT_STATUSES).toStrictEqual(["open", "recovered", "exhausted", "failed", "skipped", "force_idled", "ended_unreported"]);
    expect(AGENT_STATUSES).toStrictEqual(["running", "waiting", "idle", "terminated"]);
  });
});

describe("sdk-states: each SDK word, mapped", () => {
  it("maps every managed fiber status (FiberStatus)", () => {
    expect(FIBER_STATUS).toStrictEqual({
      pending: live("pending"),
      running: live("running"),
      completed: ended("completed"),
      error: ended("failed"),
      aborted: ended("cancelled"),
      interrupted: ended("interrupted"),
    });
  });

  it("maps every Tasks run state (TaskRunState)", () => {
    expect(TASK_STATE).toStrictEqual({
      pending: live("pending"),
      running: live("running"),
      waiting: live("waiting"),
      completed: ended("completed"),
      failed: ended("failed"),
      cancelled: ended("cancelled"),
    });
  });

  it("maps every chat turn status (Think's submissions, chat:turn:finish)", () => {
    expect(CHAT_TURN_STATUS).toStrictEqual({
      pending: live("pending"),
      running: live("running"),
      completed: ended("completed"),
      error: ended("failed"),
      aborted: ended("cancelled"),
      skipped: ended("cancelled"),
      cancelled: ended("cancelled"),
      interrupted: ended("interrupted"),
    });
  });

  it("maps every chat-recovery record status, and each chat:recovery event to its record status", () => {
    expect(CHAT_RECOVERY_STATUS).toStrictEqual({
      detected: "open",
      scheduled: "open",
      attempting: "open",
      completed: "recovered",
      skipped: "skipped",
      exhausted: "exhausted",
      failed: "failed",
    });
    expect(CHAT_RECOVERY_EVENT_STATUS).toStrictEqual({
      detected: "detected",
      scheduled: "scheduled",
      attempt: "attempting",
      completed: "completed",
      skipped: "skipped",
      exhausted: "exhausted",
      failed: "failed",
    });
  });

  it("knows the SDK's exhaustion reasons, and ranks exhausted above every later word", () => {
    expect(CHAT_RECOVERY_EXHAUSTION_REASONS).toStrictEqual([
      "max_attempts_exceeded",
      "no_progress_timeout",
      "work_budget_exceeded",
      "recovery_aborted",
      "interrupted_attempts_exceeded",
      "out_of_memory",
      "stable_timeout",
      "recovery_error",
      "max_recovery_window_exceeded",
    ]);
    expect(INCIDENT_STATUS_RANK).toStrictEqual({ exhausted: 1 });
  });

  it("maps a fiber's status after recovery to its incident's status", () => {
    expect(FIBER_RECOVERY_INCIDENT).toStrictEqual({
      pending: "open",
      running: "open",
      interrupted: "open",
      completed: "recovered",
      error: "failed",
      aborted: "skipped",
    });
    expect(fiberIncidentStatusOf("interrupted")).toBe("open");
    expect(fiberIncidentStatusOf("completed")).toBe("recovered");
    expect(fiberIncidentStatusOf("error")).toBe("failed");
    expect(fiberIncidentStatusOf("aborted")).toBe("skipped");
  });

  it("reads each run kind's state by its own table (a plain runFiber in the managed-fiber words)", () => {
    expect(RUN_STATE_TABLES.fiber).toBe(FIBER_STATUS);
    expect(RUN_STATE_TABLES.managed_fiber).toBe(FIBER_STATUS);
    expect(RUN_STATE_TABLES.task).toBe(TASK_STATE);
    expect(RUN_STATE_TABLES.chat_turn).toBe(CHAT_TURN_STATUS);
    expect(Object.keys(RUN_STATE_TABLES).sort()).toStrictEqual(["chat_turn", "fiber", "managed_fiber", "task"]);
    expect(runStateOf("task", "waiting")).toStrictEqual(live("waiting"));
    expect(runStateOf("managed_fiber", "aborted")).toStrictEqual(ended("cancelled"));
    expect(runStateOf("fiber", "error")).toStrictEqual(ended("failed"));
    expect(runStateOf("chat_turn", "skipped")).toStrictEqual(ended("cancelled"));
    // Words of one kind are not another's: Tasks say `failed`, fibers `error`.
    expect(runStateOf("managed_fiber", "failed")).toBeNull();
    expect(runStateOf("task", "error")).toBeNull();
  });
});

describe("sdk-states: a word it does not know is unknown, never a guess", () => {
  it("maps an unknown or missing word to null in every table", () => {
    const tables: Record<string, Record<string, unknown>> = {
      FIBER_STATUS,
      TASK_STATE,
      CHAT_TURN_STATUS,
      CHAT_RECOVERY_STATUS,
      FIBER_RECOVERY_INCIDENT,
      CHAT_RECOVERY_EVENT_STATUS,
    };
    for (const [name, table] of Object.entries(tables)) {
      for (const word of [...UNKNOWN_WORDS, null, undefined]) expect(mapSdkState(table, word), `${name}[${String(word)}]`).toBeNull();
    }
    for (const kind of ["fiber", "managed_fiber", "task", "chat_turn"] as const) {
      for (const word of UNKNOWN_WORDS) expect(runStateOf(kind, word), `${kind}: ${word}`).toBeNull();
    }
    expect(fiberIncidentStatusOf("paused")).toBeNull();
    expect(fiberIncidentStatusOf(null)).toBeNull();
  });

  it("gives no incident status for an unknown chat-recovery record, and no turn state for an unknown turn word", () => {
    expect(chatRecoveryRecordStatus({ status: "paused" })).toBeNull();
    expect(chatRecoveryRecordStatus({ status: "constructor" })).toBeNull();
    expect(chatTurnState("paused")).toBeNull();
    expect(chatTurnState("paused", { status: "attempting" })).toBeNull();
    expect(chatTurnState("paused", { status: "paused" })).toBeNull();
  });
});

describe("sdk-states: chat-recovery records and chat turns", () => {
  it("shows a record's status by its word, and a failed record with an exhaustion reason as exhausted", () => {
    expect(chatRecoveryRecordStatus({ status: "detected" })).toBe("open");
    expect(chatRecoveryRecordStatus({ status: "attempting", reason: "max_attempts_exceeded" })).toBe("open");
    expect(chatRecoveryRecordStatus({ status: "completed" })).toBe("recovered");
    expect(chatRecoveryRecordStatus({ status: "exhausted", reason: "no_progress_timeout" })).toBe("exhausted");
    expect(chatRecoveryRecordStatus({ status: "skipped", reason: "recovery_paused" })).toBe("skipped");
    expect(chatRecoveryRecordStatus({ status: "failed" })).toBe("failed");
    expect(chatRecoveryRecordStatus({ status: "failed", reason: null })).toBe("failed");
    expect(chatRecoveryRecordStatus({ status: "failed", reason: "provider said 400" })).toBe("failed");
    for (const reason of CHAT_RECOVERY_EXHAUSTION_REASONS) expect(chatRecoveryRecordStatus({ status: "failed", reason }), reason).toBe("exhausted");
  });

  it("ends a turn by its record where the SDK gave up or declined, else by the turn's own word", () => {
    expect(chatTurnState("error", { status: "exhausted", reason: "max_attempts_exceeded" })).toStrictEqual(ended("exhausted"));
    expect(chatTurnState("error", { status: "failed", reason: "interrupted_attempts_exceeded" })).toStrictEqual(ended("exhausted"));
    expect(chatTurnState("running", { status: "skipped" })).toStrictEqual(ended("recovery_skipped"));
    expect(chatTurnState("running", { status: "attempting" })).toStrictEqual(live("running"));
    expect(chatTurnState("error", { status: "failed", reason: "provider said 400" })).toStrictEqual(ended("failed"));
    expect(chatTurnState("completed", { status: "completed" })).toStrictEqual(ended("completed"));
    expect(chatTurnState("aborted", null)).toStrictEqual(ended("cancelled"));
    expect(chatTurnState("pending")).toStrictEqual(live("pending"));
  });
});

describe("sdk-states: an agent's status from its work", () => {
  const none = { runRows: 0, taskStates: [], fiberStatuses: [] };

  it("is running while any work is live, waiting while work is parked, else idle", () => {
    expect(agentStatusOf(none)).toBe("idle");
    expect(agentStatusOf({ ...none, runRows: 1 })).toBe("running");
    expect(agentStatusOf({ ...none, taskStates: ["pending"] })).toBe("running");
    expect(agentStatusOf({ ...none, taskStates: ["running"] })).toBe("running");
    expect(agentStatusOf({ ...none, taskStates: ["waiting"] })).toBe("waiting");
    expect(agentStatusOf({ ...none, fiberStatuses: ["pending"] })).toBe("running");
    expect(agentStatusOf({ ...none, fiberStatuses: ["running"] })).toBe("running");
    expect(agentStatusOf({ ...none, fiberStatuses: ["interrupted"] })).toBe("waiting");
    expect(agentStatusOf({ ...none, taskStates: ["waiting"], fiberStatuses: ["running"] })).toBe("running");
    for (const w of ["completed", "failed", "cancelled"]) expect(agentStatusOf({ ...none, taskStates: [w] }), w).toBe("idle");
    for (const w of ["completed", "error", "aborted"]) expect(agentStatusOf({ ...none, fiberStatuses: [w] }), w).toBe("idle");
    expect([...FIBER_AWAITS_RESOLUTION]).toStrictEqual(["interrupted"]);
  });
});

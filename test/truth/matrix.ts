/**
 * The truth matrix, as data: which primitive meets which fault. A new primitive or fault is one row here
 * (plus, for a new primitive, its driver in drive.ts). Each row runs on a fresh foreign agent
 * (test/fixtures/truth-agents.ts); afterwards the SDK's own public APIs and the console's own JSON are read
 * and compared field by field (observe.ts, compare.ts).
 */

/** Durable work primitives of agents 0.32 the main suite drives (chat turns run in the chat suite). */
export const PRIMITIVES = [
  "runFiber",
  "managed:undefined",
  "managed:completed",
  "managed:error",
  "managed:aborted",
  "managed:interrupted",
  "managed:throws",
  "task",
] as const;
export type Primitive = (typeof PRIMITIVES)[number];

/**
 * Faults:
 * - none: the work completes; failure: it fails (for tasks, `fail` is final, `retry-fail` exhausts its step's retries);
 * - abort: `ctx.abort()` mid-work, then the next wake recovers or replays it;
 * - lost-end: the work completes but its end event is lost between agent and console (reconciliation must tell);
 * - unseen: after one run the console saw, a second one completes with every event of it lost, the agent's last
 *   (no later event reveals a gap in its numbers: the agent's own count must);
 * - evictions: evicted again during every replay until the SDK gives up or the test's budget of 3 is spent;
 * - force-idle / trigger-alarm: the console's audited actions, mid-work; cancel: the SDK's own cancel API;
 * - sleep: a durable sleep (Tasks), the run waits;
 * - resolved: after an abort leaves a managed fiber interrupted, the agent settles it later with resolveFiber
 *   (the SDK emits no event for it); resolved-lost: the same, with the agent's report of it lost in transport.
 */
export const FAULTS = [
  "none",
  "failure",
  "retry-fail",
  "abort",
  "lost-end",
  "evictions",
  "force-idle",
  "trigger-alarm",
  "cancel",
  "sleep",
  "resolved",
  "resolved-lost",
  "unseen",
] as const;
export type Fault = (typeof FAULTS)[number];

export type Row = { primitive: Primitive; fault: Fault };

const rows = (primitive: Primitive, faults: Fault[]): Row[] => faults.map((fault) => ({ primitive, fault }));

/** Every row the main suite runs. A fault that does not apply to a primitive is simply not listed. */
export const MATRIX: Row[] = [
  ...rows("runFiber", ["none", "failure", "abort", "lost-end", "evictions", "force-idle", "trigger-alarm"]),
  // What onFiberRecovered returns decides a managed fiber's fate after an eviction; the other faults do not depend on it.
  ...rows("managed:undefined", [
    "none",
    "failure",
    "abort",
    "lost-end",
    "unseen",
    "evictions",
    "force-idle",
    "trigger-alarm",
    "cancel",
    "resolved",
    "resolved-lost",
  ]),
  ...rows("managed:completed", ["abort"]),
  ...rows("managed:error", ["abort"]),
  ...rows("managed:aborted", ["abort"]),
  ...rows("managed:interrupted", ["abort"]),
  ...rows("managed:throws", ["abort"]),
  ...rows("task", ["none", "failure", "retry-fail", "abort", "lost-end", "unseen", "evictions", "force-idle", "trigger-alarm", "cancel", "sleep"]),
];

export const rowName = (r: Row) => `${r.primitive} × ${r.fault}`;

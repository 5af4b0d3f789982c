import { maskSecrets } from "@agent-oncall/telemetry";
import type { RunDetail } from "./contract.js";
import { rowKind } from "./inspect.js";
import type { RunRecords } from "./records-contract.js";
import { CHAT_TURN_TASK, chatTurnRequestIdOf } from "./sdk-layout.js";

/**
 * Worker side of the run viewer: one live run with its snapshot, built from what the agent read (records.ts
 * runRecords, contract 7): a runFiber row, else a managed fiber (its ledger snapshot), else a Tasks run (its state and
 * current step stand in for a snapshot).
 */

/** Snapshots larger than this are returned as truncated text with an explicit marker. */
export const SNAPSHOT_CAP_BYTES = 64 * 1024;

/** A snapshot as the run viewer shows it: parsed JSON when it fits under the cap, else truncated (masked) text. */
function withSnapshot(
  base: Omit<RunDetail, "snapshot" | "snapshotText" | "truncated" | "snapshotBytes">,
  text: string | null,
  bytes = text ? new TextEncoder().encode(text).byteLength : 0,
): RunDetail {
  if (text === null) return { ...base, snapshotBytes: 0, snapshot: null, snapshotText: null, truncated: false };
  if (bytes > SNAPSHOT_CAP_BYTES) {
    // Masked before the cut, so a credential at the cut keeps none of its characters.
    const masked = maskSecrets(text.slice(0, 2 * SNAPSHOT_CAP_BYTES));
    return {
      ...base,
      snapshotBytes: bytes,
      snapshot: null,
      snapshotText: `${masked.slice(0, SNAPSHOT_CAP_BYTES)}… [truncated: ${bytes} bytes, showing the first ${SNAPSHOT_CAP_BYTES}]`,
      truncated: true,
    };
  }
  try {
    return { ...base, snapshotBytes: bytes, snapshot: JSON.parse(text), snapshotText: text, truncated: false };
  } catch {
    return { ...base, snapshotBytes: bytes, snapshot: null, snapshotText: text, truncated: false };
  }
}

/** One live run with its snapshot; null when the agent has none with this id. */
export function runDetailOf(raw: RunRecords): RunDetail | null {
  if (!raw) return null;
  const { id, readAt: now, row, fiber, task } = raw;
  if (row) {
    const base = {
      id: row.id,
      name: row.name,
      kind: rowKind(row.name, fiber !== undefined),
      requestId: fiber !== undefined ? null : chatTurnRequestIdOf(row.name),
      createdAt: row.created_at,
      ageMs: Math.max(0, now - row.created_at),
    };
    return withSnapshot(base, raw.text, raw.bytes);
  }
  if (fiber) {
    const base = {
      id,
      name: fiber.name,
      kind: "managed_fiber" as const,
      requestId: null,
      createdAt: fiber.createdAt,
      ageMs: Math.max(0, now - fiber.createdAt),
    };
    return withSnapshot(base, raw.text, raw.bytes);
  }
  if (!task) return null;
  const chat = task.definition === CHAT_TURN_TASK;
  const requestId = chat && typeof task.metadata?.requestId === "string" ? task.metadata.requestId : null;
  const view = {
    state: task.state,
    definition: task.definition,
    currentStep: raw.step ?? null,
    statusMessage: task.statusMessage ?? null,
    attempt: task.attempt ?? null,
    requestId,
    wakeAt: task.wakeAt ?? null,
  };
  const base = {
    id,
    name: task.definition,
    kind: chat ? ("chat_turn" as const) : ("task" as const),
    requestId,
    createdAt: task.createdAt,
    ageMs: Math.max(0, now - task.createdAt),
  };
  return withSnapshot(base, JSON.stringify(view));
}

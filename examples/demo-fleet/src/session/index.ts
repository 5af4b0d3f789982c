/** Public surface of the observed runtime. */

export { evictionPlan, type PlannedEviction } from "./eviction-plan";
export type { ModelRequest, ModelResponse, SessionModel, SessionTool } from "./model";
export { canonicalJson, opId } from "./op-id";
export { AmbiguousOpError, OpLedger, type OpPoint, type OpSpec } from "./op-ledger";
export { DEFAULT_SCRIPT, ScriptedModel, type TurnScript } from "./scripted-model";
export { MAX_TURN_RECOVERIES, SessionAgent, type SessionResult, TURN_FIBER, type TurnPoint } from "./session-agent";
export { deriveStatus, type SessionStatus } from "./status";
export { BACKUP_TTL_MS, type BackupInfo, type BackupScope, Workspace } from "./workspace";

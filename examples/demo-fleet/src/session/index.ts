/** Public surface of the observed runtime. */
export { SessionAgent, MAX_TURN_RECOVERIES, TURN_FIBER, type SessionResult, type TurnPoint } from "./session-agent";
export { deriveStatus, type SessionStatus } from "./status";
export { OpLedger, AmbiguousOpError, type OpSpec, type OpPoint } from "./op-ledger";
export { opId, canonicalJson } from "./op-id";
export { Workspace, BACKUP_TTL_MS, type BackupInfo, type BackupScope } from "./workspace";
export { ScriptedModel, DEFAULT_SCRIPT, type TurnScript } from "./scripted-model";
export { evictionPlan, type PlannedEviction } from "./eviction-plan";
export type { SessionModel, SessionTool, ModelRequest, ModelResponse } from "./model";

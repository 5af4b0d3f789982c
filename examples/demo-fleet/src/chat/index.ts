/** The chat agent on the agents SDK (Think) with a scripted model, and its parts. */
export { ChatAgent, type TurnOutcome, type TurnStart, type TranscriptEntry } from "./chat-agent";
export { createScriptedModel, type ScriptedModelEvent, type ScriptedModelOptions } from "./scripted-model";
export { ScriptStore, type ModelCallRecord } from "./script-store";
export { parseScriptInput, scriptStepSchema, SCRIPT_LANES, type ScriptStep, type ScriptLane, type ScriptInput } from "./script";
export { RecoveryPolicyStore, chatRecoveryConfig, recoveryPolicySchema, type RecoveryPolicy, type RecoveryPolicyInput } from "./recovery-policy";
export { classifyModelError } from "./classify-error";
export { sdkRecoveryIncidents, type SdkRecoveryIncident } from "./sdk-chat-state";

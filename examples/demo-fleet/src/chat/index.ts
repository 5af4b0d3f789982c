/** The chat agent on the agents SDK (Think) with a scripted model, and its parts. */
export { ChatAgent, type TranscriptEntry, type TurnOutcome, type TurnStart } from "./chat-agent";
export { classifyModelError } from "./classify-error";
export { chatRecoveryConfig, type RecoveryPolicy, type RecoveryPolicyInput, RecoveryPolicyStore, recoveryPolicySchema } from "./recovery-policy";
export { parseScriptInput, SCRIPT_LANES, type ScriptInput, type ScriptLane, type ScriptStep, scriptStepSchema } from "./script";
export { type ModelCallRecord, ScriptStore } from "./script-store";
export { createScriptedModel, type ScriptedModelEvent, type ScriptedModelOptions } from "./scripted-model";
export { type SdkRecoveryIncident, sdkRecoveryIncidents } from "./sdk-chat-state";

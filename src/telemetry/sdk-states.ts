/**
 * The one declared mapping from the agents SDK's state words to the console's lives in the admin package's facts
 * entry (src/admin-rpc/sdk-states.ts), which the agent side derives an agent's status with; it is read here by name.
 */
export * from "@agent-oncall/admin-rpc/facts";

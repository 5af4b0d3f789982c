/**
 * The agent side of the admin RPC: the mixin and the contract. The Worker-side
 * client is a separate entry (`@agent-oncall/admin-rpc/client`) that an agent never loads.
 */
export { withAdminRpc, type WithAdminRpcClass, type WithAdminRpcOptions } from "./mixin.js";
export * from "./contract.js";

import { signingKey, verifyEventSignature } from "@agent-oncall/telemetry";

/**
 * Signed mode: when the console has TELEMETRY_SIGNING_SECRET, every event
 * must carry a valid signature (src/telemetry/signing.ts says what is signed);
 * unsigned and badly signed ones go to dead letters. Without the secret,
 * signatures are ignored.
 */

const keys = new Map<string, Promise<CryptoKey>>();

/** The verification key for the console's secret (imported once per isolate), or null when events need no signature. */
export function verificationKey(secret: string | undefined): Promise<CryptoKey> | null {
  if (!secret?.trim()) return null;
  let key = keys.get(secret);
  if (!key) {
    key = signingKey(secret);
    keys.set(secret, key);
  }
  return key;
}

/** Why an event's signature is not acceptable, or null when it is. */
export async function signatureProblem(item: Record<string, unknown>, key: CryptoKey): Promise<string | null> {
  switch (await verifyEventSignature(item, key)) {
    case "valid":
      return null;
    case "missing":
      return "unsigned event: this console requires signed telemetry (TELEMETRY_SIGNING_SECRET is set); set the same secret in the agents' Worker";
    default:
      return "bad signature: the event was changed after it was signed, or signed with another secret";
  }
}

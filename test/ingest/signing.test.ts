import { env } from "cloudflare:workers";
import { type QueueLike, signEventText, signingKey, Telemetry } from "@agent-oncall/telemetry";
import { describe, expect, it } from "vitest";
import { ingestBatch, ingestOptionsFromEnv } from "../../worker/ingest/consumer";
import { makeEvent } from "../fixtures/events";
import { pollRows } from "../helpers";

/**
 * Signed mode: with TELEMETRY_SIGNING_SECRET on the console, ingest stores only events signed with the
 * same secret. The signed bodies come from the real sender (a Telemetry pipe sending to the real Queue);
 * a tap on the way keeps what it sent, which is then ingested by a console that has the secret.
 */

const SECRET = "test-signing-secret-0123456789abcdef";
const uid = () => crypto.randomUUID().slice(0, 8);

/** The real telemetry Queue, with a record of every message body sent through it. */
function tappedQueue(): QueueLike & { bodies: string[] } {
  const bodies: string[] = [];
  return {
    bodies,
    sendBatch(messages) {
      const list = [...messages];
      for (const m of list) bodies.push(m.body as string);
      return env.TELEMETRY_QUEUE.sendBatch(list);
    },
  };
}

async function signedBodies(agentName: string, secret: string): Promise<{ bodies: string[]; ids: string[] }> {
  const queue = tappedQueue();
  const t = new Telemetry({ source: { agentClass: "ProbeAgent", agentName }, queue, signingSecret: secret, flushDelayMs: 0 });
  const ids = [
    t.record("session.status_running", { turnSeq: 1 }, { sessionName: agentName }).id,
    t.record("op.ambiguous", { opKind: "payment.charge", detail: "charged once?" }, { sessionName: agentName, opId: `op-${agentName}` }).id,
  ];
  await t.settle();
  expect(t.stats()).toMatchObject({ sent: 2, sendErrors: 0 });
  return { bodies: queue.bodies, ids };
}

const signedMode = () => ingestOptionsFromEnv({ ...env, TELEMETRY_SIGNING_SECRET: SECRET });
const asMessages = (bodies: unknown[]) => bodies.map((body) => ({ id: `m-${uid()}`, body }));
const deadReasons = async (needle: string) =>
  (await env.DB.prepare("SELECT reason FROM dead_letters WHERE instr(body, ?) > 0 ORDER BY reason").bind(needle).all<{ reason: string }>()).results.map(
    (r) => r.reason,
  );

describe("signed events", () => {
  it("the sender signs each event in the background; a console without the secret stores them as before", async () => {
    const agentName = `signed-${uid()}`;
    const { bodies, ids } = await signedBodies(agentName, SECRET);
    const events = bodies.flatMap((b) => JSON.parse(b) as Record<string, unknown>[]);
    expect(events.map((e) => e.id)).toEqual(ids);
    for (const e of events) expect(e.sig).toMatch(/^hmac-sha256=[A-Za-z0-9_-]{43}$/);
    // The real consumer of the test Worker has no secret: it ignores signatures.
    await pollRows("SELECT id FROM events WHERE agent_name = ?", [agentName], (r) => r.length === 2);
  });

  it("a console with the secret stores signed events and dead-letters unsigned, tampered and wrongly signed ones", async () => {
    const agentName = `verify-${uid()}`;
    const { bodies, ids } = await signedBodies(agentName, SECRET);
    const opts = await signedMode();
    expect(opts.signingKey).not.toBeNull();
    expect(await ingestBatch(env.DB, asMessages(bodies), opts)).toMatchObject({ stored: 2, deadLettered: 0 });

    // Unsigned: as an agent without the secret (or a producer that never had it) sends them.
    const unsigned = makeEvent("session.status_idle", {}, { agentName: `unsigned-${uid()}`, corr: { sessionName: agentName } });
    // Tampered: a signed event whose identity was changed afterwards.
    const tampered = bodies[0]!.replaceAll(`"agentName":"${agentName}"`, `"agentName":"zzz-${agentName}"`);
    expect(tampered).not.toBe(bodies[0]);
    // Signed with another secret.
    const other = (await signedBodies(`other-${agentName}`, "another-secret-entirely")).bodies;
    // A signature field that is not a signature.
    const garbled = makeEvent("session.status_idle", {}, { agentName: `garbled-${uid()}` });
    const r = await ingestBatch(env.DB, asMessages([unsigned, tampered, ...other, { ...garbled, sig: "hmac-sha256=short" }]), opts);
    expect(r).toMatchObject({ stored: 0, deadLettered: 2 + 2 + 1 + 1 });

    expect(await deadReasons(unsigned.id)).toEqual([
      "unsigned event: this console requires signed telemetry (TELEMETRY_SIGNING_SECRET is set); set the same secret in the agents' Worker",
    ]);
    const BAD = "bad signature: the event was changed after it was signed, or signed with another secret";
    expect(await deadReasons(`zzz-${agentName}`)).toEqual([BAD, BAD]);
    expect(await deadReasons(`other-${agentName}`)).toEqual([BAD, BAD]);
    expect(await deadReasons(garbled.id)).toEqual([BAD]);
    const stored = await env.DB.prepare("SELECT id FROM events WHERE agent_name = ? ORDER BY id").bind(`zzz-${agentName}`).all();
    expect(stored.results).toEqual([]);
    expect(ids).toHaveLength(2);
  });

  it("signs the exact text that is sent: parse then stringify without `sig` gives it back", async () => {
    const key = await signingKey(SECRET);
    const e = makeEvent(
      "session.error",
      { error: "naïve “quotes” \u2028 and \ud800 lone surrogate", reason: "x" },
      { agentName: `text-${uid()}`, corr: { sessionName: "s" } },
    );
    const signed = await signEventText(JSON.stringify(e), key);
    expect(signed.startsWith(JSON.stringify(e).slice(0, -1))).toBe(true);
    const opts = await signedMode();
    expect(await ingestBatch(env.DB, asMessages([signed]), { ...opts, now: e.time + 1000 })).toMatchObject({ stored: 1, deadLettered: 0 });
  });
});

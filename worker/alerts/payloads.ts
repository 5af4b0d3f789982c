import type { AlertKind } from "../../src/store/alerts";
import type { AlertChannel } from "./config";

/** One thing worth waking someone for, before it is recorded per channel. */
export type Alert = {
  /** Dedup key: one alert per incident, ambiguous op or stuck episode (see worker/ingest/alert-candidates.ts and stuck.ts). */
  key: string;
  kind: AlertKind;
  agentClass: string;
  agentName: string;
  /** The incident id, op id, or stuck rule. */
  subjectId: string;
  /** A short headline, e.g. "Recovery exhausted". */
  title: string;
  /** One line for people: what happened, to what, why. */
  summary: string;
  /** The console page to open, a path such as /incidents/abc?agentClass=…&agentName=…. */
  path: string;
  /** When it happened (the event's time), epoch ms. */
  at: number;
  /** Extra facts for machines (reason, attempts, op kind, rule…). */
  details: Record<string, string | number | null>;
};

const DAY_MS = 86_400_000;

/** The UTC day of `now` ("2026-11-25"): the key part of alerts raised at most once per subject and day. */
export const alertDay = (now: number): string => new Date(Math.floor(now / DAY_MS) * DAY_MS).toISOString().slice(0, 10);

const PAYLOAD_VERSION = 1;

const linkOf = (a: Alert, consoleUrl: string | null) => (consoleUrl ? `${consoleUrl}${a.path}` : null);

/** The generic JSON body: stable field names, versioned, for any webhook consumer (PagerDuty bridges, scripts). */
export function webhookPayload(a: Alert, consoleUrl: string | null) {
  return {
    source: "agent-oncall",
    version: PAYLOAD_VERSION,
    kind: a.kind,
    key: a.key,
    title: a.title,
    summary: a.summary,
    agent: { class: a.agentClass, name: a.agentName },
    subject: a.subjectId,
    time: new Date(a.at).toISOString(),
    path: a.path,
    url: linkOf(a, consoleUrl),
    details: a.details,
  };
}

/** Slack's mrkdwn treats &, < and > as control characters: any text we did not write is escaped. */
export function slackEscape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** Slack's incoming-webhook body: `text` (notifications, fallback) and mrkdwn `blocks`. */
export function slackPayload(a: Alert, consoleUrl: string | null) {
  const link = linkOf(a, consoleUrl);
  const agent = `${slackEscape(a.agentClass)} / ${slackEscape(a.agentName)}`;
  const facts = Object.entries(a.details)
    .filter(([, v]) => v !== null && v !== "")
    .map(([k, v]) => `*${slackEscape(k)}:* ${slackEscape(String(v))}`)
    .join("  ·  ");
  return {
    text: `${slackEscape(a.title)}: ${agent}: ${slackEscape(a.summary)}`,
    blocks: [
      { type: "section", text: { type: "mrkdwn", text: `*${slackEscape(a.title)}* · ${agent}\n${slackEscape(a.summary)}` } },
      ...(facts ? [{ type: "context", elements: [{ type: "mrkdwn", text: facts }] }] : []),
      {
        type: "context",
        elements: [
          {
            type: "mrkdwn",
            text: link
              ? `<${slackEscape(link)}|Open in the console> · ${new Date(a.at).toISOString()}`
              : `console path: ${slackEscape(a.path)} · ${new Date(a.at).toISOString()}`,
          },
        ],
      },
    ],
  };
}

/** The body to POST on `channel`, as text (it travels in the queue message as is). */
export function payloadFor(channel: AlertChannel, a: Alert, consoleUrl: string | null): string {
  return JSON.stringify(channel === "slack" ? slackPayload(a, consoleUrl) : webhookPayload(a, consoleUrl));
}

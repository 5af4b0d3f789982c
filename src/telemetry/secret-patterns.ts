/**
 * The credential shapes telemetry masks, and how each is replaced.
 *
 * Every pattern runs in linear time on any input, because a snapshot or a model's
 * partial output is attacker-shaped text: each quantified run is followed by a
 * character its class cannot match (so it never backtracks into itself), and a
 * token pattern starts only where a token starts (a lookbehind on the token's own
 * characters), so a long run is scanned from one position, not from each of its
 * characters. A marker never contains a quote or backslash (JSON text stays
 * valid) and never matches a pattern again (masking is idempotent).
 */

/** How a masked value reads: a marker naming what it was, never any of its characters. */
export const marker = (label: string): string => `[masked: ${label}]`;

/** Refuses to start a match on a marker left by an earlier pass (also "Bearer [masked: …]"). */
const NOT_MASKED = String.raw`(?!\\?["']?(?:(?:Bearer|Basic)\s{1,8})?\[masked: )`;

/**
 * One credential shape and what replaces a match: a fixed marker (text built once; markers hold no `$`, so
 * String.replace takes it literally), or a function where the replacement depends on the match.
 */
type Rule = { re: RegExp; replace: string | ((match: string, ...rest: unknown[]) => string) };

/** The marker label for a secret named by `key` (`db_password` → password, `githubToken` → token). */
export function labelForKey(key: string): string {
  const k = key.toLowerCase().replace(/[_-]/g, "");
  if (/pass(word|wd|phrase)$/.test(k)) return "password";
  if (k.endsWith("secretaccesskey")) return "aws secret access key";
  if (k.endsWith("token")) return "token";
  if (k.endsWith("apikey")) return "api key";
  if (k.endsWith("privatekey")) return "private key";
  if (k === "authorization" || k === "cookie") return k;
  return "secret";
}

/** Key names whose value is a secret, in `key=value`, `key: value` and JSON `"key": "value"` form. */
export const SECRET_KEY =
  /(?:password|passwd|passphrase|secret[_-]?access[_-]?key|client[_-]?secret|secret[_-]?key|secret|private[_-]?key|api[_-]?key|access[_-]?token|refresh[_-]?token|auth[_-]?token|token)/;

const PAIR = new RegExp(
  // key, then its closing quote if quoted (also escaped, for JSON inside a JSON string), then the separator
  String.raw`(${SECRET_KEY.source})(\\?["']?)(\s{0,8}[:=]\s{0,8})${NOT_MASKED}` +
    // the value: escaped-quoted, double-quoted, single-quoted, or bare up to a delimiter
    String.raw`(?:(\\")((?:[^"\\]|\\[^"])*)|(")((?:[^"\\]|\\.)*)|(')([^'"\\\n]*)|([^\s"'\\,;&(){}\[\]<>][^\s"'\\,;&]*))`,
  "gi",
);

function maskPair(_m: string, key: string, keyQuote: string, sep: string, ...g: unknown[]): string {
  const [escQ, escV, dq, dqV, sq, sqV, bare] = g as (string | undefined)[];
  const label = marker(labelForKey(key));
  const head = `${key}${keyQuote}${sep}`;
  if (escQ !== undefined) return escV ? `${head}${escQ}${label}` : `${head}${escQ}`;
  if (dq !== undefined) return dqV ? `${head}${dq}${label}` : `${head}${dq}`;
  if (sq !== undefined) return sqV ? `${head}${sq}${label}` : `${head}${sq}`;
  if (!keyQuote.endsWith('"')) return `${head}${label}`;
  // After a JSON key a bare value is a literal: it ends at the first closing bracket, null/true/false are
  // no secret, and a masked number is quoted so the JSON stays valid.
  const value = /^[^}\]]*/.exec(bare!)![0];
  const rest = bare!.slice(value.length);
  if (value === "null" || value === "true" || value === "false") return `${head}${bare}`;
  return `${head}"${label}"${rest}`;
}

/** `Basic` credentials are base64 of `user:password`; other words after "Basic" are left alone. */
function maskBasic(m: string, scheme: string, value: string, offset: number, whole: string): string {
  const headerBefore = /authorization["']?\s{0,8}[:=]\s{0,8}["']?$/i.test(whole.slice(Math.max(0, offset - 40), offset));
  return headerBefore || decodesToPair(value) ? `${scheme} ${marker("credentials")}` : m;
}

/** Whether a base64 word decodes to `user:password`. Checks the length first: a throwing atob is slow. */
function decodesToPair(value: string): boolean {
  const unpadded = value.replace(/=+$/, "");
  if (unpadded.length % 4 === 1 || (unpadded.length !== value.length && value.length % 4 !== 0)) return false;
  try {
    return atob(value).includes(":");
  } catch {
    return false;
  }
}

/** The built-in rules, in order: longer, more specific shapes first, so their marker names them. */
const RULES: Rule[] = [
  // Credentials in URLs: scheme://user:password@host keeps the scheme and host.
  { re: /:\/\/[^\s/?#@:"'<>]*:[^\s/?#@"'<>]*@/g, replace: `://${marker("url credentials")}@` },
  // JWTs, signed or not (`alg: none` leaves the signature part empty).
  {
    re: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*\.([A-Za-z0-9_-]*)/g,
    replace: (_m, sig) => marker(sig ? "jwt" : "unsigned jwt"),
  },
  // GitHub tokens: personal, OAuth, user-to-server, server-to-server, refresh, fine-grained.
  { re: /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{10,}|github_pat_[A-Za-z0-9_]{10,})/g, replace: marker("github token") },
  // Slack bot, user, app and config tokens.
  { re: /(?<![A-Za-z0-9_-])(?:xox[abposre]|xapp)-[A-Za-z0-9-]{8,}/g, replace: marker("slack token") },
  // Google API keys.
  { re: /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{30,}/g, replace: marker("google api key") },
  // AWS access key ids (long-term AKIA, temporary ASIA).
  { re: /(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}/g, replace: marker("aws access key id") },
  // Provider API keys (sk-…, sk_live_…, rk_…, pk_…).
  { re: /(?<![A-Za-z0-9_-])(?:sk|pk|rk)[-_][A-Za-z0-9_-]{16,}/g, replace: marker("api key") },
  // HTTP Basic credentials.
  { re: /\b(Basic)\s{1,8}(?!\[masked: )([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])/gi, replace: maskBasic as Exclude<Rule["replace"], string> },
  // Bearer tokens of any length.
  { re: /\b(Bearer)\s{1,8}(?!\[masked: )[A-Za-z0-9._~+/-]+=*/gi, replace: (_m, scheme) => `${scheme} ${marker("token")}` },
  // password=…, "api_key": "…", aws_secret_access_key = …, token: …
  { re: PAIR, replace: maskPair as Exclude<Rule["replace"], string> },
  // Long hex strings (API secrets, signing keys).
  { re: /(?<![0-9A-Za-z])[0-9a-fA-F]{40,}(?![0-9A-Za-z])/g, replace: marker("hex secret") },
];

const PEM_BEGIN = /-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/y;
const PEM_END = /-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/y;

/**
 * Masks PEM private-key blocks, from BEGIN through END, or through the end of the
 * text when the END line is missing (the text was cut). A forward scan with
 * indexOf, so the cost is linear whatever the input.
 */
function maskPrivateKeys(s: string): string {
  if (!s.includes("-----BEGIN ")) return s;
  let out = "";
  let from = 0;
  for (;;) {
    let begin = s.indexOf("-----BEGIN ", from);
    while (begin >= 0) {
      PEM_BEGIN.lastIndex = begin;
      if (PEM_BEGIN.test(s)) break;
      begin = s.indexOf("-----BEGIN ", begin + 1);
    }
    if (begin < 0) return out + s.slice(from);
    let end = -1;
    for (let at = s.indexOf("-----END ", PEM_BEGIN.lastIndex); at >= 0; at = s.indexOf("-----END ", at + 1)) {
      PEM_END.lastIndex = at;
      if (PEM_END.test(s)) {
        end = PEM_END.lastIndex;
        break;
      }
    }
    out += s.slice(from, begin) + marker("private key");
    if (end < 0) return out;
    from = end;
  }
}

/** Applies every built-in rule. */
export function maskBuiltIn(s: string): string {
  let out = maskPrivateKeys(s);
  for (const rule of RULES) {
    rule.re.lastIndex = 0;
    // String.replace takes a text or a function; TypeScript's overloads take one kind at a time.
    out = out.replace(rule.re, rule.replace as string);
  }
  return out;
}

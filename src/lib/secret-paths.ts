// Credentials that travel in URL paths, kept out of every log. No imports: `npm start` (scripts/lib/local.ts)
// filters wrangler's own output with it too.

/**
 * URL paths that carry a credential, and how logs show them: a recipient page's token (`/r/{token}`,
 * src/lib/recipient-links.ts), an unsubscribe link's (`/u/{token}`, src/lib/unsubscribe-links.ts) and a calendar feed's (`/v1/calendar/{token}.ics`). Matched anywhere
 * in a text, so that `npm start` filters wrangler's own access log with them too (scripts/lib/local.ts).
 */
const SECRET_PATHS: Array<[RegExp, string]> = [
  [/\/r\/[^/\s?#"'<>]+/g, "/r/[token]"],
  [/\/u\/[^/\s?#"'<>]+/g, "/u/[token]"],
  [/\/v1\/calendar\/[^/\s?#"'<>]+?\.ics/g, "/v1/calendar/[token].ics"],
];

/** `text` (a path, a log line) with every token of a credential path replaced: no secret in a URL reaches a log. */
export function redactSecrets(text: string): string {
  let out = text;
  for (const [pattern, shown] of SECRET_PATHS) out = out.replace(pattern, shown);
  return out;
}

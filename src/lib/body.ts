// Request hygiene that runs before routing, authentication and parsing (registered app-wide in
// src/app.ts): a bounded URL, a valid query string, a bounded body read once, and JSON bodies
// decoded as strict UTF-8. A route needing another body limit gets a row in BODY_RULES.
import type { MiddlewareHandler } from "hono";
import { echo } from "./echo";
import { apiError, oauthError, type ApiError } from "./errors";

export const KiB = 1024;
export const MiB = 1024 * KiB;

/** Body limit of every route without a row in BODY_RULES (JSON API bodies). */
export const DEFAULT_BODY_LIMIT = 64 * KiB;
/** Longest request target (path and query string) accepted: 414 beyond it. */
export const MAX_URL_LENGTH = 8 * KiB;
/** Deepest nesting of arrays and objects accepted in a JSON body: 400 beyond it. */
export const MAX_JSON_DEPTH = 32;

export interface BodyRule {
  /** An HTTP method, or "*" for all. */
  method: string;
  /** An exact path; a `:name` segment matches any one segment (`/v1/items/:item_id/attachments`). */
  path: string;
  /** Most body bytes accepted. */
  limit: number;
  /**
   * `buffer` (default): the body is read here, at most `limit` bytes, before the route runs; JSON
   * bodies (and untyped ones) are decoded as strict UTF-8; the route reads the body through `c.req`
   * (or `c.req.raw`) as usual.
   * `stream`: the body is left to the route as a stream (e.g. raw upload bytes), counted: a declared
   * Content-Length over the limit is refused here, an undeclared length errors the stream with a
   * 413 ApiError once it passes the limit. No charset or UTF-8 rule applies.
   */
  mode?: "buffer" | "stream";
  /** `oauth`: errors in Shape A (`invalid_request`), for the token endpoint; else Shape B. */
  shape?: "api" | "oauth";
}

/**
 * Largest file `PUT /v1/uploads` accepts: 95 MiB (99,614,720 bytes), below the Workers platform's
 * 100 MB request-body limit with room for the request's own overhead.
 */
export const MAX_UPLOAD_BYTES = 95 * MiB;

/**
 * Per-route body limits; the first row matching the method and path applies, else
 * DEFAULT_BODY_LIMIT.
 */
export const BODY_RULES: readonly BodyRule[] = [
  { method: "POST", path: "/v1/oauth/token", limit: 8 * KiB, shape: "oauth" },
  // Raw file bytes, streamed into R2 by the route (src/routes/drive/storage.ts): never buffered here.
  { method: "PUT", path: "/v1/uploads", limit: MAX_UPLOAD_BYTES, mode: "stream" },
  // An import file (src/routes/imports/routes.ts): read whole, then stored in R2 for the job.
  { method: "POST", path: "/v1/imports", limit: 20 * MiB },
  // A recipient page's form (src/routes/recipient-pages/routes.ts): an action, a date or a short note.
  { method: "POST", path: "/r/:token", limit: 8 * KiB },
  { method: "POST", path: "/r/:token/:action", limit: 8 * KiB },
  // The one-click unsubscribe (RFC 8058) and the preferences form (src/routes/unsubscribe/routes.ts).
  { method: "POST", path: "/u/:token", limit: 8 * KiB },
  { method: "POST", path: "/u/:token/preferences", limit: 8 * KiB },
];

const DEFAULT_RULE: Required<BodyRule> = {
  method: "*",
  path: "*",
  limit: DEFAULT_BODY_LIMIT,
  mode: "buffer",
  shape: "api",
};

function pathMatches(pattern: string, path: string): boolean {
  if (pattern === path) return true;
  if (!pattern.includes(":")) return false;
  const want = pattern.split("/");
  const have = path.split("/");
  return (
    want.length === have.length && want.every((part, i) => (part.startsWith(":") ? have[i] !== "" : part === have[i]))
  );
}

/** The body rule of a request (with defaults filled in). */
export function bodyRuleFor(method: string, path: string, rules: readonly BodyRule[] = BODY_RULES): Required<BodyRule> {
  const m = method.toUpperCase();
  const rule = rules.find((r) => (r.method === "*" || r.method.toUpperCase() === m) && pathMatches(r.path, path));
  return { ...DEFAULT_RULE, ...rule };
}

/** Human-readable size for messages: `64 KiB (65536 bytes)`. */
export function describeBytes(bytes: number): string {
  const unit = bytes % MiB === 0 ? `${bytes / MiB} MiB` : bytes % KiB === 0 ? `${bytes / KiB} KiB` : undefined;
  return unit ? `${unit} (${bytes} bytes)` : `${bytes} bytes`;
}

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;
const UTF8_LABELS = new Set(["utf-8", "utf8"]);

/** Media type and parameters of a Content-Type header (lower-cased names, unquoted values). */
export function parseContentType(header: string): { mediaType: string; params: Array<[string, string]> } {
  const semicolon = header.indexOf(";");
  const mediaType = (semicolon < 0 ? header : header.slice(0, semicolon)).trim().toLowerCase();
  const params: Array<[string, string]> = [];
  if (semicolon >= 0) {
    const re = /;\s*([^=;\s]+)\s*(?:=\s*("(?:[^"\\]|\\.)*"?|[^;]*))?/g;
    re.lastIndex = semicolon;
    for (let m = re.exec(header); m; m = re.exec(header)) {
      let value = (m[2] ?? "").trim();
      if (value.startsWith('"')) value = value.replace(/^"|"$/g, "").replace(/\\(.)/g, "$1");
      params.push([m[1]!.toLowerCase(), value]);
    }
  }
  return { mediaType, params };
}

/** True when arrays/objects nest deeper than `max` (strings are skipped; syntax is JSON.parse's job). */
export function jsonNestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c) i++;
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) {
      inString = true;
    } else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > max) return true;
    } else if (ch === 0x5d || ch === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** Query strings whose percent-escapes do not decode as UTF-8 (a stray `%` is taken literally). */
function queryIsValidUtf8(query: string): boolean {
  if (!query.includes("%")) return true;
  try {
    decodeURIComponent(query.replace(/%(?![0-9A-Fa-f]{2})/g, "%25"));
    return true;
  } catch {
    return false;
  }
}

/** Reads at most `limit` bytes of a stream; calls `tooLarge` (and cancels) as soon as it passes it. */
async function readLimited(body: ReadableStream, limit: number, tooLarge: () => Error): Promise<Uint8Array> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const chunk = value instanceof Uint8Array ? value : new Uint8Array(value as ArrayBuffer);
    total += chunk.byteLength;
    if (total > limit) {
      reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  if (chunks.length === 1) return chunks[0]!;
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }); // a leading BOM is dropped

/**
 * The app-wide request guard (see the module comment). Order: URL length (414), query string
 * encoding (400), declared body length (413), charset (415), body read within the limit (413),
 * JSON bodies: strict UTF-8 (400) and nesting depth (400). JSON syntax is left to whoever parses
 * the body (Hono's validator, the token endpoint), which reads the decoded text from `c.req`.
 */
export function requestGuard(rules: readonly BodyRule[] = BODY_RULES): MiddlewareHandler {
  return async (c, next) => {
    const rule = bodyRuleFor(c.req.method, c.req.path, rules);
    const fail = (status: 400 | 413 | 414 | 415, msg: string): ApiError =>
      rule.shape === "oauth" ? oauthError(status, "invalid_request", msg) : apiError(status, msg);

    const url = c.req.url;
    const target = url.slice(url.indexOf("/", url.indexOf("://") + 3));
    if (target.length > MAX_URL_LENGTH) {
      throw fail(414, `The request URL (path and query string) must be at most ${MAX_URL_LENGTH} characters`);
    }
    const question = target.indexOf("?");
    if (question >= 0 && !queryIsValidUtf8(target.slice(question + 1))) {
      throw fail(400, "The query string is not valid UTF-8 once percent-decoded");
    }

    const raw = c.req.raw;
    if (raw.body === null) return next();

    const tooLarge = () =>
      fail(
        413,
        `Request body exceeds the limit of ${describeBytes(rule.limit)} for ${c.req.method} ${echo(c.req.path)}`,
      );
    const declared = raw.headers.get("Content-Length");
    if (declared !== null && /^\d+$/.test(declared.trim()) && Number(declared) > rule.limit) throw tooLarge();

    if (rule.mode === "stream") {
      // A declared length is enforced by the runtime's framing (and keeps the stream's known
      // length, which R2 needs); an undeclared one is counted as the route reads it.
      if (declared === null) {
        let seen = 0;
        const counter = new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            seen += chunk.byteLength;
            if (seen > rule.limit) controller.error(tooLarge());
            else controller.enqueue(chunk);
          },
        });
        c.req.raw = new Request(raw, { body: raw.body.pipeThrough(counter) });
      }
      return next();
    }

    const contentType = raw.headers.get("Content-Type") ?? "";
    const { mediaType, params } = parseContentType(contentType);
    for (const [name, value] of params) {
      if (name === "charset" && !UTF8_LABELS.has(value.toLowerCase())) {
        throw fail(415, `Unsupported charset "${echo(value)}": request bodies must be UTF-8 (charset=utf-8 or none)`);
      }
    }

    const bytes = await readLimited(raw.body, rule.limit, tooLarge);
    const buffer: ArrayBuffer =
      bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
        ? (bytes.buffer as ArrayBuffer)
        : bytes.slice().buffer;
    // The route reads the body through c.req (cached below) or c.req.raw (a fresh copy).
    c.req.raw = new Request(raw, { body: buffer });
    const cache = c.req.bodyCache as Record<string, Promise<unknown>>; // Hono keeps promises there
    cache.arrayBuffer = Promise.resolve(buffer);

    // JSON, and bodies without a Content-Type (the token endpoint reads those as JSON).
    if (mediaType === "" || JSON_MEDIA_TYPE.test(mediaType)) {
      let text: string;
      try {
        text = strictUtf8.decode(bytes);
      } catch {
        throw fail(400, "Request body is not valid UTF-8");
      }
      if (jsonNestsDeeperThan(text, MAX_JSON_DEPTH)) {
        throw fail(400, `JSON in the request body nests deeper than ${MAX_JSON_DEPTH} levels`);
      }
      // `c.req.json()` (and so the validators) and `c.req.text()` parse this text.
      cache.text = Promise.resolve(text);
    }
    return next();
  };
}

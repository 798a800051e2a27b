// Pure helpers of the drive: sizes, ids and tokens, download headers, byte ranges.

/** KB a file counts against the drive counters: ceil(bytes / 1024), at least 1 (the files_usage triggers do the same in SQL). */
export function kbOf(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / 1024));
}

const SIZE_UNITS = ["KB", "MB", "GB", "TB"] as const;

/**
 * Human-readable size: under 1024 bytes `"512 B"`; else KB, MB, GB or TB (1024-based) with one
 * decimal, rounded half up, moving to the next unit when the rounded value reaches 1024
 * (1,048,575 bytes is "1.0 MB", not "1024.0 KB").
 */
export function humanSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  let value = bytes / 1024;
  let unit = 0;
  while (unit < SIZE_UNITS.length - 1 && Math.round(value * 10) / 10 >= 1024) {
    value /= 1024;
    unit++;
  }
  return `${(Math.round(value * 10) / 10).toFixed(1)} ${SIZE_UNITS[unit]}`;
}

/** `bytes` random bytes as base64url without padding. */
export function randomBase64url(bytes: number): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...raw))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

// Upload tokens are stored only as their hex SHA-256.
export { sha256Hex, toHex } from "../../lib/bytes";

/**
 * A new upload token: `upt`, the shard that holds the upload session (none for shard 0), `_` and 43
 * base64url characters (256 random bits). The PUT has no bearer token: its shard comes from here.
 */
export const newUploadToken = (shard: number) => `upt${shard === 0 ? "" : shard}_${randomBase64url(32)}`;
export const UPLOAD_TOKEN_PATTERN = /^upt(\d{0,2})_[A-Za-z0-9_-]{43}$/;
/** The shard named by a token that matches UPLOAD_TOKEN_PATTERN. */
export const uploadTokenShard = (token: string) => Number(UPLOAD_TOKEN_PATTERN.exec(token)?.[1] || 0);

/** A new public file id: `fil_` and 22 base64url characters (128 random bits). */
export const newFileId = () => `fil_${randomBase64url(16)}`;

/** The R2 key of an upload's bytes: under the company's prefix, named by its upload session (ids are never reused). */
export const objectKey = (companyId: number, sessionId: number) => `c/${companyId}/u${sessionId}`;

const EXTENSION_TYPES: Record<string, string> = {
  pdf: "application/pdf",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  heic: "image/heic",
  tif: "image/tiff",
  tiff: "image/tiff",
  txt: "text/plain",
  csv: "text/csv",
  json: "application/json",
  xml: "application/xml",
  zip: "application/zip",
  doc: "application/msword",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xls: "application/vnd.ms-excel",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ppt: "application/vnd.ms-powerpoint",
  pptx: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  odt: "application/vnd.oasis.opendocument.text",
  ods: "application/vnd.oasis.opendocument.spreadsheet",
  eml: "message/rfc822",
  msg: "application/vnd.ms-outlook",
};

/** The content type of a file name's extension for common document types, else application/octet-stream. */
export function contentTypeFor(fileName: string): string {
  const dot = fileName.lastIndexOf(".");
  const extension = dot > 0 ? fileName.slice(dot + 1).toLowerCase() : "";
  return EXTENSION_TYPES[extension] ?? "application/octet-stream";
}

// RFC 8187 attr-char: ALPHA / DIGIT / "!" / "#" / "$" / "&" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~".
// encodeURIComponent leaves ' ( ) * unescaped as well, which attr-char does not allow.
const encodeExtValue = (value: string) =>
  encodeURIComponent(value).replace(/['()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * `Content-Disposition: attachment` with both forms of the name (RFC 6266): `filename="…"`, an
 * ASCII fallback for old clients (accents dropped, every other non-ASCII character and `"` `\` as one `_`),
 * and `filename*=UTF-8''…`, the exact name percent-encoded, which current clients use. File
 * names hold no control characters (refused on upload), so nothing can break the header.
 */
export function contentDisposition(fileName: string): string {
  const fallback = fileName
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/[^\x20-\x7e]|["\\]/gu, "_"); // per code point: an emoji is one "_"
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encodeExtValue(fileName)}`;
}

export type ByteRange = { kind: "all" } | { kind: "range"; start: number; end: number } | { kind: "unsatisfiable" };

/**
 * A `Range` header against a file of `size` bytes (RFC 9110 §14): one `bytes=` range, `a-b`, `a-`
 * or `-n` (the last n bytes). No header, another unit, several ranges, or a malformed or
 * invalid one (b < a) is ignored: the whole file (`all`). A valid range that starts at or past
 * the end, or `-0`, is `unsatisfiable` (416). `b` past the end is cut to the last byte.
 */
export function parseRange(header: string | undefined, size: number): ByteRange {
  if (!header) return { kind: "all" };
  const match = /^\s*bytes\s*=\s*(\d{0,20})\s*-\s*(\d{0,20})\s*$/i.exec(header);
  if (!match || (match[1] === "" && match[2] === "")) return { kind: "all" };
  if (match[1] === "") {
    const suffix = Number(match[2]);
    if (suffix === 0 || size === 0) return { kind: "unsatisfiable" };
    return { kind: "range", start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === "" ? Number.POSITIVE_INFINITY : Number(match[2]);
  if (end < start) return { kind: "all" };
  if (start >= size) return { kind: "unsatisfiable" };
  return { kind: "range", start, end: Math.min(end, size - 1) };
}

// A small, defensive MIME reader for inbound reports (docs/bounces.md): headers, Content-Type
// parameters, multipart bodies and transfer decodings. Bounded (depth, parts, header count) and
// never throws: what it cannot read it leaves out.

export interface Part {
  /** Header fields, names lowercased, unfolded, in order. */
  headers: Array<[string, string]>;
  body: string;
}

const MAX_HEADERS = 200;
const MAX_PARTS = 32;
const MAX_DEPTH = 4;

/** The first value of a header (name in any case). */
export function header(part: Pick<Part, "headers">, name: string): string | undefined {
  const lower = name.toLowerCase();
  return part.headers.find(([n]) => n === lower)?.[1];
}

/** Header fields of `text` (up to the first blank line, or all of it); unfolded; bounded. */
export function parseHeaderBlock(text: string): Array<[string, string]> {
  const fields: Array<[string, string]> = [];
  for (const line of text.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && fields.length > 0) {
      const last = fields[fields.length - 1]!;
      last[1] = `${last[1]} ${line.trim()}`.slice(0, 2000);
      continue;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!/^[\x21-\x39\x3b-\x7e]+$/.test(name)) continue;
    fields.push([
      name,
      line
        .slice(colon + 1)
        .trim()
        .slice(0, 2000),
    ]);
    if (fields.length >= MAX_HEADERS) break;
  }
  return fields;
}

/** Splits a message (or a body part) into its headers and body. */
export function parsePart(text: string): Part {
  const match = /\r?\n\r?\n/.exec(text);
  const head = match ? text.slice(0, match.index) : text;
  const body = match ? text.slice(match.index + match[0].length) : "";
  return { headers: parseHeaderBlock(head), body };
}

/** A Content-Type: its type/subtype lowercased and its parameters (names lowercased, quotes removed). */
export function contentType(part: Pick<Part, "headers">): { type: string; params: Record<string, string> } {
  const value = header(part, "content-type") ?? "text/plain";
  const [type, ...rest] = value.split(";");
  const params: Record<string, string> = {};
  for (const param of rest) {
    const eq = param.indexOf("=");
    if (eq <= 0) continue;
    const name = param.slice(0, eq).trim().toLowerCase();
    let v = param.slice(eq + 1).trim();
    if (v.startsWith('"')) v = v.slice(1, v.indexOf('"', 1) > 0 ? v.indexOf('"', 1) : undefined);
    params[name] = v;
  }
  return { type: (type ?? "").trim().toLowerCase(), params };
}

/** The body parts of a multipart part; [] when it is not multipart or has no usable boundary. */
export function multipartParts(part: Part): Part[] {
  const { type, params } = contentType(part);
  const boundary = params.boundary;
  if (!type.startsWith("multipart/") || !boundary || boundary.length > 200) return [];
  const delimiter = `--${boundary}`;
  const parts: Part[] = [];
  const sections = part.body.split(delimiter);
  // sections[0] is the preamble; a section starting with "--" is the close delimiter's epilogue.
  for (const section of sections.slice(1)) {
    if (section.startsWith("--")) break;
    const content = section.replace(/^[ \t]*\r?\n/, "").replace(/\r?\n$/, "");
    parts.push(parsePart(content));
    if (parts.length >= MAX_PARTS) break;
  }
  return parts;
}

/** Every leaf and nested part of a message, depth first, bounded in depth and number. */
export function allParts(root: Part): Part[] {
  const out: Part[] = [];
  const walk = (part: Part, depth: number) => {
    if (out.length >= MAX_PARTS * 2) return;
    out.push(part);
    if (depth >= MAX_DEPTH) return;
    for (const child of multipartParts(part)) walk(child, depth + 1);
  };
  walk(root, 0);
  return out;
}

/** The body of a part with its Content-Transfer-Encoding undone (base64, quoted-printable), as text. */
export function decodedBody(part: Part): string {
  const encoding = (header(part, "content-transfer-encoding") ?? "").trim().toLowerCase();
  if (encoding === "base64") {
    try {
      const binary = atob(part.body.replace(/[^A-Za-z0-9+/=]/g, "").replace(/=+$/, ""));
      return new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
    } catch {
      return "";
    }
  }
  if (encoding === "quoted-printable") {
    const bytes: number[] = [];
    const text = part.body.replace(/=\r?\n/g, "");
    for (let i = 0; i < text.length; i++) {
      const hex = text.slice(i + 1, i + 3);
      if (text[i] === "=" && /^[0-9A-Fa-f]{2}$/.test(hex)) {
        bytes.push(Number.parseInt(hex, 16));
        i += 2;
      } else bytes.push(text.charCodeAt(i) & 0xff);
    }
    return new TextDecoder().decode(Uint8Array.from(bytes));
  }
  return part.body;
}

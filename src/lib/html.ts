// Small HTML helpers shared by the pages the Worker renders (GET /, the reminder emails). Pure.

const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escapes & < > " ' for HTML text and attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/**
 * Whether an `Accept` header prefers HTML to JSON (RFC 9110 §12.5.1): text/html (or text/*) must
 * have a higher quality than application/json, where application/json is matched by itself,
 * application/* or *\/*. No header, `*\/*`, a tie or a header naming neither: JSON, the answer
 * programs have always had. A browser's navigation (`text/html,...,*\/*;q=0.8`) prefers HTML.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  const html = quality(accept, "text", "html");
  return html > 0 && html > quality(accept, "application", "json");
}

/** The quality `accept` gives type/subtype: its most specific matching range's q (0 when none matches). */
function quality(accept: string, type: string, subtype: string): number {
  let best = -1; // specificity of the range found: 0 */*, 1 type/*, 2 type/subtype
  let q = 0;
  for (const part of accept.split(",")) {
    const [range = "", ...params] = part.split(";").map((s) => s.trim().toLowerCase());
    const [t, s] = range.split("/");
    const specificity = t === type && s === subtype ? 2 : t === type && s === "*" ? 1 : t === "*" && s === "*" ? 0 : -1;
    if (specificity <= best) continue;
    const qParam = params.find((p) => p.startsWith("q="));
    const value = qParam === undefined ? 1 : Number(qParam.slice(2));
    best = specificity;
    q = Number.isFinite(value) ? Math.min(Math.max(value, 0), 1) : 0;
  }
  return q;
}

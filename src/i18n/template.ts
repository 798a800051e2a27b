// A company's reminder template texts (docs/languages.md, "Company templates"): `{placeholder}`s
// from one documented set, `{{` and `}}` for literal braces. Checked when saved (an unknown
// placeholder or a stray brace is a 400 naming the field and the placeholder) and filled when an
// email is rendered. Pure.

/** Every placeholder a template may use, with what it becomes. */
export const TEMPLATE_PLACEHOLDERS = {
  "item.title": "the item's title",
  "item.date": "the item's date, in the company's date format and the recipient's language",
  "item.when": 'how far the date is, in words: "in 3 days", "tomorrow", "2 days ago"',
  "item.type": "the item's kind in the recipient's language (Expiration, Due date, Appointment, Event)",
  "item.reference": 'the item\'s reference, "Item #42"',
  days: "days from today to the item's date (negative once it has passed)",
  document_type: "the item's document type (empty when it has none)",
  "contact.first_name": "the recipient's first name",
  "contact.last_name": "the recipient's last name",
  "contact.name": "the recipient's first and last name",
  "company.name": "the company's name",
} as const;

export type TemplatePlaceholder = keyof typeof TEMPLATE_PLACEHOLDERS;
export type TemplateValues = Record<TemplatePlaceholder, string>;

const isPlaceholder = (name: string): name is TemplatePlaceholder => Object.hasOwn(TEMPLATE_PLACEHOLDERS, name);

type Piece = { text: string } | { name: TemplatePlaceholder };

/** What is wrong with a template text, in words naming the placeholder; null when nothing is. */
export function templateProblem(text: string): string | null {
  const parsed = parse(text);
  return "problem" in parsed ? parsed.problem : null;
}

function parse(text: string): { pieces: Piece[] } | { problem: string } {
  const pieces: Piece[] = [];
  let literal = "";
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "{" && text[i + 1] === "{") {
      literal += "{";
      i++;
    } else if (ch === "}" && text[i + 1] === "}") {
      literal += "}";
      i++;
    } else if (ch === "{") {
      const end = text.indexOf("}", i + 1);
      const next = text.indexOf("{", i + 1);
      if (end < 0 || (next >= 0 && next < end))
        return { problem: `has an unclosed "{" at character ${i + 1} (write "{{" for a literal brace)` };
      const name = text.slice(i + 1, end).trim();
      if (!isPlaceholder(name))
        return {
          problem: `has an unknown placeholder {${Array.from(name).slice(0, 40).join("")}}; known: ${Object.keys(
            TEMPLATE_PLACEHOLDERS,
          )
            .map((p) => `{${p}}`)
            .join(", ")}`,
        };
      if (literal) pieces.push({ text: literal });
      literal = "";
      pieces.push({ name });
      i = end;
    } else if (ch === "}") {
      return { problem: `has a "}" without its "{" at character ${i + 1} (write "}}" for a literal brace)` };
    } else {
      literal += ch;
    }
  }
  if (literal) pieces.push({ text: literal });
  return { pieces };
}

/**
 * The text with each placeholder replaced by its value. Values are data (a title may hold "{days}"):
 * they are inserted once, never read as template. A text that does not parse (saved before a
 * placeholder was retired) comes back as null, and the default wording is used.
 */
export function fillTemplate(text: string, values: TemplateValues): string | null {
  const parsed = parse(text);
  if ("problem" in parsed) return null;
  return parsed.pieces.map((p) => ("text" in p ? p.text : values[p.name])).join("");
}

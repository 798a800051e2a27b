// The message catalogue's one entry point: `t(language, key, params)`. Keys come from the English
// catalogue (en.ts), so a key missing there fails tsc; test/tools/i18n.test.ts checks that every
// language has exactly those keys with the same placeholders. Pure.
import { DEFAULT_LANGUAGE, type Language } from "../lib/languages";
import { ar } from "./ar";
import { de } from "./de";
import { type Catalogue, en, type MessageKey } from "./en";
import { es } from "./es";
import { fr } from "./fr";
import { pluralRules } from "./format";
import { pt } from "./pt";

export type { MessageKey };

export const CATALOGUES: Record<Language, Catalogue> = { en, de, fr, es, pt, ar };

export type MessageParams = Record<string, string | number>;

// `{n, plural, one {…} other {…}}`: the forms hold no braces of their own.
const PLURAL = /\{(\w+), plural,((?:\s*[a-z]+\s*\{[^{}]*\})+)\s*\}/g;
const FORM = /([a-z]+)\s*\{([^{}]*)\}/g;
const PLACEHOLDER = /\{([\w.]+)\}/g;

/**
 * The message `key` in `language`, its placeholders filled from `params` (a placeholder without a
 * value stays as written). `locale` picks the plural rules (default: the language).
 */
export function t(language: Language, key: MessageKey, params: MessageParams = {}, locale: string = language): string {
  const message = (CATALOGUES[language] ?? CATALOGUES[DEFAULT_LANGUAGE])[key];
  return message
    .replace(PLURAL, (whole, name: string, forms: string) => {
      const value = Number(params[name]);
      if (!Number.isFinite(value)) return whole;
      const byCategory = new Map<string, string>();
      for (const [, category, text] of forms.matchAll(FORM)) byCategory.set(category!, text!);
      const form = byCategory.get(pluralRules(locale).select(value)) ?? byCategory.get("other") ?? "";
      return form.replace(/#/g, String(value));
    })
    .replace(PLACEHOLDER, (whole, name: string) => (params[name] === undefined ? whole : String(params[name])));
}

/** The placeholders of a message (plural selectors included), sorted: the same in every language. */
export function placeholders(message: string): string[] {
  const names = new Set<string>();
  for (const [, name] of message.matchAll(PLURAL)) names.add(name!);
  for (const [, name] of message.replace(PLURAL, "").matchAll(PLACEHOLDER)) names.add(name!);
  return [...names].sort();
}

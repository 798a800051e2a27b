// The languages the service speaks (emails, pages), and the check of a BCP 47 tag against them.
//
// A tag is kept as Intl.getCanonicalLocales writes it, region and script included (`pt-BR` stays
// `pt-BR`: dates and numbers are formatted for it), and accepted when its primary language
// subtag is one of LANGUAGES. Messages are chosen by that primary language.

/** Supported languages, by their primary subtag. */
export const LANGUAGES = ["en", "de", "fr", "es", "pt", "ar"] as const;
export type Language = (typeof LANGUAGES)[number];

export const DEFAULT_LANGUAGE: Language = "en";

/** Each language's name in that language (what a person picks from a list). */
export const LANGUAGE_NAMES: Record<Language, string> = {
  en: "English",
  de: "Deutsch",
  fr: "Français",
  es: "Español",
  pt: "Português",
  ar: "العربية",
};

const RIGHT_TO_LEFT: ReadonlySet<Language> = new Set(["ar"]);

/** The longest tag accepted (RFC 5646 recommends room for 35 characters). */
export const MAX_LANGUAGE_TAG = 35;

/** The supported language a tag is written in (its primary subtag), or null. */
export function primaryLanguage(tag: string): Language | null {
  const primary = tag.split("-")[0]!.toLowerCase();
  return (LANGUAGES as readonly string[]).includes(primary) ? (primary as Language) : null;
}

/** `rtl` for a right-to-left language, else `ltr` (the HTML `dir` attribute). */
export function textDirection(tag: string): "ltr" | "rtl" {
  return isRightToLeft(tag) ? "rtl" : "ltr";
}

export function isRightToLeft(tag: string): boolean {
  const language = primaryLanguage(tag);
  return language !== null && RIGHT_TO_LEFT.has(language);
}

/**
 * The canonical form of a well-formed BCP 47 tag whose primary language is supported
 * (`PT-br` → `pt-BR`), or null: malformed, too long, or a language not in LANGUAGES.
 */
export function supportedLanguageTag(value: string): string | null {
  if (value.length === 0 || value.length > MAX_LANGUAGE_TAG) return null;
  let canonical: string;
  try {
    [canonical = ""] = Intl.getCanonicalLocales(value);
  } catch {
    return null;
  }
  return primaryLanguage(canonical) ? canonical : null;
}

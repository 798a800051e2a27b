// The languages the service speaks (docs/languages.md): the message catalogue (src/i18n/) has one
// module for each, with the same keys. A contact's or company's `language` is a BCP 47 tag whose
// base language is one of these; a region (`pt-BR`) changes the Intl formats, not the texts.

export const SUPPORTED_LANGUAGES = ["en", "de", "fr", "es", "pt", "ar"] as const;
export type Language = (typeof SUPPORTED_LANGUAGES)[number];
export const DEFAULT_LANGUAGE: Language = "en";

/** Languages written right to left. */
export const RTL_LANGUAGES: ReadonlySet<Language> = new Set<Language>(["ar"]);

export const isSupportedLanguage = (value: string): value is Language =>
  (SUPPORTED_LANGUAGES as readonly string[]).includes(value);

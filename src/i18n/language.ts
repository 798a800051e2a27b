// Which language a message speaks (docs/languages.md): the contact's `language`, else the
// company's `settings.language`, else English. A tag with a region (`pt-BR`) takes that region's
// Intl formats and its base language's texts; a tag whose base language the catalogue lacks is
// passed over. Pure.
import {
  DEFAULT_LANGUAGE,
  type Language,
  primaryLanguage,
  supportedLanguageTag,
  textDirection,
} from "../lib/languages";
import { intlLocale } from "./format";

export interface Speech {
  /** The catalogue's language. */
  language: Language;
  /** The Intl locale (the tag as given, region included, Latin digits). */
  locale: string;
  /** The tag for `lang=""` attributes. */
  tag: string;
  dir: "ltr" | "rtl";
}

const speeches = new Map<string, Speech | null>();

/** The speech of one tag, or null when it is no BCP 47 tag or its base language is not supported. */
export function speechOf(tag: string): Speech | null {
  let speech = speeches.get(tag);
  if (speech !== undefined) return speech;
  const canonical = supportedLanguageTag(tag);
  const language = canonical ? primaryLanguage(canonical) : null;
  speech =
    canonical && language
      ? { language, locale: intlLocale(canonical), tag: canonical, dir: textDirection(canonical) }
      : null;
  if (speeches.size < 1000) speeches.set(tag, speech);
  return speech;
}

/** The first of `tags` (most specific first: contact, company) the catalogue speaks, else English. */
export function speechFor(...tags: Array<string | null | undefined>): Speech {
  for (const tag of tags) {
    if (!tag) continue;
    const speech = speechOf(tag);
    if (speech) return speech;
  }
  return speechOf(DEFAULT_LANGUAGE)!;
}

/**
 * The language a browser asks for (`Accept-Language`), for pages that know no contact (a dead link,
 * an error): the supported tag with the highest weight, else English. Reads at most 20 entries of
 * the header's first 500 characters.
 */
export function speechOfRequest(acceptLanguage: string | undefined | null): Speech {
  const ranked = (acceptLanguage ?? "")
    .slice(0, 500)
    .split(",", 20)
    .map((entry, i) => {
      const [tag = "", ...params] = entry.trim().split(";");
      const q = params.map((p) => /^\s*q=([01](?:\.\d{0,3})?)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
      return { tag: tag.trim(), q: q === undefined ? 1 : Number(q), i };
    })
    .filter((entry) => entry.tag && entry.tag !== "*" && entry.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i);
  for (const { tag } of ranked) {
    const speech = speechOf(tag);
    if (speech) return speech;
  }
  return speechFor();
}

// Keys for case-insensitive uniqueness (group, department and document-type names, contact
// emails). Imports nothing, so the operator scripts (run by Node directly) share it.
//
// SQLite's lower()/NOCASE fold ASCII only ("Ä" and "ä" differ), so the key is computed here and
// stored in an indexed column. Unicode full case folding is approximated by upper- then
// lower-casing, which maps "ß" and "SS" together and "ς"/"Σ" to "σ"; NFC before and after makes
// composed and decomposed spellings ("é" and "e\u0301") one key. Accents are kept: "Apfel" and
// "Äpfel" stay distinct names.

/** The case-insensitive comparison key of a name. */
export function nameKey(text: string): string {
  return text.normalize("NFC").toUpperCase().toLowerCase().normalize("NFC");
}

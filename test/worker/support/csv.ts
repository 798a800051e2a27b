// A strict RFC 4180 reader for the export tests: records end with CRLF (the last one too); a quoted
// field may hold anything, quotes doubled; anything else malformed throws.

const SPECIAL = /[,\r"\n]/g;

export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let i = 0;
  while (i < text.length) {
    let field = "";
    if (text[i] === '"') {
      i++;
      for (;;) {
        const quote = text.indexOf('"', i);
        if (quote < 0) throw new Error(`unterminated quoted field at ${i}`);
        field += text.slice(i, quote);
        i = quote + 1;
        if (text[i] === '"') {
          field += '"';
          i++;
        } else break;
      }
    } else {
      SPECIAL.lastIndex = i;
      const stop = SPECIAL.exec(text)?.index ?? text.length;
      if (text[stop] === '"' || text[stop] === "\n")
        throw new Error(`unexpected ${JSON.stringify(text[stop])} at ${stop}`);
      field = text.slice(i, stop);
      i = stop;
    }
    record.push(field);
    if (text[i] === ",") i++;
    else if (text.startsWith("\r\n", i)) {
      records.push(record);
      record = [];
      i += 2;
    } else throw new Error(`expected , or CRLF at ${i}, found ${JSON.stringify(text.slice(i, i + 10))}`);
  }
  if (record.length > 0) throw new Error("the last record does not end with CRLF");
  return records;
}

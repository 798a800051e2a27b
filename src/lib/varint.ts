// The compact claims inside signed tokens (link-token.ts, bounce-token.ts): non-negative safe
// integers as little-endian base-128 varints, read back with a bound on each one's length.

/** Bytes one value may take: 8 × 7 bits hold every safe integer. */
export const MAX_VARINT_BYTES = 8;

/** Appends `value` to `out`; throws (naming `what`) when it is not a non-negative safe integer. */
export function writeVarint(out: number[], value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new Error(`${what}: ${value} is not a non-negative safe integer`);
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
}

/** `count` values from `bytes` at `start`, and where they end; null when they are not well formed. */
export function readVarints(bytes: Uint8Array, start: number, count: number): { values: number[]; end: number } | null {
  const values: number[] = [];
  let at = start;
  for (let field = 0; field < count; field++) {
    let value = 0;
    let scale = 1;
    for (let n = 0; ; n++) {
      if (n >= MAX_VARINT_BYTES || at >= bytes.length) return null;
      const byte = bytes[at++]!;
      value += (byte & 0x7f) * scale;
      scale *= 0x80;
      if (byte < 0x80) break;
    }
    if (!Number.isSafeInteger(value)) return null;
    values.push(value);
  }
  return { values, end: at };
}

/** Whether two byte strings are equal, in time that does not depend on where they differ. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length && i < b.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

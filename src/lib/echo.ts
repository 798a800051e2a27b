/** The most characters of client input that any message repeats back. */
export const MAX_ECHO_CHARS = 80;

/**
 * Client input as an error message may quote it: cut to `max` characters (whole code points,
 * so no lone surrogate is produced) with an ellipsis and the original length when cut.
 */
export function echo(value: string, max = MAX_ECHO_CHARS): string {
  const chars = Array.from(value.slice(0, max * 2 + 2));
  if (chars.length <= max) return value;
  return `${chars.slice(0, max).join("")}… (${value.length} characters)`;
}

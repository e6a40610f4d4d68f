/** Small helpers shared by the resume rules; not exported from the package. */

/** The strings of `value` when it is an array, dropping anything else. */
export function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** `value` when it is a plain object, else `undefined`. */
export function objectOf(value: unknown): Readonly<Record<string, unknown>> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** `items` as a bulleted list, one per line. */
export function bullets(items: readonly string[]): string {
  return items.map((i) => `- ${i}`).join('\n');
}

/** Shorter strings are cheaper to encode again than to look up. */
const MIN_LENGTH = 64;
/** Longer strings are not kept alive by this cache (a large value would be held, with its JSON, after the saver is done with it). */
export const REMEMBERED_MAX_LENGTH = 64 * 1024;
/** Strings remembered: a superstep's pending writes, whose values the next checkpoint holds. */
const SLOTS = 8;

/**
 * `encode` (a pure function of a string: JSON.stringify) remembering its last few results for
 * long strings. A value LangGraph writes as a task's pending write is the value the next
 * checkpoint stores for that channel — the same string — so the saver encodes it once per
 * superstep, not twice (JSON.stringify of a 600-character string costs ~1 µs on
 * Node 20, and the text is quoted once more to be stored as a JSON string). Strings are
 * compared with `===` (the same string is found by identity; an equal one by content, which
 * gives the same result): no hashing, nothing that can go stale, as strings never change.
 *
 * `encodeAgain`, when given, tells from a string and its encoding what encoding that encoding gives,
 * where it can without looking at it (undefined where it cannot): both are remembered, so the
 * encoding of the encoding (a value's JSON text quoted to be stored as a string) is found, not made.
 */
export function rememberingRecent(
  encode: (text: string) => string,
  encodeAgain?: (text: string, encoded: string) => string | undefined,
): (text: string) => string {
  const slots: Slots = { inputs: [], outputs: [], next: 0 };
  return (text) => {
    if (text.length < MIN_LENGTH || text.length > REMEMBERED_MAX_LENGTH) return encode(text);
    const found = slotOf(slots, text);
    if (found >= 0) return slots.outputs[found]!;
    const out = encode(text);
    remember(slots, text, out);
    const again = encodeAgain?.(text, out);
    if (again !== undefined && out.length <= REMEMBERED_MAX_LENGTH) remember(slots, out, again);
    return out;
  };
}

/** The remembered strings and their encodings, and the slot the next one takes. */
interface Slots {
  readonly inputs: string[];
  readonly outputs: string[];
  next: number;
}

/**
 * The slot holding `text`, newest first (a checkpoint's value was written by the superstep just
 * before it; an older string of the same length costs a comparison of its characters), else -1.
 */
function slotOf(slots: Slots, text: string): number {
  const { inputs } = slots;
  for (let k = 1; k <= inputs.length; k++) {
    const i = (slots.next - k + SLOTS) % SLOTS;
    if (inputs[i] === text) return i;
  }
  return -1;
}

function remember(slots: Slots, text: string, out: string): void {
  slots.inputs[slots.next] = text;
  slots.outputs[slots.next] = out;
  slots.next = (slots.next + 1) % SLOTS;
}

/**
 * `JSON.stringify(quoted)`, where `quoted` is `JSON.stringify(text)` of a string, known without
 * looking at it when quoting `text` escaped nothing (`quoted` is then `text` between quotes, two
 * characters longer): the same characters need no escape again, so only its two quotes do.
 */
export function quotedAgain(text: string, quoted: string): string | undefined {
  return quoted.length === text.length + 2 ? `"\\"${text}\\""` : undefined;
}

/** `JSON.stringify` of a string, remembering recent long ones (see {@link rememberingRecent}), and the quoting of its result. */
export const quoteRecent: (text: string) => string = rememberingRecent((text) => JSON.stringify(text), quotedAgain);

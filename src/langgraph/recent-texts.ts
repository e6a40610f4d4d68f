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
 */
export function rememberingRecent(encode: (text: string) => string): (text: string) => string {
  const inputs: string[] = [];
  const outputs: string[] = [];
  let next = 0;
  return (text) => {
    if (text.length < MIN_LENGTH || text.length > REMEMBERED_MAX_LENGTH) return encode(text);
    for (let i = 0; i < inputs.length; i++) if (inputs[i] === text) return outputs[i]!;
    const out = encode(text);
    inputs[next] = text;
    outputs[next] = out;
    next = (next + 1) % SLOTS;
    return out;
  };
}

/** `JSON.stringify` of a string, remembering recent long ones (see {@link rememberingRecent}). */
export const quoteRecent: (text: string) => string = rememberingRecent((text) => JSON.stringify(text));

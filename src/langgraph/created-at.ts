import { toRfc3339 } from '../model/clock.js';

/** The largest time a `Date` holds (ECMAScript: 8.64e15 ms from the epoch). */
const MAX_TIME_MS = 8.64e15;

/** `000`…`999`: the milliseconds of a timestamp within its second. */
const MILLIS: readonly string[] = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));

/**
 * `toRfc3339(ms)`, remembering the text of the last second it formatted: within that second
 * only the milliseconds change, so the usual call (a graph checkpoints many times a second)
 * joins two strings instead of making a `Date` and its ISO text (issue 17: the saver's calls
 * run cache-cold between LangGraph's, where that cost ~1 µs). Other times go to `toRfc3339`,
 * which checks them.
 */
export function createdAtText(ms: number): string {
  const within = ms - secondStart;
  if (within >= 0 && within < 1000 && Number.isInteger(within)) return `${secondPrefix}${MILLIS[within]}Z`;
  const text = toRfc3339(ms);
  // Only the usual shape (`…:ss.sssZ`, a time after 1970 as an integer) is remembered, and
  // only a second whose every millisecond is a valid time (the last one a Date holds is not).
  const start = ms - (ms % 1000);
  if (Number.isInteger(ms) && ms >= 0 && start + 999 <= MAX_TIME_MS && text.endsWith('Z') && text.charCodeAt(text.length - 5) === 0x2e) {
    secondStart = start;
    secondPrefix = text.slice(0, -4);
  }
  return text;
}

let secondStart = Number.NaN;
let secondPrefix = '';

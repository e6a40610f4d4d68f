import type { OptionSpec } from './command.js';

/** Edit distance between two short words (commands, flags), for "did you mean". */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}

/** The candidate closest to `word` (a prefix of it, or within a third of the candidate's length in edits), or `undefined`. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const w = word.toLowerCase();
  let best: { name: string; d: number } | undefined;
  for (const name of candidates) {
    const d = name.toLowerCase().startsWith(w) && w.length >= 2 ? 0 : distance(w, name.toLowerCase());
    if (d <= Math.max(1, Math.ceil(name.length / 3)) && (!best || d < best.d)) best = { name, d };
  }
  return best?.name;
}

/** ` (did you mean X?)` or an empty string. */
export const didYouMean = (word: string, candidates: readonly string[], prefix = ''): string => {
  const match = closest(word, candidates);
  return match ? ` (did you mean ${prefix}${match}?)` : '';
};

/**
 * A negative number after a flag that takes a value (`--seq -3`) is the flag's value, not a
 * flag: rewritten `--seq=-3`, so the command's own check says what the value must be instead
 * of parseArgs calling it "ambiguous".
 */
export function joinNegativeValues(argv: readonly string[], specs: Readonly<Record<string, OptionSpec>>): string[] {
  const takesValue = new Set<string>();
  for (const [name, o] of Object.entries(specs)) {
    if (o.type !== 'string') continue;
    takesValue.add(`--${name}`);
    if (o.short) takesValue.add(`-${o.short}`);
  }
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = argv[i + 1];
    if (takesValue.has(a) && next !== undefined && /^-\d/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/**
 * One line for a parseArgs error, in the CLI's words: the flag, what is wrong, a "did you
 * mean" for an unknown flag. parseArgs' own text spans lines and quotes unevenly.
 */
export function usageMessage(err: unknown, specs: Readonly<Record<string, OptionSpec>>): string {
  const e = err as { code?: string; message?: string };
  const text = String(e.message ?? err);
  const flag = /'(-{1,2}[^' ]+)/.exec(text)?.[1] ?? '';
  const names = Object.keys(specs);
  switch (e.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION': {
      const bare = flag.replace(/^-+/, '').replace(/=.*$/, '');
      return `unknown flag ${flag}${didYouMean(bare, names, '--')}`;
    }
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const name = /--([a-z-]+)/.exec(text)?.[1];
      const spec = name ? specs[name] : undefined;
      if (spec?.type === 'boolean') return `--${name} takes no value`;
      return `--${name ?? flag.replace(/^-+/, '')} needs a value${spec?.value ? ` (${spec.value})` : ''}`;
    }
    default:
      return text.split('\n')[0]!.replace(/'/g, '');
  }
}

/**
 * Library advice in an error, said in the CLI's terms: a message written for code that calls
 * `createWriter` names options a shell user cannot pass. Each entry is a phrase the library
 * uses and what to do from the command line instead.
 */
const LIBRARY_ADVICE: readonly (readonly [RegExp, string])[] = [
  [/,? ?or at once with createWriter\(\{ takeover: 'force' \}\)/, ', or at once after `savepoint unlock RUN --force`'],
  [/ \(set uuidRunIds: false to accept others\)/, ' (for other ids, pass --profile with a module file whose profile accepts them)'],
];

/** `message` with library-only options replaced by the CLI's flags and commands. */
export function inCliWords(message: string): string {
  let out = message;
  for (const [phrase, cli] of LIBRARY_ADVICE) out = out.replace(phrase, cli);
  return out;
}

import fc from 'fast-check';
import type { ArtifactEntry, HandoffDocument, PlayByPlayEntry } from 'savepoint/handoff-markdown';

/** Words without Markdown structure characters at their start; `|`, `\`, `*` and quotes appear inside. */
const word = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.,:()'@/+*|\\"-]{0,10}$/).filter((w) => !w.includes('--'));
export const line = fc.array(word, { minLength: 1, maxLength: 6 }).map((ws) => ws.join(' '));

/** A fenced code block whose lines start with `#` (shell comments, Markdown headings), as people paste them. */
const fence = fc
  .tuple(
    fc.constantFrom('```', '```sh', '~~~', '````md'),
    fc.array(fc.oneof(line, fc.constant('# a comment'), fc.constant('## Not a section'), fc.constant('')), { minLength: 1, maxLength: 4 }),
  )
  .map(([open, body]) => {
    const close = open.startsWith('~') ? '~~~' : open.startsWith('````') ? '````' : '```';
    return [open, ...body, close].join('\n');
  });

const paragraph = fc.array(line, { minLength: 1, maxLength: 3 }).map((ls) => ls.join('\n'));

/** Text in normal form: paragraphs and code fences separated by one blank line. */
export const textBlock = fc
  .array(fc.oneof({ weight: 4, arbitrary: paragraph }, { weight: 1, arbitrary: fence }), { minLength: 1, maxLength: 3 })
  .map((blocks) => blocks.join('\n\n'));

/** A list item: usually one line, sometimes several lines or a code fence. */
export const item = fc.oneof({ weight: 5, arbitrary: line }, { weight: 1, arbitrary: textBlock });

const arrowFree = line;
export const playByPlayEntry: fc.Arbitrary<PlayByPlayEntry> = fc.record({
  phase: fc.oneof(arrowFree, fc.constant('')),
  action: line,
  outcome: fc.oneof(arrowFree, fc.constant('')),
});

export const artifactEntry: fc.Arbitrary<ArtifactEntry> = fc.record({
  file: fc.stringMatching(/^[a-z][a-z0-9_./|-]{0,24}$/),
  status: fc.oneof(fc.constantFrom('created', 'modified', 'deleted'), fc.constant(''), word),
  keyChange: fc.oneof(
    line,
    fc.constant(''),
    line.map((l) => `${l} \`code | with pipe\``),
  ),
});

const RESERVED = new Set([
  'problem',
  'sessionintent',
  'essentialinformation',
  'decisions',
  'technicalcontext',
  'playbyplay',
  'artifacttrail',
  'currentstate',
  'nextactions',
  'userrules',
]);
const extraSection = fc
  .record({
    heading: fc.constantFrom('Notes', 'Open Questions', 'Links', 'Risks'),
    suffix: fc.stringMatching(/^[a-z]{0,5}$/),
    body: fc.oneof(textBlock, fc.constant('')),
  })
  .map(({ heading, suffix, body }) => ({ heading: suffix ? `${heading} ${suffix}` : heading, body }))
  .filter((e) => !RESERVED.has(e.heading.toLowerCase().replace(/[^a-z0-9]/g, '')));

const frontMatterValue = fc.oneof(line, fc.integer(), fc.boolean(), fc.array(word, { maxLength: 3 }));
const frontMatter = fc.dictionary(
  fc.stringMatching(/^[a-z][a-z_]{0,8}$/).filter((k) => !['checkpoint', 'created', 'anchor'].includes(k)),
  frontMatterValue,
  { minKeys: 1, maxKeys: 3 },
);

const isoDate = fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2100, 0, 1) }).map((ms) => new Date(ms).toISOString());

/** A decision, sometimes with a rationale after an em dash. */
export const decision = fc.oneof(
  line,
  fc.tuple(line, line).map(([d, r]) => `${d} — ${r}`),
);

/** Hand-off documents in normal form: what parseHandoff returns for their rendering. */
export const handoffDocument: fc.Arbitrary<HandoffDocument> = fc
  .record({
    checkpoint: fc.oneof(
      fc.integer({ min: 1, max: 999 }).map((n) => `chk-${String(n).padStart(3, '0')}`),
      fc.constant('session-abc-003'),
    ),
    created: isoDate,
    anchor: fc.option(fc.oneof(word, fc.constant('end-of-phase-2')), { nil: undefined }),
    frontMatter: fc.option(frontMatter, { nil: undefined }),
    problem: textBlock,
    sessionIntent: textBlock,
    decisions: fc.array(decision, { maxLength: 6 }),
    technicalContext: fc.array(item, { maxLength: 5 }),
    playByPlay: fc.array(playByPlayEntry, { maxLength: 8 }),
    artifactTrail: fc.array(artifactEntry, { maxLength: 8 }),
    currentState: fc.array(item, { maxLength: 4 }),
    nextActions: fc.array(item, { maxLength: 4 }),
    userRules: fc.option(fc.array(item, { maxLength: 3 }), { nil: undefined }),
    extraSections: fc.option(fc.array(extraSection, { minLength: 1, maxLength: 2 }), { nil: undefined }),
  })
  .map((d) => Object.fromEntries(Object.entries(d).filter(([, v]) => v !== undefined)) as unknown as HandoffDocument);

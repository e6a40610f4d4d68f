/**
 * A hand-off under a token budget (handoff-markdown.md): build checkpoint chk-001, carry it
 * forward twice as the work goes on, compress the result to fit a budget, store it with the
 * `handoffMarkdown` profile's document format, and print what a new session would receive.
 *
 * Run: npx tsx examples/handoff-markdown.ts
 */
import { memoryStorage } from 'savepoint';
import {
  compress,
  contextPressure,
  detectHandoffTriggers,
  estimateTokens,
  handoffMarkdown,
  nextCheckpoint,
  parseHandoff,
  renderHandoff,
  type HandoffDocument,
} from 'savepoint/handoff-markdown';

let now = Date.UTC(2025, 11, 14, 9, 0, 0);
const clock = { now: () => (now += 45 * 60_000) };

// 1. The first checkpoint, written by the agent at the end of phase 1.
const chk001: HandoffDocument = {
  checkpoint: 'chk-001',
  created: new Date(clock.now()).toISOString(),
  anchor: 'end-of-phase-1',
  problem: 'Build a paint-by-numbers game with AI-generated images.',
  sessionIntent:
    'Create "Chromatic Quest" - web game where Gemini API generates images converted to paint-by-numbers format. Must work offline after initial generation.',
  decisions: [
    'Platform: Web (browser) — the user plays on laptops and tablets',
    'Persistence: LocalStorage (no backend) — offline after first load',
  ],
  technicalContext: ['React 19.x + TypeScript 5.x', 'Vite 7.x, Tailwind CSS 4.x', 'HTML5 Canvas API'],
  playByPlay: [{ phase: 'Phase 1', action: 'Implemented core canvas + color quantization', outcome: 'Complete' }],
  artifactTrail: [
    { file: 'src/canvas/quantize.ts', status: 'created', keyChange: 'k-means color quantization to 12 colors' },
    { file: 'src/canvas/regions.ts', status: 'created', keyChange: 'flood-fill regions with numbered labels' },
  ],
  currentState: ['Phase 1 complete', 'Canvas renders numbered regions'],
  nextActions: ['Phase 2: Integrate Gemini API with retry logic', 'Blocked: None'],
  userRules: ['Wait for user approval between phases', 'Do not commit without explicit request'],
};

// 2. Carry forward: phase 2 done, a decision made.
const chk002 = nextCheckpoint(
  chk001,
  {
    anchor: 'end-of-phase-2',
    decisions: ['Image generation: Gemini API — best quality per cost'],
    technicalContext: { add: ['@google/genai SDK'] },
    playByPlay: [{ phase: 'Phase 2', action: 'Integrated Gemini API with retry logic', outcome: 'Complete' }],
    artifactTrail: [
      { file: 'src/services/gemini.ts', status: 'created', keyChange: 'Gemini client with exponential backoff' },
      { file: 'src/services/imageProcessor.ts', status: 'created', keyChange: 'base64 → ImageData → PaintByNumbers pipeline' },
    ],
    currentState: ['Phases 1-2 complete and working', 'Build passing, lint clean'],
    nextActions: ['Phase 3: Implement game mechanics (timer, scoring, combos)', 'Blocked: None'],
  },
  { clock },
);
console.log(`chk-002 fires: ${detectHandoffTriggers(chk001, chk002).join(', ')}`);

// 3. Carry forward again: phase 3 done; quantize.ts is finished and pruned from the trail.
const chk003 = nextCheckpoint(
  chk002,
  {
    anchor: 'end-of-phase-3',
    decisions: ['Scoring: combo multiplier capped at 8x — keeps leaderboards comparable'],
    playByPlay: [
      { phase: 'Phase 3', action: 'Implemented timer and scoring', outcome: 'Complete' },
      { phase: 'Phase 3', action: 'Added combo multiplier with visual feedback', outcome: 'Complete' },
    ],
    artifactTrail: [
      { file: 'src/game/timer.ts', status: 'created', keyChange: '90 s countdown with pause' },
      { file: 'src/game/scoring.ts', status: 'created', keyChange: 'combo multiplier, capped at 8x' },
      { file: 'src/services/gemini.ts', status: 'modified', keyChange: 'quota errors surface to the UI' },
    ],
    pruneArtifacts: ['src/canvas/quantize.ts'],
    currentState: ['Phases 1-3 complete', 'Dev server running at localhost:5173'],
    nextActions: ['Phase 4: Offline mode (service worker + cached images)', 'Blocked: None'],
  },
  { clock },
);
console.log(`chk-003 fires: ${detectHandoffTriggers(chk002, chk003).join(', ')}`);

// 4. The runtime reports context pressure: write a pre-compression checkpoint under a budget.
const pressure = contextPressure({ usedTokens: 172_000, contextWindowTokens: 200_000 });
console.log(`context pressure: ${pressure ? 'yes, pre_compression checkpoint due' : 'no'}`);
const full = estimateTokens(renderHandoff(chk003));
const budget = Math.round(full * 0.8);
const { document: compact, tokens, mustKeepTokens, actions } = compress(chk003, { maxTokens: budget });
console.log(`chk-003: ${full} tokens (estimate); budget ${budget}; compressed to ${tokens}; Must Keep alone needs ${mustKeepTokens}`);
for (const action of actions) console.log(`  - ${action}`);

// 5. Stored as savepoint writes it: the spec document plus run id, sequence, status and integrity in the front matter.
const { bytes, snapshot } = await handoffMarkdown.document.encode({
  id: compact.checkpoint,
  runId: 'chromatic-quest',
  sequence: 3,
  createdAt: compact.created,
  source: 'pre_compression',
  sourceDetails: [],
  status: 'in_progress',
  payload: (({ checkpoint: _c, created: _d, frontMatter: _f, ...payload }) => payload)(compact),
});
const storage = memoryStorage();
await storage.put(
  handoffMarkdown.layout.historyKey!({ runId: 'chromatic-quest', id: snapshot.id, sequence: 3, source: 'pre_compression' }),
  bytes,
);
await storage.put(handoffMarkdown.layout.latestKey('chromatic-quest'), bytes);
const stored = (await storage.get('checkpoints/chromatic-quest/latest.md'))!;
const back = await handoffMarkdown.document.decode(stored.bytes, 'checkpoints/chromatic-quest/latest.md');
console.log(
  `stored ${bytes.length} bytes at checkpoints/chromatic-quest/chk-003.md and latest.md; checksum ${back.integrity.checksum.slice(0, 12)}… verified`,
);

// 6. What the next session gets: the resume point from Next Actions, and the document itself.
const point = handoffMarkdown.resume!(back, { now: Date.now(), isTerminal: handoffMarkdown.isTerminal });
console.log(`\nresume at: ${point.at} (${point.reason}, eligible: ${point.eligible})`);
console.log(`\n${point.continuationPrompt}\n`);
console.log('----- latest.md -----');
console.log(new TextDecoder().decode(stored.bytes));
if (parseHandoff(new TextDecoder().decode(stored.bytes)).nextActions[0] !== point.at)
  throw new Error('resume point does not match Next Actions');

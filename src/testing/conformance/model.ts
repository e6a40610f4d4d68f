import type { PutOptions, StorageAdapter } from '../../contract/storage.js';
import { listAll } from '../../contract/storage.js';
import { equal, equalJson, ok, rejects, sameBytes } from './check.js';
import type { SuiteContext } from './context.js';
import { codeUnitCompare } from './listing.js';
import type * as FastCheckModule from 'fast-check';
import type { StorageConformanceFastCheck } from './options.js';

type PutCondition = 'none' | 'absent' | 'current' | 'stale' | 'unknown';
type DeleteCondition = 'none' | 'current' | 'stale' | 'unknown';

/** One step of a generated operation sequence. */
export type ModelOperation =
  | { readonly op: 'get'; readonly key: string }
  | { readonly op: 'put'; readonly key: string; readonly bytes: Uint8Array; readonly cond: PutCondition; readonly pick: number }
  | { readonly op: 'delete'; readonly key: string; readonly cond: DeleteCondition; readonly pick: number }
  | { readonly op: 'list'; readonly prefix: string };

// Few keys, so sequences revisit them; shaped to cross prefix boundaries and directory levels.
const MODEL_KEYS = ['a', 'a-b', 'a.b', 'b/c', 'b/d', 'c/d/e', 'c/e', 'é', 'z/\u{1f600}', 'z/\uff5e'];
// A key with keys below it, for adapters that hold both (`nestedKeys`).
const NESTED_KEYS = ['b', 'c/d'];
const MODEL_PREFIXES = ['', 'a', 'a-', 'b', 'b/', 'c/', 'c/d', 'c/d/', 'z/', 'q'];

/** fast-check's real types, for this file only (the public options declare just what they need). */
type FastCheck = Omit<typeof FastCheckModule, 'default'>;

async function loadFastCheck(given: StorageConformanceFastCheck | undefined): Promise<FastCheck> {
  // A caller's fc is fast-check itself (v3 or v4); its structural public type only names the members used.
  if (given) return given as unknown as FastCheck;
  try {
    const mod = (await import('fast-check')) as FastCheck & { default?: FastCheck };
    return mod.default ?? mod;
  } catch (err) {
    throw new Error(
      'the model-based property test needs fast-check: install it (npm i -D fast-check), pass it as { fc } to runStorageConformance, or set propertyRuns: 0',
      { cause: err },
    );
  }
}

/** Arbitrary operation sequences over a small key space. */
export function modelOperations(fc: FastCheck, nestedKeys: boolean): ReturnType<FastCheck['array']> {
  const key = fc.constantFrom(...MODEL_KEYS, ...(nestedKeys ? NESTED_KEYS : []));
  const bytes = fc.oneof(fc.constant(new Uint8Array(0)), fc.uint8Array({ maxLength: 40 }));
  const op = fc.oneof(
    { weight: 2, arbitrary: fc.record({ op: fc.constant('get' as const), key }) },
    {
      weight: 5,
      arbitrary: fc.record({
        op: fc.constant('put' as const),
        key,
        bytes,
        cond: fc.constantFrom<PutCondition>('none', 'absent', 'current', 'stale', 'unknown'),
        pick: fc.nat(),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        op: fc.constant('delete' as const),
        key,
        cond: fc.constantFrom<DeleteCondition>('none', 'current', 'stale', 'unknown'),
        pick: fc.nat(),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('list' as const), prefix: fc.constantFrom(...MODEL_PREFIXES) }) },
  );
  return fc.array(op, { minLength: 1, maxLength: 40, size: 'medium' });
}

const label = (o: ModelOperation): string => {
  switch (o.op) {
    case 'get':
      return `get ${o.key}`;
    case 'put':
      return `put ${o.key} (${o.bytes.length} bytes, ${o.cond})`;
    case 'delete':
      return `delete ${o.key} (${o.cond})`;
    case 'list':
      return `list ${JSON.stringify(o.prefix)}`;
  }
};

/**
 * Runs `ops` against `s` and against a reference model (a Map plus the history of every
 * version each key had), checking every observable result: values, versions, conflicts,
 * listings. Versions are the adapter's; the model only requires that a write returns a
 * version the key never had, and that get and list report the last one.
 */
export async function runAgainstModel(s: StorageAdapter, ops: readonly ModelOperation[], contentVersions = false): Promise<void> {
  const model = new Map<string, { bytes: Uint8Array; version: string }>();
  const history = new Map<string, string[]>();
  const contentOf = new Map<string, [string, Uint8Array][]>();
  const sameContent = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
  const staleVersion = (key: string, pick: number): string => {
    const current = model.get(key)?.version;
    const old = (history.get(key) ?? []).filter((v) => v !== current);
    return old.length ? old[pick % old.length]! : 'model-stale-version';
  };

  for (const [i, o] of ops.entries()) {
    const where = `step ${i} (${label(o)})`;
    const current = o.op === 'list' ? undefined : model.get(o.key);
    if (o.op === 'get') {
      const got = await s.get(o.key);
      if (!current) equal(got, undefined, where);
      else {
        sameBytes(got?.bytes, current.bytes, where);
        equal(got?.version, current.version, `${where}: version`);
      }
    } else if (o.op === 'put') {
      let options: PutOptions = {};
      let succeeds = true;
      if (o.cond === 'absent') [options, succeeds] = [{ ifAbsent: true }, !current];
      else if (o.cond === 'current') [options, succeeds] = [{ ifVersion: current?.version ?? 'model-no-version' }, current !== undefined];
      else if (o.cond === 'stale') [options, succeeds] = [{ ifVersion: staleVersion(o.key, o.pick) }, false];
      else if (o.cond === 'unknown') [options, succeeds] = [{ ifVersion: 'model-unknown-version' }, false];
      if (!succeeds) {
        await rejects(() => s.put(o.key, o.bytes, options), 'checkpoint_conflict', where);
        continue;
      }
      const { version } = await s.put(o.key, o.bytes, options);
      const seen = history.get(o.key) ?? [];
      if (contentVersions) {
        // A version names the bytes: equal to an earlier version of the key exactly when the bytes are equal.
        for (const [v, bytes] of contentOf.get(o.key) ?? []) {
          equal(v === version, sameContent(bytes, o.bytes), `${where}: version ${version} vs earlier version ${v} (versions: 'content')`);
        }
        contentOf.set(o.key, [...(contentOf.get(o.key) ?? []), [version, o.bytes.slice()]]);
      } else {
        ok(!seen.includes(version), `${where}: returned version ${version}, which the key already had`);
      }
      history.set(o.key, [...seen, version]);
      model.set(o.key, { bytes: o.bytes.slice(), version });
    } else if (o.op === 'delete') {
      let ifVersion: string | undefined;
      let succeeds = true;
      if (o.cond === 'current') [ifVersion, succeeds] = [current?.version ?? 'model-no-version', current !== undefined];
      else if (o.cond === 'stale') [ifVersion, succeeds] = [staleVersion(o.key, o.pick), false];
      else if (o.cond === 'unknown') [ifVersion, succeeds] = ['model-unknown-version', false];
      const options = ifVersion === undefined ? {} : { ifVersion };
      if (!succeeds) {
        await rejects(() => s.delete(o.key, options), 'checkpoint_conflict', where);
        continue;
      }
      equal(await s.delete(o.key, options), current !== undefined, where);
      model.delete(o.key);
    } else {
      const expected = [...model.entries()]
        .filter(([k]) => k.startsWith(o.prefix))
        .sort(([a], [b]) => codeUnitCompare(a, b))
        .map(([key, v]) => ({ key, version: v.version, size: v.bytes.length }));
      const actual = (await listAll(s, o.prefix)).map((e) => ({ key: e.key, version: e.version, size: e.size }));
      equalJson(actual, expected, where);
    }
  }
  const expected = [...model.keys()].sort(codeUnitCompare);
  equalJson(
    (await listAll(s, '')).map((e) => e.key),
    expected,
    'final listing',
  );
}

/** The model-based property: random operation sequences behave like the reference model. */
export function modelTests(ctx: SuiteContext): void {
  const runs = ctx.options.propertyRuns ?? 50;
  if (runs <= 0) return;
  ctx.group('model-based property', () => {
    ctx.testRaw(`${runs} random operation sequences match a reference model`, async () => {
      const fc = await loadFastCheck(ctx.options.fc);
      const property = fc.asyncProperty(modelOperations(fc, ctx.nestedKeys), (ops) =>
        ctx.withAdapter((s) => runAgainstModel(s, ops as ModelOperation[], ctx.contentVersions)),
      );
      await fc.assert(property, { numRuns: runs, ...(ctx.options.propertySeed !== undefined ? { seed: ctx.options.propertySeed } : {}) });
    });
  });
}
